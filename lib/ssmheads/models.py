"""Sequence layers, each computable two ways: directly, and through its interaction operator.

Every layer has ``forward(X)`` (the way the layer is usually computed: a
recurrence, a convolution, softmax(QK^T)V) and ``interaction(X)`` (its operator
``W`` of shape ``(n, n, p, d)``). Chapter 1 checks that the two routes agree.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_array, check_allocation, check_nonempty, check_positive_int, check_size, check_total
from .operator import _toeplitz

#: Most lags :func:`lag_operators` computes (each is one ``N x N`` by ``N x d`` product in a
#: Python loop, about 2 s per million lags); beyond it a ``ValueError`` says so.
MAX_LAGS = 2**20
#: Most attention weights ``alpha_ij`` one ``forward`` of an attention layer forms (row block by
#: row block): ``2^25``, summed over the heads and over the pairs a causal layer attends to (a
#: single causal head of 8191 tokens, two heads of 4096; a second or two here). Longer inputs are
#: refused.
MAX_PAIRS = 2**25
#: Most steps a recurrence takes (one Python-level step per token or chunk: ``forward`` of the
#: SSMs and RNNs, the recurrent and chunked forms): ``2^18``, one to five seconds here.
MAX_SCAN = 2**18
#: Most updates of the state blocks :meth:`ElmanRNN.interaction` makes (``n^2 N d (p + 2)``):
#: 1e8, about a second here (``n`` near 2000 for ``N = 3``, ``d = p = 2``).
MAX_RNN_WORK = 1e8

__all__ = [
    "lag_operators",
    "LinearSSM",
    "MultiHeadAttention",
    "Convolution",
    "PositionwiseLinear",
    "ElmanRNN",
    "KANLayer",
]


def _check_scan(steps: int, n: int, instead: str = "use a shorter X") -> None:
    """Refuse, naming ``X`` (of ``n`` tokens), a recurrence of more than :data:`MAX_SCAN` steps."""
    if steps > MAX_SCAN:
        raise ValueError(f"X has {n} tokens: the recurrence would take {steps} steps, above the limit of "
                         f"{MAX_SCAN} (a few seconds here); {instead}")


def _check_chunks(n: int, chunk: int) -> None:
    """Refuse, naming ``X`` and ``chunk``, a chunked form of more than ``MAX_SCAN // 8`` chunks (each chunk
    is about eight array operations, a recurrence step one or two)."""
    chunks = -(-n // chunk)
    if chunks > MAX_SCAN // 8:
        raise ValueError(f"X has {n} tokens: chunk = {chunk} makes {chunks} chunks, above the limit of "
                         f"{MAX_SCAN // 8} (a few seconds here); use a larger chunk or a shorter X")


def _check_system(A, B, C, D=None, copy=False):
    A = as_array("A", A, 2, "(N, N)", copy)
    if A.shape[0] != A.shape[1]:
        raise ValueError(f"A must be square, shape (N, N); got shape {A.shape}")
    check_nonempty("A", A, 0, "the state size N")
    N = A.shape[0]
    B = as_array("B", B, 2, "(N, d)", copy)
    check_size("B", B, 0, N, "the state size N of A")
    check_nonempty("B", B, 1, "the token width d")
    C = as_array("C", C, 2, "(p, N)", copy)
    check_size("C", C, 1, N, "the state size N of A")
    check_nonempty("C", C, 0, "the output width p")
    if D is not None:
        D = as_array("D", D, 2, "(p, d)", copy)
        if D.shape != (C.shape[0], B.shape[1]):
            raise ValueError(f"D must have shape (p, d) = {(C.shape[0], B.shape[1])} (p from C, d from B); "
                             f"got shape {D.shape}, while B has shape {B.shape} and C has shape {C.shape}")
    return A, B, C, D


def _spectral_radius(A: np.ndarray) -> float:
    return float(np.max(np.abs(np.linalg.eigvals(A))))


def _overflow_message(A: np.ndarray, first: int, n: int, what: str, arg: str, index: str) -> str:
    """Say why ``what`` stopped being finite at ``index = first`` (of ``n``), naming the spectral radius."""
    rho = _spectral_radius(A)
    if rho > 1.0:
        return (f"A has spectral radius {rho:.4g} > 1 (an unstable system): {what} grows like "
                f"{rho:.4g}^{index} and overflows the largest float at {index} = {first}, within {arg} "
                f"(length {n}); use a length of at most {first} or an A with spectral radius below 1")
    return (f"{what} overflows the largest float at {index} = {first} of {arg} (length {n}) although A has "
            f"spectral radius {rho:.4g} <= 1: the entries of A, B, C (or of the input) are too large; "
            "rescale them")


def lag_operators(A, B, C, n: int, D=None) -> np.ndarray:
    """Lag operators ``K[l] = C A^l B`` for ``l = 0, ..., n-1`` (plus ``D`` at lag 0 if given).

    Derived in Chapter 1, Theorem 1.1.

    The columns ``A^l B`` are propagated one lag at a time, ``A^l B = A (A^(l-1) B)``,
    as the recurrence does: ``n - 1`` products of an ``N x N`` matrix with an
    ``N x d`` one, ``O(n N^2 d)`` flops, then one batched product with ``C``.
    Repeated squaring (``A^(2m) = A^m A^m``, and the next ``m`` columns as ``A^m``
    times the previous ``m``) needs the same ``O(n N^2 d)`` flops for the products
    with ``B`` plus ``O(N^3 log n)`` for the squarings, so it saves no arithmetic,
    only NumPy calls. It also loses accuracy on non-normal ``A``: the rounding error
    of ``A^m A^m`` is relative to ``||A^m||^2``, which for a diagonalisable
    ``A = S diag(lambda) S^-1`` can exceed ``||A^(2m)||`` by a factor up to
    ``cond(S)^2``. ``tests/test_lag_accuracy.py`` compares this function with
    60-digit arithmetic on such matrices.

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
        Number of lags, ``n >= 1``.
    D : array, shape (p, d), optional
        Skip term; it only changes ``K[0]`` to ``C B + D``.

    Returns
    -------
    K : ndarray, shape (n, p, d)

    Raises
    ------
    ValueError
        If ``n`` exceeds ``MAX_LAGS`` (2^20), if an array would exceed 1 GiB
        (``MAX_ARRAY_BYTES`` of ``ssmheads._validate``),
        or if the lags overflow, as they do for an unstable ``A`` (spectral radius
        above 1) at a lag that grows like ``log(1e308) / log(radius)``; the message
        names the spectral radius and the first lag that overflows.
    """
    A, B, C, D = _check_system(A, B, C, D)
    return _checked_lags(A, B, C, check_positive_int("n", n), D)


def _lag_operators(A: np.ndarray, B: np.ndarray, C: np.ndarray,
                   n: int) -> np.ndarray:
    """``K[l] = C A^l B`` for ``l < n``, shape (n, p, d), lag by lag."""
    # AB[l] = A^l B, shape (n, N, d); lag 0 is B itself
    AB = np.empty((n,) + B.shape)
    AB[0] = B
    for lag in range(1, n):
        # A^l B = A (A^(l-1) B), as h_t = A h_(t-1) + B x_t
        np.matmul(A, AB[lag - 1], out=AB[lag])
    # K[l] = C (A^l B), for every l at once
    return C @ AB


def _checked_lags(A: np.ndarray, B: np.ndarray, C: np.ndarray, n: int, D: np.ndarray | None = None) -> np.ndarray:
    """:func:`lag_operators` on arrays already checked: size guards, the core, ``D``, overflow check."""
    if n > MAX_LAGS:
        raise ValueError(f"n = {n} lags is more than the {MAX_LAGS} that lag_operators computes (one matrix "
                         f"product per lag, about {2.2 * n / 2**20:.0f} s here); for a stable A the lags decay "
                         "like rho(A)^l, so a few hundred lags past the decay are zero to rounding: use a smaller n")
    instead = "use fewer lags n"
    check_allocation("n", (n,) + B.shape, "the columns A^l B", instead)
    check_allocation("n", (n, C.shape[0], B.shape[1]), "the lags K", instead)
    with np.errstate(over="ignore", invalid="ignore"):
        K = _lag_operators(A, B, C, n)
        if D is not None:
            K[0] += D
    finite = np.isfinite(K).reshape(n, -1).all(axis=1)
    if not finite.all():
        first = int(np.argmin(finite))
        raise ValueError(_overflow_message(A, first, n, "the lag operator C A^l B", "the n lags", "l"))
    return K


class _Layer:
    """Shared input check: ``X`` must be a finite ``(n, d)`` array with the layer's ``d``."""

    d: int
    p: int

    def _input(self, X) -> np.ndarray:
        X = as_array("X", X, 2, "(n, d)")
        check_nonempty("X", X, 0, "the sequence length n")
        check_size("X", X, 1, self.d, "the layer's token width d")
        return X

    def _interaction_entries(self, n: int) -> float:
        """Numbers :meth:`interaction` holds at its peak for ``n`` tokens: by default ``W`` and its lags
        (with their zero-padded copies); layers that hold more say so."""
        return float(n) * n * self.p * self.d + 4.0 * n * self.p * self.d

    def _check_operator_size(self, n: int, instead: str | None = None) -> None:
        """Refuse an operator ``W`` of shape ``(n, n, p, d)`` above 1 GiB, or a working set of
        :meth:`interaction` (:meth:`_interaction_entries`) above 2 GiB, naming ``X``."""
        check_allocation("X", (n, n, self.p, self.d), "the operator W", instead or _NO_OPERATOR)
        check_total("X", self._interaction_entries(n), f"{type(self).__name__}.interaction (the operator W and "
                    "the arrays it is built from)", instead or _NO_OPERATOR)

    def _operator_length(self, X) -> int:
        """The length ``n`` of a checked ``X``, once an operator ``(n, n, p, d)`` is known to fit in 1 GiB."""
        n = self._input(X).shape[0]
        self._check_operator_size(n)
        return n


