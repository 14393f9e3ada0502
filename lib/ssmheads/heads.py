"""Heads that reproduce an SSM: the head-count theorem and this book's extensions of it (Chapter 3).

Relative-position heads compute ``y_i = sum_h sum_{j<=i} c_h(i-j) V_h x_j``; their
operator is block-Toeplitz with lags ``Khat_l = sum_h c_h(l) V_h``. Matching an
SSM's lags ``K_l = C A^l B`` with as few heads as possible is a low-rank
factorisation of the matrix ``G = [vec K_0, ..., vec K_{n-1}]``:

* :func:`exact_heads` uses ``k = rank G`` heads and is exact (the head-count theorem, Theorem 3.1);
* :func:`optimal_heads` gives the best ``H < k`` heads and their error, the
  Eckart-Young tail of the singular values (Corollary 3.1);
* :func:`fit_heads` trains heads by gradient descent on white noise, the
  experiment a practitioner would run;
* :func:`is_pointed` and :func:`nonnegative_heads` handle heads whose weights must be
  nonnegative (Theorem 3.2), and :func:`softmax_heads` genuine softmax weights with a
  sink (Chapter 3, "Softmax, with a sink").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.linalg import solve_discrete_lyapunov

from ._validate import as_array, check_allocation, check_nonempty, check_positive_int, check_seed, check_size, check_total
from .models import _check_system, _checked_lags, _Layer, _spectral_radius
from .operator import _toeplitz
from .span import (_check_rtol, _default_rtol, _lag_floors, _minimal_polynomial_degree, _rank_from, _running_count,
                   _span_basis, _unvec, _vec)

__all__ = [
    "FactorizedHeads",
    "optimal_heads",
    "head_count_curve",
    "exact_heads",
    "white_noise_weights",
    "stationary_residual",
    "FitResult",
    "fit_heads",
    "is_pointed",
    "nonnegative_head_count",
    "nonnegative_heads",
    "SoftmaxSinkHeads",
    "softmax_heads",
]


def _lags(K) -> np.ndarray:
    K = as_array("K", K, 3, "(n, p, d)")
    check_nonempty("K", K, 0, "the number of lags n")
    check_nonempty("K", K, 1, "the output width p")
    check_nonempty("K", K, 2, "the token width d")
    return K


def _heads_count(H, name: str = "H") -> int:
    return check_positive_int(name, H, minimum=0)


def _weights(weights, n: int) -> np.ndarray:
    if weights is None:
        return np.ones(n)
    w = as_array("weights", weights, 1, "(n,)")
    check_size("weights", w, 0, n, "the number of lags n of K")
    if np.any(w <= 0):
        raise ValueError(f"weights must be positive; got minimum {float(w.min()):.3g}")
    return w


def _binary_exponent(arr: np.ndarray) -> int:
    """The exponent ``e`` with ``max|arr| = m 2^e``, ``1/2 <= m < 1`` (0 for an all-zero array).

    Dividing by ``2^e`` (``np.ldexp(arr, -e)``) is exact in floating point unless an
    entry underflows. The point of the scaling is range, not rounding: squares of the
    scaled array cannot overflow, and its largest entry cannot underflow, so an SVD of it
    stays away from both. Sums and products of the scaled array, scaled back by a power of
    two, are the unscaled ones bit for bit when nothing overflows or underflows; a LAPACK
    SVD need not be (it rescales far-from-one inputs itself, by other factors), so a count
    at the resolution limit may differ from one of the unscaled array when its entries
    are beyond about ``1e+-100``.
    """
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    return int(np.frexp(top)[1]) if top > 0.0 else 0


def _scaled_vec(K: np.ndarray) -> np.ndarray:
    """``[vec K_0, ..., vec K_{n-1}] / 2^e`` (shape ``(p d, n)``) with ``max |.|`` in ``[1/2, 1)``.

    Core of :func:`_exact_heads`'s scaling: the division is exact unless an entry underflows,
    and it keeps the SVD clear of overflow and underflow whatever the scale of the lags. The
    left singular vectors do not depend on the scale, so the coordinates are read off the
    unscaled ``K``.
    """
    return np.ldexp(_vec(K), -_binary_exponent(K))


def _scaled_back(values, exponent: int, names: str, what: str, reference: float | None = None) -> np.ndarray:
    """``values * 2^exponent``, refusing a result that overflows or underflows.

    Overflow is not infinity and underflow is not zero: a value that is not zero up to
    rounding (at least ``eps * reference``, default ``eps * max|values|``) but becomes
    infinite, zero or subnormal when scaled back is refused with a ``ValueError``.
    ``names`` are the caller's arguments that set the scale; ``what`` describes the values.
    """
    values = np.asarray(values, dtype=float)
    with np.errstate(over="ignore", under="ignore"):
        out = np.ldexp(values, exponent)
    top = float(np.max(np.abs(values))) if values.size else 0.0
    verb = "is" if " " not in names else "are"
    if not np.all(np.isfinite(out)):
        raise ValueError(
            f"{names} {verb} too large: {what} would be {top:.3g} x 2^{exponent}, beyond the largest float "
            "(1.8e308); divide by the largest entry first (the result scales as its square, so it can be "
            "scaled back by hand)")
    significant = np.abs(values) >= np.finfo(float).eps * (top if reference is None else reference)
    if np.any(significant & (np.abs(out) < np.finfo(float).tiny)):
        raise ValueError(
            f"{names} {verb} too small: {what} would be {float(np.min(np.abs(values[significant]))):.3g} x "
            f"2^{exponent}, below the smallest normal float (2.2e-308), and would read as zero; divide by the "
            "largest entry first (the result scales as its square, so it can be scaled back by hand)")
    return out


def _curve_length(H_max: int, full: int) -> None:
    """Refuse a residual curve ``(H_max + 1,)`` above the allocation limit (it is zero from ``full`` on)."""
    check_allocation("H_max", (H_max + 1,), "the residual curve",
                     f"use H_max <= {full}: the residual is zero from H = {full} on")


class FactorizedHeads(_Layer):
    """``H`` relative-position heads: ``y_i = sum_h sum_{j<=i} c_h(i-j) V_h x_j``.

    Parameters
    ----------
    coefficients : array, shape (H, n_max)
        ``coefficients[h, l] = c_h(l)``, the weight of head ``h`` at lag ``l``.
    values : array, shape (H, p, d)
        The value maps ``V_h``.

    Notes
    -----
    The operator is causal and block-Toeplitz with lags
    ``Khat_l = sum_h c_h(l) V_h`` (:meth:`lag_operators`). Sequences of any length
    ``n <= n_max`` are accepted.

    Used in Chapter 3, Theorem 3.1 (the heads of the head-count theorem).
    """

    def __init__(self, coefficients, values):
        c = as_array("coefficients", coefficients, 2, "(H, n_max)", copy=True)
        V = as_array("values", values, 3, "(H, p, d)", copy=True)
        check_nonempty("coefficients", c, 1, "the number of lags n_max")
        check_size("values", V, 0, c.shape[0], "the number of heads H of coefficients")
        check_nonempty("values", V, 1, "the output width p")
        check_nonempty("values", V, 2, "the token width d")
        self._store(c, V)

    @classmethod
    def _from_checked(cls, coefficients: np.ndarray, values: np.ndarray) -> "FactorizedHeads":
        """Heads from arrays the library built and checked: finite floats of shapes (H, n_max), (H, p, d).

        Not validated again; copied as the public constructor copies (same memory layout).
        """
        heads = cls.__new__(cls)
        heads._store(np.array(coefficients, dtype=float), np.array(values, dtype=float))
        return heads

    def _store(self, c: np.ndarray, V: np.ndarray) -> None:
        c.flags.writeable = False
        V.flags.writeable = False
        self.coefficients, self.values = c, V
        self.num_heads, self.n_max = c.shape
        self.p, self.d = V.shape[1], V.shape[2]

    def __repr__(self) -> str:
        return f"FactorizedHeads(H={self.num_heads}, n_max={self.n_max}, d={self.d}, p={self.p})"

    def _length(self, n_or_X, name: str = "n_or_X (an input X)") -> int:
        if isinstance(n_or_X, (int, np.integer)) and not isinstance(n_or_X, (bool, np.bool_)):
            n = check_positive_int("n", n_or_X)
        else:
            X = as_array(name, n_or_X, 2, "(n, d)")
            check_nonempty(name, X, 0, "the sequence length n")
            check_size(name, X, 1, self.d, "the layer's token width d")
            n = X.shape[0]
        return self._within(n, "n_or_X")

    def _within(self, n: int, name: str = "n") -> int:
        """``n``, refused (naming the caller's argument ``name``) if it exceeds ``n_max``."""
        if n > self.n_max:
            raise ValueError(f"{name}: sequence length n = {n} exceeds n_max = {self.n_max} of these heads (their "
                             f"coefficients cover lags below n_max); use a shorter sequence")
        return n

    def lag_operators(self, n: int | None = None) -> np.ndarray:
        """``Khat_l = sum_h c_h(l) V_h`` for ``l < n`` (default ``n_max``), shape ``(n, p, d)``."""
        if n is not None:
            n = check_positive_int("n", n)
            if n > self.n_max:
                raise ValueError(f"n = {n} exceeds n_max = {self.n_max} of these heads")
        return self._lags(self.n_max if n is None else n)

    def _lags(self, n: int) -> np.ndarray:
        """Core of :meth:`lag_operators` for a checked ``n <= n_max``, refusing an overflow."""
        with np.errstate(over="ignore", invalid="ignore"):
            K = np.einsum("hl,hpd->lpd", self.coefficients[:, :n], self.values)
        if not np.all(np.isfinite(K)):
            raise ValueError("coefficients and values are too large together: the lag operators "
                             "sum_h c_h(l) V_h overflow the largest float (1.8e308); rescale them")
        return K

    def forward(self, X) -> np.ndarray:
        """Apply the heads: each head filters its values ``V_h x_j`` with the causal kernel ``c_h``.

        Parameters
        ----------
        X : array, shape (n, d)
            ``n <= n_max``.

        Returns
        -------
        Y : ndarray, shape (n, p)
        """
        X = self._input(X)
        n = self._within(X.shape[0], "X")
        check_allocation("X", (self.num_heads, n, n), "the causal kernels c_h(i - j)",
                         "use a shorter X, or fewer heads")
        # the lags i - j, their clipped copy and the mask (n x n), the kernels and their masked copy
        check_total("X", (2.0 * self.num_heads + 3.0) * n * n + 2.0 * n * self.num_heads * self.p,
                    "the causal kernels c_h(i - j) and the lags they are read at", "use a shorter X, or fewer heads")
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.einsum("hpd,jd->hjp", self.values, X)  # V_h x_j
            lag = np.arange(n)[:, None] - np.arange(n)[None, :]
            kernel = np.where(lag >= 0, self.coefficients[:, np.clip(lag, 0, None)], 0.0)  # (H, n, n)
            Y = np.einsum("hij,hjp->ip", kernel, values)
        if not np.all(np.isfinite(Y)):
            raise ValueError("the output overflows the largest float (1.8e308): X, coefficients and values are "
                             f"too large together (max|X| = {float(np.max(np.abs(X))):.3g}); rescale them")
        return Y

    def interaction(self, n_or_X) -> np.ndarray:
        """The operator ``W[i, j] = Khat_{i-j}`` for ``j <= i``.

        Parameters
        ----------
        n_or_X : int or array of shape (n, d)
            The sequence length, or an input whose length is used.

        Returns
        -------
        W : ndarray, shape (n, n, p, d)
        """
        n = self._length(n_or_X)
        check_allocation("n_or_X", (n, n, self.p, self.d), "the operator W", "use forward(X) or a shorter length")
        # W, and the lags with their zero-padded copies
        check_total("n_or_X", float(n) * n * self.p * self.d + 4.0 * n * self.p * self.d, "the operator W",
                    "use forward(X) or a shorter length")
        return _toeplitz(self._lags(n), n)


def optimal_heads(K, H: int, weights=None):
    """The best ``H`` relative-position heads for the lags ``K`` (Corollary 3.1).

    Minimises ``sum_l w_l ||K_l - sum_h c_h(l) V_h||_F^2`` over value maps and
    coefficients. The minimiser takes ``V_h`` to be the top ``H`` left singular
    vectors of ``G_w = [sqrt(w_l) vec K_l]`` (reshaped, orthonormal in the Frobenius
    inner product) and ``c_h(l) = <V_h, K_l>_F``; the minimum is the tail
    ``sum_{r > H} sigma_r(G_w)^2`` (Eckart-Young-Mirsky).

    Derived in Chapter 3, Corollary 3.1.

    Parameters
    ----------
    K : array, shape (n, p, d)
        Target lag operators.
    H : int
        Number of heads, ``H >= 0``. Heads beyond ``min(p*d, n)`` (the most that can
        be useful) get zero value maps and zero coefficients. Heads beyond the rank
        of ``G_w`` but within ``min(p*d, n)`` get unit-norm value maps orthogonal to
        every ``K_l`` (left singular vectors of singular value zero) and
        coefficients zero up to rounding.
    weights : array, shape (n,), optional
        Positive weights ``w_l``; default all ones. ``white_noise_weights(n)``
        gives ``w_l = n - l``, the weights of the white-noise error.

    Returns
    -------
    coefficients : ndarray, shape (H, n)
    values : ndarray, shape (H, p, d)
    residual : float
        The minimum of the weighted loss.

    Raises
    ------
    ValueError
        If the coefficients or value maps would exceed 1 GiB (``H`` too large), or if
        the residual does not fit in a float: it scales as ``max|K|^2``, and one beyond
        1.8e308 (or a significant one below 2.2e-308) is refused, naming ``K``, rather
        than returned as infinity (or zero). ``K`` is divided by a power of two before
        the SVD, so its scale never overflows the computation itself.
    """
    K = _lags(K)
    H = _heads_count(H)
    return _optimal_heads(K, H, _weights(weights, K.shape[0]), _names(weights))


def _optimal_heads(K: np.ndarray, H: int, w: np.ndarray, names: str):
    """Core of :func:`optimal_heads` on checked ``K``, ``H`` and weights ``w``; ``names`` for messages."""
    n, p, d = K.shape
    useful = min(p * d, n)
    instead = f"use H <= min(p*d, n) = {useful}: later heads get zero value maps and coefficients"
    check_allocation("H", (H, n), "the coefficients c_h(l)", instead)
    check_allocation("H", (H, p, d), "the value maps V_h", instead)
    G = _weighted_columns(K, w)
    exponent = _binary_exponent(G)
    coefficients, values, s, used = _best_heads(K, H, np.ldexp(G, -exponent))
    residual = float(_scaled_back(np.sum(s[used:] ** 2), 2 * exponent, names,
                                  "the residual sum of squares", reference=float(np.sum(s**2))))
    return coefficients, values, residual


def _best_heads(K: np.ndarray, H: int, G: np.ndarray):
    """Coefficients (H, n), values (H, p, d), singular values, and the
    number of heads that get value maps: the minimiser whose error is the
    Eckart-Young tail (Corollary 3.1), for lags K (n, p, d) and
    G (pd, n) = G_w = [sqrt(w_l) vec K_l] (up to a scale).
    """
    n, p, d = K.shape
    # thin SVD of G_w: U is pd x min(pd, n)
    U, s, _ = np.linalg.svd(G, full_matrices=False)
    # value maps: the top H left singular vectors, V_h = unvec(U_h)
    # (heads beyond U's width, min(pd, n), stay zero)
    used = min(H, U.shape[1])
    values = np.zeros((H, p, d))
    values[:used] = _unvec(U[:, :used], p, d)
    # coefficients c_h(l) = <V_h, K_l>_F; the error is sum_{r>H} s_r^2
    coefficients = np.zeros((H, n))
    coefficients[:used] = np.einsum("hpd,lpd->hl", values[:used], K)
    return coefficients, values, s, used


def _rank(K: np.ndarray, rtol) -> int:
    """``interaction_rank(K, rtol)``, computed on ``K`` divided by a power of two (names rtol, not mats)."""
    tol = _check_rtol(rtol, _default_rtol(*K.shape))
    return _rank_from(np.linalg.svd(_vec(np.ldexp(K, -_binary_exponent(K))), compute_uv=False), tol)


def _names(weights) -> str:
    return "K" if weights is None else "K and weights"


def _weighted_columns(K: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``G_w = [sqrt(w_l) vec K_l]``, shape (pd, n), refusing a product that overflows."""
    with np.errstate(over="ignore", invalid="ignore"):
        G = _vec(K) * np.sqrt(w)
    if not np.all(np.isfinite(G)):
        raise ValueError("K and weights are too large together: sqrt(w_l) K_l overflows the largest float "
                         f"(max|K| = {float(np.max(np.abs(K))):.3g}, max w = {float(w.max()):.3g}); rescale them")
    return G


def head_count_curve(K, H_max: int, weights=None) -> np.ndarray:
    """Optimal residual of :func:`optimal_heads` for ``H = 0, 1, ..., H_max``, from one SVD.

    Derived in Chapter 3, Corollary 3.1 (the optimal error is an Eckart-Young tail; the head-count figure of Section 3.3 draws it).

    Parameters
    ----------
    K : array, shape (n, p, d)
    H_max : int
    weights : array, shape (n,), optional

    Returns
    -------
    ndarray, shape (H_max + 1,)
        Nonincreasing; zero from ``H = k`` on (up to rounding).

    Raises
    ------
    ValueError
        As :func:`optimal_heads` for the scale of ``K``; if the curve would exceed
        1 GiB (``H_max`` too large; it is zero from ``min(p*d, n)`` on).
    """
    K = _lags(K)
    H_max = _heads_count(H_max, "H_max")
    return _head_count_curve(K, H_max, _weights(weights, K.shape[0]), _names(weights))


def _head_count_curve(K: np.ndarray, H_max: int, w: np.ndarray, names: str) -> np.ndarray:
    """Core of :func:`head_count_curve` on checked ``K``, ``H_max`` and weights ``w``; ``names`` for messages."""
    n, p, d = K.shape
    _curve_length(H_max, min(p * d, n))
    G = _weighted_columns(K, w)
    exponent = _binary_exponent(G)
    s2 = np.linalg.svd(np.ldexp(G, -exponent), compute_uv=False) ** 2
    tails = np.concatenate([np.cumsum(s2[::-1])[::-1], [0.0]])  # tails[H] = sum_{r >= H} s2[r]
    tails = _scaled_back(tails, 2 * exponent, names, "the residual with no heads, sum_r sigma_r^2,")
    return tails[np.minimum(np.arange(H_max + 1), s2.size)]


def white_noise_weights(n: int) -> np.ndarray:
    """``w_l = n - l``: lag ``l`` occurs in ``n - l`` pairs ``j <= i`` (Chapter 3, after Corollary 3.1).

    With these weights the loss of :func:`optimal_heads` equals the expected
    total squared error ``E sum_i ||y_i - yhat_i||^2`` on white-noise input.

    Derived in Chapter 3, Section 3.2.
    """
    n = check_positive_int("n", n)
    check_allocation("n", (n,), "the weights w_l", "use a smaller n")
    return _white_noise(n)


def _white_noise(n: int) -> np.ndarray:
    """Core of :func:`white_noise_weights`: ``[n, n - 1, ..., 1]`` for a checked ``n``."""
    return np.arange(n, 0, -1, dtype=float)


def exact_heads(A, B, C, n: int, rtol: float | None = None) -> FactorizedHeads:
    """``k(n)`` relative-position heads that reproduce the SSM on every input of length ``<= n``.

    The value maps are an orthonormal basis of ``span{K_0, ..., K_{n-1}}`` and the
    coefficients are the coordinates ``c_h(l) = <V_h, K_l>_F`` (the head-count theorem,
    Theorem 3.1). The number of heads ``k`` is counted by the rule of
    :func:`ssmheads.span.lag_span_dimension` (the largest count over the prefixes of
    the lags, each against ``rtol sigma_1 + tau_l`` with ``tau_l`` the bound on the
    rounding error of its computed lags, capped at the minimal polynomial degree),
    so lags that cancel to zero get no head, and the value maps are the
    top ``k`` left singular directions of ``[vec K_0, ..., vec K_{n-1}]``; the
    construction itself is the private core ``_exact_heads``, which the chapter shows.

    Derived in Chapter 3, Theorem 3.1 (the head-count theorem).

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
    rtol : float, optional
        Rank tolerance, as in :func:`ssmheads.span.interaction_rank`.

    Returns
    -------
    FactorizedHeads
        With ``num_heads == lag_span_dimension(A, B, C, n, rtol)`` and ``n_max == n``.
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    coefficients, values = _exact_heads(A, B, C, n, _check_rtol(rtol, None))
    return FactorizedHeads._from_checked(coefficients, values)


def _exact_heads(A: np.ndarray, B: np.ndarray, C: np.ndarray,
                 n: int, rtol):
    """Coefficients (k, n) and value maps (k, p, d) of k = k(n) heads:
    the sufficiency half of the proof of the head-count theorem
    (Theorem 3.1), with the orthonormal basis of span{K_l} of a thin SVD.
    """
    p, d = C.shape[0], B.shape[1]
    # the lags K_l = C A^l B, l < n
    K = _checked_lags(A, B, C, n)
    # G = [vec K_0, ..., vec K_{n-1}] (scaled, as _scaled_vec says)
    G = _scaled_vec(K)
    # tau_l: Chapter 2's rounding floor of the first l lags, scaled as G
    floors = np.ldexp(_lag_floors(A, B, C, n), -_binary_exponent(K))
    # k = dim span{K_l}: Chapter 2's rank rule, each prefix against
    # rtol sigma_1 + tau_l, at most m = deg mu_A
    m = _minimal_polynomial_degree(A, rtol)
    k = _running_count(G, p, d, rtol, m, floors)
    # thin SVD G = U S Q^T; the basis V_h = unvec(U_h), h <= k
    U, _, _ = np.linalg.svd(G, full_matrices=False)
    values = np.ascontiguousarray(_unvec(U[:, :k], p, d))
    # the coordinates c_h(l) = <V_h, K_l>_F
    coefficients = np.einsum("hpd,lpd->hl", values, K)
    return coefficients, values


#: Largest Stein equation :func:`stationary_residual` solves: size ``N min(p, d)``. Its dense
#: solver costs ``O((N min(p, d))^3)`` and is solved twice (iterative refinement): about half a
#: second at 384 here (2 s at 512).
MAX_STEIN_SIZE = 384
#: Largest ``p d`` :func:`stationary_residual` accepts: it takes the eigenvalues of the
#: ``p d x p d`` matrix ``M_inf`` (about 0.5 s at 2048).
MAX_STATIONARY_OUTPUT = 2048


def stationary_residual(A, B, C, H_max: int) -> np.ndarray:
    """Per-position optimal error on long white-noise sequences, ``H = 0..H_max`` (Chapter 3, the limit of long sequences).

    ``(1/n) sum_{r>H} sigma_r(G_{n-l})^2`` tends to ``sum_{r>H} lambda_r(M_inf)`` with
    ``M_inf = sum_l vec K_l vec K_l^T = (B^T kron C) P (B kron C^T)``, where ``P`` solves
    the Stein equation ``P = vec(I) vec(I)^T + (I kron A) P (I kron A)^T`` on ``N^2 x N^2``
    matrices.

    Derived in Chapter 3, Section 3.4.1.

    That equation is not solved here: its cost is ``O(N^6)``. Instead, ``vec K_l`` is the
    output ``(I_d kron C) x_l`` of the state ``x_l = vec(A^l B) = (I_d kron A)^l vec B`` of
    size ``N d``, so ``M_inf = (I_d kron C) Q (I_d kron C)^T`` with ``Q = sum_l x_l x_l^T``,
    the solution of the Stein equation of size ``N d``

    ``Q = (I_d kron A) Q (I_d kron A)^T + vec(B) vec(B)^T``

    (``scipy.linalg.solve_discrete_lyapunov``, ``O((N d)^3)``, followed by one step of
    iterative refinement: solve again for the residual and add the correction, which gains
    a factor of 5 to 40 in accuracy on non-normal ``A``). When ``p < d`` the same is
    done for the transposes ``K_l^T = B^T (A^T)^l C^T`` (state size ``N p``): their
    ``M`` is a permutation of ``M_inf`` and has the same eigenvalues. ``B`` and ``C`` are
    first divided by powers of two (exact) and the tails scaled back, so their scale
    cannot overflow the solve.

    Parameters
    ----------
    A : array, shape (N, N)
        Stable: spectral radius below 1.
    B : array, shape (N, d)
    C : array, shape (p, N)
    H_max : int

    Returns
    -------
    ndarray, shape (H_max + 1,)
        Nonincreasing; zero from ``H = p d`` on.

    Raises
    ------
    ValueError
        If ``A`` has spectral radius ``>= 1`` (the message gives it), if the residual
        overflows (``B`` and ``C`` too large, or ``A`` so non-normal that the Stein
        solution overflows, naming ``A``), if an array would exceed 1 GiB, if the Stein
        equation has size ``N min(p, d)`` above ``MAX_STEIN_SIZE`` (384, naming ``A``),
        or if ``p d`` exceeds ``MAX_STATIONARY_OUTPUT`` (2048, naming ``B and C``).
    """
    A, B, C, _ = _check_system(A, B, C)
    H_max = _heads_count(H_max, "H_max")
    N, d, p = A.shape[0], B.shape[1], C.shape[0]
    _curve_length(H_max, p * d)
    rho = _spectral_radius(A)
    if rho >= 1:
        raise ValueError(f"A must be stable for the stationary limit, but its spectral radius is {rho:.4g} >= 1: "
                         "the lags C A^l B do not decay and the error per position has no finite limit")
    b_exp, c_exp = _binary_exponent(B), _binary_exponent(C)
    Bs, Cs = np.ldexp(B, -b_exp), np.ldexp(C, -c_exp)
    if d <= p:  # state vec(A^l B) of size N d, output (I_d kron C) x_l = vec K_l
        step, start, out = A, Bs, Cs
    else:  # state vec((A^T)^l C^T) of size N p, output (I_p kron B^T) x_l = vec K_l^T
        step, start, out = A.T, Cs.T, Bs.T
    r = start.shape[1]
    if p * d > MAX_STATIONARY_OUTPUT:
        raise ValueError(f"B and C are too wide for stationary_residual: p d = {p} x {d} = {p * d} is above "
                         f"MAX_STATIONARY_OUTPUT = {MAX_STATIONARY_OUTPUT} (it takes the eigenvalues of a "
                         "p d x p d matrix); use fewer inputs d or outputs p")
    if N * r > MAX_STEIN_SIZE:
        # the larger factor of the size is the one to blame: the state size N (A) or min(p, d) (B and C)
        blame = "A is too large" if N >= r else "B and C are too wide"
        raise ValueError(f"{blame} for stationary_residual: the Stein equation has size N min(p, d) = "
                         f"{N} x {r} = {N * r}, above MAX_STEIN_SIZE = {MAX_STEIN_SIZE} (its dense solve costs "
                         "O(size^3)); use a smaller state size N or fewer inputs d or outputs p, or "
                         "head_count_curve on lags of a long n")
    instead = "use a smaller state size N or fewer inputs and outputs (min(p, d) sets the size N min(p, d))"
    check_allocation("B and C", (N * r, N * r), "the Stein solution Q", instead)
    check_allocation("B and C", (p * d, p * d), "the matrix M_inf", "use smaller p and d")
    x0 = start.reshape(-1, order="F")  # vec(start), length N r
    F, q = np.kron(np.eye(r), step), np.outer(x0, x0)
    overflow = ValueError("A is too far from normal for stationary_residual: the Stein solution "
                          "sum_l A^l B B^T (A^T)^l overflows the largest float (max|A| = "
                          f"{float(np.max(np.abs(A))):.3g}, spectral radius {rho:.4g}); rescale the state "
                          "(A -> S^-1 A S) to make A better conditioned")
    try:
        with np.errstate(over="ignore", invalid="ignore"):
            Q = solve_discrete_lyapunov(F, q)  # Q = F Q F^T + q
            residual = q + F @ Q @ F.T - Q  # one step of iterative refinement (the equation is linear in Q)
            Q = Q + solve_discrete_lyapunov(F, (residual + residual.T) / 2)
            O = np.kron(np.eye(r), out)  # (p d, N r)
            M = O @ Q @ O.T
    except ValueError as exc:  # scipy refuses the infinities of an overflowing solve
        raise overflow from exc
    if not np.all(np.isfinite(M)):
        raise overflow
    lam = np.clip(np.sort(np.linalg.eigvalsh((M + M.T) / 2))[::-1], 0.0, None)
    tails = np.concatenate([np.cumsum(lam[::-1])[::-1], [0.0]])
    tails = _scaled_back(tails, 2 * (b_exp + c_exp), "B and C", "the stationary error with no heads")
    return tails[np.minimum(np.arange(H_max + 1), lam.size)]


# ---------------------------------------------------------------- training

@dataclass(frozen=True)
class FitResult:
    """Outcome of :func:`fit_heads`.

    Used in Chapter 3, Section 3.3.

    Attributes
    ----------
    heads : FactorizedHeads
        The trained heads.
    losses : ndarray, shape (steps,)
        Minibatch loss at each step (mean squared error per position).
    expected_errors : ndarray, shape (ceil(steps / record_every) + 1,)
        Exact expected white-noise error per position of the current heads,
        ``(1/n) sum_l (n - l) ||K_l - Khat_l||_F^2``, recorded before steps
        ``0, record_every, 2 record_every, ...`` and once more at the end.
    record_every : int
    """

    heads: FactorizedHeads
    losses: np.ndarray
    expected_errors: np.ndarray
    record_every: int


def _expected_error(K: np.ndarray, Khat: np.ndarray, w: np.ndarray) -> float:
    return float(np.einsum("l,lpd->", w, (K - Khat) ** 2)) / K.shape[0]


def _shifted(X: np.ndarray) -> np.ndarray:
    """``S[b * n + i, l * d + c] = X[b, i - l, c]`` (zero for ``i < l``): shape (B n, n d).

    With this layout the heads' output and the gradient are plain matrix products.
    """
    B, n, d = X.shape
    padded = np.concatenate([np.zeros((B, n - 1, d)), X], axis=1)  # (B, 2n - 1, d)
    windows = np.lib.stride_tricks.sliding_window_view(padded, n, axis=1)  # (B, n, d, n): t..t+n-1
    return windows[..., ::-1].transpose(0, 1, 3, 2).reshape(B * n, n * d)  # lag l = n - 1 - offset


def fit_heads(K, H: int, steps: int = 2000, batch: int = 16, lr: float = 0.03,
              final_lr: float = 0.0005, seed: int = 0, record_every: int = 50) -> FitResult:
    """Train ``H`` relative-position heads to imitate the lags ``K`` on white-noise sequences.

    Each step draws ``batch`` sequences ``X`` of length ``n`` with i.i.d. standard normal
    tokens, computes the target ``y_i = sum_l K_l x_{i-l}`` and the heads' output
    ``yhat_i = sum_l Khat_l x_{i-l}`` with ``Khat_l = sum_h c_h(l) V_h``, and takes an Adam
    step on the mean squared error per position, using the analytic gradients

    ``dL/dKhat_l = (2 / (batch n)) sum_b sum_i (yhat_i - y_i) x_{i-l}^T``,
    ``dL/dc_h(l) = <dL/dKhat_l, V_h>_F``, ``dL/dV_h = sum_l c_h(l) dL/dKhat_l``.

    Used in Chapter 3, Section 3.3 (the head-count figure).

    The learning rate decays from ``lr`` to ``final_lr`` on a cosine schedule.
    Initialisation: ``V_h`` Gaussian with variance ``1/(pd)``, ``c_h(l)`` Gaussian with
    standard deviation 0.1, all from ``np.random.default_rng(seed)``.

    Parameters
    ----------
    K : array, shape (n, p, d)
        The target's lag operators on sequences of length ``n``.
    H : int
        Number of heads, ``H >= 1``.
    steps, batch : int
    lr, final_lr : float
    seed : int
    record_every : int
        How often the exact expected error is recorded.

    Returns
    -------
    FitResult

    Raises
    ------
    ValueError
        If ``lr`` or ``final_lr`` exceeds ``MAX_FIT_LR`` (1); if ``max|K|`` exceeds
        ``MAX_FIT_SCALE`` (1e100, beyond which squared errors approach overflow); if the
        shifted inputs ``(batch n, n d)`` or the parameters would exceed 1 GiB (naming
        ``batch``, ``K`` or ``H``); if the run would exceed ``MAX_FIT_WORK`` operations
        (naming the argument that dominates); or if the loss stops being finite.
    """
    K = _lags(K)
    H = check_positive_int("H", H)
    steps, batch = check_positive_int("steps", steps), check_positive_int("batch", batch)
    record_every = check_positive_int("record_every", record_every)
    for name, value in (("lr", lr), ("final_lr", final_lr)):
        if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating))
                or not np.isfinite(value) or value <= 0):
            raise ValueError(f"{name} must be a positive number; got {value!r}")
        if value > MAX_FIT_LR:
            raise ValueError(f"{name} must be at most {MAX_FIT_LR:g}: Adam moves each parameter by about the "
                             f"learning rate per step, and a step larger than the parameters' own scale only "
                             f"diverges; got {value!r}")
    top = float(np.max(np.abs(K)))
    if top > MAX_FIT_SCALE:
        raise ValueError(f"K must have entries of size at most {MAX_FIT_SCALE:.0e} for fit_heads (its squared "
                         f"errors must stay finite); got max|K| = {top:.3g}: fit K / max|K| and multiply the "
                         "trained coefficients by max|K|")
    n, p, d = K.shape
    _check_fit_size(n, p, d, H, steps, batch)
    rng = np.random.default_rng(check_seed(seed))
    V = rng.standard_normal((H, p, d)) / np.sqrt(p * d)
    c = 0.1 * rng.standard_normal((H, n))
    params = [c, V]
    moments = [[np.zeros_like(x), np.zeros_like(x)] for x in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-12
    w = _white_noise(n)
    losses = np.empty(steps)
    recorded = []
    for step in range(steps):
        if step % record_every == 0:
            recorded.append(_expected_error(K, np.einsum("hl,hpd->lpd", c, V), w))
        S = _shifted(rng.standard_normal((batch, n, d)))  # (B n, n d): rows (b, i), columns (l, c)
        Khat = np.einsum("hl,hpd->lpd", c, V)
        E = S @ (Khat - K).transpose(0, 2, 1).reshape(n * d, p)  # yhat - y, shape (B n, p)
        losses[step] = float(np.sum(E * E)) / (batch * n)
        dKhat = (2.0 / (batch * n)) * (S.T @ E).reshape(n, d, p).transpose(0, 2, 1)
        grads = [np.einsum("lpd,hpd->hl", dKhat, V), np.einsum("hl,lpd->hpd", c, dKhat)]
        rate = final_lr + 0.5 * (lr - final_lr) * (1 + np.cos(np.pi * step / steps))
        for x, g, (m1, m2) in zip(params, grads, moments):
            m1 *= beta1
            m1 += (1 - beta1) * g
            m2 *= beta2
            m2 += (1 - beta2) * g * g
            m1_hat = m1 / (1 - beta1 ** (step + 1))
            m2_hat = m2 / (1 - beta2 ** (step + 1))
            x -= rate * m1_hat / (np.sqrt(m2_hat) + eps)
    recorded.append(_expected_error(K, np.einsum("hl,hpd->lpd", c, V), w))
    recorded = np.array(recorded)
    finite = np.isfinite(losses)
    if not (finite.all() and np.all(np.isfinite(recorded)) and np.all(np.isfinite(c)) and np.all(np.isfinite(V))):
        first = int(np.argmin(finite)) if not finite.all() else steps
        raise ValueError(f"fit_heads diverged: the loss stopped being finite at step {first} of {steps}; use a "
                         f"smaller lr (got {lr!r}) or final_lr (got {final_lr!r}), or rescale K "
                         f"(max|K| = {top:.3g})")
    return FitResult(FactorizedHeads._from_checked(c, V), losses, recorded, record_every)


#: Largest learning rate (``lr`` and ``final_lr``) that :func:`fit_heads` accepts: Adam moves
#: each parameter by about ``lr`` per step whatever the gradient's size, and the parameters
#: start at scale 0.1 (coefficients) and ``1/sqrt(pd)`` (value maps).
MAX_FIT_LR = 1.0
#: Largest ``max|K|`` that :func:`fit_heads` accepts: its losses are sums of about
#: ``batch n^2 d p`` squares of entries of size ``max|K|`` times Gaussian factors, which stay
#: far below the largest float (1.8e308) for entries up to ``1e100``. Fit ``K / max|K|`` and
#: scale the coefficients back for larger ones.
MAX_FIT_SCALE = 1e100
#: Work limit of one :func:`fit_heads` call, in floating-point operations:
#: ``steps * (4 batch n^2 d p + 8 H n p d + FIT_STEP_OVERHEAD)``, the two products with the
#: shifted inputs, the head updates and the fixed cost of one step (about 0.1 ms here, counted
#: as 2e5 operations). 1e9 is about a second on one core; the book's largest call is 7e8.
MAX_FIT_WORK = 1e9
FIT_STEP_OVERHEAD = 2e5


def _check_fit_size(n: int, p: int, d: int, H: int, steps: int, batch: int) -> None:
    """Memory and work guards of :func:`fit_heads`, naming the argument that sets the size."""
    instead = "use a smaller batch, or fewer lags n of K (the array grows like batch n^2 d)"
    check_allocation("K" if n * n * d * 8.0 > 2**30 else "batch", (batch * n, n * d),
                     "the shifted white-noise inputs of one step", instead)
    check_allocation("H", (6, H, n + p * d), "the heads' parameters, gradients and Adam moments (six copies "
                     "of c_h(l) and V_h)", f"use fewer heads: at most min(p*d, n) = {min(p * d, n)} can be useful")
    terms = {"batch": 4.0 * batch * n * n * d * p, "H": 8.0 * H * n * p * d, "steps": FIT_STEP_OVERHEAD}
    work = steps * sum(terms.values())
    if work > MAX_FIT_WORK:
        lead = max(terms, key=terms.get)
        sizes = f"steps = {steps}, batch = {batch}, H = {H} and the n = {n} lags of K"
        raise ValueError(f"{lead} is too large: {sizes} would take about "
                         f"{work:.1e} floating-point operations, above the limit of {MAX_FIT_WORK:.0e} (about a "
                         "second); use fewer steps, a smaller batch or fewer heads")


# ---------------------------------------------------------------- nonnegative and softmax heads

def _nonzero_lags(K: np.ndarray, rtol: float | None):
    """Coordinates of the lags in an orthonormal basis of their span, and which lags are nonzero.

    ``K`` must already be divided by a power of two (:func:`_binary_exponent`) so that its
    squared norms neither overflow nor underflow (``1/4 <= max |K| < 1``): a lag of norm
    ``1e155`` is not infinite and one of norm ``1e-300`` is not zero. The coordinates are
    those of the scaled lags.
    """
    n, p, d = K.shape
    tol = _check_rtol(rtol, _default_rtol(n, p, d))
    basis = _span_basis(K, tol)  # (k, p, d)
    coords = np.einsum("kpd,lpd->lk", basis, K)  # (n, k)
    norms = np.sqrt(np.einsum("lpd,lpd->l", K, K))
    nonzero = norms > tol * max(float(norms.max()), np.finfo(float).tiny)
    return basis, coords, nonzero


def _pointing_functional(coords: np.ndarray):
    """A vector f with f . x >= 1 for every given coordinate row x, or None (linear program)."""
    if coords.shape[0] == 0:
        return np.zeros(coords.shape[1])
    k = coords.shape[1]
    # Scale each lag to unit length: positivity does not depend on it, and a tiny
    # late lag would otherwise force a huge functional and a badly scaled program.
    unit = coords / np.linalg.norm(coords, axis=1, keepdims=True)
    from scipy.optimize import linprog     # imported here: scipy.optimize takes 0.2 s to load

    result = linprog(np.zeros(k), A_ub=-unit, b_ub=-np.ones(coords.shape[0]),
                     bounds=[(None, None)] * k, method="highs")
    return result.x if result.status == 0 else None


def is_pointed(K, rtol: float | None = None) -> bool:
    """Whether ``cone{K_0, ..., K_{n-1}}`` is pointed (contains no line).

    By Gordan's alternative the cone is pointed exactly when some linear
    functional is positive on every nonzero ``K_l``; this is decided by the linear
    program ``find f with <f, K_l / ||K_l||_F> >= 1`` for the nonzero lags
    (``scipy.optimize.linprog``, HiGHS).

    Derived in Chapter 3, Section 3.7 (Gordan's alternative, before Theorem 3.2).

    Parameters
    ----------
    K : array, shape (n, p, d)
    rtol : float, optional
        Lags whose norm is below ``rtol`` times the largest count as zero; also the
        rank tolerance for the span.

    Returns
    -------
    bool
    """
    K = _unit_scale(_lags(K))
    _, coords, nonzero = _nonzero_lags(K, rtol)
    return _pointing_functional(coords[nonzero]) is not None


def _unit_scale(K: np.ndarray) -> np.ndarray:
    """``K`` divided by the power of two that brings ``max |K|`` into ``[1/2, 1)`` (exact)."""
    return np.ldexp(K, -_binary_exponent(K))


def nonnegative_head_count(K, rtol: float | None = None) -> int:
    """``H+``: the fewest heads with nonnegative coefficients that reproduce the lags (Theorem 3.2).

    ``k`` if the cone of the lags is pointed, ``k + 1`` otherwise.

    Derived in Chapter 3, Theorem 3.2.
    """
    K = _unit_scale(_lags(K))
    k = _rank(K, rtol)
    _, coords, nonzero = _nonzero_lags(K, rtol)
    return k if _pointing_functional(coords[nonzero]) is not None else k + 1


def _regular_simplex(dim: int) -> np.ndarray:
    """Vertices (dim + 1, dim) of a regular simplex centred at 0 with inradius 1."""
    if dim == 0:
        return np.zeros((1, 0))
    E = np.eye(dim + 1) - 1.0 / (dim + 1)  # centred standard simplex in R^(dim+1), rank dim
    U, _, _ = np.linalg.svd(E)
    vertices = E @ U[:, :dim]  # coordinates in the hyperplane
    inradius = np.linalg.norm(vertices[0]) / dim  # circumradius = dim * inradius
    return vertices / inradius


def nonnegative_heads(K, rtol: float | None = None, strict: bool = False) -> FactorizedHeads:
    """Heads with nonnegative coefficients reproducing the lags: ``k`` heads if pointed, else ``k+1``.

    Pointed cone (with ``strict=False``, or with ``strict=True`` and no zero lag):
    slice the cone by ``{f = 1}``, enclose the slice in a regular simplex with
    ``k`` vertices ``g_h`` (scaled up by 10% so every point is strictly inside), and
    use ``V_h = g_h``, ``c_h(l) = f(K_l)`` times the barycentric coordinates.
    Otherwise: an orthonormal basis ``b_1..b_k`` of the span plus
    ``b_{k+1} = -sum_h b_h``, with ``c_h(l) = x_h(l) + t_l`` and ``c_{k+1}(l) = t_l``,
    where ``t_l = max(0, -min_h x_h(l))`` (plus ``0.1 max|x|`` when ``strict``).

    Derived in Chapter 3, Theorem 3.2 (the constructions of its proof).

    Parameters
    ----------
    K : array, shape (n, p, d)
    rtol : float, optional
    strict : bool
        Require every coefficient to be strictly positive (needed for genuine
        softmax weights); then ``k`` heads suffice only if the cone is pointed and
        no lag is zero.

    Returns
    -------
    FactorizedHeads
        Coefficients ``>= 0`` (``> 0`` when ``strict``).
    """
    K = _lags(K)
    if not isinstance(strict, (bool, np.bool_)):
        raise ValueError(f"strict must be True or False; got {strict!r}")
    return FactorizedHeads._from_checked(*_nonnegative_heads(K, rtol, strict))


def _nonnegative_heads(K: np.ndarray, rtol, strict: bool):
    """Core of :func:`nonnegative_heads` on checked lags: coefficients (H, n) ``>= 0`` and value maps (H, p, d)."""
    exponent = _binary_exponent(K)
    basis, coords, nonzero = _nonzero_lags(np.ldexp(K, -exponent), rtol)  # coordinates of K / 2^exponent
    k = basis.shape[0]
    if k == 0:
        raise ValueError("K must have at least one nonzero lag; got all zeros")
    f = _pointing_functional(coords[nonzero])
    if f is not None and (not strict or nonzero.all()):
        scale = coords @ f  # f(K_l) > 0 on nonzero lags
        z = coords[nonzero] / scale[nonzero, None]  # points on the slice {f . z = 1}
        centre = z.mean(axis=0)
        _, _, Vt = np.linalg.svd(f[None, :])  # rows 1.. span the directions orthogonal to f
        directions = Vt[1:]  # (k - 1, k)
        u = (z - centre) @ directions.T  # coordinates in the slice
        radius = 1.1 * max(float(np.max(np.linalg.norm(u, axis=1))), 1e-12)
        simplex = _regular_simplex(k - 1) * radius  # (k, k - 1), inradius = radius
        vertices = centre + simplex @ directions  # (k, k) in span coordinates
        # barycentric coordinates: solve vertices^T beta = z with sum(beta) = 1
        system = np.vstack([vertices.T, np.ones(k)])
        beta = np.linalg.lstsq(system, np.vstack([coords.T, scale]), rcond=None)[0]  # (k, n)
        coefficients = np.where(nonzero, beta, 0.0)
        values = np.einsum("hk,kpd->hpd", vertices, basis)
        return _scaled_back(np.clip(coefficients, 0.0, None), exponent, "K", "the head coefficients"), values
    t = np.maximum(0.0, -coords.min(axis=1))
    if strict:
        t = t + 0.1 * max(float(np.abs(coords).max()), 1e-300)
    coefficients = np.vstack([(coords + t[:, None]).T, t[None, :]])
    values = np.concatenate([basis, -basis.sum(axis=0, keepdims=True)])
    return _scaled_back(coefficients, exponent, "K", "the head coefficients"), values


class SoftmaxSinkHeads(_Layer):
    """Genuine softmax heads over positional scores, each with a zero-value sink slot.

    Head ``h`` attends from position ``i`` to keys ``j <= i`` and to one extra sink
    slot whose value is zero. Its weights are ``softmax`` of its scores, computed
    here with the exponential, so they are positive and sum to one over the
    ``i + 1`` real keys plus the sink. The output is
    ``y_i = sum_h U_h sum_{j<=i} a^h_ij x_j`` with ``U_h`` the (rescaled) value map.

    Parameters
    ----------
    scores : array, shape (H, n_max, n_max + 1)
        ``scores[h, i, j]`` for keys ``j <= i``; ``scores[h, i, n_max]`` is the sink's
        score. Entries for ``j > i`` are ignored.
    values : array, shape (H, p, d)

    Notes
    -----
    Derived in Chapter 3, Proposition 3.2 (softmax heads with a sink).
    """

    def __init__(self, scores, values):
        scores = as_array("scores", scores, 3, "(H, n_max, n_max + 1)", copy=True)
        values = as_array("values", values, 3, "(H, p, d)", copy=True)
        H, n_max = scores.shape[0], scores.shape[1]
        check_nonempty("scores", scores, 1, "n_max")
        check_size("scores", scores, 2, n_max + 1, "n_max + 1 (keys plus the sink)")
        check_size("values", values, 0, H, "the number of heads H of scores")
        check_nonempty("values", values, 1, "the output width p")
        check_nonempty("values", values, 2, "the token width d")
        self._store(scores, values)

    @classmethod
    def _from_checked(cls, scores: np.ndarray, values: np.ndarray) -> "SoftmaxSinkHeads":
        """Heads from arrays the library built and checked (finite floats, consistent shapes); not validated again."""
        heads = cls.__new__(cls)
        heads._store(np.array(scores, dtype=float), np.array(values, dtype=float))
        return heads

    def _store(self, scores: np.ndarray, values: np.ndarray) -> None:
        scores.flags.writeable = False
        values.flags.writeable = False
        self.scores, self.values = scores, values
        self.num_heads, self.n_max = scores.shape[0], scores.shape[1]
        self.p, self.d = values.shape[1], values.shape[2]

    def __repr__(self) -> str:
        return f"SoftmaxSinkHeads(H={self.num_heads}, n_max={self.n_max}, d={self.d}, p={self.p})"

    def weights(self, n: int) -> np.ndarray:
        """Softmax weights, shape ``(H, n, n + 1)``; the last column is the sink.

        Row ``i`` is positive on keys ``j <= i`` and on the sink, zero elsewhere, and sums to 1.
        """
        return self._weights(check_positive_int("n", n), "n")

    def _weights_entries(self, n: int) -> float:
        """Numbers :meth:`weights` holds at its peak: the scores, their masked and shifted copies and
        the exponentials, ``H x n x (n + 1)`` each, and the mask."""
        return 4.0 * self.num_heads * n * (n + 1) + n * (n + 1)

    def _weights(self, n: int, name: str) -> np.ndarray:
        """:meth:`weights` for a checked ``n``; messages name the caller's argument ``name``."""
        if n > self.n_max:
            raise ValueError(f"{name}: sequence length n = {n} exceeds n_max = {self.n_max} of these heads (their "
                             f"scores cover positions below n_max); use a shorter sequence")
        check_allocation(name, (self.num_heads, n, n + 1), "the softmax weights", "use a shorter sequence")
        check_total(name, self._weights_entries(n), "the softmax weights and their scores", "use a shorter sequence")
        s = np.concatenate([self.scores[:, :n, :n], self.scores[:, :n, self.n_max:]], axis=2)
        allowed = np.concatenate([np.tril(np.ones((n, n), dtype=bool)), np.ones((n, 1), dtype=bool)], axis=1)
        s = np.where(allowed, s, -np.inf)
        s = s - s.max(axis=2, keepdims=True)
        e = np.exp(s)
        return e / e.sum(axis=2, keepdims=True)

    def forward(self, X) -> np.ndarray:
        """Apply the heads; the sink's value is zero, so it only absorbs attention mass.

        Parameters
        ----------
        X : array, shape (n, d)

        Returns
        -------
        Y : ndarray, shape (n, p)
        """
        X = self._input(X)
        check_allocation("X", (self.num_heads, X.shape[0], X.shape[0] + 1), "the softmax weights",
                         "use a shorter X")
        a = self._weights(X.shape[0], "X")[:, :, :-1]  # drop the sink column: its value is 0
        with np.errstate(over="ignore", invalid="ignore"):
            Y = np.einsum("hij,hpd,jd->ip", a, self.values, X)
        if not np.all(np.isfinite(Y)):
            raise ValueError("the output overflows the largest float (1.8e308): X and values are too large "
                             f"together (max|X| = {float(np.max(np.abs(X))):.3g}, max|values| = "
                             f"{float(np.max(np.abs(self.values))):.3g}); rescale them")
        return Y

    def interaction(self, X) -> np.ndarray:
        """The operator ``W[i, j] = sum_h a^h_ij U_h``, shape ``(n, n, p, d)``."""
        X = self._input(X)
        n = X.shape[0]
        check_allocation("X", (n, n, self.p, self.d), "the operator W", "use forward(X) or a shorter X")
        check_allocation("X", (self.num_heads, n, n + 1), "the softmax weights", "use a shorter X")
        # the weights' peak, or the weights, their contiguous copy for the product and W
        check_total("X", max(self._weights_entries(n), 2.0 * self.num_heads * n * (n + 1) + float(n) * n * self.p
                             * self.d), "the softmax weights and the operator W", "use forward(X) or a shorter X")
        a = self._weights(n, "X")[:, :, :-1]
        return np.tensordot(a, self.values, axes=(0, 0))


def softmax_heads(K, rtol: float | None = None) -> SoftmaxSinkHeads:
    """Genuine softmax heads with a sink that reproduce the lags ``K`` exactly (Chapter 3, "Softmax, with a sink").

    Starts from :func:`nonnegative_heads` with ``strict=True`` (``k`` heads if the cone is
    pointed and no lag is zero, ``k + 1`` otherwise), then for each head: rescales the
    value map by ``s_h = 2 max_i sum_{l<i+1} c_h(l)`` so that every row of weights
    ``c_h(i-j) / s_h`` sums to at most 1/2; gives the sink the remaining mass; and uses
    the log-weights as scores. The key scores ``log(c_h(i-j) / s_h)`` depend on the lag
    ``i - j`` only; the sink's score ``log(1 - sum_{l<=i} c_h(l) / s_h)`` depends on the
    query position ``i`` (rows counted from 0).

    Derived in Chapter 3, Proposition 3.2 (softmax heads with a sink).

    Parameters
    ----------
    K : array, shape (n, p, d)
    rtol : float, optional

    Returns
    -------
    SoftmaxSinkHeads
        With ``n_max = n``.
    """
    K = _lags(K)
    c, values = _nonnegative_heads(K, rtol, strict=True)  # c: (H, n), all > 0
    n = c.shape[1]
    # the lags, their clipped copy, the weights, their logs and the scores with their masked copy
    check_total("K", (5.0 * c.shape[0] + 2.0) * n * (n + 1), f"the softmax scores of {c.shape[0]} heads over "
                f"its n = {n} lags", "use fewer lags n")
    s = 2.0 * np.cumsum(c, axis=1).max(axis=1)  # (H,)
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    w = np.where(lag >= 0, c[:, np.clip(lag, 0, None)], 0.0) / s[:, None, None]  # (H, n, n)
    sink = 1.0 - w.sum(axis=2)  # >= 1/2
    with np.errstate(divide="ignore"):
        scores = np.concatenate([np.log(w), np.log(sink)[:, :, None]], axis=2)
    scores = np.where(np.isfinite(scores), scores, 0.0)  # entries above the diagonal are ignored
    return SoftmaxSinkHeads._from_checked(scores, values * s[:, None, None])
