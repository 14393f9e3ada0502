"""Operator span, interaction rank and the lag-span dimension k(n) (Chapter 2).

One rule decides every dimension in this module. The span of a finite list of
``q`` matrices of size ``p x d`` is computed from the singular values of
``G = [vec M_1, ..., vec M_q]`` (column-major ``vec``), and a singular value
counts when it exceeds ``rtol`` times the largest one, with default

    rtol = max(q, p*d) * eps        (``eps`` = double-precision machine epsilon).

(Chapter 2 writes ``q`` for this count, and keeps ``m`` for the degree of the
minimal polynomial; :func:`default_rtol` calls its first argument ``m``.)
This is the numerical-rank rule of ``numpy.linalg.matrix_rank``: rounding errors
in forming a ``q x pd`` matrix and in its SVD are of order ``max(q, pd) * eps``
relative to its largest singular value, so a singular value below that cannot be
told apart from zero. :func:`interaction_rank` is this count, and
:func:`lag_span_bound` takes the ranks of ``B`` and ``C`` with ``matrix_rank``,
the same rule again.

For a *sequence* of spans, the lag spans ``span{K_0, ..., K_{l-1}}`` for
``l = 1, 2, ...``, the count of each prefix alone is not enough: its threshold
grows with ``l`` and with the largest singular value, while the singular values
of a decaying direction level off, so a direction resolved by the first lags can
fall below the threshold of a longer list (``diag(0.5, 0.5 + 1e-12)``: count 2 at
``n = 1024``, 1 at ``n = 8192``). Yet the first ``l`` lags are columns of every
longer lag matrix, and by interlacing ``sigma_r(G_n) >= sigma_r(G_l)`` (``G_n G_n^T``
is ``G_l G_l^T`` plus a positive semidefinite matrix, which lowers no eigenvalue): a
set of lags that is numerically independent stays so, only the yardstick grew. So:

* ``k(n)`` is the largest count over the prefixes ``l <= n`` (nondecreasing in
  ``n`` by construction), and at most ``m``;
* ``m`` (:func:`minimal_polynomial_degree`) is the same running count for the
  powers ``I, A, ..., A^(N-1)`` of ``A`` scaled to unit spectral norm, that is the
  lags of ``(A / ||A||, I, I)`` at ``n = N``, up to the shortcuts that save work
  there (its docstring, "How it is computed").

The cap ``k(n) <= m`` is a choice, and the module states it because it is not
automatic: ``k`` and ``m`` are counts on two different matrices, and at the
resolution limit (a singular value within a small factor of its threshold) they
can land on opposite sides (in a sweep of ``diag(0.5, 0.5 + delta)`` the lag
count exceeded the power count in a few cases, all with ``delta`` below
``1e-14``; how many depends on the BLAS). There both answers are exact for systems within rounding distance
of the data, and the library reports the pair that one system has: ``m`` and
``min(count, m)``. Away from that limit, and when the lags are computed to about
machine precision (normal or mildly non-normal ``A``; see
:func:`lag_span_dimension`), the cap never acts.

A cluster of ``c`` eigenvalues of relative spread ``delta`` contributes a
singular value of order ``delta^(c-1)``, so it is resolved only when
``delta`` exceeds about ``rtol^(1/(c-1))``: about ``rtol`` for a pair, about
``sqrt(rtol)`` (``1e-7``) for three.
"""

from __future__ import annotations

import functools

import numpy as np
import scipy.linalg

from ._validate import MAX_ARRAY_BYTES, as_array, check_allocation, check_positive_int
from .models import _check_system, _checked_lags

__all__ = [
    "default_rtol",
    "singular_values",
    "interaction_rank",
    "span_basis",
    "lag_span_dimension",
    "lag_span_profile",
    "minimal_polynomial_degree",
    "lag_span_bound",
]

EPS = float(np.finfo(float).eps)


def _check_rtol(rtol, default: float) -> float:
    if rtol is None:
        return default
    try:
        value = float(rtol)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"rtol must be a number in [0, 1) or None; got {rtol!r}") from exc
    if not (0.0 <= value < 1.0):
        raise ValueError(f"rtol must be a number in [0, 1) or None; got {rtol!r}")
    return value


def _stack(mats) -> np.ndarray:
    mats = as_array("mats", mats, 3, "(m, p, d)")
    if mats.shape[1] < 1 or mats.shape[2] < 1:
        raise ValueError(f"mats has shape {mats.shape}; each matrix must be at least 1 x 1")
    return mats


def _vec(mats: np.ndarray) -> np.ndarray:
    """Column-major vectorisation of each matrix, as columns: shape (p*d, m)."""
    m, p, d = mats.shape
    return mats.transpose(0, 2, 1).reshape(m, p * d).T