class LinearSSM(_Layer):
    """Linear time-invariant state-space model ``h_t = A h_{t-1} + B x_t``, ``y_t = C h_t + D x_t``.

    Derived in Chapter 1, Theorem 1.1.

    Parameters
    ----------
    A : array, shape (N, N)
        State transition.
    B : array, shape (N, d)
        Input map.
    C : array, shape (p, N)
        Output map.
    D : array, shape (p, d), optional
        Skip term (zero if omitted).

    Notes
    -----
    The state starts at ``h_0 = 0``. Unrolling the recurrence gives the causal
    block-Toeplitz operator ``W_ij = C A^(i-j) B`` for ``j <= i``, independent of the input.
    """

    def __init__(self, A, B, C, D=None):
        A, B, C, D = _check_system(A, B, C, D, copy=True)
        self.A, self.B, self.C = A, B, C
        self.D = np.zeros((C.shape[0], B.shape[1])) if D is None else D
        for arr in (self.A, self.B, self.C, self.D):
            arr.flags.writeable = False
        self.N, self.d, self.p = A.shape[0], B.shape[1], C.shape[0]

    def __repr__(self) -> str:
        return f"LinearSSM(N={self.N}, d={self.d}, p={self.p})"

    def _interaction_entries(self, n: int) -> float:
        """``W``, the columns ``A^l B``, the lags and their zero-padded copies."""
        return float(n) * n * self.p * self.d + n * (self.N * self.d + 4.0 * self.p * self.d)

    @property
    def spectral_radius(self) -> float:
        """Largest absolute eigenvalue of ``A``; the system is stable when it is below 1."""
        return float(np.max(np.abs(np.linalg.eigvals(self.A))))

    def lag_operators(self, n: int) -> np.ndarray:
        """Lag operators ``K[l] = C A^l B`` (``K[0] = C B + D``), shape ``(n, p, d)``."""
        return _checked_lags(self.A, self.B, self.C, check_positive_int("n", n), self.D)

    def forward(self, X) -> np.ndarray:
        """Run the recurrence over the sequence.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        Y : ndarray, shape (n, p)

        Raises
        ------
        ValueError
            If the output overflows, as it does for an unstable ``A`` (spectral radius
            above 1) on a long enough ``X``: the message gives the spectral radius and
            the first position that overflows. Shorter sequences of an unstable system
            are computed as usual.
        """
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, self.N), "the states h_t", "run a shorter sequence")
        check_total("X", n * (2.0 * self.N + 3.0 * self.p), "the drives B x_t, the states h_t and the outputs",
                    "run a shorter sequence")
        _check_scan(n, n, "run a shorter sequence")
        with np.errstate(over="ignore", invalid="ignore"):
            drive = X @ self.B.T  # (n, N): B x_t for every t
            states = np.empty((n, self.N))
            h = np.zeros(self.N)
            for t in range(n):
                h = self.A @ h + drive[t]
                states[t] = h
            Y = states @ self.C.T + X @ self.D.T
        finite = np.isfinite(Y).all(axis=1)
        if not finite.all():
            raise ValueError(_overflow_message(self.A, int(np.argmin(finite)), n, "the state h_t", "X", "t"))
        return Y

    def interaction(self, X) -> np.ndarray:
        """Operator ``W[i, j] = K[i - j]`` for ``j <= i``; (n, n, p, d).

        ``X``, shape (n, d), only sets the length ``n``: the operator of an
        LTI SSM does not depend on the input.
        """
        n = self._operator_length(X)          # X only sets the length n
        # Theorem 1.1: the lags K[l] = C A^l B, with K[0] = C B + D
        K = _checked_lags(self.A, self.B, self.C, n, self.D)
        # W[i, j] = K[i - j] for j <= i, zero above the diagonal
        return _toeplitz(K, n)


