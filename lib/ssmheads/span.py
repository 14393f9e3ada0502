"""Operator span, interaction rank and the lag-span dimension k(n) (Chapter 2).

The span of a set of ``p x d`` matrices is computed from the singular values
of the matrix whose columns are their column-major vectorisations ``vec M``.
A singular value counts when it exceeds ``rtol`` times the largest one.

Default tolerance: ``rtol = max(m, p*d) * eps`` for ``m`` matrices, with ``eps``
the double-precision machine epsilon. This is the usual numerical-rank rule
(the one ``numpy.linalg.matrix_rank`` uses): rounding errors in computing an
``m x pd`` matrix and its SVD are of order ``max(m, pd) * eps`` relative to its
largest singular value, so anything smaller is indistinguishable from zero.
Chapter 2 shows what changes when the tolerance is chosen differently.
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


def lag_span_profile(A, B, C, n: int, rtol: float | None = None) -> np.ndarray:
    """``k(1), ..., k(n)``: the lag-span dimension for every length up to ``n``.

    The lag operators are formed once; each prefix ``K_0, ..., K_{l-1}`` is then
    ranked by its own SVD, so this is meant for profiles of moderate length
    (``n`` up to a few hundred). For a single length use :func:`lag_span_dimension`.

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
    rtol : float, optional
        As in :func:`interaction_rank`, with ``m`` the prefix length.

    Returns
    -------
    ndarray of int, shape (n,)
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    G = _vec(_finite_lags(A, B, C, n))
    p, d = C.shape[0], B.shape[1]
    out = np.empty(n, dtype=int)
    for length in range(1, n + 1):
        tol = _check_rtol(rtol, default_rtol(length, p, d))
        out[length - 1] = _rank_from(np.linalg.svd(G[:, :length], compute_uv=False), tol)
    return out


def lag_span_dimension(A, B, C, n: int, rtol: float | None = None) -> int:
    """The lag-span dimension ``k(n) = dim span{C A^l B : 0 <= l < n}``.

    One SVD of the ``pd x n`` matrix of vectorised lag operators. The default
    tolerance assumes the lags are computed to about machine precision, which
    holds for normal ``A`` and mildly non-normal ones; for a strongly non-normal
    ``A`` (``||A^l||`` far above ``rho(A)^l``) rounding in the computed lags can
    exceed it and be counted, so pass a larger ``rtol`` there.

    Parameters
    ----------
    A : array, shape (N, N)
    B : array, shape (N, d)
    C : array, shape (p, N)
    n : int
        Sequence length, ``n >= 1``.
    rtol : float, optional
        As in :func:`interaction_rank`.

    Returns
    -------
    int
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    return interaction_rank(_finite_lags(A, B, C, n), rtol)


def minimal_polynomial_degree(A, rtol: float | None = None) -> int:
    """Degree ``m`` of the minimal polynomial of ``A``: ``dim span{I, A, A^2, ...}``.

    The Krylov space of the powers is built one power at a time. Each power is
    scaled to unit Frobenius norm and orthogonalised (twice, for stability)
    against the orthonormal basis of the lower powers; ``m`` is the first ``l``
    for which the remainder of ``A^l`` is at most ``rtol``, i.e. ``A^l`` lies in
    ``span{I, ..., A^(l-1)}`` to relative accuracy ``rtol``. Scaling each power
    makes the answer independent of the size of ``A`` (``m(cA) = m(A)``), and by
    Cayley-Hamilton the search stops at ``N``. No characteristic polynomial is
    formed and no eigenvalues are computed.

    Like any numerical rank, ``m`` is well defined only when the answer is
    clear-cut: eigenvalues closer than about ``rtol`` count as equal, and the
    powers of a large random matrix are numerically dependent before ``N``.

    Parameters
    ----------
    A : array, shape (N, N)
    rtol : float, optional
        Relative tolerance on the remainder; default ``max(1e-12, N^2 eps)``.
        It is looser than the rank tolerance of :func:`interaction_rank` because
        the powers of a non-normal matrix carry more rounding error: for Jordan
        blocks behind a random similarity the remainder of an exact dependency
        was measured up to ``7e-14``. Consequently, for eigenvalues that differ
        by less than about ``1e-12`` relative, the computed ``m`` can be smaller
        than a computed ``k(n)``: a numerically ill-posed case (Chapter 2).

    Returns
    -------
    int
        ``1 <= m <= N`` (``m = 1`` exactly when ``A`` is a multiple of ``I``).
    """
    A = as_array("A", A, 2, "(N, N)")
    if A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"A must be square with N >= 1, shape (N, N); got shape {A.shape}")
    N = A.shape[0]
    rtol = _check_rtol(rtol, max(1e-12, N * N * EPS))
    top = float(np.max(np.abs(A)))
    if top > 0.0:
        A = A / top  # m(cA) = m(A); avoids overflow and underflow of the norms
    power = np.eye(N).ravel() / np.sqrt(N)
    basis = [power]
    for _ in range(N - 1):  # Cayley-Hamilton: m <= N
        power = (A @ power.reshape(N, N)).ravel()
        size = float(np.linalg.norm(power))
        if size == 0.0:  # A^l = 0: nilpotent, the minimal polynomial is x^l
            break
        remainder = power / size
        Q = np.array(basis)
        for _ in range(2):
            remainder = remainder - Q.T @ (Q @ remainder)
        norm = float(np.linalg.norm(remainder))
        if norm <= rtol:
            break
        power = power / size
        basis.append(remainder / norm)
    return len(basis)


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
        use ``numpy.linalg.matrix_rank``'s default tolerance. For exact data the
        bound always holds; for computed values it can fail when ``A`` has
        eigenvalues closer than about ``1e-12`` (see :func:`minimal_polynomial_degree`).

    Returns
    -------
    int
    """
    A, B, C, _ = _check_system(A, B, C)
    n = check_positive_int("n", n)
    rank_b = int(np.linalg.matrix_rank(B))
    rank_c = int(np.linalg.matrix_rank(C))
    return min(n, rank_b * rank_c, minimal_polynomial_degree(A, rtol))