def _unvec(columns: np.ndarray, p: int, d: int) -> np.ndarray:
    """Inverse of :func:`_vec`: columns (p*d, r) to matrices (r, p, d)."""
    return columns.T.reshape(-1, d, p).transpose(0, 2, 1)


def default_rtol(m: int, p: int, d: int) -> float:
    """The default relative tolerance ``max(m, p*d) * eps`` for ``m`` matrices of size ``p x d``.

    Defined in Chapter 2, Section 2.1 (the rule's default tolerance). Used in Chapter 2, Section 2.7.

    Parameters
    ----------
    m : int
        Number of matrices, ``m >= 1`` (an empty list has no tolerance to choose: its
        span is ``{0}``).
    p, d : int
        Their size, ``p, d >= 1``.

    Returns
    -------
    float
        Below 1.

    Raises
    ------
    ValueError
        Naming ``m``, ``p`` or ``d`` when it is not an integer (``True`` is not one) at
        least 1, or when ``max(m, p*d) * eps`` would reach 1 (sizes beyond ``2^52``).
    """
    m = check_positive_int("m", m)
    p = check_positive_int("p", p)
    d = check_positive_int("d", d)
    if max(m, p * d) * EPS >= 1.0:
        name = "m" if m >= p * d else "p and d"
        raise ValueError(f"{name} too large: max(m, p*d) * eps = {max(m, p * d) * EPS:.3g} would be a relative "
                         f"tolerance of 1 or more (got m = {m}, p = {p}, d = {d}); sizes must stay below 2^52")
    return _default_rtol(m, p, d)


def _default_rtol(m: int, p: int, d: int) -> float:
    """Core of :func:`default_rtol`: ``max(m, p*d) * eps`` for checked sizes."""
    return max(m, p * d) * EPS


def _exponent(arr: np.ndarray) -> int:
    """The exponent ``e`` with ``max|arr| = f 2^e``, ``1/2 <= f < 1`` (0 for an all-zero array)."""
    top = float(np.max(np.abs(arr))) if arr.size else 0.0
    return int(np.frexp(top)[1]) if top > 0.0 else 0


def _scaled_columns(mats: np.ndarray) -> tuple[np.ndarray, int]:
    """``vec`` columns of ``mats`` divided by ``2^e`` (exact), so that the SVD cannot overflow, and ``e``."""
    e = _exponent(mats)
    return _vec(np.ldexp(mats, -e)), e


def singular_values(mats) -> np.ndarray:
    """Singular values of ``G = [vec M_1, ..., vec M_m]``, largest first.

    ``mats`` is divided by a power of two before the SVD and the singular values
    are scaled back (both exact), so entries near the largest float do not
    overflow the computation.

    Used in Chapter 2, Section 2.7.

    Parameters
    ----------
    mats : array, shape (m, p, d)

    Returns
    -------
    ndarray, shape (min(m, p*d),)

    Raises
    ------
    ValueError
        If a singular value exceeds the largest float (1.8e308), naming ``mats``.
    """
    return _singular_values(_stack(mats))


def _singular_values(mats: np.ndarray) -> np.ndarray:
    """Core of :func:`singular_values`, on a checked stack ``mats`` of shape (m, p, d)."""
    if mats.shape[0] == 0:
        return np.zeros(0)
    G, e = _scaled_columns(mats)
    s = np.linalg.svd(G, compute_uv=False)
    with np.errstate(over="ignore"):
        out = np.ldexp(s, e)
    if not np.all(np.isfinite(out)):
        raise ValueError(f"mats is too large: its largest singular value would be {float(s[0]):.3g} x 2^{e}, "
                         "beyond the largest float (1.8e308); divide mats by its largest entry first "
                         "(the rank and the span do not change)")
    return out


def _rank_from(s: np.ndarray, rtol: float) -> int:
    """The rule: count the singular values above rtol times the largest.

    ``s`` (r,) is sorted, largest first; ``rtol`` is a checked number
    in ``[0, 1)``. An empty or zero ``s`` counts 0 (all the matrices are
    zero, their span is ``{0}``).
    """
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int(np.count_nonzero(s > rtol * s[0]))


def interaction_rank(mats, rtol: float | None = None) -> int:
    """Dimension of ``span{M_1, ..., M_m}``: the interaction rank of a set of blocks.

    Defined in Chapter 2, Definition 2.1 (computed by the rule stated after it).

    Parameters
    ----------
    mats : array, shape (m, p, d)
        The matrices, e.g. all blocks ``W_ij(X)`` of an operator reshaped to
        ``(n*n, p, d)``, or the lag operators of an SSM.
    rtol : float, optional
        Singular values above ``rtol * s_max`` count. Default
        :func:`default_rtol` ``(m, p, d)``.

    Returns
    -------
    int
        Between 0 (all matrices zero) and ``min(m, p*d)``.
    """
    mats = _stack(mats)
    return _interaction_rank(mats, _check_rtol(rtol, _default_rtol(*mats.shape)))