_NO_OPERATOR = "use forward(X), which never builds W, or a shorter X"


_NO_ALPHA = "use forward(X), which works on blocks of rows, or a shorter X"
_BLOCK_ENTRIES = 2**23  # forward's softmax works on blocks of at most this many weights (64 MiB)


def _linear_scale_message(Q: np.ndarray, K: np.ndarray) -> str:
    top = max(float(np.max(np.abs(Q))), float(np.max(np.abs(K))))
    return (f"X is too large for the linear kernel: queries and keys reach {top:.3e}, and the feature "
            "map elu(u) + 1 = exp(u) of a key below -745 is 0 in floating point, so a token can get no "
            f"weight at all; the largest safe scale keeps them within about 700: multiply X by at most "
            f"{700.0 / top:.3e}")


def _softmax_scale_message(Q: np.ndarray, K: np.ndarray) -> str:
    finite = [float(np.max(np.abs(a[np.isfinite(a)]))) if np.any(np.isfinite(a)) else 0.0 for a in (Q, K)]
    if not (np.all(np.isfinite(Q)) and np.all(np.isfinite(K))):
        which = "W_Q" if not np.all(np.isfinite(Q)) else "W_K"
        return (f"X and {which} are too large for the softmax kernel: the {'queries' if which == 'W_Q' else 'keys'} "
                f"{which} x overflow the largest float (1.8e308); rescale {which} or X so that queries and keys "
                "stay below about 1e300 (the finite ones reach "
                f"{max(finite):.3e})")
    top = max(finite)
    return (f"X is too large for the softmax kernel: queries and keys reach {top:.3e} and the attention "
            f"scores are not finite; multiply X by at most {1e150 / max(top, 1.0):.3e}")


def _elu_plus_one(u: np.ndarray) -> np.ndarray:
    """The positive feature map of linear attention, ``elu(u) + 1``."""
    return np.where(u > 0, u + 1.0, np.exp(np.minimum(u, 0.0)))


