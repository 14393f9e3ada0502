"""The architectures people use, each computed its own way and through its operator (Chapter 5).

Every layer here has ``forward(X)``, computed the way its own paper computes it
(a recurrence, a selective scan, a parallel or chunked form), and
``interaction(X)``, its operator ``W`` of shape ``(n, n, p, d)`` built from the
formula for ``W_ij(X)`` derived in the class docstring, so that
``forward(X) = apply_interaction(interaction(X), X)``. Alternative forms
(``recurrent_forward``, ``chunkwise_forward``, ``convolution_forward``,
``ssd_forward``) compute the same output another way.

Conventions, as in :mod:`ssmheads.models`: a sequence is ``(n, d)``, tokens are
indexed ``0, ..., n-1``, every layer is causal and starts from a zero state.
Parameters that are complex (the eigenvalues and maps of S4D and S5) may be
given as complex arrays; everything else must be real.

:func:`rank_table` computes the chapter's summary table.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ._validate import (as_array, check_allocation, check_nonempty, check_positive_int, check_seed, check_size,
                        check_total)
from .models import (_NO_OPERATOR, MAX_LAGS, MAX_PAIRS, Convolution, LinearSSM, MultiHeadAttention,
                     PositionwiseLinear, _check_chunks, _check_scan, _Layer)
from .numerics import relative_gap
from .operator import _toeplitz
from .span import EPS, _lag_span_dimension, _rank_from, _scaled_columns

__all__ = [
    "LinearAttention",
    "Retention",
    "ALiBiAttention",
    "RoPEAttention",
    "S4D",
    "S5",
    "Mamba",
    "Mamba2",
    "Hybrid",
    "RankRow",
    "RankTable",
    "rank_table",
]

_LOG_MAX = 709.0
#: Most tangent-entry updates :meth:`Mamba.jacobian` performs (``n^2 d d_inner N``) before refusing.
MAX_JACOBIAN_WORK = 2e8  # exp(709) is about 8e307, below the largest float


# ----------------------------------------------------------------------------------------------
# Checks


def _param(name, value, ndim, what):
    arr = as_array(name, value, ndim, what, copy=True)
    arr.flags.writeable = False
    return arr


def _complex_param(name, value, ndim, what):
    """A finite real or complex array with ``ndim`` dimensions, returned complex and read-only."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{name} must be a numeric array of shape {what}; got {type(value).__name__}") from exc
    if raw.dtype.kind not in "biufc":
        raise ValueError(f"{name} must be a numeric (real or complex) array of shape {what}; got "
                         f"{type(value).__name__} of dtype {raw.dtype}")
    if raw.ndim != ndim:
        raise ValueError(f"{name} must have shape {what} ({ndim} dimensions); got shape {raw.shape}")
    arr = np.array(raw, dtype=complex)
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers; got NaN or infinity")
    arr.flags.writeable = False
    return arr


def _real_number(name, value, low=-np.inf, high=np.inf, low_open=False, what=""):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ValueError(f"{name} must be a real number{what}; got {value!r}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be a finite real number{what}; got {value!r}")
    if value < low or (low_open and value == low) or value > high:
        raise ValueError(f"{name} must be a real number{what}; got {value!r}")
    return value


def _check_projections(W_Q, W_K, W_V):
    W_Q = _param("W_Q", W_Q, 2, "(d_k, d)")
    W_K = _param("W_K", W_K, 2, "(d_k, d)")
    W_V = _param("W_V", W_V, 2, "(p, d)")
    check_nonempty("W_Q", W_Q, 0, "the key width d_k")
    check_nonempty("W_Q", W_Q, 1, "the token width d")
    check_size("W_K", W_K, 0, W_Q.shape[0], "the key width d_k of W_Q")
    check_size("W_K", W_K, 1, W_Q.shape[1], "the token width d of W_Q")
    check_nonempty("W_V", W_V, 0, "the output width p")
    check_size("W_V", W_V, 1, W_Q.shape[1], "the token width d of W_Q")
    return W_Q, W_K, W_V


def _finite_or_raise(arr, message):
    if not np.all(np.isfinite(arr)):
        raise ValueError(message)
    return arr


def _scale_message(what):
    return (f"X is too large for this layer: {what} is not finite (overflow); rescale X, or the "
            "weights, so that it stays below about 1e300")


def _rotate(Z, angles):
    """Rotate the coordinate pairs ``(2m, 2m+1)`` of each row ``Z[t]`` by ``angles[t, m]``."""
    c, s = np.cos(angles), np.sin(angles)
    even, odd = Z[:, 0::2], Z[:, 1::2]
    out = np.empty_like(Z)
    out[:, 0::2] = c * even - s * odd
    out[:, 1::2] = s * even + c * odd
    return out


def _operator_from_scalar(alpha, V):
    """``W[i, j] = alpha[i, j] V`` for one head."""
    return alpha[:, :, None, None] * V[None, None]


#: The parallel forms of the single heads (linear attention, retention, ALiBi, RoPE) work on
#: blocks of rows of at most this many weights (32 MiB), so that ``forward`` never holds an
#: ``n x n`` array and ``coefficients`` holds only its answer and one block.
_BLOCK_ENTRIES = 2**22
#: A block's working set, in units of its size: the scores, the causal mask, the weights and the
#: temporaries of the softmax (or of the decay mask).
_BLOCK_ARRAYS = 6
# MAX_PAIRS (from models): the most weights alpha_ij (j <= i) that one parallel forward of a single
# head forms, in blocks (a sequence of 8191 tokens). Longer sequences are refused; the
# recurrent and chunkwise forms of linear attention and retention have no such limit.