def _interaction_rank(mats: np.ndarray, rtol: float) -> int:
    """Core of :func:`interaction_rank`: the rule on the checked stack ``mats`` (m, p, d)."""
    if mats.shape[0] == 0:
        return 0
    return _rank_from(np.linalg.svd(_scaled_columns(mats)[0], compute_uv=False), rtol)


def span_basis(mats, rtol: float | None = None) -> np.ndarray:
    """An orthonormal basis (Frobenius inner product) of ``span{M_1, ..., M_m}``.

    The basis matrices are the left singular vectors of ``[vec M_1, ..., vec M_m]``,
    reshaped; they are ordered by decreasing singular value.

    Used in Chapter 2, Section 2.7.

    Parameters
    ----------
    mats : array, shape (m, p, d)
    rtol : float, optional
        As in :func:`interaction_rank`.

    Returns
    -------
    ndarray, shape (r, p, d)
        ``r = interaction_rank(mats, rtol)``; ``<B_a, B_b>_F = delta_ab``.
    """
    mats = _stack(mats)
    return _span_basis(mats, _check_rtol(rtol, _default_rtol(*mats.shape)))


def _span_basis(mats: np.ndarray, rtol: float) -> np.ndarray:
    """Core of :func:`span_basis`, on the checked stack ``mats`` (m, p, d): shape (r, p, d)."""
    m, p, d = mats.shape
    if m == 0:
        return np.zeros((0, p, d))
    U, s, _ = np.linalg.svd(_scaled_columns(mats)[0], full_matrices=False)
    return _unvec(U[:, :_rank_from(s, rtol)], p, d)


def _finite_lags(A, B, C, n: int) -> np.ndarray:
    """The lags of a checked system, refusing ones that overflow (the message names A's spectral radius)."""
    return _checked_lags(A, B, C, n)


def _tolerance(rtol, length: int, p: int, d: int) -> float:
    """The rule's relative tolerance for ``length`` matrices of size ``p x d``.

    ``rtol`` is a checked number, or ``None`` for the default ``max(length, p d) eps``.
    """
    return _default_rtol(length, p, d) if rtol is None else float(rtol)


def _prefix_count(G: np.ndarray, length: int, p: int, d: int, rtol) -> int:
    """The rule's count for the first ``length`` columns of ``G``."""
    return _rank_from(np.linalg.svd(G[:, :length], compute_uv=False), _tolerance(rtol, length, p, d))


def _interlacing_bound(s_a: np.ndarray, s_b: np.ndarray, tol_a: float) -> int:
    """An upper bound on the count of every prefix ``G_l`` with ``a <= l <= b``.

    ``s_a`` and ``s_b`` are the singular values of ``G_a`` and ``G_b``. Adding columns
    never lowers a singular value, so ``s_i(G_l) <= s_i(G_b)``, and the threshold
    ``tol(l) s_1(G_l) >= tol(a) s_1(G_a)``: at most ``#{i : s_i(G_b) > tol(a) s_1(G_a)}``
    singular values of ``G_l`` can count.
    """
    if s_a[0] > 0:
        return int(np.count_nonzero(s_b > tol_a * s_a[0]))
    return int(np.count_nonzero(s_b > 0))


def _running_count(G: np.ndarray, p: int, d: int, rtol,
                   cap: int) -> int:
    """``min(cap, max over l <= n of the count of G[:, :l])``.

    ``G`` (p*d, n); ``rtol`` is a checked number, or ``None`` for the
    default tolerance of each prefix. The full matrix is counted first:
    when it reaches ``cap``, no prefix is visited. Otherwise the
    prefixes are searched by bisection over intervals of lengths
    ``[a, b]``, skipping an interval when :func:`_interlacing_bound`
    shows that none of its prefixes can beat the best count so far. The
    answer is the exact maximum over all prefixes, usually after
    ``O(log n)`` SVDs.
    """
    # the singular values of the prefix G[:, :length], each SVD once
    @functools.cache
    def svals(length: int) -> np.ndarray:
        return np.linalg.svd(G[:, :length], compute_uv=False)

    n = G.shape[1]
    # the rule's relative tolerance for a prefix of a given length
    tol = functools.partial(_tolerance, rtol, p=p, d=d)
    best = _rank_from(svals(n), tol(n))
    # all n lags reach the cap, or all are zero
    if best >= cap or best == 0:
        return min(best, cap)
    intervals = [(1, n)]
    while intervals:
        a, b = intervals.pop()
        # a prefix of l columns counts at most min(l, p d)
        if min(b, p * d) <= best:
            continue
        # interlacing: no prefix of a length in [a, b] can count more
        if _interlacing_bound(svals(a), svals(b), tol(a)) <= best:
            continue
        best = max(best, _rank_from(svals(a), tol(a)),
                   _rank_from(svals(b), tol(b)))
        if best >= cap:
            return cap
        if b - a > 1:
            mid = (a + b) // 2
            intervals += [(a, mid), (mid, b)]
    return best