class MultiHeadAttention(_Layer):
    """Multi-head attention, ``y_i = sum_h W_O^h sum_j alpha^h_ij W_V^h x_j``.

    Derived in Chapter 1, Section 1.5.

    Parameters
    ----------
    W_Q, W_K : array, shape (H, d_k, d)
        Query and key projections of each head.
    W_V : array, shape (H, d_v, d)
        Value projections.
    W_O : array, shape (H, p, d_v)
        Output projection, split by head.
    causal : bool
        If true, token ``i`` attends only to ``j <= i``.
    kernel : {"softmax", "linear"}
        ``"softmax"``: ``alpha_ij = softmax_j(q_i . k_j / sqrt(d_k))``.
        ``"linear"``: ``alpha_ij = phi(q_i) . phi(k_j) / sum_m phi(q_i) . phi(k_m)`` with
        ``phi(u) = elu(u) + 1`` (Katharopoulos et al., 2020).
    """

    def __init__(self, W_Q, W_K, W_V, W_O, causal: bool = True, kernel: str = "softmax"):
        W_Q = as_array("W_Q", W_Q, 3, "(H, d_k, d)", copy=True)
        W_K = as_array("W_K", W_K, 3, "(H, d_k, d)", copy=True)
        W_V = as_array("W_V", W_V, 3, "(H, d_v, d)", copy=True)
        W_O = as_array("W_O", W_O, 3, "(H, p, d_v)", copy=True)
        check_nonempty("W_Q", W_Q, 0, "the number of heads H")
        check_nonempty("W_Q", W_Q, 1, "the key width d_k")
        check_nonempty("W_Q", W_Q, 2, "the token width d")
        H, d_k, d = W_Q.shape
        for name, arr in (("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
            check_size(name, arr, 0, H, "the number of heads H of W_Q")
        check_size("W_K", W_K, 1, d_k, "the key width d_k of W_Q")
        check_size("W_K", W_K, 2, d, "the token width d of W_Q")
        check_size("W_V", W_V, 2, d, "the token width d of W_Q")
        check_nonempty("W_V", W_V, 1, "the value width d_v")
        check_size("W_O", W_O, 2, W_V.shape[1], "the value width d_v of W_V")
        check_nonempty("W_O", W_O, 1, "the output width p")
        if not isinstance(kernel, str) or kernel not in ("softmax", "linear"):
            raise ValueError(f"kernel must be 'softmax' or 'linear'; got {kernel!r}")
        if not isinstance(causal, (bool, np.bool_)):
            raise ValueError(f"causal must be True or False; got {causal!r}")
        self.W_Q, self.W_K, self.W_V, self.W_O = W_Q, W_K, W_V, W_O
        for arr in (W_Q, W_K, W_V, W_O):
            arr.flags.writeable = False
        self.causal, self.kernel = bool(causal), kernel
        self.H, self.d_k, self.d = H, d_k, d
        self.d_v, self.p = W_V.shape[1], W_O.shape[1]

    def __repr__(self) -> str:
        return (f"MultiHeadAttention(H={self.H}, d={self.d}, p={self.p}, d_k={self.d_k}, "
                f"d_v={self.d_v}, causal={self.causal}, kernel={self.kernel!r})")

    def _queries_keys(self, X: np.ndarray):
        Q = np.einsum("hkd,nd->hnk", self.W_Q, X)
        K = np.einsum("hkd,nd->hnk", self.W_K, X)
        return Q, K

    def _weights(self, Q: np.ndarray, K: np.ndarray, rows: slice) -> np.ndarray:
        """Attention weights of the query rows ``rows``, shape ``(H, r, n)``, each row summing to 1.

        The plain formula is used when it is finite. When a score overflows (inputs
        of size near 1e155), queries and keys are scaled to a largest entry of 1
        first and the scale is applied after the maximum is subtracted, so a huge
        score gives a weight of exactly 0 or 1 instead of NaN.
        """
        n = K.shape[1]
        q = Q[:, rows]
        i = np.arange(n)[rows][:, None]
        allowed = (np.arange(n)[None, :] <= i) if self.causal else np.ones((q.shape[1], n), dtype=bool)
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            if self.kernel == "softmax":
                scores = q @ K.transpose(0, 2, 1)
                scores /= np.sqrt(self.d_k)
                if np.isfinite(scores.max()) and np.isfinite(scores.min()):  # every score finite
                    if self.causal:
                        np.copyto(scores, -np.inf, where=~allowed)
                    scores -= scores.max(axis=2, keepdims=True)
                    weights = np.exp(scores, out=scores)
                else:
                    a = np.max(np.abs(q), axis=2, keepdims=True)  # (H, r, 1)
                    b = np.max(np.abs(K), axis=(1, 2), keepdims=True)  # (H, 1, 1)
                    a, b = np.where(a > 0, a, 1.0), np.where(b > 0, b, 1.0)
                    t = (q / a) @ (K / b).transpose(0, 2, 1) / np.sqrt(self.d_k)
                    t = np.where(allowed, t, -np.inf)
                    diff = t - t.max(axis=2, keepdims=True)  # <= 0; -inf where not allowed
                    weights = np.exp(np.where(diff == 0, 0.0, (a * b) * diff))
            else:
                fq, fk = _elu_plus_one(q), _elu_plus_one(K)
                weights = (fq @ fk.transpose(0, 2, 1)) * allowed
                total = weights.sum(axis=2, keepdims=True)
                if not (np.all(np.isfinite(total)) and np.all(total > 0)):
                    fq = fq / np.max(fq, axis=2, keepdims=True)
                    fk = fk / np.max(fk, axis=(1, 2), keepdims=True)
                    weights = (fq @ fk.transpose(0, 2, 1)) * allowed
            total = weights.sum(axis=2, keepdims=True)
        if not (np.all(np.isfinite(total)) and np.all(total > 0)):
            if self.kernel == "softmax":
                raise ValueError(_softmax_scale_message(Q, K))
            raise ValueError(_linear_scale_message(Q, K))
        weights /= total
        return weights

    def coefficients(self, X) -> np.ndarray:
        """Attention weights ``alpha[h, i, j]``; zero above the diagonal when causal.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        alpha : ndarray, shape (H, n, n)
            Each row sums to 1 over the positions it may attend to.

        Raises
        ------
        ValueError
            If ``alpha`` would exceed 1 GiB (``MAX_ARRAY_BYTES`` of
            ``ssmheads._validate``); :meth:`forward` computes the layer row block
            by row block without it.
        """
        return self._coefficients(self._input(X))

    def _coefficients(self, X: np.ndarray) -> np.ndarray:
        """:meth:`coefficients` of a checked ``X``: the weights of all rows, ``(H, n, n)``."""
        n = X.shape[0]
        check_allocation("X", (self.H, n, n), "the attention weights alpha", _NO_ALPHA)
        # the weights (computed in place), the mask, and a copy in the overflow-safe path
        check_total("X", (2.0 * self.H + 1.0) * n * n + 4.0 * self.H * n * (self.d_k + self.d_v),
                    "the attention weights alpha", _NO_ALPHA)
        Q, K = self._queries_keys(X)
        return self._weights(Q, K, slice(0, n))

    def value_maps(self) -> np.ndarray:
        """The per-head value maps ``V_h = W_O^h W_V^h`` (the OV circuits), shape ``(H, p, d)``."""
        return np.einsum("hpv,hvd->hpd", self.W_O, self.W_V)

    def forward(self, X) -> np.ndarray:
        """Compute the layer the usual way.

        Softmax: ``softmax(Q K^T / sqrt(d_k)) V`` per head, heads concatenated and
        multiplied by the stacked output projection. Linear kernel: the recurrent
        form with running sums ``S_i = sum_{j<=i} v_j phi(k_j)^T`` and
        ``z_i = sum_{j<=i} phi(k_j)`` (all ``j`` when not causal).

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        Y : ndarray, shape (n, p)
        """
        X = self._input(X)
        n = X.shape[0]
        pairs = self.H * (n * (n + 1) // 2 if self.causal else n * n)
        if self.kernel == "softmax" and pairs > MAX_PAIRS:  # the linear kernel's running sums are O(n)
            raise ValueError(f"X has {n} tokens: the {self.H} heads would form {pairs:.3g} attention weights, "
                             f"above the limit of {MAX_PAIRS:.3g} (about {MAX_PAIRS / 2**24:.0f} s here); use a "
                             "shorter X")
        values = np.einsum("hvd,nd->hnv", self.W_V, X)  # (H, n, d_v)
        Q, K = self._queries_keys(X)
        if self.kernel == "softmax":
            # rows in blocks, so that no (H, block, n) array passes 64 MiB
            block = max(1, min(n, _BLOCK_ENTRIES // (self.H * n)))
            heads = np.empty((self.H, n, self.d_v))
            for start in range(0, n, block):
                rows = slice(start, min(n, start + block))
                heads[:, rows] = self._weights(Q, K, rows) @ values
        else:
            if not self.causal:
                check_allocation("X", (self.H, n, self.d_v, self.d_k), "the outer products v_j phi(k_j)^T",
                                 "use a shorter X")
            heads = self._linear_heads(Q, K, values)
            if not np.all(np.isfinite(heads)):
                # phi(q) phi(k) overflowed or underflowed: scale phi(q_i) per row and phi(k) per head
                heads = self._linear_heads(Q, K, values, normalise=True)
            if not np.all(np.isfinite(heads)):
                raise ValueError(_linear_scale_message(Q, K))
        concat = heads.transpose(1, 0, 2).reshape(X.shape[0], self.H * self.d_v)
        W_O = self.W_O.transpose(1, 0, 2).reshape(self.p, self.H * self.d_v)
        with np.errstate(over="ignore", invalid="ignore"):
            Y = concat @ W_O.T
        if not np.all(np.isfinite(Y)):
            raise ValueError(f"X is too large for this layer: the output overflows the largest float "
                             f"(max |X| = {np.max(np.abs(X)):.3e}); rescale X")
        return Y

    def _linear_heads(self, Q, K, values, normalise: bool = False) -> np.ndarray:
        """Linear-kernel heads by running sums, shape ``(H, n, d_v)``."""
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            fq, fk = _elu_plus_one(Q), _elu_plus_one(K)
            if normalise:  # the ratio is unchanged by a positive scale of phi(q_i) or of all phi(k_j)
                fq = fq / np.max(fq, axis=2, keepdims=True)
                fk = fk / np.max(fk, axis=(1, 2), keepdims=True)
            if not self.causal:
                outer = np.einsum("hnv,hnk->hnvk", values, fk)  # v_j phi(k_j)^T
                S, z = outer.sum(axis=1, keepdims=True), fk.sum(axis=1, keepdims=True)
                return np.einsum("hnvk,hnk->hnv", S, fq) / np.einsum("hnk,hnk->hn", z, fq)[..., None]
            # Causal: running sums S_i = S_(i-1) + v_i phi(k_i)^T, in blocks of rows that carry
            # the state; prepending it to each block's cumulative sum keeps the order of the
            # additions, so the result is the same as one cumsum over all n rows.
            H, n, d_v = values.shape
            d_k = fk.shape[2]
            block = max(1, min(n, _BLOCK_ENTRIES // (H * d_v * d_k)))
            heads = np.empty((H, n, d_v))
            S_prev, z_prev = np.zeros((H, 1, d_v, d_k)), np.zeros((H, 1, d_k))
            for start in range(0, n, block):
                rows = slice(start, min(n, start + block))
                outer = np.einsum("hnv,hnk->hnvk", values[:, rows], fk[:, rows])
                S = np.cumsum(np.concatenate([S_prev, outer], axis=1), axis=1)[:, 1:]
                z = np.cumsum(np.concatenate([z_prev, fk[:, rows]], axis=1), axis=1)[:, 1:]
                heads[:, rows] = (np.einsum("hnvk,hnk->hnv", S, fq[:, rows])
                                  / np.einsum("hnk,hnk->hn", z, fq[:, rows])[..., None])
                S_prev, z_prev = S[:, -1:], z[:, -1:]
            return heads

    def _interaction_entries(self, n: int) -> float:
        """``W``, and the weights ``alpha`` with the temporaries of computing them."""
        return float(n) * n * (self.p * self.d + 2.0 * self.H + 1.0)

    def interaction(self, X) -> np.ndarray:
        """Operator ``W[i, j] = sum_h alpha[h, i, j] V_h``, shape (n, n, p, d).

        ``X`` has shape (n, d); the weights ``alpha`` depend on it, the value
        maps ``V_h`` do not.
        """
        X = self._input(X)
        self._check_operator_size(X.shape[0], _NO_ALPHA)
        W = self._interaction(X)
        if not np.all(np.isfinite(W)):
            raise ValueError("the value maps W_O W_V overflow the largest "
                             "float; rescale W_V or W_O")
        return W

    def _interaction(self, X: np.ndarray) -> np.ndarray:
        """``W[i, j] = sum_h alpha[h, i, j] V_h``, shape (n, n, p, d).

        Core of :meth:`interaction`, on a checked ``X``; may overflow
        to inf (:meth:`interaction` turns that into a message).
        """
        # alpha[h, i, j]: head h's weights, each row summing to 1
        alpha = self._coefficients(X)
        # V[h] = W_O^h W_V^h, the value maps, shape (H, p, d)
        V = self.value_maps()
        # W_ij = sum_h alpha^h_ij V_h: contract over the heads h
        with np.errstate(over="ignore", invalid="ignore"):
            return np.tensordot(alpha, V, axes=(0, 0))


class Convolution(_Layer):
    """Causal convolution ``y_i = sum_{l < L} K_l x_{i-l}`` (tokens before the start are zero).

    Derived in Chapter 1, Section 1.5.

    Parameters
    ----------
    kernel : array, shape (L, p, d)
        The taps ``K_0, ..., K_{L-1}``.
    """

    def __init__(self, kernel):
        kernel = as_array("kernel", kernel, 3, "(L, p, d)", copy=True)
        check_nonempty("kernel", kernel, 0, "the number of taps L")
        check_nonempty("kernel", kernel, 1, "the output width p")
        check_nonempty("kernel", kernel, 2, "the token width d")
        kernel.flags.writeable = False
        self.kernel = kernel
        self.L, self.p, self.d = kernel.shape

    def __repr__(self) -> str:
        return f"Convolution(L={self.L}, d={self.d}, p={self.p})"

    def forward(self, X) -> np.ndarray:
        """Slide the kernel over the zero-padded sequence.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        Y : ndarray, shape (n, p)
        """
        X = self._input(X)
        padded = np.concatenate([np.zeros((self.L - 1, self.d)), X])
        windows = np.lib.stride_tricks.sliding_window_view(padded, self.L, axis=0)  # (n, d, L)
        with np.errstate(over="ignore", invalid="ignore"):
            Y = np.einsum("idl,lpd->ip", windows[:, :, ::-1], self.kernel)
        if not np.all(np.isfinite(Y)):
            raise ValueError("X is too large for this kernel: the output overflows the largest float (1.8e308) "
                             f"(max|X| = {float(np.max(np.abs(X))):.3g}, max|kernel| = "
                             f"{float(np.max(np.abs(self.kernel))):.3g}); rescale X or the kernel")
        return Y

    def interaction(self, X) -> np.ndarray:
        """The banded block-Toeplitz operator ``W[i, j] = K[i - j]`` for ``0 <= i - j < L``.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        W : ndarray, shape (n, n, p, d)
        """
        n = self._input(X).shape[0]
        self._check_operator_size(n)
        return _toeplitz(self.kernel, n)


class PositionwiseLinear(_Layer):
    """Position-wise linear layer ``y_i = W x_i``: no mixing between tokens.

    Derived in Chapter 1, Section 1.5.

    Parameters
    ----------
    W : array, shape (p, d)
    """

    def __init__(self, W):
        W = as_array("W", W, 2, "(p, d)", copy=True)
        check_nonempty("W", W, 0, "the output width p")
        check_nonempty("W", W, 1, "the token width d")
        W.flags.writeable = False
        self.W = W
        self.p, self.d = W.shape

    def __repr__(self) -> str:
        return f"PositionwiseLinear(d={self.d}, p={self.p})"

    def forward(self, X) -> np.ndarray:
        """``Y = X W^T``; input ``(n, d)``, output ``(n, p)``.

        Raises ``ValueError`` (naming ``X``) if the output overflows the largest float.
        """
        X = self._input(X)
        with np.errstate(over="ignore", invalid="ignore"):
            Y = X @ self.W.T
        if not np.all(np.isfinite(Y)):
            raise ValueError("X is too large for W: the output X W^T overflows the largest float (1.8e308) "
                             f"(max|X| = {float(np.max(np.abs(X))):.3g}, max|W| = "
                             f"{float(np.max(np.abs(self.W))):.3g}); rescale X or W")
        return Y

    def interaction(self, X) -> np.ndarray:
        """The block-diagonal operator ``W[i, j] = delta_ij W``, shape ``(n, n, p, d)``."""
        n = self._input(X).shape[0]
        self._check_operator_size(n)
        return _toeplitz(self.W[None], n)


def _tanh_chord(z: np.ndarray) -> np.ndarray:
    """``tanh(z) / z`` entrywise, and 1 (its limit) where ``z = 0``: the slope of tanh's chord from 0 to ``z``."""
    zero = z == 0
    return np.where(zero, 1.0, np.tanh(z) / np.where(zero, 1.0, z))


class ElmanRNN(_Layer):
    """Bias-free Elman RNN ``h_t = tanh(W_h h_{t-1} + W_x x_t)``, ``h_0 = 0``, ``y_t = W_y h_t``.

    Derived in Chapter 1, Section 1.5 (Elman, 1990).

    Parameters
    ----------
    W_h : array, shape (N, N)
        Recurrent weights.
    W_x : array, shape (N, d)
        Input weights.
    W_y : array, shape (p, N)
        Read-out.

    Notes
    -----
    With ``z_t = W_h h_{t-1} + W_x x_t`` and the chord slopes
    ``D_t = diag(tanh(z_t) / z_t)`` (1 where ``z_t`` is 0), ``h_t = D_t z_t``: the
    recurrence is the time-varying linear one ``h_t = (D_t W_h) h_{t-1} + (D_t W_x) x_t``.
    Unrolling it gives this book's interaction form of the RNN, causal and
    input-dependent,
    ``W_ij(X) = W_y D_i W_h D_(i-1) W_h ... D_(j+1) W_h D_j W_x`` for ``j <= i``.
    It is one form among many (Proposition 1.1: every map with ``F(0) = 0`` has an
    interaction form); the slopes are chords, not tangents, so it is not the
    Jacobian ``dy_i / dx_j``, which has ``1 - tanh(z)^2`` in place of ``tanh(z) / z``.
    :meth:`interaction` builds the operator without ever applying tanh to a state:
    it reads each state ``h_(t-1)`` off the blocks it has built so far.
    """

    def __init__(self, W_h, W_x, W_y):
        W_h = as_array("W_h", W_h, 2, "(N, N)", copy=True)
        if W_h.shape[0] != W_h.shape[1]:
            raise ValueError(f"W_h must be square, shape (N, N); got shape {W_h.shape}")
        check_nonempty("W_h", W_h, 0, "the state size N")
        W_x = as_array("W_x", W_x, 2, "(N, d)", copy=True)
        check_size("W_x", W_x, 0, W_h.shape[0], "the state size N of W_h")
        check_nonempty("W_x", W_x, 1, "the token width d")
        W_y = as_array("W_y", W_y, 2, "(p, N)", copy=True)
        check_size("W_y", W_y, 1, W_h.shape[0], "the state size N of W_h")
        check_nonempty("W_y", W_y, 0, "the output width p")
        for arr in (W_h, W_x, W_y):
            arr.flags.writeable = False
        self.W_h, self.W_x, self.W_y = W_h, W_x, W_y
        self.N, self.d, self.p = W_h.shape[0], W_x.shape[1], W_y.shape[0]

    def __repr__(self) -> str:
        return f"ElmanRNN(N={self.N}, d={self.d}, p={self.p})"

    def _interaction_entries(self, n: int) -> float:
        """The state blocks ``G`` ``(n, n, N, d)`` and ``W``."""
        return float(n) * n * self.d * (self.N + self.p) + 4.0 * n * self.N

    def _drive(self, X: np.ndarray) -> np.ndarray:
        """``W_x x_t`` for every ``t``, shape ``(n, N)``; a ``ValueError`` names ``X`` and ``W_x`` if it overflows."""
        with np.errstate(over="ignore", invalid="ignore"):
            drive = X @ self.W_x.T
        if not np.all(np.isfinite(drive)):
            raise ValueError(f"X and W_x are too large together: W_x x_t overflows the largest float (max |X| = "
                             f"{np.max(np.abs(X)):.3e}, max |W_x| = {np.max(np.abs(self.W_x)):.3e}); rescale X or W_x")
        return drive

    def forward(self, X) -> np.ndarray:
        """Run the recurrence ``h_t = tanh(W_h h_(t-1) + W_x x_t)`` and read out ``y_t = W_y h_t``.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        Y : ndarray, shape (n, p)
        """
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, self.N), "the states h_t", "run a shorter sequence")
        _check_scan(n, n, "run a shorter sequence")
        drive = self._drive(X)
        states = np.empty((n, self.N))
        h = np.zeros(self.N)
        with np.errstate(over="ignore", invalid="ignore"):
            for t in range(n):
                h = np.tanh(self.W_h @ h + drive[t])
                states[t] = h
            Y = states @ self.W_y.T
        if not np.all(np.isfinite(Y)):
            raise ValueError("W_h or W_y is too large: the state update or the read-out overflows the largest "
                             f"float (max |W_h| = {np.max(np.abs(self.W_h)):.3e}, max |W_y| = "
                             f"{np.max(np.abs(self.W_y)):.3e}); rescale them")
        return Y

    def interaction(self, X) -> np.ndarray:
        """The causal operator ``W_ij(X) = W_y D_i W_h ... D_(j+1) W_h D_j W_x`` (``j <= i``), shape (n, n, p, d).

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        W : ndarray, shape (n, n, p, d)
            Zero above the diagonal.
        """
        X = self._input(X)
        n = X.shape[0]
        self._check_operator_size(n)
        check_allocation("X", (n, n, self.N, self.d), "the state operator G", _NO_OPERATOR)
        work = float(n) * n * self.N * self.d * (self.p + 2)
        if work > MAX_RNN_WORK:
            raise ValueError(f"X of length {n} would make the operator's recurrence update {work:.2e} state entries "
                             f"(n^2 N d (p + 2)), above the limit of {MAX_RNN_WORK:.0e} (about a second here); "
                             f"{_NO_OPERATOR}")
        with np.errstate(over="ignore", invalid="ignore"):
            W = self._interaction(X, self._drive(X))
        if not np.all(np.isfinite(W)):
            raise ValueError("W_h or W_y is too large: the operator overflows the largest float (max |W_h| = "
                             f"{np.max(np.abs(self.W_h)):.3e}, max |W_y| = {np.max(np.abs(self.W_y)):.3e}); "
                             "rescale them")
        return W

    def _interaction(self, X: np.ndarray, drive: np.ndarray) -> np.ndarray:
        """``W[i, j] = W_y D_i W_h ... D_(j+1) W_h D_j W_x`` for ``j <= i``.

        ``drive[t] = W_x x_t``. No tanh of a state: each state
        ``h_(t-1)`` is read off the blocks built so far.
        """
        n = X.shape[0]
        # G[t, j]: the block of the state h_t on the token x_j
        G = np.zeros((n, n, self.N, self.d))
        h = np.zeros(self.N)                      # h_(t-1), with h_0 = 0
        for t in range(n):
            # D_t = diag(tanh(z_t) / z_t), so that h_t = D_t z_t
            D = _tanh_chord(self.W_h @ h + drive[t])[:, None]
            # h_t = (D_t W_h) h_(t-1) + (D_t W_x) x_t, unrolled one step
            G[t, :t] = D * (self.W_h @ G[t - 1, :t])
            G[t, t] = D * self.W_x
            # h_t = sum_j G[t, j] x_j
            h = np.einsum("jnd,jd->n", G[t, :t + 1], X[:t + 1])
        # W_ij = W_y G[i, j]
        return np.einsum("pn,ijnd->ijpd", self.W_y, G)


def _bsplines(x: np.ndarray, start: float, step: float, count: int, degree: int = 3) -> np.ndarray:
    """B-splines of ``degree`` on the uniform knots ``start + (k - degree) step``; shape ``x.shape + (count,)``.

    Cox-de Boor recursion; ``count`` functions of degree ``degree`` need ``count + degree + 1``
    knots. Outside the knots every function is 0 (``x`` is clipped just outside them first,
    so a huge ``x`` gives no overflow).
    """
    knots = start + step * (np.arange(count + degree + 1) - degree)
    x = np.clip(x, knots[0] - step, knots[-1] + step)[..., None]
    B = ((x >= knots[:-1]) & (x < knots[1:])).astype(float)
    for k in range(1, degree + 1):
        B = ((x - knots[:-(k + 1)]) * B[..., :-1] + (knots[k + 1:] - x) * B[..., 1:]) / (k * step)
    return B


def _sigmoid(u: np.ndarray) -> np.ndarray:
    """``1 / (1 + exp(-u))``, written with tanh so that it never overflows."""
    return 0.5 * (1.0 + np.tanh(0.5 * u))


class KANLayer(_Layer):
    """Bias-free Kolmogorov-Arnold (KAN) layer ``y_(i,p) = sum_q phi_pq(x_(i,q))``, token by token.

    Derived in Chapter 1, Section 1.5 (Liu et al., 2024).

    Each ``phi_pq`` is a learnable function of one variable, as in Liu et al.: a
    SiLU base plus a cubic B-spline,
    ``phi_pq(x) = base[p, q] silu(x) + sum_m coef[p, q, m] (B_m(x) - B_m(0))``,
    with ``silu(x) = x / (1 + exp(-x))``. Subtracting ``B_m(0)`` makes
    ``phi_pq(0) = 0``; the constant it removes, summed over ``q``, is a bias, which
    the book's layers do not have.

    Parameters
    ----------
    coef : array, shape (p, d, M)
        Spline coefficients, ``M >= 4``: ``M = G + 3`` cubic B-splines on ``G``
        equal intervals of ``grid``.
    base : array, shape (p, d)
        Weights of the SiLU base functions.
    grid : (float, float)
        The interval ``[a, b]`` of the ``G`` grid intervals. The knots extend
        it by 3 steps on each side, so the spline part still varies up to 3
        steps outside ``[a, b]``; beyond that it is constant and only the
        base function varies. Default ``(-1.0, 1.0)``.

    Notes
    -----
    This book's interaction form of the layer is position-wise, with the chord
    slopes of the ``phi_pq`` as entries: ``W_ii(X)[p, q] = phi_pq(x_iq) / x_iq``
    (``phi_pq'(0)`` where ``x_iq = 0``, where any value gives the same output) and
    ``W_ij = 0`` for ``i != j``. Like every form of a nonlinear map, it belongs to
    the construction (Proposition 1.1: every map with ``F(0) = 0`` has an
    interaction form). Both routes evaluate the same splines, so the two-route
    check tests the division and the sums; ``tests/test_models.py`` checks the
    splines against ``scipy.interpolate.BSpline``.
    """

    def __init__(self, coef, base, grid=(-1.0, 1.0)):
        coef = as_array("coef", coef, 3, "(p, d, M)", copy=True)
        check_nonempty("coef", coef, 0, "the output width p")
        check_nonempty("coef", coef, 1, "the token width d")
        if coef.shape[2] < 4:
            raise ValueError(f"coef has shape {coef.shape}, but axis 2 must be at least 4 (M = G + 3 cubic "
                             "B-splines on G >= 1 intervals)")
        base = as_array("base", base, 2, "(p, d)", copy=True)
        if base.shape != coef.shape[:2]:
            raise ValueError(f"base must have shape (p, d) = {coef.shape[:2]} (from coef); got shape {base.shape}")
        grid = as_array("grid", grid, 1, "(2,): the interval (a, b)", copy=True)
        if grid.shape != (2,) or not grid[0] < grid[1]:
            raise ValueError(f"grid must be an interval (a, b) with a < b; got {grid.tolist()}")
        for arr in (coef, base, grid):
            arr.flags.writeable = False
        self.coef, self.base, self.grid = coef, base, grid
        self.p, self.d, self.M = coef.shape
        self.G = self.M - 3
        with np.errstate(over="ignore"):
            self._step = (float(grid[1]) - float(grid[0])) / self.G
        if not (np.isfinite(self._step) and self._step > 0):
            raise ValueError(f"grid must be an interval (a, b) with a finite length above 0; got {grid.tolist()}")
        self._at_zero = _bsplines(np.zeros(1), float(grid[0]), self._step, self.M)[0]  # B_m(0)
        # phi_pq'(0) of the spline part: B_m' = (B_m - B_(m+1)) / step, with quadratic B's
        quadratic = _bsplines(np.zeros(1), float(grid[0]) - self._step, self._step, self.M + 1, 2)[0]
        self._spline_slope0 = self.coef @ (quadratic[:-1] - quadratic[1:]) / self._step

    def __repr__(self) -> str:
        return f"KANLayer(d={self.d}, p={self.p}, G={self.G})"

    def _rise_entries(self, n: int) -> float:
        """Numbers held while the spline parts are formed: the recursion's bases and temporaries
        ``(n, d, M + 3)``, and the values ``(n, p, d)`` with a copy."""
        return 6.0 * n * self.d * (self.M + 3) + 3.0 * n * self.p * self.d

    def _interaction_entries(self, n: int) -> float:
        """``W`` (zero off the diagonal) and the spline parts' working set."""
        return float(n) * n * self.p * self.d + self._rise_entries(n)

    def _rise(self, X: np.ndarray) -> np.ndarray:
        """Spline parts ``S_pq(x_iq) - S_pq(0)``, shape ``(n, p, d)``, of a checked ``X``."""
        n = X.shape[0]
        check_allocation("X", (n, self.d, self.M + 3), "the spline bases", "use a shorter X")
        check_allocation("X", (n, self.p, self.d), "the values phi_pq(x_iq)", "use a shorter X")
        check_total("X", self._rise_entries(n), "the spline bases and the values phi_pq(x_iq)", "use a shorter X")
        B = _bsplines(X, float(self.grid[0]), self._step, self.M)  # (n, d, M)
        with np.errstate(over="ignore", invalid="ignore"):
            return np.einsum("pqm,iqm->ipq", self.coef, B - self._at_zero)

    def phi(self, X) -> np.ndarray:
        """The values ``phi_pq(x_iq)``, shape ``(n, p, d)``; the layer sums them over ``q``.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        ndarray, shape (n, p, d)
        """
        X = self._input(X)
        with np.errstate(over="ignore", invalid="ignore"):
            values = self.base * (X * _sigmoid(X))[:, None, :] + self._rise(X)
        if not np.all(np.isfinite(values)):
            raise ValueError(f"X, base or coef is too large: phi_pq(x) overflows the largest float (max |X| = "
                             f"{np.max(np.abs(X)):.3e}, max |base| = {np.max(np.abs(self.base)):.3e}, max |coef| = "
                             f"{np.max(np.abs(self.coef)):.3e}); rescale them")
        return values

    def forward(self, X) -> np.ndarray:
        """``y_(i,p) = sum_q phi_pq(x_(i,q))``; input ``(n, d)``, output ``(n, p)``."""
        with np.errstate(over="ignore", invalid="ignore"):
            Y = self.phi(X).sum(axis=2)
        if not np.all(np.isfinite(Y)):
            raise ValueError("X, base or coef is too large: the sum over q of phi_pq(x_q) overflows the largest "
                             "float; rescale them")
        return Y

    def interaction(self, X) -> np.ndarray:
        """The position-wise operator ``W_ii(X)[p, q] = phi_pq(x_iq) / x_iq``, zero off the diagonal; (n, n, p, d).

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        W : ndarray, shape (n, n, p, d)
        """
        X = self._input(X)
        self._check_operator_size(X.shape[0])
        with np.errstate(over="ignore", invalid="ignore"):
            W = self._interaction(X)
        if not np.all(np.isfinite(W)):
            raise ValueError(f"base or coef is too large: the slopes phi_pq(x) / x overflow the largest float "
                             f"(max |base| = {np.max(np.abs(self.base)):.3e}, max |coef| = "
                             f"{np.max(np.abs(self.coef)):.3e}); rescale them")
        return W

    def _interaction(self, X: np.ndarray) -> np.ndarray:
        """``W[i, i][p, q] = phi_pq(x_iq) / x_iq``, zero off the diagonal; core of :meth:`interaction`."""
        n = X.shape[0]
        x = X[:, None, :]                                  # x_iq, for every output p
        # chord slopes of the spline parts; S_pq'(0) where x_iq = 0
        zero = x == 0
        spline = np.where(zero, self._spline_slope0, self._rise(X) / np.where(zero, 1.0, x))
        # silu(x) / x = sigmoid(x): the base part needs no division
        W = np.zeros((n, n, self.p, self.d))
        W[np.arange(n), np.arange(n)] = self.base * _sigmoid(x) + spline
        return W