def _row_blocks(n: int):
    """Row ranges ``(a, b)`` covering ``0..n`` whose causal blocks ``(b - a) x b`` hold at most
    :data:`_BLOCK_ENTRIES` weights."""
    rows = max(1, _BLOCK_ENTRIES // n)
    return [(a, min(a + rows, n)) for a in range(0, n, rows)]


def _causal_mask(a: int, b: int) -> np.ndarray:
    """``mask[i - a, j] = j <= i`` for the rows ``a <= i < b`` and the columns ``j < b``."""
    return np.arange(b)[None, :] <= np.arange(a, b)[:, None]


def _check_pairs(n: int, instead: str) -> None:
    """Refuse a parallel forward pass over more than :data:`MAX_PAIRS` causal pairs, naming ``X``."""
    pairs = n * (n + 1) // 2
    if pairs > MAX_PAIRS:
        raise ValueError(f"X has {n} tokens: the parallel form would compute {pairs:.3g} weights alpha_ij (j <= i), "
                         f"above the limit of {MAX_PAIRS:.3g} (about {MAX_PAIRS / 2**24:.0f} s here); {instead}")


def _check_operator_total(n: int, layer, extra: float = 0.0) -> None:
    """Refuse, naming ``X``, an ``interaction(X)`` whose working set (the layer's
    :meth:`_interaction_entries`, plus ``extra`` numbers held by the caller) exceeds 2 GiB."""
    check_total("X", layer._interaction_entries(n) + extra, f"{type(layer).__name__}.interaction (the operator W "
                "and the arrays it is built from)", _NO_OPERATOR)


def _head_blocks(head, X: np.ndarray):
    """The weights of a checked ``X``, block by block: ``(a, b, alpha[a:b, :b])`` (zero above the diagonal)."""
    parts = head._parts(X)
    for a, b in _row_blocks(X.shape[0]):
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            yield a, b, head._block(parts, a, b)


def _head_coefficients(head, X: np.ndarray) -> np.ndarray:
    """``alpha`` ``(n, n)`` of a single head on a checked ``X``, filled block by block (its working set
    checked first: the answer, one block's arrays and the per-token projections)."""
    n = X.shape[0]
    check_total("X", float(n) * n + _BLOCK_ARRAYS * min(_BLOCK_ENTRIES, float(n) * n) + 4.0 * n * (head.d_k + head.p),
                "the weights alpha and one block of their scores", _NO_OPERATOR)
    alpha = np.zeros((n, n))
    for a, b, block in _head_blocks(head, X):
        alpha[a:b, :b] = block
    return alpha


def _head_forward(head, X, instead: str) -> np.ndarray:
    """``y_i = sum_{j <= i} alpha_ij W_V x_j`` of a single head, block by block: no ``n x n`` array."""
    X = head._input(X)
    n = X.shape[0]
    _check_pairs(n, instead)
    with np.errstate(over="ignore", invalid="ignore"):
        V = X @ head.W_V.T
    _finite_or_raise(V, _scale_message("a value W_V x"))
    Y = np.empty((n, head.p))
    for a, b, block in _head_blocks(head, X):
        with np.errstate(over="ignore", invalid="ignore"):
            Y[a:b] = block @ V[:b]
    return _finite_or_raise(Y, _scale_message("the output"))


def _scalar_head_operator(head, X):
    """``W[i, j] = alpha_ij(X) W_V`` of a single head, refusing a working set (``W``, ``alpha``) above 2 GiB."""
    X = head._input(X)
    n = X.shape[0]
    head._check_operator_size(n)
    _check_operator_total(n, head)
    return _operator_from_scalar(_head_coefficients(head, X), head.W_V)


class _ScalarHead(_Layer):
    """Shared by the single heads: the working set of their operator."""

    def _interaction_entries(self, n: int) -> float:
        """Numbers held by :meth:`interaction` at its peak: ``W``, ``alpha`` and one block."""
        return float(n) * n * (self.p * self.d + 1) + _BLOCK_ARRAYS * min(_BLOCK_ENTRIES, float(n) * n) \
            + 4.0 * n * (self.d_k + self.p)


def _causal_softmax(scores):
    n = scores.shape[0]
    return _masked_softmax(scores, np.tril(np.ones((n, n), dtype=bool)))


def _masked_softmax(scores, mask):
    """Softmax of each row of ``scores`` over the entries where ``mask`` holds (0 elsewhere).

    ``scores`` may hold ``-inf`` (a bias that overflowed: weight 0) where each row keeps one finite entry."""
    s = np.where(mask, scores, -np.inf)
    s -= s.max(axis=1, keepdims=True)
    w = np.exp(s, out=s)
    w /= w.sum(axis=1, keepdims=True)
    return w


def _softplus(z):
    return np.logaddexp(0.0, z)


def _sigmoid(z):
    return np.exp(-np.logaddexp(0.0, -z))


def _expm1_complex(z):
    """``exp(z) - 1`` accurate for small ``|z|`` (``numpy.expm1`` is real only)."""
    x, y = z.real, z.imag
    return (np.expm1(x) * np.cos(y) - 2.0 * np.sin(y / 2.0) ** 2) + 1j * (np.exp(x) * np.sin(y))


def _rank(mats):
    """:func:`~ssmheads.span.interaction_rank` of checked, finite blocks ``(m, p, d)``, default tolerance.

    The same count as the public function (``default_rtol`` is ``max(m, p d) eps``), without
    re-checking blocks this module has just computed.
    """
    m, p, d = mats.shape
    if m == 0:
        return 0
    return _rank_from(np.linalg.svd(_scaled_columns(mats)[0], compute_uv=False), max(m, p * d) * EPS)


def _apply(W, X):
    """``y_i = sum_j W[i, j] X[j]`` as :func:`~ssmheads.operator.apply_interaction`, on checked arrays."""
    with np.errstate(over="ignore", invalid="ignore"):
        Y = np.einsum("ijpd,jd->ip", W, X)
    return _finite_or_raise(Y, _scale_message("W X"))


def _segsum(log_a):
    """``S[..., t, s] = sum_{r=s+1}^{t} log_a[..., r]`` for ``s <= t``, ``-inf`` above the diagonal.

    Summed directly from a masked copy (as ``segsum`` in Mamba-2's ``ssd_minimal``), not as a
    difference of cumulative sums, so each entry is accurate relative to itself.
    """
    n = log_a.shape[-1]
    x = np.broadcast_to(log_a[..., :, None], log_a.shape + (n,)).copy()  # x[..., r, s] = log_a[r]
    strict = np.tril(np.ones((n, n), dtype=bool), -1)  # r > s
    x = np.where(strict, x, 0.0)
    out = np.cumsum(x, axis=-2)  # out[t, s] = sum_{r <= t, r > s} log_a[r]
    return np.where(np.tril(np.ones((n, n), dtype=bool)), out, -np.inf)


# ----------------------------------------------------------------------------------------------
# Attention-like heads


class LinearAttention(_ScalarHead):
    """One causal linear-attention head (Katharopoulos et al. 2020).

    Derived in Chapter 5, Proposition 5.1 (its operator and its recurrent form).

    ``y_i = sum_{j<=i} phi(q_i)^T phi(k_j) v_j / sum_{m<=i} phi(q_i)^T phi(k_m)`` with
    ``q = W_Q x``, ``k = W_K x``, ``v = W_V x``.

    Parameters
    ----------
    W_Q, W_K : array, shape (d_k, d)
    W_V : array, shape (p, d)
    feature : {"elu1", "softplus"}
        The feature map ``phi``: ``elu(u) + 1`` (the paper's) or ``log(1 + e^u)``.
        Both are positive, so the normaliser is a sum of positive terms; it can
        still underflow to 0 for queries or keys below about -700, and then
        :meth:`forward` raises a ``ValueError`` naming ``X``. ReLU is not offered:
        its normaliser is 0 whenever the features are.

    Notes
    -----
    **Operator.** With ``alpha_ij = phi(q_i)^T phi(k_j) / Z_i`` (``Z_i`` the
    normaliser) and ``v_j = W_V x_j``, ``y_i = sum_j alpha_ij W_V x_j``, so
    ``W_ij(X) = alpha_ij(X) W_V`` for ``j <= i``: one scalar times one matrix,
    interaction rank 1. **Recurrent form.** ``S_i = S_{i-1} + v_i phi(k_i)^T``,
    ``z_i = z_{i-1} + phi(k_i)``, ``y_i = S_i phi(q_i) / (z_i^T phi(q_i))``: an SSM
    with the identity transition and input-dependent input and output maps.
    """

    FEATURES = ("elu1", "softplus")

    def __init__(self, W_Q, W_K, W_V, feature="elu1"):
        self.W_Q, self.W_K, self.W_V = _check_projections(W_Q, W_K, W_V)
        if not isinstance(feature, str) or feature not in self.FEATURES:
            raise ValueError(f"feature must be one of {self.FEATURES} (positive feature maps); got {feature!r}")
        self.feature = feature
        self.d_k, self.d = self.W_Q.shape
        self.p = self.W_V.shape[0]

    def __repr__(self):
        return f"LinearAttention(d={self.d}, p={self.p}, d_k={self.d_k}, feature={self.feature!r})"

    def _phi(self, U):
        if self.feature == "elu1":
            return np.where(U > 0, U + 1.0, np.exp(np.minimum(U, 0.0)))
        return _softplus(U)

    def _features(self, X):
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            fq, fk = self._phi(X @ self.W_Q.T), self._phi(X @ self.W_K.T)
        _finite_or_raise(fq, _scale_message("a query feature phi(W_Q x)"))
        _finite_or_raise(fk, _scale_message("a key feature phi(W_K x)"))
        return fq, fk

    def _normaliser_check(self, Z):
        if not (np.all(np.isfinite(Z)) and np.all(Z > 0)):
            raise ValueError("X is out of range for linear attention: the normaliser sum_m phi(q_i)^T phi(k_m) "
                             "underflows to 0 or overflows (queries or keys beyond about +-700); rescale X, or W_Q and W_K")

    def coefficients(self, X) -> np.ndarray:
        """The weights ``alpha[i, j]`` (rows sum to 1, zero above the diagonal), shape ``(n, n)``."""
        return self._coefficients(self._input(X))

    def _coefficients(self, X):
        return _head_coefficients(self, X)

    def _parts(self, X):
        return self._features(X)

    def _block(self, parts, a, b):
        """``alpha[a:b, :b]``: ``phi(q_i)^T phi(k_j) / Z_i`` for ``j <= i``."""
        fq, fk = parts
        raw = (fq[a:b] @ fk[:b].T) * _causal_mask(a, b)
        Z = raw.sum(axis=1, keepdims=True)
        self._normaliser_check(Z)
        raw /= Z
        return raw

    def forward(self, X) -> np.ndarray:
        """The parallel form ``(mask * phi(Q) phi(K)^T) V`` with row normalisation; shape ``(n, p)``.

        Computed on blocks of rows (no ``n x n`` array); at most ``MAX_PAIRS`` weights, else a
        ``ValueError`` naming ``X`` (:meth:`recurrent_forward` has no such limit).
        """
        return _head_forward(self, X, "use recurrent_forward(X), which is linear in n, or a shorter X")

    def recurrent_forward(self, X) -> np.ndarray:
        """The recurrent form with state ``S_i`` (``p x d_k``) and normaliser state ``z_i``; shape ``(n, p)``."""
        X = self._input(X)
        n = X.shape[0]
        _check_scan(n, n, "use forward(X), the parallel form, or a shorter X")
        fq, fk = self._features(X)
        V = X @ self.W_V.T
        S = np.zeros((self.p, self.d_k))
        z = np.zeros(self.d_k)
        Y = np.empty((n, self.p))
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for i in range(n):
                S = S + np.outer(V[i], fk[i])
                z = z + fk[i]
                norm = z @ fq[i]
                self._normaliser_check(np.asarray([norm]))
                Y[i] = (S @ fq[i]) / norm
        return _finite_or_raise(Y, _scale_message("the output"))

    def interaction(self, X) -> np.ndarray:
        """``W[i, j] = alpha_ij(X) W_V`` for ``j <= i``; shape ``(n, n, p, d)``."""
        return _scalar_head_operator(self, X)


class Retention(_ScalarHead):
    """One RetNet retention head (Sun et al. 2023), without the GroupNorm and the swish gate.

    Derived in Chapter 5, Proposition 5.2 (its operator, and its recurrent and chunkwise forms).

    ``y_i = sum_{j<=i} gamma^(i-j) (Theta_i q_i)^T (Theta_j k_j) W_V x_j``.

    Parameters
    ----------
    W_Q, W_K : array, shape (d_k, d)
    W_V : array, shape (p, d)
    gamma : float
        Decay, ``0 < gamma <= 1``.
    theta : None, float or array of shape (d_k / 2,)
        The xPos-style rotation ``Theta_t``: coordinates ``(2m, 2m+1)`` of queries and
        keys at position ``t`` are rotated by the angle ``t * theta_m`` (the real form
        of RetNet's ``e^{i t theta}``). A float uses the same angle for every pair;
        ``None`` means no rotation. With a rotation ``d_k`` must be even.

    Notes
    -----
    **Operator.** The decay and the rotation both act on the scalar score, so
    ``W_ij(X) = gamma^(i-j) (Theta_i q_i)^T (Theta_j k_j) W_V`` for ``j <= i``: one
    scalar times ``W_V``, interaction rank 1. No normalisation is applied (RetNet
    normalises with GroupNorm after the heads; left out, so the layer is exactly
    its operator form). **Recurrent form**: ``S_t = gamma S_{t-1} + k~_t^T v_t``
    (``d_k x p``), ``y_t = q~_t S_t``. **Chunkwise form**: inside a chunk the
    parallel form, across chunks the recurrence on the chunk-end states.
    """

    def __init__(self, W_Q, W_K, W_V, gamma, theta=None):
        self.W_Q, self.W_K, self.W_V = _check_projections(W_Q, W_K, W_V)
        self.d_k, self.d = self.W_Q.shape
        self.p = self.W_V.shape[0]
        self.gamma = _real_number("gamma", gamma, 0.0, 1.0, low_open=True, what=" in (0, 1]")
        if theta is None:
            self.theta = None
        else:
            if self.d_k % 2:
                raise ValueError(f"theta needs an even key width d_k (coordinates rotate in pairs); W_Q has "
                                 f"d_k = {self.d_k}")
            if isinstance(theta, (int, float, np.integer, np.floating)) and not isinstance(theta, (bool, np.bool_)):
                _real_number("theta", theta)
                theta = np.full(self.d_k // 2, float(theta))
            th = _param("theta", theta, 1, f"({self.d_k // 2},) or a float")
            check_size("theta", th, 0, self.d_k // 2, "d_k / 2, one angle per coordinate pair")
            self.theta = th

    def __repr__(self):
        rot = "None" if self.theta is None else f"{self.theta.shape[0]} angles"
        return f"Retention(d={self.d}, p={self.p}, d_k={self.d_k}, gamma={self.gamma!r}, theta={rot})"

    def _qkv(self, X):
        with np.errstate(over="ignore", invalid="ignore"):
            Q, K, V = X @ self.W_Q.T, X @ self.W_K.T, X @ self.W_V.T
        for M, what in ((Q, "a query W_Q x"), (K, "a key W_K x"), (V, "a value W_V x")):
            _finite_or_raise(M, _scale_message(what))
        if self.theta is not None:
            angles = np.arange(X.shape[0])[:, None] * self.theta[None, :]
            Q, K = _rotate(Q, angles), _rotate(K, angles)
        return Q, K, V

    def _decay(self, n, offset=0):
        """``D[i, j] = gamma^(i-j)`` for ``j <= i``, else 0."""
        lag = np.arange(n)[:, None] - np.arange(n)[None, :] + offset
        with np.errstate(under="ignore", divide="ignore"):
            return np.where(lag >= 0, self.gamma ** np.maximum(lag, 0).astype(float), 0.0)

    def coefficients(self, X) -> np.ndarray:
        """``alpha[i, j] = gamma^(i-j) q~_i^T k~_j`` for ``j <= i``; shape ``(n, n)``."""
        return self._coefficients(self._input(X))

    def _coefficients(self, X):
        return _head_coefficients(self, X)

    def _parts(self, X):
        return self._qkv(X)[:2]

    def _block(self, parts, a, b):
        """``alpha[a:b, :b]``: ``gamma^(i-j) q~_i^T k~_j`` for ``j <= i``."""
        Q, K = parts
        lag = np.arange(a, b)[:, None] - np.arange(b)[None, :]
        decay = np.where(lag >= 0, self.gamma ** np.maximum(lag, 0).astype(float), 0.0)
        decay *= Q[a:b] @ K[:b].T
        return _finite_or_raise(decay, _scale_message("a score q~^T k~"))

    def forward(self, X) -> np.ndarray:
        """The parallel form ``(Q~ K~^T * D) V`` with the decay mask ``D``; shape ``(n, p)``.

        Computed on blocks of rows (no ``n x n`` array); at most ``MAX_PAIRS`` weights, else a
        ``ValueError`` naming ``X`` (:meth:`recurrent_forward` and :meth:`chunkwise_forward`
        have no such limit).
        """
        return _head_forward(self, X, "use recurrent_forward(X) or chunkwise_forward(X, chunk), which are "
                                      "linear in n, or a shorter X")

    def recurrent_forward(self, X) -> np.ndarray:
        """``S_t = gamma S_{t-1} + k~_t^T v_t``, ``y_t = q~_t S_t``; shape ``(n, p)``."""
        X = self._input(X)
        _check_scan(X.shape[0], X.shape[0], "use chunkwise_forward(X, chunk) or a shorter X")
        Q, K, V = self._qkv(X)
        S = np.zeros((self.d_k, self.p))
        Y = np.empty((X.shape[0], self.p))
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for t in range(X.shape[0]):
                S = self.gamma * S + np.outer(K[t], V[t])
                Y[t] = Q[t] @ S
        return _finite_or_raise(Y, _scale_message("the state S_t"))

    def chunkwise_forward(self, X, chunk: int) -> np.ndarray:
        """RetNet's chunkwise form with chunks of ``chunk`` tokens (the last may be shorter).

        Inside a chunk ``[a, b)``: ``(Q~ K~^T * D) V`` plus the contribution of the
        state ``R`` carried in, ``gamma^(t-a+1) q~_t R``; then
        ``R <- gamma^(b-a) R + sum_{s in chunk} gamma^(b-1-s) k~_s^T v_s``.
        A chunk holds ``min(chunk, n)^2`` weights and their temporaries: a working set
        above 2 GiB (``chunk`` above about 6600) is refused with a ``ValueError`` naming
        ``chunk``.
        """
        X = self._input(X)
        chunk = check_positive_int("chunk", chunk)
        n = X.shape[0]
        m = min(chunk, n)
        # per chunk: the m x m scores, the lags and the decay mask with their temporaries
        check_total("chunk", 6.0 * m * m + 4.0 * n * (self.d_k + self.p), "the arrays of one chunk",
                    f"use a smaller chunk (at most {int(np.sqrt(2**31 / 8 / 6)):d} tokens here)")
        _check_chunks(n, m)
        Q, K, V = self._qkv(X)
        R = np.zeros((self.d_k, self.p))
        Y = np.empty((n, self.p))
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for a in range(0, n, chunk):
                b = min(a + chunk, n)
                m = b - a
                steps = np.arange(m, dtype=float)
                inner = ((Q[a:b] @ K[a:b].T) * self._decay(m)) @ V[a:b]
                cross = (self.gamma ** (steps + 1.0))[:, None] * (Q[a:b] @ R)
                Y[a:b] = inner + cross
                R = self.gamma ** m * R + K[a:b].T @ ((self.gamma ** (m - 1.0 - steps))[:, None] * V[a:b])
        return _finite_or_raise(Y, _scale_message("the chunk state R"))

    def interaction(self, X) -> np.ndarray:
        """``W[i, j] = gamma^(i-j) q~_i^T k~_j W_V`` for ``j <= i``; shape ``(n, n, p, d)``."""
        return _scalar_head_operator(self, X)


class _SoftmaxHead(_ScalarHead):
    """A causal softmax head ``y_i = sum_{j<=i} softmax_j(s_ij) W_V x_j``; subclasses set the scores."""

    def _scores(self, X):  # pragma: no cover - abstract
        raise NotImplementedError

    def coefficients(self, X) -> np.ndarray:
        """The attention weights ``alpha[i, j]`` (rows sum to 1, zero above the diagonal), shape ``(n, n)``."""
        return self._coefficients(self._input(X))

    def _coefficients(self, X):
        return _head_coefficients(self, X)

    def _parts(self, X):
        """Queries and keys (rotated by RoPE), each ``(n, d_k)``, checked finite."""
        with np.errstate(over="ignore", invalid="ignore"):
            Q, K = self._queries_keys(X)
        _finite_or_raise(Q, _scale_message("a query W_Q x"))
        _finite_or_raise(K, _scale_message("a key W_K x"))
        return Q, K

    def _block(self, parts, a, b):
        """``alpha[a:b, :b]``: the causal softmax of the block's scores."""
        Q, K = parts
        content = Q[a:b] @ K[:b].T
        content /= np.sqrt(self.d_k)
        _finite_or_raise(content, _scale_message("an attention score q^T k / sqrt(d_k)"))
        return _masked_softmax(self._bias(content, a, b), _causal_mask(a, b))

    def _bias(self, content, a, b):
        """The block's scores from its content part (no positional bias here)."""
        return content

    def _scores(self, X):
        """All scores ``s_ij``, shape ``(n, n)`` (entries above the diagonal are not used)."""
        Q, K = self._parts(X)
        with np.errstate(over="ignore", invalid="ignore"):
            return self._bias(Q @ K.T / np.sqrt(self.d_k), 0, X.shape[0])

    def forward(self, X) -> np.ndarray:
        """``softmax(scores, causal) V`` with ``V = X W_V^T``; shape ``(n, p)``.

        Computed on blocks of rows (no ``n x n`` array); at most ``MAX_PAIRS`` weights, else a
        ``ValueError`` naming ``X``.
        """
        return _head_forward(self, X, "use a shorter X")

    def interaction(self, X) -> np.ndarray:
        """``W[i, j] = alpha_ij(X) W_V`` for ``j <= i``; shape ``(n, n, p, d)``."""
        return _scalar_head_operator(self, X)


class ALiBiAttention(_SoftmaxHead):
    """One causal softmax head with ALiBi's linear bias (Press et al. 2022).

    Derived in Chapter 5, Proposition 5.3 (positional softmax heads are single heads).

    Score ``s_ij = q_i^T k_j / sqrt(d_k) - slope * (i - j)``.

    Parameters
    ----------
    W_Q, W_K : array, shape (d_k, d)
    W_V : array, shape (p, d)
    slope : float
        ``slope >= 0`` (ALiBi's head-specific ``m``; 0 is plain causal softmax).

    Notes
    -----
    ``softmax_j(q_i^T k_j / sqrt(d_k) - m (i-j)) = e^{q.k/sqrt(d_k)} e^{-m(i-j)} / Z_i``:
    the bias multiplies the scalar weight, so ``W_ij(X) = alpha_ij(X) W_V``,
    interaction rank 1.
    """

    def __init__(self, W_Q, W_K, W_V, slope):
        self.W_Q, self.W_K, self.W_V = _check_projections(W_Q, W_K, W_V)
        self.d_k, self.d = self.W_Q.shape
        self.p = self.W_V.shape[0]
        self.slope = _real_number("slope", slope, 0.0, what=" >= 0")

    def __repr__(self):
        return f"ALiBiAttention(d={self.d}, p={self.p}, d_k={self.d_k}, slope={self.slope!r})"

    def _queries_keys(self, X):
        return X @ self.W_Q.T, X @ self.W_K.T

    def _bias(self, content, a, b):
        """``content - slope (i - j)``; a bias that overflows is ``-inf`` (weight 0), never blamed on ``X``."""
        lag = np.arange(a, b)[:, None] - np.arange(content.shape[1])[None, :]
        with np.errstate(over="ignore"):
            content -= self.slope * lag
        return content


class RoPEAttention(_SoftmaxHead):
    """One causal softmax head with rotary position embedding (Su et al. 2024).

    Derived in Chapter 5, Proposition 5.3 (positional softmax heads are single heads).
    Used in Chapter 5, Exercise 5.2 (a RoPE head is one head).

    Score ``s_ij = (R_i q_i)^T (R_j k_j) / sqrt(d_k)``, ``R_t`` rotating coordinates
    ``(2m, 2m+1)`` by ``t * theta_m``, ``theta_m = base^(-2m/d_k)``.

    Parameters
    ----------
    W_Q, W_K : array, shape (d_k, d), ``d_k`` even
    W_V : array, shape (p, d)
    base : float
        ``base > 0`` (10000 in the paper).

    Notes
    -----
    The rotation acts on queries and keys only, that is on the scalar score:
    ``W_ij(X) = softmax_j(s_ij) W_V``, interaction rank 1. The score depends on
    positions only through ``i - j`` because ``R_i^T R_j = R_{j-i}``.
    """

    def __init__(self, W_Q, W_K, W_V, base=10000.0):
        self.W_Q, self.W_K, self.W_V = _check_projections(W_Q, W_K, W_V)
        self.d_k, self.d = self.W_Q.shape
        self.p = self.W_V.shape[0]
        if self.d_k % 2:
            raise ValueError(f"W_Q must have an even key width d_k for RoPE (coordinates rotate in pairs); "
                             f"got d_k = {self.d_k}")
        self.base = _real_number("base", base, 0.0, low_open=True, what=" > 0")
        self.theta = self.base ** (-2.0 * np.arange(self.d_k // 2) / self.d_k)

    def __repr__(self):
        return f"RoPEAttention(d={self.d}, p={self.p}, d_k={self.d_k}, base={self.base!r})"

    def _queries_keys(self, X):
        angles = np.arange(X.shape[0])[:, None] * self.theta[None, :]
        return _rotate(X @ self.W_Q.T, angles), _rotate(X @ self.W_K.T, angles)


# ----------------------------------------------------------------------------------------------
# Diagonal state-space models


def _zoh(Lambda, dt, name_dt):
    """Zero-order hold: ``A_bar = exp(dt Lambda)`` and ``(A_bar - 1) / Lambda``."""
    with np.errstate(over="ignore", invalid="ignore"):
        z = dt * Lambda
    if not np.all(np.isfinite(z)):
        raise ValueError(f"{name_dt} times Lambda overflows; use a smaller {name_dt} or smaller eigenvalues")
    with np.errstate(under="ignore"):
        A_bar = np.exp(z)
        gain = _expm1_complex(z) / Lambda
    return A_bar, gain


def _check_lags(n):
    return _lag_limit(check_positive_int("n", n))


def _lag_limit(n):
    """``n``, a positive int, if at most ``MAX_LAGS``; else the ``ValueError`` of :func:`_check_lags`."""
    if n > MAX_LAGS:
        raise ValueError(f"n = {n} lags is more than the {MAX_LAGS} computed here (as lag_operators of "
                         "ssmheads.models); the lags of a stable system decay, so use a smaller n")
    return n


def _check_lambda(Lambda):
    if np.any(Lambda.real >= 0):
        raise ValueError("Lambda must have negative real parts (a stable continuous-time system, as S4D and S5 "
                         f"parametrise it); got max Re Lambda = {np.max(Lambda.real):.3g}")
    return Lambda


class S4D(_Layer):
    """S4D: one SISO diagonal SSM per channel, discretised by zero-order hold (Gu, Gupta et al. 2022).

    Derived in Chapter 5, Proposition 5.4 (the ranks of S4D and S5).

    For channel ``c`` with state ``h^(c)`` in ``C^N``:
    ``h^(c)_t = A_bar_c * h^(c)_{t-1} + B_bar_c x^(c)_t``,
    ``y^(c)_t = 2 Re(sum_n C_cn h^(c)_tn)``, where ``A_bar = exp(dt Lambda)`` and
    ``B_bar = (A_bar - 1) / Lambda * B`` (S4D's ZOH).

    Parameters
    ----------
    Lambda : array, shape (d, N), complex, ``Re Lambda < 0`` (else a ``ValueError``)
    B, C : arrays, shape (d, N), real or complex
    dt : array, shape (d,), ``dt > 0``
        One step size per channel.

    Notes
    -----
    The factor 2 and the real part follow S4D's code: ``Lambda`` holds one
    eigenvalue of each conjugate pair, the other is implied. No skip term ``D``
    (S4D's code adds ``D x_t``; it would add ``diag(D)`` to the lag-0 operator).
    :meth:`as_linear_ssm` gives the equivalent real SSM. **Kernel.**
    ``K^(c)_l = 2 Re(sum_n C_cn A_bar_cn^l B_bar_cn)``. **Operator.** Channels do
    not mix, so ``W_ij = diag_c(K^(c)_{i-j})`` for ``j <= i``: ``p = d``, and the
    span lies in the ``d`` diagonal matrices, interaction rank ``<= min(n, d)``.
    """

    def __init__(self, Lambda, B, C, dt):
        Lambda = _check_lambda(_complex_param("Lambda", Lambda, 2, "(d, N)"))
        check_nonempty("Lambda", Lambda, 0, "the number of channels d")
        check_nonempty("Lambda", Lambda, 1, "the state size N")
        B = _complex_param("B", B, 2, "(d, N)")
        C = _complex_param("C", C, 2, "(d, N)")
        for name, arr in (("B", B), ("C", C)):
            if arr.shape != Lambda.shape:
                raise ValueError(f"{name} must have the shape (d, N) = {Lambda.shape} of Lambda; got {arr.shape}")
        dt = _param("dt", dt, 1, "(d,)")
        check_size("dt", dt, 0, Lambda.shape[0], "the number of channels d of Lambda")
        if np.any(dt <= 0):
            raise ValueError(f"dt must be positive (a step size); got min dt = {np.min(dt):.3g}")
        self.Lambda, self.B, self.C, self.dt = Lambda, B, C, dt
        self.A_bar, gain = _zoh(Lambda, dt[:, None], "dt")
        self.B_bar = gain * B
        _finite_or_raise(self.B_bar, "B times the ZOH gain (exp(dt Lambda) - 1) / Lambda overflows; rescale B")
        self.d, self.N = Lambda.shape
        self.p = self.d

    def __repr__(self):
        return f"S4D(d={self.d}, N={self.N})"

    def kernel(self, n: int) -> np.ndarray:
        """``K[l, c] = 2 Re(sum_m C_cm A_bar_cm^l B_bar_cm)``, shape ``(n, d)``."""
        return self._kernel(_check_lags(n))

    def _kernel_entries(self, n: int) -> float:
        """Numbers held while the kernel is formed: the complex exponents and powers, and ``K``."""
        return 4.0 * n * self.d * self.N + 2.0 * n * self.d

    def _kernel(self, n, name="n"):
        check_total(name, self._kernel_entries(n), "the powers A_bar^l of the kernel", f"use a smaller {name}")
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            powers = np.exp(np.arange(n)[:, None, None] * (self.dt[:, None] * self.Lambda)[None])
            K = 2.0 * np.einsum("cm,lcm->lc", self.C * self.B_bar, powers).real
        return _finite_or_raise(K, "the kernel overflows: B or C is too large; rescale them")

    def forward(self, X) -> np.ndarray:
        """The recurrence, all channels at once; shape ``(n, d)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, self.d), "the outputs", "use a shorter X")
        _check_scan(n, n, "use convolution_forward(X) or a shorter X")
        h = np.zeros((self.d, self.N), dtype=complex)
        Y = np.empty((n, self.d))
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for t in range(n):
                h = self.A_bar * h + self.B_bar * X[t][:, None]
                Y[t] = 2.0 * np.sum(self.C * h, axis=1).real
        return _finite_or_raise(Y, _scale_message("the state h_t"))

    def convolution_forward(self, X) -> np.ndarray:
        """``y^(c) = K^(c) * x^(c)`` (causal convolution by FFT of length ``2n``); shape ``(n, d)``."""
        X = self._input(X)
        n = X.shape[0]
        if n > MAX_LAGS:
            raise ValueError(f"X has {n} tokens, more than the {MAX_LAGS} kernel taps computed here; use forward(X), "
                             "the recurrence, or a shorter X")
        size = 1 << (2 * n - 1).bit_length()
        # the kernel's working set, then K, X and their spectra (complex, size / 2 + 1 rows) and the product
        check_total("X", self._kernel_entries(n) + 5.0 * size * self.d, "the kernel and the FFTs of the "
                    "convolution", "use forward(X), the recurrence, or a shorter X")
        K = self._kernel(n, "X")
        with np.errstate(over="ignore", invalid="ignore"):
            Y = np.fft.irfft(np.fft.rfft(K, size, axis=0) * np.fft.rfft(X, size, axis=0), size, axis=0)[:n]
        return _finite_or_raise(Y, _scale_message("the convolution"))

    def lag_operators(self, n: int) -> np.ndarray:
        """``diag(K[l])``, shape ``(n, d, d)``."""
        return self._lag_operators(_check_lags(n))

    def _lag_operators(self, n, name="n"):
        check_total(name, self._kernel_entries(n) + float(n) * self.d * self.d, "the kernel and the lag operators",
                    f"use a smaller {name}")
        K = self._kernel(n, name)
        out = np.zeros((K.shape[0], self.d, self.d))
        idx = np.arange(self.d)
        out[:, idx, idx] = K
        return out

    def as_linear_ssm(self) -> LinearSSM:
        """An equivalent real :class:`~ssmheads.models.LinearSSM` with state size ``2 d N``.

        Mode ``m`` of channel ``c`` is the real pair ``(Re h, Im h)`` of its complex
        state, with the block ``[[Re a, -Im a], [Im a, Re a]]`` (``a = A_bar[c, m]``),
        input column ``c`` of ``B`` equal to ``(Re B_bar, Im B_bar)`` and output row
        ``c`` of ``C`` equal to ``(2 Re C, -2 Im C)``, since
        ``2 Re(C h) = 2 Re C Re h - 2 Im C Im h``. Its lags are :meth:`lag_operators`.
        """
        return LinearSSM(*self._real_system())

    def _real_system(self):
        """``(A, B, C)`` of :meth:`as_linear_ssm`: real arrays, state size ``M = 2 d N``."""
        d, N = self.d, self.N
        M = d * N
        check_allocation("Lambda", (2 * M, 2 * M), "the real state matrix", "use fewer channels or modes")
        a, b, c = self.A_bar.ravel(), self.B_bar.ravel(), self.C.ravel()  # index c N + m
        idx, chan = np.arange(M), np.repeat(np.arange(d), N)
        A = np.zeros((2 * M, 2 * M))
        A[idx, idx] = A[M + idx, M + idx] = a.real
        A[idx, M + idx] = -a.imag
        A[M + idx, idx] = a.imag
        B = np.zeros((2 * M, d))
        B[idx, chan], B[M + idx, chan] = b.real, b.imag
        C = np.zeros((d, 2 * M))
        C[chan, idx], C[chan, M + idx] = 2.0 * c.real, -2.0 * c.imag
        return A, B, C

    def _interaction_entries(self, n: int) -> float:
        """Numbers held by :meth:`interaction`: ``W``, the lags (and their padded copies) and the kernel's."""
        return float(n) * n * self.d * self.d + 4.0 * n * self.d * self.d + self._kernel_entries(n)

    def interaction(self, X) -> np.ndarray:
        """``W[i, j] = diag(K[i - j])`` for ``j <= i``; shape ``(n, n, d, d)``."""
        n = self._input(X).shape[0]
        check_allocation("X", (n, n, self.d, self.d), "the operator W", _NO_OPERATOR)
        _check_operator_total(n, self)
        return _toeplitz(self._lag_operators(_lag_limit(n), "X"), n)


class S5(_Layer):
    """S5: one MIMO diagonal SSM shared by all channels, ZOH-discretised (Smith et al. 2023).

    Derived in Chapter 5, Proposition 5.4 (the ranks of S4D and S5).

    ``h_t = A_bar * h_{t-1} + B_bar x_t`` (``h`` in ``C^N``), ``y_t = Re(C h_t)``, with
    ``A_bar = exp(dt Lambda)``, ``B_bar = diag((A_bar - 1) / Lambda) B``.

    Parameters
    ----------
    Lambda : array, shape (N,), complex, ``Re Lambda < 0``
    B : array, shape (N, d), real or complex
    C : array, shape (p, N), real or complex
    dt : float or array of shape (N,), ``> 0`` (S5 learns one step per state)

    Notes
    -----
    Time-invariant: ``W_ij = K_{i-j} = Re(C diag(A_bar)^{i-j} B_bar)``, the
    operator of a real :class:`~ssmheads.models.LinearSSM` (:meth:`as_linear_ssm`),
    so the head-count theorem (Theorem 3.1) applies: interaction rank ``k(n)``, and ``k(n)`` heads.
    **Conventions.** S5's code (``conj_sym=True``) keeps one mode of each conjugate
    pair, ``N/2`` modes with ``B~``, ``C~``, and outputs ``2 Re(C~ h~)``. This class
    keeps all ``N`` modes and outputs ``Re(C h)``; the two agree when the modes, the
    rows of ``B`` and the columns of ``C`` come in conjugate pairs, ``C = [C~, conj C~]``,
    and the two modes of each pair have the same ``dt`` (S5's code keeps one ``dt`` per
    pair), so that ``A_bar`` and the rows of ``B_bar`` pair too; then ``C h`` is real and
    ``k(n) <= min(n, p d, N)``. With unequal ``dt`` on a pair, ``C h`` is in general not
    real. Without that symmetry ``k(n) <= min(n, p d, 2N)``. No skip term ``D`` (S5 has one; add a
    :class:`~ssmheads.models.PositionwiseLinear` in a :class:`Hybrid` if needed).
    """

    def __init__(self, Lambda, B, C, dt):
        Lambda = _check_lambda(_complex_param("Lambda", Lambda, 1, "(N,)"))
        check_nonempty("Lambda", Lambda, 0, "the state size N")
        N = Lambda.shape[0]
        B = _complex_param("B", B, 2, "(N, d)")
        check_size("B", B, 0, N, "the state size N of Lambda")
        check_nonempty("B", B, 1, "the token width d")
        C = _complex_param("C", C, 2, "(p, N)")
        check_size("C", C, 1, N, "the state size N of Lambda")
        check_nonempty("C", C, 0, "the output width p")
        if isinstance(dt, (int, float, np.integer, np.floating)) and not isinstance(dt, (bool, np.bool_)):
            dt = np.full(N, _real_number("dt", dt, 0.0, low_open=True, what=" > 0"))
        dt = _param("dt", dt, 1, f"({N},) or a float")
        check_size("dt", dt, 0, N, "the state size N of Lambda")
        if np.any(dt <= 0):
            raise ValueError(f"dt must be positive (a step size); got min dt = {np.min(dt):.3g}")
        self.Lambda, self.B, self.C, self.dt = Lambda, B, C, dt
        self.A_bar, gain = _zoh(Lambda, dt, "dt")
        self.B_bar = gain[:, None] * B
        _finite_or_raise(self.B_bar, "B times the ZOH gain (exp(dt Lambda) - 1) / Lambda overflows; rescale B")
        self.N, self.d, self.p = N, B.shape[1], C.shape[0]

    def __repr__(self):
        return f"S5(N={self.N}, d={self.d}, p={self.p})"

    def forward(self, X) -> np.ndarray:
        """The complex recurrence; shape ``(n, p)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, self.N), "the states h_t", "use a shorter X", itemsize=16)
        check_total("X", 4.0 * n * self.N + 2.0 * n * self.p, "the drives and states (complex) and the outputs",
                    "use a shorter X")
        _check_scan(n, n)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            drive = X @ self.B_bar.T
            H = np.empty((n, self.N), dtype=complex)
            h = np.zeros(self.N, dtype=complex)
            for t in range(n):
                h = self.A_bar * h + drive[t]
                H[t] = h
            Y = (H @ self.C.T).real
        return _finite_or_raise(Y, _scale_message("the state h_t"))

    def lag_operators(self, n: int) -> np.ndarray:
        """``K[l] = Re(C diag(A_bar)^l B_bar)``, shape ``(n, p, d)``."""
        return self._lag_operators(_check_lags(n))

    def _lag_entries(self, n: int) -> float:
        """Numbers held while the lags are formed: complex exponents and powers, complex and real lags."""
        return 4.0 * n * self.N + 3.0 * n * self.p * self.d

    def _lag_operators(self, n, name="n"):
        check_total(name, self._lag_entries(n), "the powers A_bar^l and the lags K", f"use a smaller {name}")
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            powers = np.exp(np.arange(n)[:, None] * (self.dt * self.Lambda)[None])  # (n, N)
            K = np.einsum("pm,lm,md->lpd", self.C, powers, self.B_bar).real
        return _finite_or_raise(K, "the lags overflow: B or C is too large; rescale them")

    def as_linear_ssm(self) -> LinearSSM:
        """An equivalent real :class:`~ssmheads.models.LinearSSM` with state size ``2N``.

        The complex state ``h = u + i v`` is stored as ``(u, v)``: each mode
        ``a = alpha + i beta`` becomes the block ``[[alpha, -beta], [beta, alpha]]``,
        ``B_real = [Re B_bar; Im B_bar]`` and ``C_real = [Re C, -Im C]`` (because
        ``Re(C h) = Re C u - Im C v``). Its lags equal :meth:`lag_operators` exactly in
        exact arithmetic; a conjugate pair of modes (or a real mode) gives a
        realification with repeated eigenvalues, which does not change ``k(n)``.
        """
        return LinearSSM(*self._real_system())

    def _real_system(self):
        """``(A, B, C)`` of :meth:`as_linear_ssm`, real arrays of state size ``2N``."""
        N = self.N
        A = np.zeros((2 * N, 2 * N))
        idx = np.arange(N)
        A[idx, idx] = A[N + idx, N + idx] = self.A_bar.real
        A[idx, N + idx] = -self.A_bar.imag
        A[N + idx, idx] = self.A_bar.imag
        B = np.vstack([self.B_bar.real, self.B_bar.imag])
        C = np.hstack([self.C.real, -self.C.imag])
        return A, B, C

    def heads_needed(self, n: int) -> int:
        """``k(n)``: the heads the head-count theorem (Theorem 3.1) needs, the lag-span dimension of :meth:`as_linear_ssm`."""
        return self._heads_needed(check_positive_int("n", n))

    def _heads_needed(self, n):
        return _lag_span_dimension(*self._real_system(), n, None)

    def _interaction_entries(self, n: int) -> float:
        """Numbers held by :meth:`interaction`: ``W``, the lags (and their padded copies) and their powers."""
        return float(n) * n * self.p * self.d + 3.0 * n * self.p * self.d + self._lag_entries(n)

    def interaction(self, X) -> np.ndarray:
        """``W[i, j] = K[i - j]`` for ``j <= i``; ``X`` only sets ``n``. Shape ``(n, n, p, d)``."""
        n = self._input(X).shape[0]
        check_allocation("X", (n, n, self.p, self.d), "the operator W", _NO_OPERATOR)
        _check_operator_total(n, self)
        return _toeplitz(self._lag_operators(_lag_limit(n), "X"), n)


# ----------------------------------------------------------------------------------------------
# Selective SSMs


def _selective_scan(U, Delta, Bt, Ct, A, D):
    """Mamba-1's selective scan: ``Y (n, d_inner)``.

    ``U, Delta (n, d_inner)`` the inputs ``u_t`` and the steps,
    ``Bt, Ct (n, N)``, ``A (d_inner, N)``, ``D (d_inner,)``; called by
    :meth:`Mamba.forward`. Row ``c`` of ``h`` is the diagonal SSM of
    channel ``c``.
    """
    n, d_inner = U.shape
    N = A.shape[1]
    # h_0 = 0: N states for each channel
    h = np.zeros((d_inner, N))
    Y = np.empty((n, d_inner))
    for t in range(n):
        # exp(Delta_t A): the zero-order hold of A
        decay = np.exp(Delta[t][:, None] * A)
        # Delta_t B_t u_t: the input, written into every state
        drive = (Delta[t] * U[t])[:, None] * Bt[t][None, :]
        h = decay * h + drive
        # y_t = C_t^T h_t + D u_t (D: the skip term)
        Y[t] = h @ Ct[t] + D * U[t]
    return Y


def _ssd_chunked(U, log_a, Bt, Ct, chunk):
    """Mamba-2's chunked SSD; shape ``(n, heads, P)``.

    ``U (n, heads, P)`` the inputs times the steps, ``Delta^h_t u^h_t``;
    ``log_a (n, heads)`` is ``Delta A``; ``Bt, Ct (n, N)``; chunks of
    ``chunk`` tokens (``n_c`` in the text). Returns each head's output
    ``y^h_t``, before ``W_out``. After ``ssd_minimal_discrete`` of
    Dao & Gu 2024, which is called with ``x * dt`` and ``A * dt`` too.
    einsum letters: ``h`` a head, ``t, s`` tokens of the chunk, ``m`` a
    state coordinate (``N`` of them), ``p`` a coordinate of the head.
    """
    n, heads, P = U.shape
    # S[h] is S^h_{t0-1}, head h's N x P state before the chunk
    S = np.zeros((heads, Bt.shape[1], P))
    Yh = np.empty((n, heads, P))
    for t0 in range(0, n, chunk):
        # T: the chunk's tokens t0, ..., t1
        T = slice(t0, min(t0 + chunk, n))
        la = log_a[T].T
        # 1. inside the chunk: L_ts = a_{s+1} ... a_t, zero for s > t
        L = np.exp(_segsum(la))
        CB = Ct[T] @ Bt[T].T
        y_in = np.einsum("hts,ts,shp->thp", L, CB, U[T])
        # 2. the state carried in: L_{t,t0-1} S^T C_t,
        #    L_{t,t0-1} = a_{t0} ... a_t from a running sum of log a
        L_in = np.exp(np.cumsum(la, axis=1))
        y_carried = np.einsum("ht,tm,hmp->thp", L_in, Ct[T], S)
        Yh[T] = y_in + y_carried
        # 3. the state at t1: L_{t1,t0-1} S + sum_s L_{t1,s} B_s u_s^T,
        #    with L_{t1,s} the last row of L
        S_in = np.einsum("hs,sm,shp->hmp", L[:, -1], Bt[T], U[T])
        S = L_in[:, -1, None, None] * S + S_in
    return Yh


class Mamba(_Layer):
    """A simplified Mamba-1 selective scan (Gu & Dao 2023).

    Derived in Chapter 5, Proposition 5.5 (its operator; the scan, ``_selective_scan``, in Section 5.6).

    ``u_t = W_in x_t`` (``d_inner``), ``Delta_t = softplus(W_delta u_t)`` (``d_inner``),
    ``B_t = W_B u_t``, ``C_t = W_C u_t`` (``N``), ``A = -exp(A_log)`` (``d_inner x N``);
    per channel ``c``: ``h^c_t = exp(Delta^c_t A^c) * h^c_{t-1} + Delta^c_t B_t u^c_t``,
    ``y^c_t = C_t^T h^c_t + D_c u^c_t``. Output ``(n, d_inner)``.

    Parameters
    ----------
    W_in : array, shape (d_inner, d)
    W_delta : array, shape (d_inner, d_inner)
    W_B, W_C : arrays, shape (N, d_inner)
    A_log : array, shape (d_inner, N)
        ``A = -exp(A_log)``; entries above 709 overflow and are refused.
    D : array, shape (d_inner,), optional (zero if omitted)

    Notes
    -----
    Simplifications: no gate branch (``SiLU(z)`` multiplying the output), no
    short causal convolution before the scan, no output projection, no bias of
    ``Delta``, and ``B_bar = Delta B`` (Mamba's Euler step for ``B``, ZOH for ``A``).
    **Operator.** Unrolling, ``y^c_t = sum_{s<=t} alpha^c_ts u^c_s + D_c u^c_t`` with
    ``alpha^c_ts = C_t^T (exp(A^c sum_{r=s+1}^t Delta^c_r) * Delta^c_s B_s)``, the
    per-channel "hidden attention" (Ali, Zimerman & Wolf 2024). With
    ``u_s = W_in x_s``: ``W_ts(X) = diag_c(alpha^c_ts + D_c delta_ts) W_in``, whose
    span lies in ``span{e_c e_c^T W_in}``: interaction rank ``<= d_inner``.
    """

    def __init__(self, W_in, W_delta, W_B, W_C, A_log, D=None):
        W_in = _param("W_in", W_in, 2, "(d_inner, d)")
        check_nonempty("W_in", W_in, 0, "the inner width d_inner")
        check_nonempty("W_in", W_in, 1, "the token width d")
        e = W_in.shape[0]
        W_delta = _param("W_delta", W_delta, 2, "(d_inner, d_inner)")
        check_size("W_delta", W_delta, 0, e, "the inner width d_inner of W_in")
        check_size("W_delta", W_delta, 1, e, "the inner width d_inner of W_in")
        W_B = _param("W_B", W_B, 2, "(N, d_inner)")
        check_nonempty("W_B", W_B, 0, "the state size N")
        check_size("W_B", W_B, 1, e, "the inner width d_inner of W_in")
        W_C = _param("W_C", W_C, 2, "(N, d_inner)")
        check_size("W_C", W_C, 0, W_B.shape[0], "the state size N of W_B")
        check_size("W_C", W_C, 1, e, "the inner width d_inner of W_in")
        A_log = _param("A_log", A_log, 2, "(d_inner, N)")
        if A_log.shape != (e, W_B.shape[0]):
            raise ValueError(f"A_log must have shape (d_inner, N) = {(e, W_B.shape[0])}; got {A_log.shape}")
        if np.any(A_log > _LOG_MAX):
            raise ValueError(f"A_log must be at most {_LOG_MAX:.0f}: A = -exp(A_log) overflows beyond it; got "
                             f"max A_log = {np.max(A_log):.4g}")
        D = np.zeros(e) if D is None else _param("D", D, 1, "(d_inner,)")
        check_size("D", D, 0, e, "the inner width d_inner of W_in")
        self.W_in, self.W_delta, self.W_B, self.W_C, self.A_log, self.D = W_in, W_delta, W_B, W_C, A_log, D
        self.A = -np.exp(A_log)
        self.d_inner, self.d = W_in.shape
        self.N = W_B.shape[0]
        self.p = self.d_inner

    def __repr__(self):
        return f"Mamba(d={self.d}, d_inner={self.d_inner}, N={self.N})"

    def _projections(self, X):
        with np.errstate(over="ignore", invalid="ignore"):
            U = X @ self.W_in.T
            Z = U @ self.W_delta.T
            Delta = _softplus(Z)
            Bt, Ct = U @ self.W_B.T, U @ self.W_C.T
        for M, what in ((U, "u = W_in x"), (Delta, "Delta = softplus(W_delta u)"), (Bt, "B_t = W_B u"),
                        (Ct, "C_t = W_C u")):
            _finite_or_raise(M, _scale_message(what))
        return U, Z, Delta, Bt, Ct

    def forward(self, X) -> np.ndarray:
        """The sequential selective scan; shape ``(n, d_inner)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, self.d_inner), "the outputs", "use a shorter X")
        check_total("X", float(n) * (5 * self.d_inner + 2 * self.N), "the projections u, Delta, B_t, C_t and the "
                    "outputs", "use a shorter X")
        _check_scan(n, n)
        U, _, Delta, Bt, Ct = self._projections(X)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            Y = _selective_scan(U, Delta, Bt, Ct, self.A, self.D)
        return _finite_or_raise(Y, _scale_message("the state h_t"))

    def coefficients(self, X) -> np.ndarray:
        """The hidden attention ``alpha[c, t, s]`` (zero for ``s > t``, without ``D``), shape ``(d_inner, n, n)``."""
        return self._coefficients(self._input(X))

    def _coefficient_entries(self, n: int) -> float:
        """Numbers held by :meth:`coefficients` at its peak: the segment sums and their masked copies
        ``(d_inner, n, n)``, and three arrays of decays ``(d_inner, n, n, N)``."""
        return float(self.d_inner) * n * n * (3 * self.N + 5) + 8.0 * n * (self.d_inner + self.N)

    def _interaction_entries(self, n: int) -> float:
        """Numbers held by :meth:`interaction`: the coefficients' peak, or ``alpha`` and ``W``."""
        return max(self._coefficient_entries(n), float(n) * n * self.d_inner * (2 * self.d + 1))

    def _coefficients(self, X):
        n = X.shape[0]
        check_allocation("X", (self.d_inner, n, n, self.N), "the decays of every channel, pair and state",
                         _NO_OPERATOR)
        check_total("X", self._coefficient_entries(n), "the hidden-attention weights and the decays they are "
                    "built from", _NO_OPERATOR)
        _, _, Delta, Bt, Ct = self._projections(X)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            seg = _segsum(Delta.T)  # (d_inner, t, s): sum_{r=s+1}^t Delta_r, -inf for s > t
            causal = np.isfinite(seg)
            seg = np.where(causal, seg, 0.0)
            decay = np.exp(seg[..., None] * self.A[:, None, None, :]) * causal[..., None]  # (c, t, s, N)
            alpha = np.einsum("ctsm,tm,sm,sc->cts", decay, Ct, Bt, Delta)
        return _finite_or_raise(alpha, _scale_message("a hidden-attention weight"))

    def interaction(self, X) -> np.ndarray:
        """``W[t, s] = diag_c(alpha^c_ts + D_c delta_ts) W_in``; shape ``(n, n, d_inner, d)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, n, self.d_inner, self.d), "the operator W", _NO_OPERATOR)
        _check_operator_total(n, self)
        alpha = self._coefficients(X)
        idx = np.arange(n)
        alpha[:, idx, idx] += self.D[:, None]
        return np.einsum("cts,cd->tscd", alpha, self.W_in)

    def jacobian(self, X) -> np.ndarray:
        """The full Jacobian ``J[t, s] = dy_t / dx_s`` (through ``Delta``, ``B``, ``C`` too), shape ``(n, n, d_inner, d)``.

        Forward-mode: the tangents of the scan for all ``n d`` input directions at
        once, ``dh_t = d(A_bar_t) * h_{t-1} + A_bar_t * dh_{t-1} + d(B_bar_t u_t)``. Exact
        to rounding (checked against finite differences in the tests).
        """
        X = self._input(X)
        n = X.shape[0]
        m = n * self.d
        check_allocation("X", (m, self.d_inner, self.N), "the state tangents", "use a shorter X")
        check_allocation("X", (n, n, self.d_inner, self.d), "the Jacobian", "use a shorter X")
        # J, the tangents and their decayed copy, and one step's (n, d, d_inner) outputs
        check_total("X", float(n) * n * self.d_inner * self.d + 3.0 * m * self.d_inner * self.N
                    + 2.0 * m * self.d_inner, "the Jacobian and the state tangents", "use a shorter X")
        work = float(n) * m * self.d_inner * self.N
        if work > MAX_JACOBIAN_WORK:
            raise ValueError(f"X of length {n} would make the Jacobian's scan update {work:.2e} tangent entries "
                             f"(n^2 d d_inner N), above the limit of {MAX_JACOBIAN_WORK:.0e} (about 10 s here); "
                             "use a shorter X")
        U, Z, Delta, Bt, Ct = self._projections(X)
        A = self.A
        # direction (s, k): dx_s = e_k. du_t is nonzero only at t = s: W_in[:, k].
        dU_at = self.W_in.T  # (d, d_inner): du for direction k at its own token
        sig = _sigmoid(Z)  # (n, d_inner)
        J = np.zeros((n, n, self.d_inner, self.d))
        h = np.zeros((self.d_inner, self.N))
        dh = np.zeros((n, self.d, self.d_inner, self.N))  # tangents for all directions (s, k)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for t in range(n):
                # tangents of the step-t quantities: only directions with s = t are nonzero
                du = dU_at  # (d, d_inner)
                dDelta = sig[t][None, :] * (du @ self.W_delta.T)  # (d, d_inner)
                dB = du @ self.W_B.T  # (d, N)
                dC = du @ self.W_C.T  # (d, N)
                a = np.exp(Delta[t][:, None] * A)  # (d_inner, N)
                # every direction: decay the tangent
                dh = a[None, None] * dh
                # directions s = t: add the derivative of a (times h_{t-1}) and of the input term
                da = a[None] * dDelta[:, :, None] * A[None]  # (d, d_inner, N)
                db = (dDelta * U[t][None, :])[:, :, None] * Bt[t][None, None, :] \
                    + (Delta[t] * U[t])[None, :, None] * dB[:, None, :] \
                    + (Delta[t][None, :] * du)[:, :, None] * Bt[t][None, None, :]
                dh[t] += da * h[None] + db
                h = a * h + (Delta[t] * U[t])[:, None] * Bt[t][None, :]
                dy = np.einsum("skcm,m->skc", dh, Ct[t])  # (n, d, d_inner)
                dy[t] += (dC @ h.T) + self.D[None, :] * du  # dC_t . h_t and D du_t
                J[t] = dy.transpose(0, 2, 1)
        return _finite_or_raise(J, _scale_message("the Jacobian"))


class Mamba2(_Layer):
    """The Mamba-2 SSD layer with a scalar-times-identity transition per head (Dao & Gu 2024).

    Derived in Chapter 5, Theorem 5.1 (one SSD head is one factorized head; the chunked form, ``_ssd_chunked``, in Section 5.7).

    ``u_t = W_in x_t`` split into ``heads`` heads of size ``P = d_inner / heads``;
    per head a step ``Delta^h_t = softplus(w_a[h] . x_t + dt_bias[h])`` and a decay
    ``a^h_t = exp(Delta^h_t A_h)`` in ``(0, 1)``, ``A_h = -exp(A_log[h])``;
    ``B_t = W_B x_t``, ``C_t = W_C x_t`` (``N``, shared by the heads); per head
    ``S^h_t = a^h_t S^h_{t-1} + Delta^h_t B_t (u^h_t)^T`` (``N x P``),
    ``y^h_t = (S^h_t)^T C_t``, ``y_t = W_out concat_h(y^h_t)``.

    Parameters
    ----------
    W_in : array, shape (d_inner, d)
    W_out : array, shape (p, d_inner)
    w_a : array, shape (heads, d)
        The step projection (Mamba-2's ``dt`` rows of ``in_proj``): it sets
        ``Delta^h_t`` and so the decay ``a^h_t``.
    W_B, W_C : arrays, shape (N, d)
    heads : int, dividing ``d_inner``
    A_log : array, shape (heads,), optional
        ``A_h = -exp(A_log[h])``; zero if omitted (``A_h = -1``). Entries above 709
        overflow and are refused.
    dt_bias : array, shape (heads,), optional
        Added to ``w_a[h] . x_t`` inside the softplus; zero if omitted.

    Notes
    -----
    As in Mamba-2's reference code, ``Delta`` multiplies the input and sets the decay:
    ``ssd_minimal_discrete`` is called with ``x * dt`` and ``A * dt``
    (``dt = softplus(dt_proj + dt_bias)``, one per head). ``Delta^h_t`` is per head and
    nonlinear in ``x_t``, so it cannot be folded into ``B_t``, which is linear in
    ``x_t`` and shared by the heads. Left out: the gate ``silu(z)`` and its RMSNorm,
    the short convolution, ``D``.
    **Operator.** Unrolling, ``y^h_t = sum_{s<=t} L^h_ts Delta^h_s (C_t^T B_s) u^h_s``
    with ``L^h_ts = prod_{r=s+1}^t a^h_r``, so
    ``W_ts(X) = sum_h L^h_ts Delta^h_s (C_t^T B_s) W_out^h W_in^h``: each head one
    scalar times one matrix, rank 1 whatever ``N``; ``heads`` heads give rank
    ``<= heads``.
    """

    def __init__(self, W_in, W_out, w_a, W_B, W_C, heads, A_log=None, dt_bias=None):
        W_in = _param("W_in", W_in, 2, "(d_inner, d)")
        check_nonempty("W_in", W_in, 0, "the inner width d_inner")
        check_nonempty("W_in", W_in, 1, "the token width d")
        e, d = W_in.shape
        W_out = _param("W_out", W_out, 2, "(p, d_inner)")
        check_nonempty("W_out", W_out, 0, "the output width p")
        check_size("W_out", W_out, 1, e, "the inner width d_inner of W_in")
        heads = check_positive_int("heads", heads)
        if e % heads:
            raise ValueError(f"heads must divide the inner width d_inner = {e} of W_in; got heads = {heads}")
        w_a = _param("w_a", w_a, 2, "(heads, d)")
        check_size("w_a", w_a, 0, heads, "the number of heads")
        check_size("w_a", w_a, 1, d, "the token width d of W_in")
        W_B = _param("W_B", W_B, 2, "(N, d)")
        check_nonempty("W_B", W_B, 0, "the state size N")
        check_size("W_B", W_B, 1, d, "the token width d of W_in")
        W_C = _param("W_C", W_C, 2, "(N, d)")
        check_size("W_C", W_C, 0, W_B.shape[0], "the state size N of W_B")
        check_size("W_C", W_C, 1, d, "the token width d of W_in")
        A_log = np.zeros(heads) if A_log is None else _param("A_log", A_log, 1, "(heads,)")
        check_size("A_log", A_log, 0, heads, "the number of heads")
        if np.any(A_log > _LOG_MAX):
            raise ValueError(f"A_log must be at most {_LOG_MAX:.0f}: A = -exp(A_log) overflows beyond it; got "
                             f"max A_log = {np.max(A_log):.4g}")
        dt_bias = np.zeros(heads) if dt_bias is None else _param("dt_bias", dt_bias, 1, "(heads,)")
        check_size("dt_bias", dt_bias, 0, heads, "the number of heads")
        self.W_in, self.W_out, self.w_a, self.W_B, self.W_C = W_in, W_out, w_a, W_B, W_C
        self.A_log, self.dt_bias, self.A = A_log, dt_bias, -np.exp(A_log)
        self.heads, self.d_inner, self.d = heads, e, d
        self.P, self.N, self.p = e // heads, W_B.shape[0], W_out.shape[0]

    def __repr__(self):
        return f"Mamba2(d={self.d}, p={self.p}, d_inner={self.d_inner}, heads={self.heads}, N={self.N})"

    def _projections(self, X):
        """``U (n, heads, P)``, the steps ``Delta (n, heads)``, ``log a = Delta A (n, heads)``, ``B_t``, ``C_t``."""
        with np.errstate(over="ignore", invalid="ignore"):
            U = X @ self.W_in.T
            Delta = _softplus(X @ self.w_a.T + self.dt_bias)  # (n, heads), > 0
            log_a = Delta * self.A  # (n, heads), <= 0
            Bt, Ct = X @ self.W_B.T, X @ self.W_C.T
        for M, what in ((U, "u = W_in x"), (Delta, "Delta = softplus(w_a x + dt_bias)"),
                        (log_a, "log a = Delta A"), (Bt, "B_t = W_B x"), (Ct, "C_t = W_C x")):
            _finite_or_raise(M, _scale_message(what))
        return U.reshape(-1, self.heads, self.P), Delta, log_a, Bt, Ct

    def steps(self, X) -> np.ndarray:
        """The steps ``Delta[t, h] = softplus(w_a[h] . x_t + dt_bias[h])``, shape ``(n, heads)``."""
        return self._projections(self._input(X))[1]

    def _out(self, Yh):
        with np.errstate(over="ignore", invalid="ignore"):
            Y = Yh.reshape(Yh.shape[0], self.d_inner) @ self.W_out.T
        return _finite_or_raise(Y, _scale_message("the output"))

    def forward(self, X) -> np.ndarray:
        """The recurrence, one ``N x P`` state per head; shape ``(n, p)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, self.d_inner), "the head outputs", "use a shorter X")
        check_total("X", float(n) * (3 * self.d_inner + 4 * self.heads + 2 * self.N + self.p), "the projections "
                    "and the head outputs", "use a shorter X")
        _check_scan(n, n, "use ssd_forward(X, chunk) or a shorter X")
        U, Delta, log_a, Bt, Ct = self._projections(X)
        a = np.exp(log_a)
        S = np.zeros((self.heads, self.N, self.P))
        Yh = np.empty((n, self.heads, self.P))
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            for t in range(n):
                # S^h_t = a^h_t S^h_(t-1) + Delta^h_t B_t (u^h_t)^T
                S = a[t][:, None, None] * S + Bt[t][None, :, None] * (Delta[t][:, None] * U[t])[:, None, :]
                Yh[t] = np.einsum("hmp,m->hp", S, Ct[t])
        return self._out(Yh)

    def ssd_forward(self, X, chunk: int) -> np.ndarray:
        """The chunked SSD algorithm (Dao & Gu 2024, section 6; ``ssd_minimal``); shape ``(n, p)``.

        Called, as Mamba-2's reference ``ssd_minimal_discrete``, with the inputs scaled
        by the steps, ``Delta^h_t u^h_t``, and ``log a = Delta A``. Per chunk: the
        quadratic (attention-like) form ``(L * C B^T) (Delta U)`` inside it, plus the
        state carried in, ``exp(cumsum log a) C^T S``; the chunk's final state
        ``S <- exp(sum log a) S + sum_s exp(sum_{r>s} log a_r) B_s (Delta_s u_s)^T``
        is passed to the next chunk.
        """
        X = self._input(X)
        chunk = check_positive_int("chunk", chunk)
        n = X.shape[0]
        c = min(chunk, n)
        check_allocation("chunk", (self.heads, c, c), "the within-chunk decays", "use a smaller chunk")
        # per chunk: the segment sums and their masked copies, the decays L and C B^T (heads x c x c);
        # over the whole sequence: the projections, the scaled inputs and the head outputs
        check_total("chunk", (3.0 * self.heads + 2.0) * c * c + float(n) * (4 * self.d_inner + 4 * self.heads
                                                                          + 2 * self.N + self.p),
                    "the arrays of one chunk (its heads x chunk x chunk decays) and of the sequence",
                    "use a smaller chunk")
        _check_chunks(n, c)
        U, Delta, log_a, Bt, Ct = self._projections(X)
        with np.errstate(over="ignore", invalid="ignore", under="ignore"):
            Yh = _ssd_chunked(Delta[:, :, None] * U, log_a, Bt, Ct, c)
        return self._out(Yh)

    def coefficients(self, X) -> np.ndarray:
        """``alpha[h, t, s] = L^h_ts Delta^h_s C_t^T B_s`` (zero for ``s > t``), shape ``(heads, n, n)``."""
        return self._coefficients(self._input(X))

    def _coefficient_entries(self, n: int) -> float:
        """Numbers held by :meth:`coefficients` at its peak: the weights (``heads x n x n``) and one block
        of rows of the segment sums, their decays and ``C B^T``."""
        return float(self.heads) * n * n + _BLOCK_ARRAYS * min(_BLOCK_ENTRIES, float(self.heads) * n * n) \
            + float(n) * (3 * self.d_inner + 4 * self.heads + 2 * self.N)

    def _interaction_entries(self, n: int) -> float:
        """Numbers held by :meth:`interaction`: the coefficients' peak, or ``alpha``, its copy for the
        product over the heads, and ``W``."""
        return max(self._coefficient_entries(n), float(n) * n * (2 * self.heads + self.p * self.d))

    def _coefficients(self, X):
        n = X.shape[0]
        check_allocation("X", (self.heads, n, n), "the weights alpha", _NO_OPERATOR)
        check_total("X", self._coefficient_entries(n), "the weights alpha and the segment sums they are built "
                    "from", _NO_OPERATOR)
        _, Delta, log_a, Bt, Ct = self._projections(X)
        la, dt = log_a.T, Delta.T  # (heads, n)
        alpha = np.zeros((self.heads, n, n))
        # L_ts = exp(sum_{r=s+1}^t log a_r), block of rows by block of rows (the columns s < b of rows
        # [a, b)): the block's running sums of log a_r plus those carried from the row above it. Every
        # term is <= 0, so each sum is accurate relative to itself, as in _segsum.
        carry = np.zeros((self.heads, 1, 0))  # sum_{r=s+1}^{a-1} log a_r of the row above (s < a)
        rows = max(1, _BLOCK_ENTRIES // (self.heads * n))
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):
            for a in range(0, n, rows):
                b = min(a + rows, n)
                strict = np.arange(a, b)[:, None] > np.arange(b)[None, :]  # r > s
                seg = np.cumsum(np.where(strict, la[:, a:b, None], 0.0), axis=1)
                seg[:, :, :a] += carry
                carry = seg[:, -1:, :]
                causal = np.arange(a, b)[:, None] >= np.arange(b)[None, :]  # s <= t
                block = np.exp(seg, where=causal, out=np.zeros_like(seg))
                block *= dt[:, None, :b]
                block *= Ct[a:b] @ Bt[:b].T
                alpha[:, a:b, :b] = block
        return _finite_or_raise(alpha, _scale_message("a weight L Delta C^T B"))

    def value_maps(self) -> np.ndarray:
        """``V_h = W_out^h W_in^h`` (``W_out`` columns and ``W_in`` rows of head ``h``), shape ``(heads, p, d)``."""
        Wo = self.W_out.reshape(self.p, self.heads, self.P)
        Wi = self.W_in.reshape(self.heads, self.P, self.d)
        return np.einsum("phq,hqd->hpd", Wo, Wi)

    def interaction(self, X) -> np.ndarray:
        """``W[t, s] = sum_h alpha^h_ts V_h``; shape ``(n, n, p, d)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, n, self.p, self.d), "the operator W", _NO_OPERATOR)
        _check_operator_total(n, self)
        # W[t, s] = sum_h alpha[h, t, s] V_h: one product over the heads
        return np.tensordot(self._coefficients(X), self.value_maps(), axes=(0, 0))


# ----------------------------------------------------------------------------------------------
# Stacks


#: Most floating-point operations :meth:`Hybrid.interaction` spends on multiplying its layers'
#: operators (``2 n^3 p q d`` per product): 2e10, about a second here (``n`` near 1000 for
#: width 2).
MAX_COMPOSE_FLOPS = 2e10


def _layer_entries(layer, n: int) -> float:
    """A layer's working set in ``interaction`` for ``n`` tokens: its own estimate where it has one,
    else four arrays of the operator's size."""
    own = getattr(layer, "_interaction_entries", None)
    return float(own(n)) if callable(own) else 4.0 * n * n * layer.p * layer.d


class Hybrid(_Layer):
    """A stack of layers, e.g. an SSM layer then an attention layer: ``forward`` is the composition.

    Derived in Chapter 5, Proposition 5.7 (the composed operator).

    Parameters
    ----------
    layers : sequence of layers
        Each with ``d``, ``p``, ``forward`` and ``interaction`` (any layer of
        :mod:`ssmheads.models` or of this module); the ``p`` of each must equal the
        ``d`` of the next.

    Notes
    -----
    With ``Y^0 = X`` and ``Y^k = layer_k(Y^{k-1}) = W^k(Y^{k-1}) Y^{k-1}``,
    substituting gives ``y_t = sum_s [sum_r W^2_tr(Y^1) W^1_rs(X)] x_s`` for two
    layers, so :meth:`interaction` returns the product
    ``W(X) = W^L(Y^{L-1}) ... W^1(X)`` of the layers' own operators, each
    evaluated at the input it sees. It is an exact interaction form
    (``forward(X) = W(X) X``), but one of many (every map with F(0) = 0 has an
    interaction form, Proposition 1.1): it is the one that the layers' natural forms define, not a canonical operator of the
    function, and not its Jacobian (the Jacobian also differentiates ``W^k``). Its
    span can exceed each layer's: products ``V^2_a V^1_b`` of the layers' value
    maps appear.
    """

    def __init__(self, layers):
        if isinstance(layers, (str, bytes)) or not hasattr(layers, "__len__"):
            raise ValueError(f"layers must be a list of layers; got {type(layers).__name__}")
        layers = list(layers)
        if not layers:
            raise ValueError("layers must contain at least one layer; got an empty list")
        for k, layer in enumerate(layers):
            for attr in ("d", "p", "forward", "interaction"):
                if not hasattr(layer, attr):
                    raise ValueError(f"layers[{k}] must be a layer with d, p, forward and interaction; got "
                                     f"{type(layer).__name__} without {attr!r}")
            if k and layer.d != layers[k - 1].p:
                raise ValueError(f"layers[{k}] takes tokens of width d = {layer.d}, but layers[{k - 1}] outputs "
                                 f"width p = {layers[k - 1].p}; the widths must chain")
        self.layers = tuple(layers)
        self.d, self.p = layers[0].d, layers[-1].p

    def __repr__(self):
        return "Hybrid([" + ", ".join(repr(layer) for layer in self.layers) + "])"

    def forward(self, X) -> np.ndarray:
        """``layer_L(... layer_1(X))``; shape ``(n, p)``."""
        Y = self._input(X)
        for layer in self.layers:
            Y = layer.forward(Y)
        return Y

    def _interaction_entries(self, n: int) -> float:
        """Numbers held by :meth:`interaction` at its peak: at layer ``k``, the product so far and its
        reshaped copy, with the layer's own operator (its working set), its reshaped copy and the new
        product; at the end the product and its contiguous copy."""
        nn = float(n) * n
        peak, held = 0.0, 0.0
        for k, layer in enumerate(self.layers):
            own = _layer_entries(layer, n)
            if k:
                peak = max(peak, held + nn * layer.d * self.d
                           + max(own, nn * layer.p * (2 * layer.d + self.d)))
            else:
                peak = own
            held = nn * layer.p * self.d
        return max(peak, 2 * held)

    def _compose_flops(self, n: int) -> float:
        """Floating-point operations of the products ``W^k W`` (``2 n^3 p_k q_k d`` each)."""
        return sum(2.0 * float(n) ** 3 * layer.p * layer.d * self.d for layer in self.layers[1:])

    def interaction(self, X) -> np.ndarray:
        """``W = W^L(Y^{L-1}) ... W^1(X)`` (block-matrix product over the middle tokens); shape ``(n, n, p, d)``.

        Refused, with a ``ValueError`` naming ``X``, when the working set (the product so far, the
        next layer's operator, their reshaped copies and the new product) would exceed 2 GiB, or the
        products would take more than ``MAX_COMPOSE_FLOPS`` operations (about a second).
        """
        Y = self._input(X)
        n = Y.shape[0]
        for layer in self.layers:
            check_allocation("X", (n, n, layer.p, layer.d), "a layer's operator", _NO_OPERATOR)
        check_total("X", self._interaction_entries(n), "the layers' operators and their product (the composed "
                    "operator W)", _NO_OPERATOR)
        flops = self._compose_flops(n)
        if flops > MAX_COMPOSE_FLOPS:
            raise ValueError(f"X of length {n} would make the product of the layers' operators cost {flops:.2e} "
                             f"floating-point operations (2 n^3 p q d per layer after the first), above the limit "
                             f"of {MAX_COMPOSE_FLOPS:.0e} (about a second here); {_NO_OPERATOR}")
        W = None
        for layer in self.layers:
            Wk = layer.interaction(Y)
            if W is None:
                W = Wk
            else:
                q = Wk.shape[3]
                left = Wk.transpose(0, 2, 1, 3).reshape(n * layer.p, n * q)
                right = W.transpose(0, 2, 1, 3).reshape(n * q, n * self.d)
                with np.errstate(over="ignore", invalid="ignore"):
                    W = (left @ right).reshape(n, layer.p, n, self.d).transpose(0, 2, 1, 3)
                _finite_or_raise(W, _scale_message("the composed operator"))
            Y = layer.forward(Y)
        return np.ascontiguousarray(W)


# ----------------------------------------------------------------------------------------------
# The summary table


class MarkdownText(str):
    """A string that a notebook shows as Markdown; its plain-text form is the Markdown source.

    Used in Chapter 5, Section 5.13.
    """

    def _repr_markdown_(self) -> str:
        return str(self)

    def __repr__(self) -> str:
        return str(self)


@dataclasses.dataclass(frozen=True)
class RankRow:
    """One row of :func:`rank_table`.

    Used in Chapter 5, Section 5.13.

    Attributes
    ----------
    architecture : str
    rank : int
        Interaction rank: dimension of the span of all blocks ``W_ij(X)`` over the
        table's random inputs (:func:`~ssmheads.span.interaction_rank`).
    heads : int or None
        For a time-invariant layer, the heads the head-count theorem (Theorem 3.1) needs (the dimension of
        its lag span ``k(n)``); ``None`` for input-dependent layers.
    gradient_ratio : float
        ``||dy_n / dx_1||_F / ||dy_n / dx_n||_F`` (Frobenius norms) on the table's
        first input: how much gradient crosses the whole sequence relative to the
        local one.
    cost : str
        Forward cost per token of the layer's sequence mixing (projections left
        out), as ``O(.)`` for each form: a label read off the algorithm, not a
        measurement. ``n_c`` is a chunk size; the chunked labels include the state
        term (``d_k p`` for retention, ``N P`` per SSD head).
    forms : str
        The forms compared (``interaction`` is ``apply_interaction(interaction(X), X)``).
    gap : float
        Largest relative gap (:func:`~ssmheads.numerics.relative_gap`) between
        ``forward`` and every other form, over the table's inputs.
    """

    architecture: str
    rank: int
    heads: int | None
    gradient_ratio: float
    cost: str
    forms: str
    gap: float


@dataclasses.dataclass(frozen=True)
class RankTable:
    """The rows of :func:`rank_table`; ``str()`` and :meth:`to_markdown` print it with fixed precision.

    Used in Chapter 5, Section 5.13.

    In a notebook the table shows as a Markdown table (``_repr_markdown_``); its plain
    text form is the same Markdown source.
    """

    n: int
    seed: int
    rows: tuple

    #: The columns of :meth:`to_markdown`: ``part`` -> (header, cell of a row) pairs.
    _PARTS = {
        "ranks": ("interaction rank", "heads (LTI, $k(n)$)", "gradient ratio", "largest gap"),
        "costs": ("cost per token", "forms that agree"),
    }

    def to_markdown(self, part: str | None = None) -> MarkdownText:
        """A Markdown table: all columns, or ``part="ranks"`` or ``part="costs"``.

        The gradient ratio has 1 significant digit (it is a reading of one random instance,
        some of it by central differences); the gap is printed as ``< 1e-12``
        when it is below ``1e-12`` (rounding level at these sizes, so the printed text
        does not depend on the last bits), else as the next power of ten above it.
        """
        if part is not None and part not in self._PARTS:
            raise ValueError(f"part must be None, 'ranks' or 'costs'; got {part!r}")
        headers = self._PARTS["ranks"] + self._PARTS["costs"] if part is None else self._PARTS[part]
        lines = ["| architecture | " + " | ".join(headers) + " |", "|---" * (len(headers) + 1) + "|"]
        for r in self.rows:
            gap = "< 1e-12" if r.gap < 1e-12 else f"< 1e{math.floor(math.log10(r.gap)) + 1}"
            cells = {"interaction rank": str(r.rank), "heads (LTI, $k(n)$)": "—" if r.heads is None else str(r.heads),
                     "gradient ratio": f"{r.gradient_ratio:.1g}", "largest gap": gap,
                     "cost per token": r.cost, "forms that agree": r.forms}
            lines.append(f"| {r.architecture} | " + " | ".join(cells[h] for h in headers) + " |")
        return MarkdownText("\n".join(lines))

    def __str__(self) -> str:
        return self.to_markdown()

    def __repr__(self) -> str:
        return self.to_markdown()

    def _repr_markdown_(self) -> str:
        return self.to_markdown()


def _gradient_ratio(layer, X):
    """``||dy_n/dx_0|| / ||dy_n/dx_n||``: the last output row of the Jacobian (exact or central differences)."""
    if hasattr(layer, "jacobian"):
        row = layer.jacobian(X)[-1]
    else:
        eps = 1e-6
        n, d = X.shape
        row = np.empty((n, layer.p, d))
        for j in range(n):
            for c in range(d):
                step = np.zeros_like(X)
                step[j, c] = eps
                row[j, :, c] = (layer.forward(X + step)[-1] - layer.forward(X - step)[-1]) / (2 * eps)
    local = float(np.linalg.norm(row[-1]))
    return float(np.linalg.norm(row[0])) / local if local > 0 else float("inf")


def _rank_layers(rng, d):
    """The table's layers: ``(name, layer, heads function or None, cost, alternative forms)``."""
    g = rng.standard_normal
    e, N = d, 4
    dk = 4

    def att():
        return g((dk, d)) / np.sqrt(d), g((dk, d)) / np.sqrt(d), g((d, d)) / np.sqrt(d)

    # S5 as published: modes, rows of B and columns of C in conjugate pairs (C h real)
    lam = -np.exp(g(N // 2)) + 1j * np.pi * rng.uniform(0.1, 1.0, N // 2)
    B_half, C_half = g((N // 2, d)) + 1j * g((N // 2, d)), g((d, N // 2)) + 1j * g((d, N // 2))
    s5 = S5(np.concatenate([lam, lam.conj()]), np.vstack([B_half, B_half.conj()]),
            np.hstack([C_half, C_half.conj()]), 0.5)
    s4d = S4D(-np.exp(g((d, N))) + 1j * g((d, N)), g((d, N)), g((d, N)) + 1j * g((d, N)),
              np.exp(g(d) - 1.0))
    conv = Convolution(g((3, d, d)))
    pos = PositionwiseLinear(g((d, d)))
    mha = MultiHeadAttention(g((2, dk, d)), g((2, dk, d)), g((2, 2, d)), g((2, d, 2)))
    mamba = Mamba(g((e, d)), g((e, e)), g((N, e)), g((N, e)), g((e, N)) * 0.5, g(e))

    def ssd(heads):
        return Mamba2(g((6, d)), g((d, 6)), g((heads, d)), g((N, d)), g((N, d)), heads)

    hyb = Hybrid([S4D(-np.exp(g((2, N))) + 1j * g((2, N)), g((2, N)), g((2, N)), np.ones(2)),
                  MultiHeadAttention(g((2, dk, 2)), g((2, dk, 2)), g((2, 2, 2)), g((2, 2, 2)))])

    def lags_rank(layer):
        return lambda n: _rank(layer._lag_operators(n))

    def conv_heads(n):
        return _rank(conv.kernel[:n])

    def pos_heads(n):
        return _rank(pos.W[None])  # its one lag operator, K_0 = W

    ssd1, ssd3 = ssd(1), ssd(3)
    la = LinearAttention(*att())
    ret = Retention(*att(), gamma=0.9, theta=0.3)
    parallel = "$O(n(d_k+p))$ parallel"
    ssd_cost = r"$O(NHP)$ recurrent, $O(n_c(N+P)+NP)$ per head chunked"
    return [
        ("position-wise linear", pos, pos_heads, "$O(pd)$", {}),
        ("causal convolution, 3 taps", conv, conv_heads, "$O(wpd)$", {}),
        ("LTI SSM (S5, MIMO)", s5, s5._heads_needed, "$O(N(d+p))$ recurrent",
         {"as LinearSSM": s5.as_linear_ssm().forward}),
        ("S4D (SISO per channel)", s4d, lags_rank(s4d), r"$O(dN)$ recurrent, $O(d\log n)$ FFT",
         {"convolution": s4d.convolution_forward}),
        ("linear attention", la, None, f"$O(d_kp)$ recurrent, {parallel}", {"recurrent": la.recurrent_forward}),
        ("retention (RetNet)", ret, None, f"$O(d_kp)$ recurrent, {parallel}, $O(n_c(d_k+p)+d_kp)$ chunkwise",
         {"recurrent": ret.recurrent_forward, "chunkwise(5)": lambda X: ret.chunkwise_forward(X, 5)}),
        ("ALiBi softmax head", ALiBiAttention(*att(), slope=0.5), None, "$O(n(d_k+p))$", {}),
        ("RoPE softmax head", RoPEAttention(*att()), None, "$O(n(d_k+p))$", {}),
        ("softmax MHA, 2 heads", mha, None, "$O(nH(d_k+d_v))$", {}),
        ("Mamba-1 selective scan", mamba, None, r"$O(d_{\rm inner}N)$ recurrent", {}),
        ("Mamba-2 SSD, 1 head", ssd1, None, ssd_cost, {"ssd(5)": lambda X: ssd1.ssd_forward(X, 5)}),
        ("Mamba-2 SSD, 3 heads", ssd3, None, ssd_cost, {"ssd(5)": lambda X: ssd3.ssd_forward(X, 5)}),
        ("hybrid: S4D then 2-head MHA", hyb, None, "sum of its layers'", {}),
    ]


def rank_table(n: int = 16, seed: int = 0, inputs: int = 3) -> RankTable:
    """The summary table of Chapter 5, every number computed.

    Used in Chapter 5, Section 5.13.

    One row per architecture (position-wise linear, convolution, S5, S4D, linear
    attention, retention, ALiBi, RoPE, softmax multi-head attention, Mamba-1,
    Mamba-2 with one and three heads, a hybrid), each a random instance drawn
    from ``seed`` with token width 4 (2 for the hybrid). See :class:`RankRow` for
    the columns.

    Parameters
    ----------
    n : int
        Sequence length, ``2 <= n <= 128`` (the table builds ``inputs`` operators per row).
    seed : int
        Seed of the weights and of the random inputs.
    inputs : int
        Number of random inputs over which the span is taken, ``1 <= inputs <= 8``.

    Returns
    -------
    RankTable
        ``.rows`` a tuple of :class:`RankRow`; ``str(table)`` (or ``.to_markdown()``)
        the table with fixed precision.
    """
    n = check_positive_int("n", n, minimum=2)
    if n > 128:
        raise ValueError(f"n must be at most 128 for rank_table (it builds several n x n operators and "
                         f"Jacobians per row); got n = {n}")
    seed = check_seed(seed)
    inputs = check_positive_int("inputs", inputs)
    if inputs > 8:
        raise ValueError(f"inputs must be at most 8; got {inputs}")
    rng = np.random.default_rng(seed)
    rows = []
    for name, layer, heads_fn, cost, alternatives in _rank_layers(rng, 4):
        Xs = [rng.standard_normal((n, layer.d)) for _ in range(inputs)]
        blocks, gap = [], 0.0
        for X in Xs:
            W = layer.interaction(X)
            blocks.append(W.reshape(n * n, layer.p, layer.d))
            ref = layer.forward(X)
            gap = max(gap, relative_gap(_apply(W, X), ref))
            for form in alternatives.values():
                gap = max(gap, relative_gap(form(X), ref))
        rank = _rank(np.concatenate(blocks))
        rows.append(RankRow(name, rank, None if heads_fn is None else int(heads_fn(n)),
                            _gradient_ratio(layer, Xs[0]), cost,
                            ", ".join(["forward", "interaction"] + list(alternatives)), gap))
    return RankTable(n, seed, tuple(rows))
