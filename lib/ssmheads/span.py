"""Operator span, interaction rank and the lag-span dimension k(n) (Chapter 2).

One rule decides every dimension in this module. The span of a finite list of
``m`` matrices of size ``p x d`` is computed from the singular values of
``G = [vec M_1, ..., vec M_m]`` (column-major ``vec``), and a singular value
counts when it exceeds ``rtol`` times the largest one, with default

    rtol = max(m, p*d) * eps        (``eps`` = double-precision machine epsilon).

This is the numerical-rank rule of ``numpy.linalg.matrix_rank``: rounding errors
in forming an ``m x pd`` matrix and in its SVD are of order ``max(m, pd) * eps``
relative to its largest singular value, so a singular value below that cannot be
told apart from zero. :func:`interaction_rank` is this count, and
:func:`lag_span_bound` takes the ranks of ``B`` and ``C`` with ``matrix_rank``,
the same rule again.

For a *sequence* of spans, the lag spans ``span{K_0, ..., K_{l-1}}`` for
``l = 1, 2, ...``, the count of each prefix alone is not enough: its threshold
grows with ``l`` and with the largest singular value, while the singular values
of a decaying direction level off, so a direction resolved by the first lags can
fall below the threshold of a longer list (``diag(0.5, 0.5 + 1e-12)``: count 2 at
``n = 1024``, 1 at ``n = 4096``). Yet the first ``l`` lags are columns of every
longer lag matrix, and by interlacing ``sigma_r(G_n) >= sigma_r(G_l)``: a set of
lags that is numerically independent stays so, only the yardstick grew. So:

* ``k(n)`` is the largest count over the prefixes ``l <= n`` (nondecreasing in
  ``n`` by construction), and at most ``m``;
* ``m`` (:func:`minimal_polynomial_degree`) is the same running count for the
  powers ``I, A, ..., A^(N-1)`` of ``A`` scaled to unit spectral norm, that is the
  lags of ``(A / ||A||, I, I)`` at ``n = N``.

The cap ``k(n) <= m`` is a choice, and the module states it because it is not
automatic: ``k`` and ``m`` are counts on two different matrices, and at the
resolution limit (a singular value within a small factor of its threshold) they
can land on opposite sides (in a sweep of ``diag(0.5, 0.5 + delta)`` the lag
count exceeded the power count in 8 of 1605 cases, all with ``delta`` below
``2e-15``). There both answers are exact for systems within rounding distance
of the data, and the library reports the pair that one system has: ``m`` and
``min(count, m)``. Away from that limit the cap never acts.

A cluster of ``c`` eigenvalues of relative spread ``delta`` contributes a
singular value of order ``delta^(c-1)``, so it is resolved only when
``delta`` exceeds about ``rtol^(1/(c-1))``: about ``rtol`` for a pair, about
``sqrt(rtol)`` (``1e-7``) for three.
"""

from __future__ import annotations

import numpy as np

from ._validate import as_array, check_positive_int
from .models import _check_system, lag_operators

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
    """The default relative tolerance ``max(m, p*d) * eps`` for ``m`` matrices of size ``p x d``."""
    return max(int(m), int(p) * int(d)) * EPS


def singular_values(mats) -> np.ndarray:
    """Singular values of ``G = [vec M_1, ..., vec M_m]``, largest first.

    Parameters
    ----------
    mats : array, shape (m, p, d)

    Returns
    -------
    ndarray, shape (min(m, p*d),)
    """
    mats = _stack(mats)
    if mats.shape[0] == 0:
        return np.zeros(0)
    return np.linalg.svd(_vec(mats), compute_uv=False)


def _rank_from(s: np.ndarray, rtol: float) -> int:
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int(np.count_nonzero(s > rtol * s[0]))


def interaction_rank(mats, rtol: float | None = None) -> int:
    """Dimension of ``span{M_1, ..., M_m}``: the interaction rank of a set of blocks.

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
    rtol = _check_rtol(rtol, default_rtol(*mats.shape))
    return _rank_from(singular_values(mats), rtol)


def span_basis(mats, rtol: float | None = None) -> np.ndarray:
    """An orthonormal basis (Frobenius inner product) of ``span{M_1, ..., M_m}``.

    The basis matrices are the left singular vectors of ``[vec M_1, ..., vec M_m]``,
    reshaped; they are ordered by decreasing singular value.

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
    m, p, d = mats.shape
    rtol = _check_rtol(rtol, default_rtol(m, p, d))
    if m == 0:
        return np.zeros((0, p, d))
    U, s, _ = np.linalg.svd(_vec(mats), full_matrices=False)
    return _unvec(U[:, :_rank_from(s, rtol)], p, d)


def _finite_lags(A, B, C, n: int) -> np.ndarray:
    K = lag_operators(A, B, C, n)
    if not np.all(np.isfinite(K)):
        raise ValueError(f"the lag operators C A^l B overflow for n = {n}: A has spectral radius "
                         f"{float(np.max(np.abs(np.linalg.eigvals(A)))):.3g}; use a smaller n or a stable A")
    return K


