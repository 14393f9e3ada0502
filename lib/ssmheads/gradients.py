"""Jacobians across distance: the gradient highway of attention, the decay of SSMs (Chapter 4).

``J[i, j] = d y_i / d x_j`` has shape ``(n, n, p, d)``, like an interaction
operator. For a linear layer it *is* the operator (Chapter 1). For softmax
attention it adds two terms that come from differentiating the weights (the
Jacobian of a softmax head, Proposition 4.1): for each head, with
``o_i = sum_m a_im v_m``,

* value path ``a_ij W_O W_V``;
* key path ``a_ij W_O (v_j - o_i) (W_K^T q_i)^T / sqrt(d_k)``;
* query path, at ``j = i`` only, ``sum_m a_im W_O (v_m - o_i) (W_Q^T k_m)^T / sqrt(d_k)``.

Trainability with capacity held fixed: a diagonal complex SSM that *can* represent a
delay, trained by Adam on the exact white-noise loss of the delay-``L`` task
(:func:`train_diagonal_ssm`, :func:`delay_task_sweep`), and one content-based softmax
head with relative-position information trained on associative recall
(:func:`train_recall_head`). All gradients are analytic and tested against finite
differences.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

EPS = float(np.finfo(float).eps)
_GELFAND_MAX_LAG = 100_000  # powers gelfand_constant forms at most, unless max_lag truncates

from ._validate import as_array, check_allocation, check_total, check_nonempty, check_positive_int, check_size
from .heads import FactorizedHeads, SoftmaxSinkHeads
from .models import (MAX_LAGS, Convolution, LinearSSM, MultiHeadAttention, PositionwiseLinear, _check_system,
                     _checked_lags)

__all__ = [
    "jacobian",
    "jacobian_row",
    "finite_difference_jacobian",
    "gradient_profile",
    "highway_input",
    "gelfand_constant",
    "DecayBound",
    "decay_bound",
    "diagonal_ssm_kernel",
    "delay_task_loss",
    "DiagonalSSMResult",
    "train_diagonal_ssm",
    "delay_task_sweep",
    "recall_loss",
    "RecallResult",
    "train_recall_head",
    "recall_eval",
]

_LINEAR_LAYERS = (Convolution, PositionwiseLinear, FactorizedHeads, SoftmaxSinkHeads)


def _check_model(model) -> None:
    if isinstance(model, MultiHeadAttention):
        if model.kernel != "softmax":
            raise ValueError(f"model must use the softmax kernel for an analytic Jacobian; got kernel={model.kernel!r}")
        return
    if not isinstance(model, (LinearSSM,) + _LINEAR_LAYERS):
        raise ValueError("model must be a LinearSSM, MultiHeadAttention (softmax), Convolution, "
                         f"PositionwiseLinear, FactorizedHeads or SoftmaxSinkHeads; got {type(model).__name__}")


def _unit(arr: np.ndarray) -> tuple[np.ndarray, float]:
    """``arr / s`` and ``s``, with ``s`` the power of two nearest ``max |arr|`` (1 for a zero array).

    Dividing by a power of two is exact (short of underflow), so only the overflow is removed."""
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    s = float(2.0 ** np.round(np.log2(top))) if top > 0 else 1.0
    return arr / s, s


def _times(arr: np.ndarray, s: float) -> np.ndarray:
    """``arr * s``, where exact zeros stay zero even if ``s`` has overflowed to infinity."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.where(arr == 0, 0.0, arr * s)