#: Longest profile :func:`lag_span_profile` computes: it takes one SVD per prefix, ``n`` SVDs of
#: up to ``p d x n`` matrices, which at ``n = 2048`` is already seconds for ``p d = 64``.
MAX_PROFILE_LENGTH = 2048
#: Work limit of :func:`lag_span_profile`, in seconds of :func:`_profile_seconds`'s model.
MAX_PROFILE_SECONDS = 1.0


def _profile_seconds(n: int, pd: int) -> float:
    """Model of the time of ``n`` prefix SVDs of a ``pd x l`` matrix, ``l = 1..n`` (one core here):
    ``1e-4`` s per prefix plus ``7e-10 min(pd, l)^2 max(pd, l)`` s for its SVD."""
    l = np.arange(1, n + 1, dtype=float)
    return float(1e-4 * n + 7e-10 * np.sum(np.minimum(pd, l) ** 2 * np.maximum(pd, l)))


def lag_span_profile(A, B, C, n: int, rtol: float | None = None) -> np.ndarray:
    """``k(1), ..., k(n)``: the lag-span dimension for every length up to ``n``.

    Each prefix ``K_0, ..., K_{l-1}`` is counted by the module's rule; ``k(l)`` is
    the running maximum of these counts, capped at ``m`` (module docstring), so
    the profile is nondecreasing and never exceeds ``m``. The lag operators are
    formed once and each prefix has its own SVD: meant for ``n`` up to a few
    hundred, and ``n`` above ``MAX_PROFILE_LENGTH`` (2048), or a profile whose SVDs
    would take more than about a second (``n`` above about 850 for ``p d = 64``), is
    refused with a ``ValueError`` naming ``n``. For a single length use
    :func:`lag_span_dimension`.

    Used in Chapter 2, Example 2.1 (the plateau).

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
    rtol : float, optional
        As in :func:`interaction_rank`, with ``m`` the prefix length; the same
        value is passed to :func:`minimal_polynomial_degree`.

    Returns
    -------
    ndarray of int, shape (n,)
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    return _lag_span_profile(A, B, C, n, _check_rtol(rtol, None))


def _lag_span_profile(A: np.ndarray, B: np.ndarray, C: np.ndarray, n: int, rtol) -> np.ndarray:
    """Core of :func:`lag_span_profile`, on a checked system; refuses ``n > MAX_PROFILE_LENGTH``."""
    G = _vec(_checked_lags(A, B, C, n))  # first, so that an unstable A is reported as such
    if n > MAX_PROFILE_LENGTH:
        raise ValueError(f"n must be at most {MAX_PROFILE_LENGTH} for lag_span_profile (one SVD per prefix); "
                         f"got n = {n}: use lag_span_dimension(A, B, C, n) for a single long length")
    p, d = C.shape[0], B.shape[1]
    seconds = _profile_seconds(n, p * d)
    if seconds > MAX_PROFILE_SECONDS:
        raise ValueError(f"n = {n} prefixes of lags of size p x d = {p} x {d} would take about {seconds:.1f} s of "
                         f"SVDs for lag_span_profile, above its limit of {MAX_PROFILE_SECONDS:g} s; use a smaller n "
                         f"(or smaller p and d), or lag_span_dimension(A, B, C, n) for a single length")
    counts = np.array([_prefix_count(G, length, p, d, rtol) for length in range(1, n + 1)], dtype=int)
    return np.minimum(np.maximum.accumulate(counts), _minimal_polynomial_degree(A, rtol))


def lag_span_dimension(A, B, C, n: int, rtol: float | None = None) -> int:
    """The lag-span dimension ``k(n) = dim span{C A^l B : 0 <= l < n}``.

    The ``pd x n`` matrix of vectorised lag operators is counted by the module's
    rule; ``k(n)`` is the largest count over its prefixes (first ``l <= n``
    columns), capped at ``m = minimal_polynomial_degree(A, rtol)``, so that
    ``k`` is nondecreasing in ``n`` and ``k(n) <= m`` (module docstring). In the
    common case one SVD decides: when the full matrix already counts ``m``
    directions, no prefix is visited. The default tolerance assumes the lags are
    computed to about machine precision, which holds for normal ``A`` and mildly
    non-normal ones; for a strongly non-normal ``A`` (``||A^l||`` far above
    ``rho(A)^l``) rounding in the computed lags can exceed it and be counted, so
    pass a larger ``rtol`` there.

    Defined in Chapter 2, Definition 2.2 (counted by the rule of Section 2.7).

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
        Sequence length, ``n >= 1``.
    rtol : float, optional
        As in :func:`interaction_rank`; the same value is passed to
        :func:`minimal_polynomial_degree`.

    Returns
    -------
    int
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    return _lag_span_dimension(A, B, C, n, _check_rtol(rtol, None))