def _prefix_count(G: np.ndarray, length: int, p: int, d: int, rtol) -> int:
    """The rule's count for the first ``length`` columns of ``G``."""
    tol = _check_rtol(rtol, default_rtol(length, p, d))
    return _rank_from(np.linalg.svd(G[:, :length], compute_uv=False), tol)


def _running_count(G: np.ndarray, p: int, d: int, rtol, cap: int) -> int:
    """``min(cap, max over l <= n of the count of G[:, :l])`` for ``G`` of shape (p*d, n).

    The full matrix is counted first; prefixes are visited only when they could
    change the answer (a prefix of ``l`` columns counts at most ``l``).
    """
    n = G.shape[1]
    best = _prefix_count(G, n, p, d, rtol)
    if best >= cap:
        return cap
    if best == 0:
        return 0  # the largest singular value is 0: every lag is zero
    for length in range(best + 1, n):
        if best >= min(length, p * d):
            continue
        best = max(best, _prefix_count(G, length, p, d, rtol))
        if best >= cap:
            return cap
    return best


def lag_span_profile(A, B, C, n: int, rtol: float | None = None) -> np.ndarray:
    """``k(1), ..., k(n)``: the lag-span dimension for every length up to ``n``.

    Each prefix ``K_0, ..., K_{l-1}`` is counted by the module's rule; ``k(l)`` is
    the running maximum of these counts, capped at ``m`` (module docstring), so
    the profile is nondecreasing and never exceeds ``m``. The lag operators are
    formed once and each prefix has its own SVD: meant for ``n`` up to a few
    hundred. For a single length use :func:`lag_span_dimension`.

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
    G = _vec(_finite_lags(A, B, C, n))
    p, d = C.shape[0], B.shape[1]
    counts = np.array([_prefix_count(G, length, p, d, rtol) for length in range(1, n + 1)], dtype=int)
    return np.minimum(np.maximum.accumulate(counts), minimal_polynomial_degree(A, rtol))


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
    G = _vec(_finite_lags(A, B, C, n))
    return _running_count(G, C.shape[0], B.shape[1], rtol, minimal_polynomial_degree(A, rtol))


def _powers(A: np.ndarray) -> np.ndarray:
    """``I, A, ..., A^(N-1)`` by repeated multiplication, shape (N, N, N)."""
    N = A.shape[0]
    P = np.empty((N, N, N))
    P[0] = np.eye(N)
    for l in range(1, N):
        P[l] = A @ P[l - 1]
    return P


def minimal_polynomial_degree(A, rtol: float | None = None) -> int:
    """Degree ``m`` of the minimal polynomial of ``A``: ``dim span{I, A, A^2, ...}``.

    ``A`` is first scaled to unit spectral norm (``m(cA) = m(A)`` for ``c != 0``,
    and the powers neither overflow nor underflow). Then ``m`` is counted by the
    module's rule exactly as ``k(N)`` is for the system ``(A / ||A||, I, I)``:
    the largest count, over ``l <= N``, of the singular values of
    ``[vec I, vec A, ..., vec A^(l-1)]`` above ``rtol`` times the largest one,
    default ``rtol = N^2 eps`` (``default_rtol(l, N, N)`` for every ``l <= N``).
    Higher powers are not needed: by Cayley-Hamilton they lie in this span. No
    characteristic polynomial is formed and no eigenvalues are computed.

    Like any numerical rank, ``m`` is well defined only when the answer is
    clear-cut: two eigenvalues that differ by less than about ``rtol``
    (relative) count as one, and a cluster of ``c`` eigenvalues is resolved only
    when its relative spread exceeds about ``rtol^(1/(c-1))``. For a strongly
    non-normal ``A`` the computed powers carry rounding errors above the default;
    pass a larger ``rtol`` there, and the same one to :func:`lag_span_dimension`
    (it passes its own ``rtol`` on, since it caps ``k`` at ``m``).

    Memory is ``N^3`` floats and time ``O(N^4)`` (more when prefixes must be
    visited): meant for state sizes up to a few dozen.

    Parameters
    ----------
    A : array, shape (N, N)
    rtol : float, optional
        Relative tolerance; default :func:`default_rtol` ``(N, N, N) = N^2 eps``.

    Returns
    -------
    int
        ``1 <= m <= N`` (``m = 1`` when ``A`` is a multiple of ``I``, including ``A = 0``).
    """
    A = as_array("A", A, 2, "(N, N)")
    if A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"A must be square with N >= 1, shape (N, N); got shape {A.shape}")
    N = A.shape[0]
    rtol = _check_rtol(rtol, default_rtol(N, N, N))
    top = float(np.max(np.abs(A)))
    if top == 0.0:
        return 1  # A = 0: the minimal polynomial is x
    A = A / top  # first to order one, so that the spectral norm cannot overflow
    A = A / np.linalg.norm(A, 2)
    return max(1, _running_count(_vec(_powers(A)), N, N, rtol, N))


def lag_span_bound(A, B, C, n: int, rtol: float | None = None) -> int:
    """The upper bound ``min(n, rank B * rank C, m)`` on ``k(n)`` (Proposition 2).

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
    rank_b = int(np.linalg.matrix_rank(B))
    rank_c = int(np.linalg.matrix_rank(C))
    return min(n, rank_b * rank_c, minimal_polynomial_degree(A, rtol))