def _attention_rows(mha: MultiHeadAttention, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``d y_i / d x_j`` for the query positions ``rows`` and every key ``j``: shape (len(rows), n, p, d).

    The paths of Proposition 4.1 (the Jacobian of a softmax head; :func:`_attention_paths`) with the guards around them: the
    memory the paths take, and overflow of the queries and keys or of the paths. Per head, with
    ``P_j = W_O v_j``, ``O_i = W_O o_i = sum_m a_im P_m``, ``g_i = W_K^T q_i / sqrt(d_k)`` and
    ``f_m = W_Q^T k_m / sqrt(d_k)``: ``J[i, j] = sum_h [a_ij V_h + a_ij (P_j - O_i) g_i^T]``
    plus, on ``j = i``, the query path ``sum_h sum_m a_im (P_m - O_i) f_m^T``.

    Scale-safe: the weights come from ``MultiHeadAttention._weights`` (finite and exactly
    0 or 1 when the scores overflow), and the paths are formed from the centred values
    ``a_ij (P_j - O_i)`` with ``P``, ``g`` and ``f`` divided by powers of two (exact), the
    scales applied last by :func:`_times`. A saturated head (weight 1 on one key, so ``O_i = P_j``)
    gives an exact zero on its key and query paths, as it should, however large ``X`` is:
    multiplying that zero by a scale that has overflowed would give ``0 * inf = NaN``,
    and :func:`_times` keeps exact zeros. Forming
    ``a P g^T`` and ``a O g^T`` separately would leave the rounding error of two huge
    terms instead (of order ``eps |X|^2``, wrong already at ``|X|`` near 1e10).
    """
    r = rows.size
    n = X.shape[0]
    check_allocation("X", (r, n, mha.p, mha.d), "the Jacobian", "use a shorter X or jacobian_row")
    check_total("X", float(r) * n * (2 * mha.p * mha.d + 2 * mha.H * mha.p + 2 * mha.H),
                "the Jacobian and its per-head paths", "use a shorter X or jacobian_row")
    with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
        Q, K = mha._queries_keys(X)  # (H, n, d_k)
        if not (np.all(np.isfinite(Q)) and np.all(np.isfinite(K))):
            raise ValueError(f"X is too large for this layer: its queries and keys overflow the largest "
                             f"float (max |X| = {np.max(np.abs(X)):.3e}); rescale X")
        scale = 1.0 / np.sqrt(mha.d_k)
        a = mha._weights(Q, K, rows)  # (H, r, n): a_ij
        V = mha.value_maps()  # (H, p, d): V_h = W_O^h W_V^h
        # P, g, f over powers of two sP, sg, sf (exact); the paths are linear in each
        P, sP = _unit(np.einsum("hpd,nd->hnp", V, X))  # (H, n, p)
        g, sg = _unit(np.einsum("hrk,hkd->hrd", Q[:, rows], mha.W_K) * scale)
        f, sf = _unit(np.einsum("hnk,hkd->hnd", K, mha.W_Q) * scale)
        J, key, query = _attention_paths(a, V, P, g, f)
        J += _times(key, sP * sg)
        J[np.arange(r), rows] += _times(query, sP * sf)
    if not np.all(np.isfinite(J)):
        raise ValueError(f"X is too large for this layer: the Jacobian's key and query paths overflow the "
                         f"largest float (max |X| = {np.max(np.abs(X)):.3e}); rescale X")
    return J


def _attention_paths(a, V, P, g, f):
    """The paths of Proposition 4.1 (the Jacobian of a softmax head).

    Core of :func:`jacobian` and :func:`jacobian_row` for attention, at
    r query positions i, summed over the H heads. Per head h: ``a``
    (H, r, n) the weights a_ij; ``V`` (H, p, d) the value maps
    V_h = W_O^h W_V^h; ``P`` (H, n, p) the values P_j = V_h x_j;
    ``g`` (H, r, d) g_i = W_K^T q_i / sqrt(d_k); ``f`` (H, n, d)
    f_m = W_Q^T k_m / sqrt(d_k). Returns the value path and the key
    path, each (r, n, p, d), and the query path (r, p, d), which
    belongs at j = i.
    """
    r, H = a.shape[1], a.shape[0]
    # O_i = sum_m a_im P_m: head h's output at query i
    O = np.einsum("hrn,hnp->hrp", a, P)
    # the proof's softmax derivative a_ij (P_j - O_i): (H, r, n, p)
    D = a[:, :, :, None] * (P[:, None, :, :] - O[:, :, None, :])
    # value path sum_h a_ij V_h: (r, n, p, d)
    value = np.tensordot(a, V, axes=(0, 0))
    # score path through k_j: sum_h a_ij (P_j - O_i) g_i^T,
    # as (n p, H) @ (H, d) for each i
    DH = D.transpose(1, 2, 3, 0).reshape(r, -1, H)
    key = (DH @ g.transpose(1, 0, 2)).reshape(value.shape)
    # query path, on j == i only: sum_h sum_m a_im (P_m - O_i) f_m^T
    query = np.einsum("hrmp,hmd->rpd", D, f)
    return value, key, query


def jacobian(model, X) -> np.ndarray:
    """The exact Jacobian ``J[i, j] = d y_i / d x_j`` of a layer at the input ``X``.

    Derived in Chapter 4, Proposition 4.1 (the Jacobian of a softmax head) for attention.
    Derived in Chapter 1, Proposition 1.2 for a linear layer, whose Jacobian is its operator
    (a linear map has one input-independent operator).

    Analytic, no finite differences: the lag operators for :class:`LinearSSM`
    (for every ``X``), the operator for the other linear layers, and the three
    paths of Proposition 4.1, summed over heads, for softmax
    :class:`MultiHeadAttention` (causal or not).

    Parameters
    ----------
    model : LinearSSM, MultiHeadAttention (softmax), Convolution, PositionwiseLinear,
        FactorizedHeads or SoftmaxSinkHeads
    X : array, shape (n, d)

    Returns
    -------
    J : ndarray, shape (n, n, p, d)

    Raises
    ------
    ValueError
        If ``X`` is so large that its queries or keys, or the key and query paths, overflow
        (a saturated softmax at any finite scale is fine: its paths are exactly zero).
    """
    _check_model(model)
    if isinstance(model, MultiHeadAttention):
        X = model._input(X)
        return _attention_rows(model, X, np.arange(X.shape[0]))
    if isinstance(model, FactorizedHeads):
        return _heads_operator(model, model._input(X))  # refuse an integer length for X
    return model.interaction(X)  # a linear layer's Jacobian is its operator; interaction checks X


def _heads_operator(heads, X: np.ndarray) -> np.ndarray:
    """The operator of :class:`FactorizedHeads` or :class:`SoftmaxSinkHeads` at a checked ``X``.

    ``FactorizedHeads.interaction`` takes the length, so ``X`` is not checked again there;
    ``SoftmaxSinkHeads.interaction`` takes only ``X`` (and checks it).
    """
    if isinstance(heads, FactorizedHeads):
        return heads.interaction(X.shape[0])
    return heads.interaction(X)


def _row_arguments(model, X, i) -> tuple[np.ndarray, int]:
    """Check ``model``, ``X`` and the position ``i`` once; ``i`` made nonnegative."""
    _check_model(model)
    X = model._input(X)
    n = X.shape[0]
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
        raise ValueError(f"i must be an integer position in [-{n}, {n}); got {i!r}")
    return X, int(i) % n


def _jacobian_row(model, X: np.ndarray, i: int) -> np.ndarray:
    """Row ``i`` of the Jacobian, ``d y_i / d x_j`` for every ``j``.

    Core of :func:`jacobian_row`, on a checked ``X`` (n, d) and
    ``0 <= i < n``; returns shape (n, p, d).
    """
    n = X.shape[0]
    if isinstance(model, MultiHeadAttention):
        # Proposition 4.1 at the one query position i: value, key and
        # query paths, summed over heads
        return _attention_rows(model, X, np.array([i]))[0]
    if isinstance(model, (FactorizedHeads, SoftmaxSinkHeads)):
        # positional heads are linear: the row of their operator
        # (Chapter 3)
        return _heads_operator(model, X)[i]
    # A linear time-invariant layer: the Jacobian is its operator,
    # d y_i / d x_j = K_{i-j} (Chapter 1, Proposition 1.2), whatever
    # the input
    if isinstance(model, LinearSSM):
        # K_l = C A^l B for l <= i, and K_0 = C B + D
        K = _checked_lags(model.A, model.B, model.C, i + 1, model.D)
    elif isinstance(model, Convolution):
        # its L taps
        K = model.kernel
    else:
        # position-wise: one tap
        K = model.W[None]
    taps = min(i + 1, K.shape[0])
    row = np.zeros((n, model.p, model.d))
    # row[j] = K_{i-j} for j <= i
    row[i + 1 - taps: i + 1] = K[:taps][::-1]
    return row


def jacobian_row(model, X, i: int = -1) -> np.ndarray:
    """One row of the Jacobian, ``d y_i / d x_j`` for every ``j``: shape ``(n, p, d)``.

    Derived in Chapter 4, Proposition 4.1 (the Jacobian of a softmax head) for attention.
    Derived in Chapter 1, Proposition 1.2 for a linear layer, whose Jacobian is its operator
    (a linear map has one input-independent operator). Used in Chapter 4, Section 4.2.

    Costs ``O(n)`` instead of ``O(n^2)`` for attention and SSMs, so it works for long
    sequences. ``i`` may be negative (``-1`` is the last position).

    Parameters
    ----------
    model : as in :func:`jacobian`
    X : array, shape (n, d)
    i : int

    Returns
    -------
    ndarray, shape (n, p, d)
    """
    X, i = _row_arguments(model, X, i)
    return _jacobian_row(model, X, i)


def finite_difference_jacobian(f: Callable[[np.ndarray], np.ndarray], X, eps: float = 1e-6) -> np.ndarray:
    """Central-difference Jacobian of any sequence map, for checking analytic ones.

    Used in Chapter 4, Section 4.1.

    ``J[i, j, :, c] = (f(X + eps E_jc) - f(X - eps E_jc))[i] / (2 eps)``, with ``E_jc``
    the unit change of coordinate ``c`` of token ``j``: ``2 n d`` evaluations of ``f``.

    Parameters
    ----------
    f : callable
        Maps ``(n, d)`` to ``(n, p)``.
    X : array, shape (n, d)
    eps : float
        Step, ``eps > 0``.

    Returns
    -------
    J : ndarray, shape (n, n, p, d)
    """
    if not callable(f):
        raise ValueError(f"f must be a callable mapping X of shape (n, d) to an array of shape (n, p); "
                         f"got {type(f).__name__}")
    X = as_array("X", X, 2, "(n, d)")
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must have at least one token and one feature, shape (n, d) with n, d >= 1; "
                         f"got shape {X.shape}")
    if isinstance(eps, (bool, np.bool_)) or not isinstance(eps, (int, float, np.integer, np.floating)) \
            or not np.isfinite(eps) or not eps > 0:
        raise ValueError(f"eps must be a positive number; got {eps!r}")
    n, d = X.shape

    def evaluate(Z: np.ndarray) -> np.ndarray:
        try:
            raw = np.asarray(f(Z))
            if np.iscomplexobj(raw):
                raise ValueError(f"f must return a real array; it returned a complex one (dtype {raw.dtype}), "
                                 "whose imaginary part a real Jacobian would drop; differentiate its real and "
                                 "imaginary parts as two real maps")
            out = raw.astype(float)
        except Exception as exc:  # noqa: BLE001 - any failure of the caller's f is reported as f's
            if isinstance(exc, ValueError) and str(exc).startswith("f must return a real array"):
                raise
            raise ValueError(f"f must map X of shape {X.shape} to a real array of shape (n, p) = ({n}, p); "
                             f"calling it failed with {type(exc).__name__}: {exc}") from exc
        if out.ndim != 2 or out.shape[0] != n or out.shape[1] < 1:
            raise ValueError(f"f must return an array of shape (n, p) = ({n}, p) with p >= 1 for X of shape "
                             f"{X.shape}; it returned shape {out.shape}")
        if not np.all(np.isfinite(out)):
            raise ValueError(f"f returned NaN or infinity at X perturbed by eps = {eps!r}; the finite-difference "
                             "Jacobian needs finite values (use a smaller eps, or an f finite near X)")
        return out

    p = evaluate(X).shape[1]
    check_allocation("X", (n, n, p, d), "the Jacobian", "use a shorter X or jacobian_row")
    check_total("X", float(n) * n * p * d + 6.0 * n * (p + d), "the Jacobian and the perturbed inputs and outputs",
                "use a shorter X or jacobian_row")
    J = np.empty((n, d, n, p))
    step = np.zeros_like(X)
    for j in range(n):
        for c in range(d):
            step[j, c] = eps
            plus, minus = evaluate(X + step), evaluate(X - step)
            step[j, c] = 0.0
            if plus.shape[1] != p or minus.shape[1] != p:
                raise ValueError(f"f must return the same shape (n, p) = ({n}, {p}) for every input; it returned "
                                 f"{plus.shape} and {minus.shape} at a perturbed X")
            J[j, c] = (plus - minus) / (2 * eps)
    if not np.all(np.isfinite(J)):
        raise ValueError(f"the differences of f overflow with eps = {eps!r}; use a smaller eps")
    return J.transpose(2, 0, 3, 1)


def gradient_profile(model, X, i: int = -1):
    """Norms ``||d y_i / d x_j||`` (spectral) against distance ``i - j``, for ``j <= i``.

    Used in Chapter 4, Section 4.8.

    Parameters
    ----------
    model : as in :func:`jacobian`
    X : array, shape (n, d)
    i : int
        Output position; default the last.

    Returns
    -------
    distances : ndarray of int, shape (i + 1,)
        ``0, 1, ..., i``.
    norms : ndarray, shape (i + 1,)
        ``norms[l] = ||d y_i / d x_{i-l}||``.
    """
    X, i = _row_arguments(model, X, i)
    row = _jacobian_row(model, X, i)
    distances = np.arange(i + 1)
    norms = np.linalg.norm(row[i - distances], ord=2, axis=(1, 2))
    return distances, norms


def highway_input(attention: MultiHeadAttention, n: int, a: float, key: int = 0, head: int = 0) -> np.ndarray:
    """Theorem 4.1's input: the last token attends to position ``key`` with weight exactly ``a``.

    Derived in Chapter 4, Theorem 4.1.

    With ``M = W_K^T W_Q`` of the chosen head, take ``u`` the top right singular vector of
    ``M`` and ``w = M u``. The input has ``x_{n-1} = u`` (the query), ``x_key = t w / ||w||``
    and zeros elsewhere, with
    ``t = sqrt(d_k) / ||w|| * (log(a / (1 - a)) + log(n - 2 + exp(s)))`` and
    ``s = u^T W_Q^T W_K u / sqrt(d_k)`` the query's score on itself. Zero tokens score 0, so
    the softmax weight on ``key`` is ``a`` whatever its distance from the end.

    Parameters
    ----------
    attention : MultiHeadAttention
        Softmax kernel; the weight is exact for the chosen head (the theorem is
        stated for one head).
    n : int
        Sequence length, ``n >= 2``.
    a : float
        Target weight, ``0 < a < 1``.
    key : int
        Position of the key token, ``0 <= key < n - 1``.
    head : int

    Returns
    -------
    X : ndarray, shape (n, d)
    """
    if not isinstance(attention, MultiHeadAttention) or attention.kernel != "softmax":
        raise ValueError("attention must be a MultiHeadAttention with the softmax kernel")
    n = check_positive_int("n", n, minimum=2)
    if not (isinstance(a, (int, float, np.floating)) and 0 < a < 1):
        raise ValueError(f"a must be a number strictly between 0 and 1; got {a!r}")
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) or not 0 <= key < n - 1:
        raise ValueError(f"key must be an integer position in [0, n - 1) = [0, {n - 1}); got {key!r}")
    if isinstance(head, (bool, np.bool_)) or not isinstance(head, (int, np.integer)) or not 0 <= head < attention.H:
        raise ValueError(f"head must be an integer in [0, {attention.H}); got {head!r}")
    check_allocation("n", (n, attention.d), "the input X", "use a smaller n")
    Wq, sq = _unit(attention.W_Q[head])  # powers of two: M = sq sk (Wk^T Wq), exactly
    Wk, sk = _unit(attention.W_K[head])
    M = Wk.T @ Wq  # (d, d): w = M u, up to the factor sq sk
    _, sv, Vt = np.linalg.svd(M)
    if sv[0] == 0:
        raise ValueError("the chosen head has W_K^T W_Q = 0: its weights cannot depend on the input")
    u = Vt[0]
    w = M @ u
    too_big = (f"attention is scaled so that the key token this needs is not representable (head {head}: "
               f"max |W_Q| = {sq:.3e}, max |W_K| = {sk:.3e}); rescale W_Q and W_K")
    with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
        self_score = float(u @ Wq.T @ Wk @ u) * sq * sk / np.sqrt(attention.d_k)
        # log(n - 2 + exp(s)) computed stably
        log_rest = np.logaddexp(math.log(n - 2) if n > 2 else -np.inf, self_score)
        t = np.sqrt(attention.d_k) / np.linalg.norm(w) * (np.log(a / (1 - a)) + log_rest) / sq / sk
    if not (np.isfinite(self_score) and np.isfinite(t)):
        raise ValueError(too_big)
    if abs(log_rest) * EPS > 1e-8:  # the score must resolve log(a / (1 - a)) next to log_rest
        raise ValueError(f"attention is scaled so that the query's score on itself, {self_score:.3e}, "
                         f"swamps the logit of a in rounding (head {head}: max |W_Q| = {sq:.3e}, "
                         f"max |W_K| = {sk:.3e}); rescale W_Q and W_K")
    X = np.zeros((n, attention.d))
    X[n - 1] = u
    X[key] = t * w / np.linalg.norm(w)
    if not np.all(np.isfinite(X)):
        raise ValueError(too_big)
    return X


_LOG_MAX = float(np.log(np.finfo(float).max))
_FLOAT_MAX = float(np.finfo(float).max)


class _KappaOverflow(ValueError):
    """kappa(rho_bar) exceeds the largest float (raised naming A)."""


def _norm2(arr: np.ndarray) -> float:
    """Spectral norm, computed after dividing by a power of two (inf only when the norm itself overflows)."""
    unit, s = _unit(arr)
    with np.errstate(over="ignore"):
        return float(np.linalg.norm(unit, 2)) * s


#: Time budget of one walk over the powers of ``A`` (:func:`gelfand_constant`, :func:`decay_bound`),
#: in seconds of the step model below: a step forms one power and its spectral norm, measured
#: here (one core) at about ``5e-5 + 6e-10 N^3`` s (55 us at N = 2, 9 ms at N = 256). A walk
#: forms at least 16 powers and at most ``_GELFAND_MAX_LAG``.
_KAPPA_SECONDS = 0.25
#: Largest state size ``N`` that :func:`gelfand_constant` and :func:`decay_bound` accept: their
#: eigen-decomposition and the walk's spectral norms cost ``O(N^3)`` each (about 0.05 s at 512).
MAX_KAPPA_SIZE = 512
#: Most levels of the walk over powers of powers in :func:`decay_bound` (each at least squares the
#: exponent's step, so 64 levels reach lags beyond ``2^64``).
_KAPPA_LEVELS = 64
_LOG_HALF = math.log(0.5)


def _kappa_steps(N: int) -> int:
    """The number of powers a walk may form for an ``N x N`` matrix within :data:`_KAPPA_SECONDS`."""
    return int(min(_GELFAND_MAX_LAG, max(16, _KAPPA_SECONDS / (5e-5 + 6e-10 * float(N) ** 3))))


def _check_kappa_size(A: np.ndarray) -> None:
    if A.shape[0] > MAX_KAPPA_SIZE:
        raise ValueError(f"A has state size N = {A.shape[0]}, above the limit of {MAX_KAPPA_SIZE} for "
                         f"kappa(rho_bar) and the decay bounds (eigenvalues and a walk over powers of A, "
                         f"O(N^3) each); use a smaller A")


def gelfand_constant(A, rho_bar: float, max_lag: int | None = None) -> float:
    """``kappa(rho_bar) = sup_l ||A^l|| / rho_bar^l`` (spectral norm), for ``rho(A) < rho_bar``.

    Defined in Chapter 4, Proposition 4.3 (stable linear dynamics attenuate with distance), which proves it finite.
    The rule below for when to stop the search over ``l`` is the library's, not the book's.

    Finite by Gelfand's formula ``||A^l||^(1/l) -> rho(A)``. For a normal ``A``
    (``A A^T = A^T A`` up to rounding) ``||A^l|| = rho(A)^l`` and ``kappa = 1``
    (attained at ``l = 0``) without forming a power. Otherwise the powers are formed
    one at a time (rescaled to avoid overflow) until the first ``Q`` with
    ``||A^Q|| / rho_bar^Q <= 1/2``; then ``kappa`` is the largest ratio over
    ``l < Q``, exactly: every ``l`` is ``a Q + b`` with ``0 <= b < Q``, and
    ``||A^l|| <= ||A^Q||^a ||A^b||`` gives ``ratio(l) <= ratio(b) / 2^a``.

    The ratio falls at most by ``rho(A) / rho_bar`` per lag, so the search needs at
    least ``log 2 / log(rho_bar / rho(A))`` powers. The walk forms at most as many
    powers as fit in about a quarter of a second (``_kappa_steps(N)``: 5000 for small
    ``N``, about 1000 at ``N = 64``, 200 at 128, 25 at 256, 16 at 512): when it would need more, or has
    not ended by then, the function raises a ``ValueError`` naming ``rho_bar``
    rather than run for minutes (:func:`decay_bound` bounds ``kappa`` instead). A
    ``max_lag`` given by the caller truncates the search: the supremum over
    ``l <= max_lag`` is returned (``max_lag`` at most that number of powers).

    Parameters
    ----------
    A : array, shape (N, N)
        ``N <= MAX_KAPPA_SIZE`` (512).
    rho_bar : float
        ``rho(A) < rho_bar``.
    max_lag : int, optional
        Truncate the search at ``l = max_lag``; default: no truncation.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Naming ``A`` when ``kappa`` exceeds the largest float (a huge non-normal part) or
        ``N > 512``; naming ``rho_bar`` when the search would need more powers than the
        walk forms; naming ``max_lag`` when it exceeds that number.
    """
    A = as_array("A", A, 2, "(N, N)")
    if A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"A must be square with N >= 1, shape (N, N); got shape {A.shape}")
    _check_kappa_size(A)
    return _gelfand_constant(A, rho_bar, max_lag)


def _spectral_radius_of(A: np.ndarray) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(A))))


def _check_rho_bar(rho_bar, rho: float) -> float:
    if isinstance(rho_bar, (bool, np.bool_)) or not isinstance(rho_bar, (int, float, np.integer, np.floating)) \
            or not np.isfinite(rho_bar) or not rho < rho_bar:
        raise ValueError(f"rho_bar must exceed the spectral radius {rho:.6g} of A (and be finite); "
                         f"got {rho_bar!r}")
    return float(rho_bar)


def _is_normal_matrix(A: np.ndarray) -> bool:
    """Whether ``A`` is normal to rounding (``||A A^T - A^T A||_F <= 64 N eps ||A||_F^2``), after scaling."""
    top = float(np.max(np.abs(A)))
    if top == 0.0:
        return True
    An = A / top
    return bool(np.linalg.norm(An @ An.T - An.T @ An) <= 64 * A.shape[0] * EPS * np.linalg.norm(An) ** 2)


def _gelfand_constant(A: np.ndarray, rho_bar, max_lag: int | None = None) -> float:
    """:func:`gelfand_constant` on a checked square ``A``: checks ``rho_bar`` and ``max_lag``, then walks."""
    rho = _spectral_radius_of(A)
    rho_bar = _check_rho_bar(rho_bar, rho)
    truncate = max_lag is not None
    steps = _kappa_steps(A.shape[0])
    if truncate:
        max_lag = check_positive_int("max_lag", max_lag)
    if _is_normal_matrix(A):
        return 1.0  # normal: ||A^l|| = rho^l <= rho_bar^l, the supremum is the l = 0 term
    if truncate and max_lag > steps:
        raise ValueError(f"max_lag = {max_lag} is more powers than the {steps} that the search forms for an "
                         f"A of size {A.shape[0]} (about a quarter of a second); pass max_lag <= {steps}")
    if rho > 0.0 and not truncate:
        needed = math.log(2.0) / math.log(rho_bar / rho)
        if needed > steps:
            raise ValueError(
                f"rho_bar = {rho_bar!r} is within a relative {rho_bar / rho - 1:.3g} of the spectral radius "
                f"{rho:.6g} of A: the ratio ||A^l|| / rho_bar^l decays so slowly that kappa needs at least "
                f"{needed:.3g} powers, more than the {steps} formed for an A of size {A.shape[0]}; choose "
                f"rho_bar farther above rho(A) (e.g. (rho(A) + 1) / 2), pass max_lag to truncate the search, "
                f"or use decay_bound, which bounds kappa")
    U, log_c = _unit_power_base(A, rho_bar)
    log_peak, ended, _, _ = _walk_powers(U, log_c, max_lag if truncate else steps, inclusive=truncate,
                                         rho_bar=rho_bar, top=float(np.max(np.abs(A))))
    if ended or truncate:
        return math.exp(log_peak)
    raise ValueError(f"the ratio ||A^l|| / rho_bar^l (rho_bar = {rho_bar!r}, spectral radius of A {rho:.6g}) "
                     f"had not fallen to 1/2 after {steps} powers, the most formed for an A of size "
                     f"{A.shape[0]}; choose rho_bar farther above rho(A), pass max_lag to truncate the "
                     f"search, or use decay_bound, which bounds kappa")


def _unit_power_base(A: np.ndarray, rho_bar: float) -> tuple[np.ndarray, float]:
    """``A / rho_bar = exp(log_c) U`` with ``max |U| = 1``: powers of ``U`` neither overflow nor underflow soon."""
    top = float(np.max(np.abs(A)))
    return A / top, math.log(top) - math.log(rho_bar)


def _walk_powers(U: np.ndarray, log_c: float, steps: int, inclusive: bool = False, rho_bar: float = 1.0,
                 spectral: bool = True, top: float = float("nan")):
    """Walk the norms of ``T^q``, ``T = exp(log_c) U``, for ``q = 1, ..., steps``.

    The spectral norm, or with ``spectral=False`` the Frobenius norm, an upper bound on it that
    costs no SVD. Stops at the first ``Q`` with ``||T^Q|| <= 1/2`` (or ``T^Q = 0``). Returns
    ``(log_peak, ended, P, log_P)``: the log of the largest norm over ``0 <= q < Q`` (``q < steps``
    if it did not end, ``q <= steps`` with ``inclusive``; ``||T^0|| = 1``), whether it ended, and (if
    not) ``T^steps = exp(log_P) P`` with ``||P|| = 1``. Each power is normalised (Frobenius) as it
    is formed, so the walk neither overflows nor underflows; the spectral norms of a block of
    powers are taken in one batched SVD (a block holds at most about 8 MB). A norm beyond the
    largest float raises :class:`_KappaOverflow` (naming ``A``, whose largest entry is ``top``).
    """
    N = U.shape[0]
    block = max(1, min(64, (1 << 20) // (N * N)))
    P = np.eye(N)
    log_scale, log_peak = 0.0, 0.0  # T^0 = I, spectral norm 1; T^q = exp(log_scale) P with ||P||_F = 1 below
    powers, log_fro = np.empty((block, N, N)), np.empty(block)
    q = 0
    while q < steps:
        b = min(block, steps - q)
        zero = b
        for j in range(b):
            P = U @ P
            size = math.sqrt(float(np.vdot(P, P)))
            if size == 0.0:
                zero = j
                break
            P = P / size
            powers[j] = P
            log_scale += log_c + math.log(size)
            log_fro[j] = log_scale
        log_norm = log_fro[:zero].copy()
        if spectral and zero:
            log_norm += np.log(np.linalg.norm(powers[:zero], 2, axis=(1, 2)))
        for j in range(zero):
            if log_norm[j] <= _LOG_HALF:
                return log_peak, True, None, float(log_norm[j])
            if log_norm[j] > _LOG_MAX:
                value = "" if spectral else "a bound on "
                raise _KappaOverflow(
                    f"A has {value}||A^l|| / rho_bar^l = exp({log_norm[j]:.6g}) > the largest float at a lag "
                    f"l >= {q + j + 1}, so kappa(rho_bar) is not representable (rho_bar = {rho_bar!r}); rescale "
                    f"A's off-normal part (largest entry {top:.3e}) or use a normal A")
            if q + j + 1 < steps or inclusive:
                log_peak = max(log_peak, float(log_norm[j]))
        if zero < b:
            return log_peak, True, None, -np.inf
        q += b
    last = float(log_norm[b - 1])
    return log_peak, False, P * math.exp(log_scale - last), last


def _kappa_bound(A: np.ndarray, rho_bar: float) -> tuple[float, bool]:
    """An upper bound on ``kappa(rho_bar)`` of a checked, non-normal ``A``, and whether it is ``kappa`` itself.

    A walk over powers of powers (:func:`decay_bound` states the mathematics): level 0 walks
    ``T_0 = A / rho_bar`` with spectral norms (as :func:`gelfand_constant`) for 60% of the time
    budget; a level that does not end passes ``T_{i+1} = T_i^{s_i}`` to the next and multiplies
    the bound by its largest norm. Levels from 1 on take Frobenius norms (no SVD: about a tenth
    of the cost, and close to the spectral norm once the powers are dominated by their top
    eigenvalues), each half of the steps left (at least 2).
    """
    N = A.shape[0]
    U, log_c = _unit_power_base(A, rho_bar)
    exact_steps = max(8, int(0.6 * _kappa_steps(N)))
    remaining = max(16, int(0.4 * _KAPPA_SECONDS / (1e-5 + 6e-11 * float(N) ** 3)))
    log_bound = 0.0
    for level in range(_KAPPA_LEVELS):
        steps = exact_steps if level == 0 else max(2, remaining // 2)
        log_peak, ended, P, log_P = _walk_powers(U, log_c, steps, rho_bar=rho_bar, spectral=level == 0,
                                                 top=float(np.max(np.abs(A))))
        log_bound += log_peak
        if log_bound > _LOG_MAX:
            raise _KappaOverflow(
                f"A is so far from normal that the bound on kappa(rho_bar) computed here, exp({log_bound:.6g}), "
                f"exceeds the largest float (rho_bar = {rho_bar!r}); rescale A's off-normal part (largest entry "
                f"{np.max(np.abs(A)):.3e}), use a normal A, or choose rho_bar farther above rho(A)")
        if ended:
            return math.exp(log_bound), level == 0
        U, log_c = P, log_P
        if level:
            remaining -= steps
    raise ValueError(f"rho_bar = {rho_bar!r} is so close to the spectral radius of A that no bound on kappa was "
                     f"found over lags up to 2^{_KAPPA_LEVELS}; choose rho_bar farther above rho(A)")


def _eigenvector_kappa(A: np.ndarray, eig: np.ndarray, S: np.ndarray, rho_bar: float) -> float:
    """``cond(X)`` for eigenvectors ``X`` of ``A``, a bound on ``kappa(rho_bar)`` checked a posteriori; inf if not.

    For any invertible ``X``, ``M = X^{-1} (A / rho_bar) X = diag(eig / rho_bar) + X^{-1} R`` with
    the residual ``R = (A / rho_bar) X - X diag(eig / rho_bar)``; when
    ``max |eig| / rho_bar + ||R|| / sigma_min(X) <= 1`` (rounding in ``R`` included), ``||M|| <= 1``
    and ``||A^l|| / rho_bar^l = ||X M^l X^{-1}|| <= cond(X)`` for every ``l``, however accurate the
    eigenvectors are. Tried for ``X = S`` (``numpy.linalg.eig``'s, unit columns) and ``X = S D``
    with ``D_i = sqrt(||row i of S^{-1}|| / ||column i of S||)``, which balances ``X`` and ``X^{-1}``.
    """
    N = A.shape[0]
    T, lam = A / rho_bar, eig / rho_bar
    radius, size = float(np.max(np.abs(lam))), float(np.linalg.norm(T, 2))
    best = np.inf
    with np.errstate(all="ignore"):
        try:
            Sinv = np.linalg.inv(S)
        except np.linalg.LinAlgError:
            return best
        D = np.sqrt(np.linalg.norm(Sinv, axis=1) / np.linalg.norm(S, axis=0))
        for X in (S, S * D):
            sv = np.linalg.svd(X, compute_uv=False)
            low = sv[-1] - 4 * N * EPS * sv[0]  # sigma_min(X) to rounding
            residual = np.linalg.norm(T @ X - X * lam, 2) + 4 * N * EPS * (size + radius) * sv[0]
            if np.all(np.isfinite(sv)) and low > 0 and radius + residual / low <= 1.0:
                best = min(best, float(sv[0] / low))
    return best


@dataclass(frozen=True)
class DecayBound:
    """Proposition 4.3's bounds on ``||C A^l B||`` at the given lags.

    Derived in Chapter 4, Proposition 4.3 (stable linear dynamics attenuate with distance).

    Attributes
    ----------
    lags : ndarray of int
    general : ndarray
        ``||C|| ||B|| kappa rho_bar^l``.
    kappa : float
        ``kappa(rho_bar)`` itself when the walk over the powers of ``A`` ends within its budget
        (the usual case), else an upper bound on it (``kappa_exact`` says which;
        :func:`decay_bound` gives the mathematics).
    rho_bar : float
    diagonalizable : ndarray or None
        ``||C|| ||B|| cond(S) rho(A)^l`` when ``A = S diag S^{-1}`` is diagonalizable, else None.
    cond_S : float or None
    kappa_exact : bool
        Whether ``kappa`` is ``kappa(rho_bar)`` (to rounding) rather than a bound on it.
    """

    lags: np.ndarray
    general: np.ndarray
    kappa: float
    rho_bar: float
    diagonalizable: np.ndarray | None
    cond_S: float | None
    kappa_exact: bool = True


def decay_bound(A, B, C, lags, rho_bar: float | None = None) -> DecayBound:
    """Bounds on the Jacobian norms ``||d y_i / d x_j|| = ||C A^(i-j) B||`` of a stable SSM.

    Derived in Chapter 4, Proposition 4.3 (stable linear dynamics attenuate with distance).

    **General bound.** ``||C A^l B|| <= ||C|| ||B|| ||A^l|| <= ||C|| ||B|| kappa rho_bar^l``
    for any ``kappa >= kappa(rho_bar) = sup_l ||A^l|| / rho_bar^l``. With ``T = A / rho_bar``
    (spectral radius below 1), ``kappa`` is found by a walk over powers of powers, which
    never forms more than a fixed budget of powers however close ``rho(A)`` is to 1:

    * Level 0 walks ``T^q`` for ``q = 1, ..., s_0``. If some ``||T^Q|| <= 1/2``, then
      ``kappa(rho_bar) = max_{q < Q} ||T^q||`` exactly (every ``l = a Q + b``, ``b < Q``, has
      ``||T^l|| <= ||T^Q||^a ||T^b|| <= ||T^b||``): this is :func:`gelfand_constant`.
    * Otherwise level 1 walks the powers of ``T_1 = T^{s_0}``, and so on. Every ``l`` is
      ``q_0 + s_0 q_1 + s_0 s_1 q_2 + ...`` with ``0 <= q_i < s_i`` (the last ``q`` free), so
      ``T^l = T_0^{q_0} T_1^{q_1} ...`` and
      ``kappa(rho_bar) <= prod_i max_{q < s_i} ||T_i^q||``, the product ending at the first
      level whose walk ends (there, as at level 0, the maximum covers every power).

    Level ``i`` forms at most half of the powers left of the budget (at least 2, a squaring),
    so the exponent ``s_0 s_1 ...`` grows faster than geometrically and a level ends once it
    passes about ``log(kappa) / log(rho_bar / rho(A))``. The product is exact when level 0 ends
    (``kappa_exact``), and otherwise at most a few factors of ``kappa`` above it. A normal ``A``
    has ``kappa = 1`` without a walk. The default ``rho_bar = (rho(A) + 1) / 2`` is allowed
    for any ``rho(A) < 1``.

    **Diagonalizable bound.** ``A = S diag(lambda) S^{-1}`` gives
    ``||A^l|| <= cond(S) rho(A)^l`` (eigenvectors of ``numpy.linalg.eig``, unit columns),
    reported when ``cond(S) < 1e12``.

    Parameters
    ----------
    A : array, shape (N, N)
        Stable: ``rho(A) < 1``; ``N <= MAX_KAPPA_SIZE`` (512).
    B : array, shape (N, d)
    C : array, shape (p, N)
    lags : array of int, shape (L,)
        Nonnegative lags ``l = i - j``.
    rho_bar : float, optional
        In ``(rho(A), 1)``; default ``(rho(A) + 1) / 2``.

    Returns
    -------
    DecayBound

    Raises
    ------
    ValueError
        Naming ``A`` when it is not stable, has ``N > 512``, or the bound on ``kappa`` exceeds
        the largest float; naming ``B`` and ``C`` when ``||C|| ||B||`` times ``kappa`` (or
        ``cond(S)``) does; naming ``lags`` when they are not nonnegative integers or their
        bounds would exceed the memory limit.
    """
    A, B, C, _ = _check_system(A, B, C)
    _check_kappa_size(A)
    lags = np.asarray(lags)
    if lags.size == 0:
        lags = lags.astype(int)
    if lags.ndim != 1 or not np.issubdtype(lags.dtype, np.integer) or np.any(lags < 0):
        raise ValueError(f"lags must be a 1-D array of nonnegative integers; got {lags!r}")
    check_total("lags", 4.0 * lags.size, "the bounds at each lag (two of them, with their temporaries)",
                "pass fewer lags")
    eig, S = np.linalg.eig(A)
    rho = float(np.max(np.abs(eig)))
    if rho >= 1 - 1e-12:  # a rotation's computed spectral radius can be 1 - 1e-16
        raise ValueError(f"A must be stable (spectral radius < 1); got {rho:.6g}")
    if rho_bar is None:
        rho_bar = (rho + 1) / 2
    if isinstance(rho_bar, (bool, np.bool_)) or not isinstance(rho_bar, (int, float, np.integer, np.floating)) \
            or not rho < rho_bar < 1:
        raise ValueError(f"rho_bar must lie in (rho(A), 1) = ({rho:.6g}, 1); got {rho_bar!r}")
    rho_bar = float(rho_bar)
    with np.errstate(over="ignore"):
        scale = _norm2(C) * _norm2(B)
    if not np.isfinite(scale):
        raise ValueError(f"B and C are too large: ||C|| ||B|| overflows the largest float (max |B| = "
                         f"{np.max(np.abs(B)):.3e}, max |C| = {np.max(np.abs(C)):.3e}), so the bounds are "
                         f"not representable; rescale B and C")
    kappa, exact = (1.0, True) if _is_normal_matrix(A) else _kappa_bound(A, rho_bar)
    if not exact:
        kappa = min(kappa, _eigenvector_kappa(A, eig, S, rho_bar))
    with np.errstate(over="ignore", under="ignore"):
        general = scale * kappa * rho_bar ** lags
    if not np.all(np.isfinite(general)):
        raise ValueError(f"B and C are too large for this A: ||C|| ||B|| kappa = {scale:.3e} x {kappa:.3e} "
                         f"overflows the largest float; rescale B and C")
    cond = float(np.linalg.cond(S))
    diagonalizable = None
    if np.isfinite(cond) and cond < 1e12:
        with np.errstate(over="ignore", under="ignore"):
            diagonalizable = scale * cond * rho ** lags
        if not np.all(np.isfinite(diagonalizable)):
            raise ValueError(f"B and C are too large: ||C|| ||B|| cond(S) = {scale:.3e} x {cond:.3e} overflows "
                             f"the largest float; rescale B and C")
    return DecayBound(lags, general, kappa, rho_bar, diagonalizable,
                      cond if diagonalizable is not None else None, exact)


# ---------------------------------------------------------------- trainability with capacity held fixed

_BETA1, _BETA2, _ADAM_EPS = 0.9, 0.999, 1e-8
#: Largest learning rate the trainers accept. Adam moves each parameter by about ``lr`` per
#: step whatever the gradient's size, so ``lr > 1`` (a step larger than the parameters' own
#: scale: ``nu`` is a log-log radius, the weights are O(1)) only diverges.
_MAX_LR = 1.0
#: Work limit of one training call, in "entry-steps": ``(steps + 1) * (entries + _STEP_OVERHEAD)``
#: with ``entries`` the size of one step's arrays (runs x n x modes for the diagonal SSM,
#: batch x n x (d_k + d_v) for the recall head) and ``_STEP_OVERHEAD`` the fixed cost of a
#: step in the same unit. 1e8 is a few seconds on one core here (about 30 ns per entry-step; the
#: book's largest call is 7e7).
_MAX_WORK = 1e8
_STEP_OVERHEAD = 2000


def _check_number(name: str, value, low: float = -np.inf, high: float = np.inf, what: str = "") -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not np.isfinite(value) or not low < value < high:
        raise ValueError(f"{name} must be a finite number{what}; got {value!r}")
    return float(value)


def _check_pairs(name: str, value, M: int) -> np.ndarray:
    arr = as_array(name, value, 2, "(M, 2)")
    if arr.shape != (M, 2):
        raise ValueError(f"{name} must have shape (M, 2) = ({M}, 2) (real and imaginary parts); got shape {arr.shape}")
    return arr[:, 0] + 1j * arr[:, 1]


def _pairs(z: np.ndarray) -> np.ndarray:
    return np.stack([z.real, z.imag], axis=-1)


def _mode_powers(nu: np.ndarray, theta: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The powers ``lambda_m^l``, ``l = 0..n-1``, of ``lambda_m = exp(-exp(nu_m) + i theta_m)``: shape (..., n, M).

    Also returns the rate ``exp(nu)``, capped at the largest float: a rate that overflows gives
    ``lambda_m = 0`` exactly (and ``lambda_m^0 = 1``), and times the zero terms it multiplies in
    the gradient it gives 0, not ``inf * 0``. The powers are running products
    ``lambda^l = lambda^(l-1) lambda`` (one complex product per entry instead of one complex
    exponential; relative rounding error at most about ``3 l`` units of ``2^-53``, and ``|lambda_m| <= 1``
    so nothing overflows)."""
    with np.errstate(over="ignore"):
        e_nu = np.minimum(np.exp(nu), _FLOAT_MAX)  # the rate: |lambda_m| = exp(-e_nu)
    lam = np.exp(-e_nu + 1j * theta)
    Z = np.empty(lam.shape[:-1] + (n, lam.shape[-1]), dtype=complex)
    Z[..., 0, :] = 1.0
    if n > 1:
        with np.errstate(under="ignore"):
            np.cumprod(np.broadcast_to(lam[..., None, :], Z[..., 1:, :].shape), axis=-2, out=Z[..., 1:, :])
    return Z, e_nu


def _check_weights_scale(b: np.ndarray, c: np.ndarray) -> None:
    """Raise naming b and c when ``sum_m |c_m b_m|`` (the bound on every ``|K_l|``) overflows."""
    with np.errstate(over="ignore"):
        bound = float(np.sum(np.abs(b) * np.abs(c)))
    if not np.isfinite(bound):
        raise ValueError("b and c are too large: sum_m |c_m| |b_m| overflows the largest float, so the "
                         "kernel is not representable; rescale b and c")


def _delay_loss_grad(nu, theta, b, c, L, n):
    """Exact delay-L loss and its gradient, batched over R runs.

    Core of :func:`delay_task_loss`, :func:`train_diagonal_ssm` and
    :func:`delay_task_sweep`. Parameters (R, M), L of shape (R,).
    K_l = Re sum_m c_m b_m lambda_m^l, lambda_m = exp(mu_m),
    mu_m = -exp(nu_m) + i theta_m;
    loss = sum_l w_l (K_l - delta_lL)^2 / w_L with w_l = n - l.
    The gradient in a complex b_m or c_m is d/dRe + i d/dIm.
    """
    lags = np.arange(n)
    # Z = lambda_m^l, (R, n, M); e_nu = exp(nu): |lambda_m| = exp(-e_nu)
    Z, e_nu = _mode_powers(nu, theta, n)
    g = c * b
    # the kernel K_l, (R, n)
    K = np.einsum("rlm,rm->rl", Z, g).real
    # lag l is seen by n - l positions; w_L is the loss of K = 0
    w = (n - lags).astype(float)
    wL = (n - L).astype(float)
    # the residuals K_l - delta_lL
    resid = K.copy()
    resid[np.arange(K.shape[0]), L] -= 1.0
    loss = np.sum(w * resid**2, axis=1) / wL
    # e_l = d loss / d K_l
    e = 2.0 * w[None, :] * resid / wL[:, None]
    # S = sum_l e_l lambda_m^l
    S = np.einsum("rl,rlm->rm", e, Z)
    # T = sum_l e_l d(lambda_m^l)/d mu_m, with
    # d(lambda^l)/d mu = l lambda^l
    T = np.einsum("rl,rlm->rm", e * lags, Z)
    h = g * T
    # d loss / d nu = -exp(nu) Re h, d loss / d theta = -Im h
    grads = (-e_nu * h.real, -h.imag, np.conj(c * S), np.conj(b * S))
    return loss, K, grads


def diagonal_ssm_kernel(nu, theta, b, c, n: int) -> np.ndarray:
    """Impulse response ``K_l = Re sum_m c_m b_m lambda_m^l`` of a diagonal complex SISO SSM.

    Used in Chapter 4, Section 4.9.

    The modes are ``lambda_m = exp(-exp(nu_m) + i theta_m)`` (the LRU parametrisation: every
    real ``nu`` gives ``|lambda_m| < 1``). The state is ``h_i = Lambda h_{i-1} + b x_i`` in
    ``C^M`` and the output ``y_i = Re(c^T h_i)``, so ``d y_i / d x_j = K_{i-j}``.

    Parameters
    ----------
    nu, theta : array, shape (M,)
        Log-log decay rates and phases: ``|lambda_m| = exp(-exp(nu_m))``.
    b, c : array, shape (M, 2)
        Input and output weights as (real, imaginary) pairs.
    n : int
        Number of lags.

    Returns
    -------
    K : ndarray, shape (n,)

    Raises
    ------
    ValueError
        Naming ``n`` when it exceeds ``MAX_LAGS`` (2^20) or the powers ``lambda_m^l`` and their
        exponents would hold more than 2 GiB.
    """
    nu, theta, b, c = _check_diagonal(nu, theta, b, c)
    n = check_positive_int("n", n)
    _check_weights_scale(b, c)
    check_allocation("n", (n, nu.shape[0]), "the mode powers lambda_m^l", "use a smaller n or fewer modes",
                     itemsize=16)
    # the lags, the exponents' real and imaginary parts, the complex exponent and its exponential
    check_total("n", 8.0 * n * nu.shape[0] + 2.0 * n, "the mode powers lambda_m^l and their exponents",
                "use a smaller n or fewer modes")
    if n > MAX_LAGS:
        raise ValueError(f"n = {n} lags is more than the {MAX_LAGS} computed here (as lag_operators); every mode "
                         "decays, so use a smaller n")
    Z, _ = _mode_powers(nu, theta, n)
    return (Z @ (c * b)).real


def _check_diagonal(nu, theta, b, c):
    nu = as_array("nu", nu, 1, "(M,)")
    M = nu.shape[0]
    if M < 1:
        raise ValueError("nu must have at least one mode, shape (M,) with M >= 1; got shape (0,)")
    theta = as_array("theta", theta, 1, "(M,)")
    check_size("theta", theta, 0, M, "M, the number of modes in nu")
    return nu, theta, _check_pairs("b", b, M), _check_pairs("c", c, M)


def delay_task_loss(nu, theta, b, c, L: int, n: int):
    """Exact white-noise loss of a diagonal SSM on the delay-``L`` task, with its gradient.

    Derived in Chapter 3, Section 3.2 (the white-noise identity, with weights w_l = n - l).
    Used in Chapter 4, Section 4.9. Used in Chapter 4, Exercise 4.8 (the exact loss of the delay task).

    Task: ``y_i = x_{i-L}`` at every position ``i < n`` of a white-noise sequence (zero before
    the start). By the white-noise identity of Chapter 3 (the weights after Corollary 3.1) the
    expected total squared error is ``sum_l w_l (K_l - delta_{lL})^2`` with ``w_l = n - l``
    (lag ``l`` is seen by ``n - l`` positions). It is divided by ``w_L = n - L``, its value with no model (``K = 0``), so
    the loss is 1 for a model that outputs nothing and 0 for an exact delay.

    Parameters
    ----------
    nu, theta : array, shape (M,)
    b, c : array, shape (M, 2)
        As in :func:`diagonal_ssm_kernel`.
    L : int
        The delay, ``0 <= L < n``.
    n : int
        Sequence length.

    Returns
    -------
    loss : float
    grads : dict of ndarray
        ``"nu"``, ``"theta"`` of shape (M,) and ``"b"``, ``"c"`` of shape (M, 2): the exact
        partial derivatives (analytic, complex arithmetic).
    """
    nu, theta, b, c = _check_diagonal(nu, theta, b, c)
    n, L = _check_delay(L, n)
    _check_diagonal_size(1, n, nu.shape[0])
    _check_weights_scale(b, c)
    with np.errstate(over="ignore", invalid="ignore"):
        loss, _, (gnu, gth, gb, gc) = _delay_loss_grad(nu[None], theta[None], b[None], c[None], np.array([L]), n)
    if not (np.isfinite(loss[0]) and all(np.all(np.isfinite(g)) for g in (gnu, gth, gb, gc))):
        raise ValueError("b and c are too large: the loss or its gradient overflows the largest float "
                         "(the loss grows like |c b|^2 n); rescale b and c")
    return float(loss[0]), {"nu": gnu[0], "theta": gth[0], "b": _pairs(gb[0]), "c": _pairs(gc[0])}


def _check_delay(L, n):
    n = check_positive_int("n", n, minimum=1)
    L = check_positive_int("L", L, minimum=0)
    if L >= n:
        raise ValueError(f"L must be smaller than n = {n}; got {L}")
    return n, L


def _check_ints(name: str, value, low: int, high: int | None, what: str) -> list[int]:
    """``value`` as a list of ints in ``[low, high]`` (``high=None``: no upper end), or a ValueError naming it.

    Accepts a 1-d sequence (list, tuple, range, 1-d integer array); refuses None, strings,
    booleans, floats and nested sequences."""
    span = f"[{low}, {high}]" if high is not None else f">= {low}"
    expected = f"{name} must be a 1-d sequence of {what} ({span})"
    if value is None or isinstance(value, (str, bytes)) or (isinstance(value, np.ndarray) and value.ndim != 1):
        raise ValueError(f"{expected}; got {value!r}")
    try:
        items = list(value)
    except TypeError:
        raise ValueError(f"{expected}; got {type(value).__name__}") from None
    out = []
    for item in items:
        if isinstance(item, (bool, np.bool_)) or not isinstance(item, (int, np.integer)) or item < low \
                or (high is not None and item > high):
            raise ValueError(f"{expected}; got the entry {item!r}")
        out.append(int(item))
    return out


def _check_radius_list(radii) -> list[tuple[float, float]]:
    expected = "radii must be a sequence of pairs (low, high) with 0 <= low < high < 1"
    if radii is None or isinstance(radii, (str, bytes)):
        raise ValueError(f"{expected}; got {radii!r}")
    try:
        items = list(radii)
    except TypeError:
        raise ValueError(f"{expected}; got {type(radii).__name__}") from None
    out = []
    for item in items:
        try:
            out.append(_check_radius(item))
        except ValueError:
            raise ValueError(f"{expected}; got the entry {item!r}") from None
    return out


def _check_radius(radius) -> tuple[float, float]:
    try:
        lo, hi = (float(r) for r in radius)
    except (TypeError, ValueError):
        raise ValueError(f"radius must be a pair (low, high) with 0 <= low < high < 1; got {radius!r}") from None
    if not (0 <= lo < hi < 1):
        raise ValueError(f"radius must be a pair (low, high) with 0 <= low < high < 1; got {radius!r}")
    return lo, hi


def _init_diagonal(modes: int, radius: tuple[float, float], seed: int):
    """Radii uniform in ``radius`` (then nu = log(-log r)), phases uniform, complex b ~ CN(0, 1),
    c ~ CN(0, 0.01 / M)."""
    rng = np.random.default_rng(seed)
    r = np.clip(rng.uniform(radius[0], radius[1], modes), 1e-300, None)
    nu = np.log(-np.log(r))
    theta = rng.uniform(0.0, 2 * np.pi, modes)
    b = (rng.standard_normal(modes) + 1j * rng.standard_normal(modes)) / np.sqrt(2)
    c = 0.1 * (rng.standard_normal(modes) + 1j * rng.standard_normal(modes)) / np.sqrt(2 * modes)
    return nu, theta, b, c


def _adam_step(params, grads, m1, m2, t: int, lr: float, eps: float = _ADAM_EPS) -> None:
    """One Adam step in place; a complex parameter is a pair of real ones (moments per part)."""
    for x, g, u, v in zip(params, grads, m1, m2):
        u *= _BETA1
        u += (1 - _BETA1) * g
        v *= _BETA2
        if np.iscomplexobj(x):
            v += (1 - _BETA2) * (g.real**2 + 1j * g.imag**2)
        else:
            v += (1 - _BETA2) * g * g
        uh, vh = u / (1 - _BETA1**t), v / (1 - _BETA2**t)
        if np.iscomplexobj(x):
            x -= lr * (uh.real / (np.sqrt(vh.real) + eps) + 1j * uh.imag / (np.sqrt(vh.imag) + eps))
        else:
            x -= lr * uh / (np.sqrt(vh) + eps)


def _train_diagonal_batch(Ls, n, modes, radii, seeds, steps, lr, eps=_ADAM_EPS):
    """Train R independent diagonal SSMs at once (run r: delay Ls[r], radius radii[r], seed seeds[r])."""
    inits = [_init_diagonal(modes, rad, s) for rad, s in zip(radii, seeds)]
    params = [np.stack([p[k] for p in inits]) for k in range(4)]  # nu, theta, b, c: (R, M)
    Ls = np.asarray(Ls, dtype=int)
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    losses = np.empty((len(Ls), steps + 1))
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for t in range(steps):
            losses[:, t], _, grads = _delay_loss_grad(*params, Ls, n)
            if not np.all(np.isfinite(losses[:, t])):
                raise _diverged(t, lr)
            _adam_step(params, grads, m1, m2, t + 1, lr, eps)
        losses[:, steps], K, _ = _delay_loss_grad(*params, Ls, n)
    if not (np.all(np.isfinite(losses[:, steps])) and np.all(np.isfinite(K))):
        raise _diverged(steps, lr)
    return losses, K, params


@dataclass(frozen=True)
class DiagonalSSMResult:
    """Outcome of :func:`train_diagonal_ssm`.

    Used in Chapter 4, Section 4.9.

    Attributes
    ----------
    losses : ndarray, shape (steps + 1,)
        Exact normalised loss (1 with no model) before each Adam step and after the last.
    radii : ndarray, shape (M,)
        Final ``|lambda_m|``.
    initial_radii : ndarray, shape (M,)
    kernel : ndarray, shape (n,)
        Final impulse response ``K_l`` (the target is ``delta_{lL}``).
    nu, theta : ndarray, shape (M,)
    b, c : ndarray, shape (M, 2)
        Final parameters, as for :func:`diagonal_ssm_kernel`.
    """

    losses: np.ndarray
    radii: np.ndarray
    initial_radii: np.ndarray
    kernel: np.ndarray
    nu: np.ndarray
    theta: np.ndarray
    b: np.ndarray
    c: np.ndarray


def _check_training(steps, lr, modes, min_steps: int = 1):
    steps = check_positive_int("steps", steps, minimum=min_steps)
    lr = _check_number("lr", lr, 0.0, np.inf, " > 0")
    if lr > _MAX_LR:
        raise ValueError(f"lr must be at most {_MAX_LR:g}: Adam moves each parameter by about lr per step, "
                         f"and a step larger than the parameters' own scale only diverges; got {lr!r}")
    modes = check_positive_int("modes", modes)
    return steps, lr, modes


def _check_eps(eps) -> float:
    eps = _check_number("eps", eps, 0.0, np.inf, " > 0")
    if eps < 1e-100:
        raise ValueError(f"eps must be at least 1e-100: Adam divides each coordinate's mean gradient by "
                         f"sqrt(v) + eps, and a gradient below about 1e-154 has a square v that underflows "
                         f"to 0, so it would be divided by eps alone; got {eps!r}")
    return eps


def _check_work(rounds: int, entries: int, sizes: str, instead: str) -> None:
    """Refuse a call above :data:`_MAX_WORK` entry-steps: ``rounds`` evaluations of ``entries`` each.

    ``sizes`` names the arguments that set the work, with their values."""
    work = rounds * (float(entries) + _STEP_OVERHEAD)
    if work > _MAX_WORK:
        raise ValueError(f"{sizes} would take about {work:.1e} entry-steps of work ({rounds} evaluations of "
                         f"{entries} entries, plus {_STEP_OVERHEAD} each for the fixed cost), above the limit "
                         f"of {_MAX_WORK:.1e} (a few seconds); {instead}")


def _check_diagonal_size(runs: int, n: int, modes: int, steps: int | None = None) -> None:
    """Memory and work guards of the diagonal-SSM loss: arrays of shape (runs, n, modes), complex."""
    sizes = f"n = {n}, modes = {modes}" + (f" and {runs} runs" if runs > 1 else "")
    check_allocation(sizes, (runs, n, modes),
                     "the working arrays lambda_m^l of one loss evaluation (four complex arrays of this "
                     "shape, counted together)", "use a smaller n or fewer modes", itemsize=64)
    # the powers, their exponents (complex) and l lambda^l terms: about twelve numbers per entry
    check_total(sizes, 12.0 * runs * n * modes, "the working arrays of one loss evaluation",
                "use a smaller n or fewer modes")
    if steps is not None:
        _check_work(steps + 1, runs * n * modes, f"steps = {steps} with {sizes}",
                    "use fewer steps, a smaller n or fewer modes")


def _diverged(t: int, lr: float):
    return ValueError(f"the training diverged: the loss is not finite after step {t} with lr = {lr!r}; "
                      "use a smaller lr")


def train_diagonal_ssm(L: int, n: int, modes: int = 32, radius=(0.9, 0.999), steps: int = 500,
                       lr: float = 0.02, seed: int = 0, eps: float = 1e-8) -> DiagonalSSMResult:
    """Train a diagonal complex SSM on the delay-``L`` task by Adam on the exact loss.

    Used in Chapter 4, Section 4.9.

    The model (:func:`diagonal_ssm_kernel`) can represent the delay when ``L < 2 M``: ``M``
    modes with free phases and weights fit ``K_l = delta_{lL}`` on ``l < n`` closely once ``M``
    is a few dozen, so what the run measures is whether gradient descent *finds* it. (For
    ``L >= 2 M`` it cannot: the real state has dimension ``2 M``, by Cayley-Hamilton
    ``K_0 = ... = K_{2M-1} = 0`` forces ``K = 0``, and since every ``|lambda_m| < 1`` the
    loss is bounded away from 0; Section 4.9 gives the argument.) Every parameter
    trains: ``nu``, ``theta`` and the complex ``b``, ``c`` (as real pairs). Initialisation:
    radii ``|lambda_m|`` uniform in ``radius`` (then ``nu = log(-log r)``), phases uniform in
    ``[0, 2 pi)``, ``b ~ CN(0, 1)``, ``c ~ CN(0, 0.01 / M)``; all from ``default_rng(seed)``.
    Adam with ``beta = (0.9, 0.999)`` and ``eps`` (default ``1e-8``); the gradients are analytic
    (:func:`delay_task_loss`).

    Parameters
    ----------
    L : int
        The delay, ``0 <= L < n``.
    n : int
        Sequence length.
    modes : int
        ``M``.
    radius : pair of float
        ``0 <= low < high < 1``: the range of the initial ``|lambda_m|``.
    steps : int
        Adam steps, ``>= 0``; ``steps=0`` returns the initialisation (and its loss).
    lr : float
        Adam's step size, ``0 < lr <= 1``.
    seed : int
    eps : float
        Adam's ``epsilon``, added to the root mean square of each coordinate's gradient before
        dividing by it; ``1e-100 <= eps`` (Chapter 4 sets it to ``1e-30`` to show that it plays
        no part in the small-radius failure).

    Returns
    -------
    DiagonalSSMResult

    Raises
    ------
    ValueError
        If ``lr > 1`` or the loss stops being finite (naming ``lr``).
        If the run would take more than 1e8 entry-steps, ``(steps + 1) x (entries per step + 2000)``,
        a few seconds (the book's largest call is 7e7), or a step's arrays more than 2 GiB; the
        message names the sizes that set the cost.
    """
    n, L = _check_delay(L, n)
    steps, lr, modes = _check_training(steps, lr, modes, min_steps=0)
    eps = _check_eps(eps)
    radius = _check_radius(radius)
    seed = check_positive_int("seed", seed, minimum=0)
    _check_diagonal_size(1, n, modes, steps)
    r0 = np.exp(-np.exp(_init_diagonal(modes, radius, seed)[0]))
    losses, K, (nu, theta, b, c) = _train_diagonal_batch([L], n, modes, [radius], [seed], steps, lr, eps)
    return DiagonalSSMResult(losses[0], np.exp(-np.exp(nu[0])), r0, K[0], nu[0], theta[0], _pairs(b[0]), _pairs(c[0]))


def delay_task_sweep(Ls, n: int, radii, seeds, modes: int = 32, steps: int = 500, lr: float = 0.02,
                     eps: float = 1e-8) -> np.ndarray:
    """Final losses of :func:`train_diagonal_ssm` over a grid, all runs trained at once.

    Used in Chapter 4, Section 4.9.

    Each run is exactly the run ``train_diagonal_ssm(L, n, modes, radius, steps, lr, seed, eps)``
    (same initialisation, same steps); they are stacked so each Adam step is one vectorised
    computation over runs, lags and modes.

    Parameters
    ----------
    Ls : sequence of int, length a
        Delays, each in ``[0, n)``.
    n : int
    radii : sequence of pairs, length b
        Initial radius ranges.
    seeds : sequence of int, length s
    modes, steps : int
    lr : float
        Adam's step size, ``0 < lr <= 1``.
    eps : float
        Adam's ``epsilon``, as for :func:`train_diagonal_ssm`.

    Returns
    -------
    losses : ndarray, shape (a, b, s)
        The final loss of each run.

    Raises
    ------
    ValueError
        As :func:`train_diagonal_ssm`, for the whole grid (its runs are trained together), and
        naming ``Ls``, ``radii`` or ``seeds`` when one is not a sequence of valid entries.
    """
    n = check_positive_int("n", n)
    Ls = _check_ints("Ls", Ls, 0, n - 1, "delays in [0, n)")
    radii = _check_radius_list(radii)
    seeds = _check_ints("seeds", seeds, 0, None, "seeds, integers >= 0")
    if not (Ls and radii and seeds):
        raise ValueError("Ls, radii and seeds must each hold at least one value; got "
                         f"{len(Ls)}, {len(radii)} and {len(seeds)}")
    steps, lr, modes = _check_training(steps, lr, modes)
    eps = _check_eps(eps)
    _check_diagonal_size(len(Ls) * len(radii) * len(seeds), n, modes, steps)
    grid = [(L, r, s) for L in Ls for r in radii for s in seeds]
    losses, _, _ = _train_diagonal_batch([g[0] for g in grid], n, modes, [g[1] for g in grid],
                                         [g[2] for g in grid], steps, lr, eps)
    return losses[:, -1].reshape(len(Ls), len(radii), len(seeds))


# ---------------------------------------------------------------- attention's side: associative recall

def recall_loss(W, bias, queries, keys, values, match):
    """Loss of one softmax head on an associative-recall batch, with its exact gradient.

    Used in Chapter 4, Section 4.11.

    Each sequence holds ``n`` key-value pairs at positions ``j = 0..n-1`` and a query after
    them, at position ``n``; the query is the key of pair ``match`` and the target its value.
    The head scores ``s_j = q^T W k_j + bias[n - 1 - j]`` (content plus a relative-position
    bias indexed by the distance ``n - j`` from the query, minus one), takes
    ``a = softmax(s)`` and outputs ``sum_j a_j v_j``. The loss is
    ``sum_b ||yhat_b - v_{b, match_b}||^2 / sum_b ||v_{b, match_b}||^2``: 1 for the zero output.

    Parameters
    ----------
    W : array, shape (d_k, d_k)
        Content map; the score of key ``k`` for query ``q`` is ``q^T W k``.
    bias : array, shape (n,)
        ``bias[D - 1]`` is added to the score of the pair at distance ``D`` from the query.
    queries : array, shape (B, d_k)
    keys : array, shape (B, n, d_k)
    values : array, shape (B, n, d_v)
    match : array of int, shape (B,)
        Position of the pair that the query asks for.

    Returns
    -------
    loss : float
    grads : dict of ndarray
        ``"W"`` (d_k, d_k) and ``"bias"`` (n,).
    weight : ndarray, shape (B,)
        The attention weight on the matching pair.

    Raises
    ------
    ValueError
        If the values vanish on every matching pair (the loss is scale-free in the values:
        they are divided by a power of two near their largest entry first).
    """
    W = as_array("W", W, 2, "(d_k, d_k)")
    keys = as_array("keys", keys, 3, "(B, n, d_k)")
    B, n, dk = keys.shape
    check_nonempty("keys", keys, 0, "the batch size B")
    check_nonempty("keys", keys, 1, "the number of pairs n")
    if W.shape != (dk, dk):
        raise ValueError(f"W must have shape (d_k, d_k) = ({dk}, {dk}) to match keys; got {W.shape}")
    bias = as_array("bias", bias, 1, "(n,)")
    check_size("bias", bias, 0, n, "n, the number of pairs in keys")
    queries = as_array("queries", queries, 2, "(B, d_k)")
    if queries.shape != (B, dk):
        raise ValueError(f"queries must have shape (B, d_k) = ({B}, {dk}), with B and d_k from keys of shape "
                         f"{keys.shape}; got {queries.shape}")
    values = as_array("values", values, 3, "(B, n, d_v)")
    if values.shape[:2] != (B, n):
        raise ValueError(f"values must have shape (B, n, d_v) with (B, n) = ({B}, {n}) from keys of shape "
                         f"{keys.shape}; got {values.shape}")
    check_nonempty("values", values, 2, "the value width d_v")
    match = np.asarray(match)
    if match.shape != (B,) or not np.issubdtype(match.dtype, np.integer) or np.any((match < 0) | (match >= n)):
        raise ValueError(f"match must be an integer array of shape ({B},) with entries in [0, {n}); got {match!r}")
    # The loss and the gradient are unchanged by a scale of the values (degree 0): divide them by
    # the power of two nearest their largest entry (exact), so huge or tiny values neither overflow
    # nor underflow in the squares.
    values, _ = _unit(values)
    with np.errstate(under="ignore"):
        target_norm = float(np.sum(values[np.arange(B), match] ** 2))
    if not target_norm > 0:
        raise ValueError("values must not vanish on every matching pair (relative to the largest value, "
                         "their squares sum to 0): the loss is normalised by sum_b ||v_{b, match_b}||^2")
    with np.errstate(under="ignore"):
        loss, dW, dbias, weight = _recall_loss_grad(W, bias, queries, keys, values, match)
    if not (np.isfinite(loss) and np.all(np.isfinite(dW)) and np.all(np.isfinite(dbias))):
        raise ValueError("queries, keys and W are too large together: the scores q^T W k overflow "
                         "the largest float; rescale W, queries or keys")
    return loss, {"W": dW, "bias": dbias}, weight


def _recall_loss_grad(W, bias, q, keys, values, match):
    B, n, _ = keys.shape
    qW = q @ W  # (B, d_k)
    s = np.matmul(keys, qW[:, :, None])[:, :, 0] + bias[::-1][None, :]  # bias[n-1-j] at position j
    s -= s.max(axis=1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(axis=1, keepdims=True)
    yhat = np.matmul(a[:, None, :], values)[:, 0]
    rows = np.arange(B)
    target = values[rows, match]
    norm = float(np.sum(target**2))
    err = yhat - target
    loss = float(np.sum(err**2)) / norm
    da = np.matmul(values, (2.0 * err / norm)[:, :, None])[:, :, 0]
    ds = a * (da - np.sum(a * da, axis=1, keepdims=True))
    dW = q.T @ np.matmul(ds[:, None, :], keys)[:, 0]
    dbias = ds.sum(axis=0)[::-1]
    return loss, dW, dbias, a[rows, match]


def _recall_batch(rng, B, n, d_k, d_v, distance, max_distance=None):
    keys = rng.standard_normal((B, n, d_k)) / np.sqrt(d_k)
    values = rng.standard_normal((B, n, d_v))
    if distance is None:
        match = rng.integers(0, n, B) if max_distance is None else n - rng.integers(1, max_distance + 1, B)
    else:
        match = np.full(B, n - distance)
    return keys[np.arange(B), match], keys, values, match


@dataclass(frozen=True)
class RecallResult:
    """Outcome of :func:`train_recall_head`.

    Used in Chapter 4, Section 4.11.

    Attributes
    ----------
    losses : ndarray, shape (steps + 1,)
        Loss on each step's fresh batch (the last entry: after the last step, on a fresh batch).
    steps_to_solve : int or None
        First step whose batch loss is below ``tol``; None if none is.
    W : ndarray, shape (d_k, d_k)
    bias : ndarray, shape (n,)
        Final relative-position bias, ``bias[D - 1]`` for distance ``D``.
    grad_norm0 : float
        Norm of the gradient at initialisation (before Adam rescales it), on the first batch.
    d_v : int
        Value dimension of the task.
    W_solved : ndarray, shape (d_k, d_k), or None
        ``W`` at step ``steps_to_solve`` (the parameters whose batch loss first fell below
        ``tol``); None if the run never got there.
    """

    losses: np.ndarray
    steps_to_solve: int | None
    W: np.ndarray
    bias: np.ndarray
    grad_norm0: float
    d_v: int
    W_solved: np.ndarray | None = None


def _check_recall_size(batch: int, n: int, d_k: int, d_v: int) -> None:
    """Memory guard of a recall batch: keys (batch, n, d_k), values (batch, n, d_v), W (d_k, d_k)."""
    sizes = f"batch = {batch}, n = {n}, d_k = {d_k}"
    check_allocation(sizes, (batch, n, d_k), "the keys of one batch", "use a smaller batch, n or d_k")
    check_allocation(f"batch = {batch}, n = {n}, d_v = {d_v}", (batch, n, d_v), "the values of one batch",
                     "use a smaller batch, n or d_v")
    check_allocation(f"d_k = {d_k}", (d_k, d_k), "the content map W", "use a smaller d_k")
    # keys and values with their draws' temporaries, about 8 (batch, n) score arrays, the (batch, d) rows
    check_total(f"batch = {batch}, n = {n}, d_k = {d_k}, d_v = {d_v}",
                float(batch) * (n * (2 * d_k + 2 * d_v + 8) + 4 * d_k + 4 * d_v),
                "the arrays of one batch", "use a smaller batch, n, d_k or d_v")


def _check_position(position: str, slope) -> float:
    if not isinstance(position, str) or position not in ("learned", "alibi", "none"):
        raise ValueError(f"position must be 'learned', 'alibi' or 'none'; got {position!r}")
    return _check_number("slope", slope, 0.0, np.inf, " > 0") if position == "alibi" else 0.0


def train_recall_head(n: int, steps: int = 300, lr: float = 0.1, batch: int = 32, d_k: int = 32, d_v: int = 8,
                      position: str = "learned", slope: float = 0.05, distance: int | None = None,
                      tol: float = 0.05, seed: int = 0, max_distance: int | None = None) -> RecallResult:
    """Train one content-based softmax head on associative recall by Adam (analytic gradients).

    Used in Chapter 4, Section 4.11.

    Each step draws a fresh batch of ``batch`` sequences of ``n`` random key-value pairs
    (keys ``N(0, I / d_k)``, values ``N(0, I)``) and a query equal to the key of one pair,
    at a distance drawn uniformly from ``1..n`` (or from ``1..max_distance``, or fixed at
    ``distance``); the target is that pair's value. The head is :func:`recall_loss`'s. ``W`` starts at 0, so every
    weight starts at ``1 / n``. Relative position:

    * ``"learned"``: a trainable bias per distance, starting at 0;
    * ``"alibi"``: the fixed ALiBi bias ``-slope * D`` at distance ``D`` (not trained);
    * ``"none"``: no positional information (bias 0, not trained): content only.

    Parameters
    ----------
    n : int
        Number of key-value pairs that compete, ``n >= 2``.
    steps : int
    lr : float
        Adam's step size, ``0 < lr <= 1``.
    batch, d_k, d_v : int
    position : {"learned", "alibi", "none"}
    slope : float
        ALiBi slope (used only with ``"alibi"``).
    distance : int or None
        Train at one distance ``1 <= distance <= n``; None draws it per sequence.
    tol : float
        The loss below which the task counts as solved.
    seed : int
    max_distance : int or None
        With ``distance=None``: draw the distance uniformly from ``1..max_distance``
        (``1 <= max_distance <= n``), so that farther pairs are never the match in
        training; None means ``n``.

    Returns
    -------
    RecallResult

    Raises
    ------
    ValueError
        If ``lr > 1`` or the loss stops being finite (naming ``lr``).
        If the run would take more than 1e8 entry-steps, ``(steps + 1) x (entries per step + 2000)``,
        a few seconds (the book's largest call is 7e7), or a step's arrays more than 2 GiB; the
        message names the sizes that set the cost.
    """
    n = check_positive_int("n", n, minimum=2)
    steps, lr, _ = _check_training(steps, lr, 1)
    batch = check_positive_int("batch", batch)
    d_k, d_v = check_positive_int("d_k", d_k), check_positive_int("d_v", d_v)
    slope = _check_position(position, slope)
    if distance is not None:
        distance = check_positive_int("distance", distance)
        if distance > n:
            raise ValueError(f"distance must lie in [1, n] = [1, {n}]; got {distance}")
    if max_distance is not None:
        if distance is not None:
            raise ValueError("give at most one of distance and max_distance; got both")
        max_distance = check_positive_int("max_distance", max_distance)
        if max_distance > n:
            raise ValueError(f"max_distance must lie in [1, n] = [1, {n}]; got {max_distance}")
    tol = _check_number("tol", tol, 0.0, np.inf, " > 0")
    seed = check_positive_int("seed", seed, minimum=0)
    _check_recall_size(batch, n, d_k, d_v)
    _check_work(steps + 1, batch * n * (d_k + d_v), f"steps = {steps} with batch = {batch}, n = {n}, "
                f"d_k = {d_k} and d_v = {d_v}",
                "use fewer steps, a smaller batch, n, d_k or d_v")
    rng = np.random.default_rng(seed)
    W = np.zeros((d_k, d_k))
    bias = -slope * np.arange(1, n + 1, dtype=float)
    params = [W, bias]
    m1 = [np.zeros_like(p) for p in params]
    m2 = [np.zeros_like(p) for p in params]
    losses = np.empty(steps + 1)
    solved, grad0, W_solved = None, 0.0, None
    for t in range(steps + 1):
        loss, dW, dbias, _ = _recall_loss_grad(W, bias, *_recall_batch(rng, batch, n, d_k, d_v, distance,
                                                                               max_distance))
        if not np.isfinite(loss):
            raise _diverged(t, lr)
        losses[t] = loss
        if solved is None and loss < tol:
            solved, W_solved = t, W.copy()
        if t == 0:
            grad0 = float(np.sqrt(np.sum(dW**2) + (np.sum(dbias**2) if position == "learned" else 0.0)))
        if t == steps:
            break
        grads = [dW, dbias if position == "learned" else np.zeros_like(bias)]
        _adam_step(params, grads, m1, m2, t + 1, lr)
    return RecallResult(losses, solved, W.copy(), bias.copy(), grad0, d_v, W_solved)


def _check_recall_result(result) -> tuple[np.ndarray, np.ndarray]:
    """``W`` and ``bias`` of a :class:`RecallResult` whose ``W``, ``bias`` and ``d_v`` can be evaluated; else a
    ``ValueError`` naming ``result`` (a result is a plain record, so one built or edited by hand is checked)."""
    if not isinstance(result, RecallResult):
        raise ValueError(f"result must be a RecallResult from train_recall_head; got {type(result).__name__}")
    try:
        W = as_array("result.W", result.W, 2, "(d_k, d_k)")
        bias = as_array("result.bias", result.bias, 1, "(n,)")
    except ValueError as exc:
        raise ValueError(f"{exc} (result must be a RecallResult from train_recall_head)") from None
    if W.shape[0] != W.shape[1] or W.shape[0] < 1:
        raise ValueError(f"result.W must be square, shape (d_k, d_k) with d_k >= 1; got shape {W.shape}")
    if bias.shape[0] < 1:
        raise ValueError("result.bias must hold one bias per distance, shape (n,) with n >= 1; got shape (0,)")
    if isinstance(result.d_v, (bool, np.bool_)) or not isinstance(result.d_v, (int, np.integer)) or result.d_v < 1:
        raise ValueError(f"result.d_v must be an integer >= 1 (the value width of the task); got {result.d_v!r}")
    return W, bias


def recall_eval(result: RecallResult, distances, batch: int = 256, seed: int = 1):
    """Loss and mean weight on the match of a trained head, at each distance.

    Used in Chapter 4, Section 4.11.

    Parameters
    ----------
    result : RecallResult
    distances : sequence of int
        Each in ``[1, n]``.
    batch : int
        Sequences per distance (fresh, from ``default_rng(seed)``).
    seed : int

    Returns
    -------
    losses, weights : ndarray, shape (len(distances),)

    Raises
    ------
    ValueError
        Naming ``result`` if it is not a :class:`RecallResult` with a finite square ``W``, a
        finite ``bias`` and ``d_v >= 1``, or its scores overflow; if a batch's keys or values
        would exceed 1 GiB, or the evaluation 1e8 entry-steps.
    """
    W, bias = _check_recall_result(result)
    n, d_k = bias.shape[0], W.shape[0]
    distances = _check_ints("distances", distances, 1, n, "distances in [1, n]")
    batch = check_positive_int("batch", batch)
    rng = np.random.default_rng(check_positive_int("seed", seed, minimum=0))
    _check_recall_size(batch, n, d_k, result.d_v)
    _check_work(len(distances), batch * n * (d_k + result.d_v),
                f"{len(distances)} distances with batch = {batch} and n = {n}",
                "use fewer distances or a smaller batch")
    losses, weights = [], []
    with np.errstate(over="ignore", invalid="ignore", under="ignore"):
        for D in distances:
            loss, _, _, weight = _recall_loss_grad(W, bias, *_recall_batch(rng, batch, n, d_k, result.d_v, D))
            losses.append(loss)
            weights.append(float(weight.mean()))
    losses, weights = np.array(losses), np.array(weights)
    if not (np.all(np.isfinite(losses)) and np.all(np.isfinite(weights))):
        raise ValueError(f"result.W and result.bias are too large: the scores q^T W k + bias overflow the largest "
                         f"float (max |W| = {np.max(np.abs(W)):.3e}, max |bias| = {np.max(np.abs(bias)):.3e}); "
                         "rescale them")
    return losses, weights