def _lag_span_dimension(A: np.ndarray, B: np.ndarray, C: np.ndarray,
                        n: int, rtol) -> int:
    """Core of :func:`lag_span_dimension`: ``k(n)`` of a checked system.

    ``A`` (N, N), ``B`` (N, d), ``C`` (p, N), ``n >= 1``; ``rtol`` a
    checked number, or ``None`` for the default tolerance of each
    prefix.
    """
    # the columns vec K_0, ..., vec K_{n-1} of G
    G = _vec(_checked_lags(A, B, C, n))
    # the cap k(n) <= m of Prop. 2.1 (c); m is counted by a routine of
    # its own, whose docstring gives the shortcuts it takes
    m = _minimal_polynomial_degree(A, rtol)
    # the largest count of the rule over the prefixes G[:, :l], l <= n
    return _running_count(G, C.shape[0], B.shape[1], rtol, cap=m)


def _krylov_certifies_full_degree(A: np.ndarray, rtol: float, seed: int = 0, block: int = 4) -> bool:
    """True when a block Krylov sequence proves that the running count of the powers is ``N``.

    For ``V`` with orthonormal columns, ``||p(A) V||_F <= ||p(A)||_F``, so the smallest
    singular value of ``[vec V, vec AV, ..., vec A^(N-1) V]`` is a lower bound on
    ``sigma_N([vec I, ..., vec A^(N-1)])``; and the largest singular value of the
    latter is at most ``N`` (``||A|| = 1``: every ``||A^l||_F <= sqrt(N)``). A lower
    bound above ``4 N rtol`` (a factor 4 for rounding) puts all ``N`` singular values
    above the rule's threshold.
    """
    N = A.shape[0]
    s = min(block, N)
    check_allocation("A", (N * s, N), "a block Krylov sequence", "use a smaller A")
    V, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((N, s)))
    K = np.empty((N * s, N))
    W = V
    for l in range(N):
        K[:, l] = W.reshape(-1)
        W = A @ W
    return bool(np.linalg.svd(K, compute_uv=False)[-1] > 4.0 * N * rtol)


def _is_normal(A: np.ndarray) -> bool:
    """Whether ``||A A^T - A^T A||_F <= 1e3 N eps`` for ``A`` of unit spectral norm."""
    return bool(np.linalg.norm(A @ A.T - A.T @ A) <= 1e3 * A.shape[0] * EPS)


def _normal_degree(A: np.ndarray, rtol: float) -> int:
    """The running count of the powers of a normal ``A`` (``||A|| = 1``), from ``N x N`` numbers.

    For ``A = U diag(lambda) U^*`` with ``U`` unitary, ``vec A^l = (conj(U) kron U) E lambda^l``
    where ``E`` picks the diagonal; ``(conj(U) kron U) E`` has orthonormal columns, so every prefix
    ``[vec I, ..., vec A^(l-1)]`` has the singular values of the first ``l`` columns of the
    Vandermonde matrix ``[lambda_i^l]``. The rule (with the tolerance of ``N x N`` matrices) is
    applied to that matrix: ``O(N^2)`` memory instead of ``O(N^3)``.
    """
    N = A.shape[0]
    lam = np.linalg.eigvals(A)
    V = lam[:, None] ** np.arange(N)[None, :]  # (N, N), |lambda| <= 1
    return max(1, _running_count(V, N, N, rtol, N))


#: Largest ``A`` (``N x N``) whose minimal polynomial degree is counted from the stack of its
#: powers (or certified by a block Krylov sequence); a normal ``A`` is counted from its eigenvalues
#: up to ``MAX_NORMAL_DEGREE_SIZE``. Anything larger is refused at once: at these sizes a random
#: ``A`` takes about a second, and every power costs ``2 N^3`` operations more.
MAX_DEGREE_SIZE = 512
MAX_NORMAL_DEGREE_SIZE = 1024
#: Time budget of the stack of powers in :func:`minimal_polynomial_degree`, in seconds of the
#: model ``2 N^3 L / 3e10 + 2 N^2 L^2 / 4e9`` (``L`` powers at 30 GFlop/s and their QR at 4 GFlop/s,
#: one core here) for ``N <= 256``, growing like ``N^3`` above (4 s at 512).
_DEGREE_SECONDS = 0.5


def _degree_size_error(N: int, limit: int, what: str) -> ValueError:
    return ValueError(f"A of size {N} x {N} is above the size limit {limit} x {limit} of the minimal polynomial "
                      f"degree for {what} (the stack of powers or the eigenvalues would take more than seconds); "
                      f"use a smaller A (limits: {MAX_DEGREE_SIZE} in general, {MAX_NORMAL_DEGREE_SIZE} for a normal A)")


def _max_powers(N: int, limit: float) -> tuple[int, str]:
    """Most powers the stack may hold for an ``N x N`` ``A``: within ``limit`` bytes and the time budget.

    Returns the count and which limit sets it (``"memory"`` or ``"time"``).
    """
    seconds = _DEGREE_SECONDS * max(1.0, (N / 256.0) ** 3)
    a, b = 2.0 * N * N / 4e9, 2.0 * float(N) ** 3 / 3e10  # seconds per L^2 (QR) and per L (powers)
    by_time = int((-b + np.sqrt(b * b + 4.0 * a * seconds)) / (2.0 * a))
    by_memory = int(limit // (8 * N * N))
    return (min(N, by_memory), "memory") if by_memory <= by_time else (min(N, by_time), "time")


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2f} GiB" if nbytes >= 2**27 else f"{nbytes / 2**20:.2f} MiB"


def _stacked_powers_qr(A: np.ndarray, target: float, max_cols: int):
    """QR factor ``R`` of ``[vec I, ..., vec A^(L-1)]`` for the first ``L`` with a tail bound
    ``delta = sqrt(N - L) ||A^L||_F <= target`` (``delta = 0`` when ``L = N``), and ``delta``;
    ``(None, inf)`` when that needs more than ``max_cols`` powers. ``||A||_2 = 1``."""
    N = A.shape[0]
    if max_cols < 1:
        return None, np.inf
    G = np.empty((N * N, max(1, min(N, max_cols, 16))), order="F")
    P = np.eye(N)
    norms = [float(np.sqrt(N))]  # ||A^l||_F for l = 0, 1, ...
    L = 0
    while True:
        if L == G.shape[1]:
            if L >= max_cols:
                return None, np.inf
            grown = np.empty((N * N, min(N, max_cols, 2 * L)), order="F")
            grown[:, :L] = G[:, :L]
            G = grown
        G[:, L] = P.reshape(-1)
        L += 1
        if L == N:
            delta = 0.0
            break
        P = A @ P  # A^L, the first power left out
        norms.append(float(np.linalg.norm(P)))
        delta = np.sqrt(N - L) * norms[-1]
        if delta <= target:
            break
        if L >= 16 and L % 8 == 0 and max_cols < N:
            # the decay rate of the last L/2 powers predicts where delta reaches the target;
            # give up early (no answer is given from it) when that is far beyond the budget
            rate = (norms[-1] / norms[L // 2 - 1]) ** (1.0 / (L - L // 2)) if norms[L // 2 - 1] > 0 else 0.0
            if rate >= 1.0 or L + np.log(target / delta) / np.log(max(rate, 1e-300)) > 2 * max_cols:
                return None, np.inf
    # LAPACK's QR in place; only the leading L x L block of R is copied out
    qr = scipy.linalg.lapack.dgeqrf(G[:, :L], overwrite_a=True)[0]
    return np.triu(qr[:L, :L]), delta


def minimal_polynomial_degree(A, rtol: float | None = None, max_bytes: int | None = None) -> int:
    """Degree ``m`` of the minimal polynomial of ``A``: ``dim span{I, A, A^2, ...}``.

    ``A`` is first scaled to unit spectral norm (``m(cA) = m(A)`` for ``c != 0``,
    and the powers neither overflow nor underflow). Then ``m`` is counted by the
    module's rule exactly as ``k(N)`` is for the system ``(A / ||A||, I, I)``:
    the largest count, over ``l <= N``, of the singular values of
    ``G_l = [vec I, vec A, ..., vec A^(l-1)]`` above ``rtol`` times the largest one,
    default ``rtol = N^2 eps`` (``default_rtol(l, N, N)`` for every ``l <= N``).
    Higher powers are not needed: by Cayley-Hamilton they lie in this span. No
    characteristic polynomial is formed, and eigenvalues are computed only in one
    fallback, for a normal ``A`` whose powers do not decay (see below).

    Defined in Chapter 2, Equation 2.1 (``m`` is the rank of ``P_N``). Used in Chapter 2, Section 2.7.

    Like any numerical rank, ``m`` is well defined only when the answer is
    clear-cut: two eigenvalues that differ by less than about ``rtol``
    (relative) count as one, and a cluster of ``c`` eigenvalues is resolved only
    when its relative spread exceeds about ``rtol^(1/(c-1))``. For a strongly
    non-normal ``A`` the computed powers carry rounding errors above the default;
    pass a larger ``rtol`` there, and the same one to :func:`lag_span_dimension`
    (it passes its own ``rtol`` on, since it caps ``k`` at ``m``).

    **How it is computed.** The powers are formed one at a time and stop at the
    first ``L`` where the remaining ones cannot matter: for ``l >= L``,
    ``||A^l||_F <= ||A^L||_F`` (``||A|| = 1``), so the unformed columns have
    Frobenius norm at most ``delta = sqrt(N - L) ||A^L||_F``, and by Weyl's
    inequality they move every singular value (and the largest one, hence the
    threshold) by at most ``delta``. Once ``delta <= 1e-3 rtol sqrt(N)`` and no
    singular value of ``G_L`` lies within ``delta`` of its threshold, the counts of
    all longer prefixes equal the count of ``G_L``, and the answer is the running
    count over the prefixes of ``G_L`` (from one QR factorisation of ``G_L``: the
    prefix ``G_l`` has the singular values of ``R[:l, :l]``). This is the same
    count as on all ``N`` powers, up to rounding in the SVD; when a singular value
    sits within rounding of its threshold the two can differ, as any two
    computations of a numerical rank can. Powers of a matrix with spectral radius
    well below its norm decay geometrically, so ``L`` is a few dozen (a random
    ``A`` needs about 40). Time ``O(L N^3 + L^2 N^2)``, memory ``L N^2`` floats (the
    QR works in place).

    When the powers do not decay (``rho(A)`` close to ``||A||``, e.g. an orthogonal
    ``A``) ``L`` would reach ``N``, and ``G_L`` would have ``N^3`` entries. The stack
    holds at most as many powers as fit in ``max_bytes`` (default 1 GiB) and in about
    half a second of work (``L`` up to ``N`` for ``N`` below about 180, 107 at 256,
    145 at 512). Beyond that, for a normal ``A`` (``A A^T = A^T A`` to rounding) no
    stack is needed: the powers' stack has the singular values of the ``N x N``
    Vandermonde matrix ``[lambda_i^l]`` of the eigenvalues of ``A / ||A||``, and the
    same running count is taken on it (``O(N^2)`` memory), so ``np.eye(800)`` or an
    orthogonal ``800 x 800`` matrix is answered. Otherwise a block Krylov sequence on
    four random vectors is tried: when it proves that all ``N`` singular values are
    above the threshold (see ``_krylov_certifies_full_degree``), the answer is ``N``.
    Otherwise the function raises a ``ValueError`` naming ``A`` and the limit it
    reached (a non-normal ``A`` whose powers do not decay and whose degree is below
    ``N``, such as ``I + shift`` at ``N = 256``). The function never builds a stack
    larger than ``max_bytes``.

    **Size limit.** ``N <= MAX_DEGREE_SIZE`` (512), or ``N <= MAX_NORMAL_DEGREE_SIZE``
    (1024) for a normal ``A``; a larger ``A`` is refused at once with a ``ValueError``
    naming ``A``. Within the limit a call takes at most about a second for
    ``N <= 256`` (one core here; most take a tenth of that) and a few seconds at 512,
    or refuses (as above) within that time.

    Parameters
    ----------
    A : array, shape (N, N)
        ``N <= 512`` (``N <= 1024`` if ``A`` is normal).
    rtol : float, optional
        Relative tolerance; default :func:`default_rtol` ``(N, N, N) = N^2 eps``.
    max_bytes : int, optional
        Largest stack of powers, in bytes, the function may build; default 1 GiB.

    Returns
    -------
    int
        ``1 <= m <= N`` (``m = 1`` when ``A`` is a multiple of ``I``, including ``A = 0``).
    """
    A = as_array("A", A, 2, "(N, N)")
    if A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"A must be square with N >= 1, shape (N, N); got shape {A.shape}")
    return _minimal_polynomial_degree(A, rtol, max_bytes)


def _minimal_polynomial_degree(A: np.ndarray, rtol, max_bytes: int | None = None) -> int:
    """The core of :func:`minimal_polynomial_degree`, on a checked square ``A``.

    It is the running count of the module's rule on ``vec I, vec A, ..., vec A^(N-1)`` for ``A``
    scaled to unit spectral norm, with shortcuts that the public docstring justifies ("How it is
    computed"): the powers stop at the first ``L`` where the Weyl bound ``sqrt(N - L) ||A^L||_F`` on
    the powers left out lies far below the threshold and no singular value lies within it of the
    threshold (:func:`_stacked_powers_qr`), and the prefixes are counted from that stack's QR
    factor ``R``; when the powers do not decay and the stack would exceed ``max_bytes``, a normal
    ``A`` is counted on the Vandermonde matrix of its eigenvalues (:func:`_normal_degree`), and
    otherwise a randomised block Krylov sequence may certify ``m = N``
    (:func:`_krylov_certifies_full_degree`), or a ``ValueError`` is raised. Up to rounding in the SVDs this is the count
    on all ``N`` powers; when a singular value sits within rounding of its threshold the two can
    differ.
    """
    N = A.shape[0]
    rtol = _check_rtol(rtol, _default_rtol(N, N, N))
    limit = MAX_ARRAY_BYTES if max_bytes is None else max_bytes
    check_allocation("A", (N, N), "a power of A", "", max_bytes=limit)  # validates max_bytes
    if N > MAX_NORMAL_DEGREE_SIZE:
        raise _degree_size_error(N, MAX_NORMAL_DEGREE_SIZE, "any A")
    top = float(np.max(np.abs(A)))
    if top == 0.0:
        return 1  # A = 0: the minimal polynomial is x
    A = A / top  # first to order one, so that the spectral norm cannot overflow
    A = A / np.linalg.norm(A, 2)
    if N == 1:
        return 1
    if N > MAX_DEGREE_SIZE and not _is_normal(A):
        raise _degree_size_error(N, MAX_DEGREE_SIZE, "a non-normal A")
    # the most powers the stack may hold: within max_bytes and about a second of work
    max_cols, binding = _max_powers(N, limit)
    target = 1e-3 * rtol * np.sqrt(N)  # the largest singular value is at least ||vec I|| = sqrt(N)
    while True:
        R, delta = _stacked_powers_qr(A, target, max_cols)
        if R is None:
            if _is_normal(A):
                return _normal_degree(A, rtol)
            if _krylov_certifies_full_degree(A, rtol):
                return N
            if binding == "memory":
                raise ValueError(
                    f"A of size {N} x {N} has powers that decay too slowly (spectral radius close to its "
                    f"norm), so counting its minimal polynomial degree needs more than {max_cols} of its "
                    f"powers, {_gib((max_cols + 1) * N * N * 8)} or more, above the limit of {_gib(limit)}; "
                    f"pass max_bytes= to raise the limit or use a smaller A")
            raise ValueError(
                f"A of size {N} x {N} has powers that decay too slowly (spectral radius close to its norm), "
                f"so counting its minimal polynomial degree needs more than {max_cols} of its powers, the "
                f"most that the work limit allows at this size (about a second); use a smaller A")
        if delta == 0.0:
            break  # all N powers
        s = np.linalg.svd(R, compute_uv=False)
        tau = rtol * s[0]
        if delta < tau and not np.any((s > tau - delta) & (s <= rtol * (s[0] + delta))):
            break
        target = delta * 1e-3  # a singular value near the threshold: take more powers
    # the prefix R[:, :l] of the QR factor has the singular values of the first l powers
    return max(1, _running_count(R, N, N, rtol, N))


def lag_span_bound(A, B, C, n: int, rtol: float | None = None) -> int:
    """The upper bound ``min(n, rank B * rank C, m)`` on ``k(n)``.

    Derived in Chapter 2, Proposition 2.1 (upper bounds on the lag-span dimension).

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
    rtol : float, optional
        Passed to :func:`minimal_polynomial_degree`; the ranks of ``B`` and ``C``
        use ``numpy.linalg.matrix_rank``'s default tolerance, which is the module's
        rule. For exact data the bound always holds. For computed values
        ``k(n) <= min(n, m)`` holds by construction (:func:`lag_span_dimension`
        caps at ``m``); ``k(n) <= rank B * rank C`` can fail only at the resolution
        limit, when ``B`` or ``C`` has a singular value within a small factor of
        its threshold.

    Returns
    -------
    int
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    return _lag_span_bound(A, B, C, n, rtol)


def _lag_span_bound(A: np.ndarray, B: np.ndarray, C: np.ndarray, n: int, rtol) -> int:
    """Core of :func:`lag_span_bound`, on a checked system (``rtol`` is checked by the minimal polynomial's core)."""
    rank_b = int(np.linalg.matrix_rank(B))
    rank_c = int(np.linalg.matrix_rank(C))
    return min(n, rank_b * rank_c, _minimal_polynomial_degree(A, rtol))
