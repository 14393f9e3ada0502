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
set of lags that is numerically independent stays so, only the yardstick grew.

Computed lags also need a floor under the relative rule. The rounding error of
forming ``K_l = C A^l B`` is of order ``eps ||C|| ||A^l|| ||B||``, not
``eps ||K_l||``, and the two differ when the modes cancel: for
``A = diag(0.5, 0.6, 0.7)``, three equal rows of ``B`` and columns ``u, -2u, u``
of ``C``, ``K_0 = K_1 = 0`` exactly, the computed ones are rounding of size
``1e-16``, and a prefix made of them is counted by the relative rule whatever
``rtol < 1`` is (``K_0`` alone counts 1: it is its own largest singular value;
the relative rule alone can give ``k(64) = 2``, depending on the
machine's rounding; the exact value is 1).
A strongly non-normal ``A`` (``||A^l||`` far above ``rho(A)^l``) can do the same.
So each prefix ``G_l`` of computed lags is counted against
``rtol sigma_1(G_l) + tau_l``, where ``tau_l`` (``_lag_floors``) is a bound,
proved to first order in ``eps`` in ``_lag_rounding_bounds``, on
``||fl(G_l) - G_l||_2``. By Weyl's
inequality a singular value above it belongs to the exact lags of the stored
``A``, ``B``, ``C`` (the relative part covers the SVD's own rounding), so no
prefix counts more than the exact rank of its lags, whatever ``A`` and ``rtol``.
So:

* ``k(n)`` is the largest count over the prefixes ``l <= n`` (nondecreasing in
  ``n`` by construction), and at most ``m``; up to the SVD's own rounding it
  never exceeds the exact ``k(n)`` of the stored system, and it falls short of
  it where a direction's singular value is below its threshold (the resolution
  limit, below);
* ``m`` (:func:`minimal_polynomial_degree`) is the same running count, with the
  relative rule alone, for the powers ``I, A, ..., A^(N-1)`` of ``A`` scaled to
  unit spectral norm (the lags of ``(A / ||A||, I, I)`` at ``n = N``), up to the
  shortcuts that save work there (its docstring, "How it is computed").

The cap ``k(n) <= m`` is a choice, and the module states it because it is not
automatic: ``k`` and ``m`` are counts on two different matrices. The count of
the lags never exceeds the exact ``k(n)``, which is at most the exact degree, so
the cap acts only when the count of ``m`` falls short of the exact degree by a
direction that the lags resolve: at the resolution limit (a singular value
within a small factor of its threshold; in a sweep of 200 triples
``diag(0.5, 0.5 + delta, 0.5 + 2 delta)`` with ``delta`` from ``1e-10`` to
``1e-5`` it acted once, at ``delta = 6.5e-8``, next to the triple's limit
``1e-7``; how often depends on the BLAS). There both answers are exact for
systems within rounding distance of the data, and the library reports the pair
that one system has: ``m`` and ``min(count, m)``.

A cluster of ``c`` eigenvalues of relative spread ``delta`` contributes a
singular value of order ``delta^(c-1)``, so it is resolved only when
``delta`` exceeds about ``rtol^(1/(c-1))``: about ``rtol`` for a pair, about
``sqrt(rtol)`` (``1e-7``) for three.

**How the counts are computed: shortcuts and guards.** (Chapter 2,
Section 2.7, states the rules above and why they are sound; here is how the
code applies them.)
The helpers of ``lag_span_dimension`` bound the rounding and save work; the
shortcuts give the same counts as the rules applied to every prefix, except
where a singular value sits within rounding of its threshold.

* *The floor* (``_lag_floors``). The lags are formed as ``W_0 = B``,
  ``W_l = fl(A W_(l-1))``, ``K_l = fl(C W_l)``, where ``fl(.)`` is the value
  computed in floating point. A product ``XY`` with inner dimension ``N`` is
  computed, in any order of summation, with an entrywise error at most
  ``gamma_N |X| |Y|`` (``|X|`` entrywise), ``gamma_N = N eps / (2 - N eps)``
  (Higham, *Accuracy and Stability of Numerical Algorithms*, 2nd ed.,
  Sec. 3.5). Carried through the recurrence, this bounds the Frobenius norm
  of the error of ``K_l`` by::

      xi_l = N eps ( || |A| ||_2 sum_(j=1..l) ||C A^(l-j)||_2 ||W_(j-1)||_F
                     + || |C| ||_2 ||W_l||_F ),

  with a factor ``2 - N eps`` (nearly 2) to spare for the rounding in the
  bound's own ingredients (norms of computed matrices); the sum is a
  convolution, evaluated by FFT (the code also uses upper bounds on
  ``|| |A| ||_2`` and ``|| |C| ||_2`` and adds a bound on the FFT's own
  rounding). Then ``tau_l = (sum_(j<l) xi_j^2)^(1/2)`` bounds
  ``||fl(G_l) - G_l||_2`` (it bounds the Frobenius norm of the error of
  the columns ``vec K_j``, ``j < l``, which is at least the spectral norm).
  The proof in brief: each step is
  ``W_l = A W_(l-1) + F_l`` with
  ``||F_l||_F <= gamma_N || |A| ||_2 ||W_(l-1)||_F``, so by induction
  ``W_l = A^l B + sum_(j=1..l) A^(l-j) F_j`` and
  ``fl(K_l) - K_l = sum_(j=1..l) (C A^(l-j)) F_j + H_l`` with
  ``||H_l||_F <= gamma_N || |C| ||_2 ||W_l||_F``, the rounding of the last
  product; take norms. The full proof is in the docstring of the private
  ``_lag_rounding_bounds``, which is not on the API page:
  ``help(ssmheads.span._lag_rounding_bounds)`` prints it. It is to first
  order in ``eps``: it uses the computed ``||fl(C A^i)||_F`` for the exact
  ``||C A^i||_2``, and the spare factor covers the difference when the
  rounding of ``fl(C A^i)`` is small next to ``C A^i`` itself, which a
  cancelling ``C A^i`` could violate.
* *Scale.* :func:`singular_values`, :func:`interaction_rank` and
  :func:`span_basis` divide ``G`` by a power of two, ``2^e``, so that its
  largest entry lies in ``[1/2, 1)``, before the SVD (``_scaled_columns``);
  the rounding bound divides ``B`` and ``C`` likewise. The division is exact
  in floating point (only an entry below ``2^-1021`` times the largest could
  lose bits to underflow, far below any threshold), changes no count, and
  keeps the SVD clear of overflow.
  Lags that overflow (a strongly unstable ``A``) are refused with a message
  that names ``A``'s spectral radius, and a stack of lags too large for
  memory is refused before it is formed.
* *The running count* (``_running_count``). It counts all of ``G_n`` first
  and stops there when that count reaches the cap ``m``, the common case.
  Otherwise it bisects over prefix lengths and skips an interval ``[a, b]``
  when interlacing shows that no prefix in it can beat the best count so far:
  for ``a <= l <= b``, ``sigma_r(G_l) <= sigma_r(G_b)``, while the threshold
  of ``G_l`` is at least that of ``G_a``. The answer is the exact maximum over
  all prefixes, usually after ``O(log n)`` SVDs.
* *The degree m* (``_minimal_polynomial_degree``). It forms the powers of
  ``A / ||A||`` one at a time and stops at an ``L`` where the powers left
  out cannot change a count. Since ``||A^l||_F <= ||A^L||_F`` for
  ``l >= L`` (``||A|| = 1``), the ``N - L`` columns not formed have
  Frobenius norm at most ``delta = sqrt(N - L) ||A^L||_F``. Appending them
  to ``G_L`` lowers no singular value (interlacing, as above) and raises
  each by at most ``delta`` (Weyl's inequality,
  ``sigma_r(X + E) <= sigma_r(X) + ||E||_2``, with ``X = [G_L, 0]`` and
  ``E`` the appended columns padded with zeros); the singular values it
  adds, beyond the ``L``-th, are at most ``delta``. So the threshold
  ``tau = rtol sigma_1(G_L)`` rises by at most ``rtol delta``, and a
  singular value ``s`` of ``G_L`` stays on its side of the threshold unless
  ``tau - delta < s <= tau + rtol delta``: a counted one can drop out only
  if it is at most ``rtol delta`` above ``tau``, an uncounted one can come
  in only if it is more than ``tau - delta``. The same holds for every
  prefix longer than ``L``. The powers stop at the first ``L`` with
  ``delta <= 1e-3 rtol sqrt(N)``, at most a thousandth of ``tau``, because
  ``sigma_1(G_L) >= ||vec I||_2 = sqrt(N)`` (the largest singular value
  is at least the norm of any column); so the added singular values, at
  most ``delta``, never count. If a singular value of ``G_L`` lies
  in that window ``(tau - delta, tau + rtol delta]``, they go on to the
  first ``L`` with a ``delta`` at most a thousandth of the last one, until
  none does (or all ``N`` are formed, ``delta = 0``). The prefixes are
  then counted from one QR factorisation ``Q R``
  of the powers formed: the first ``l`` columns have the singular values of
  the leading ``l x l`` block of ``R``. (:func:`minimal_polynomial_degree`,
  "How it is computed", gives the details.)
* *Powers that do not decay.* When the spectral radius of ``A`` is close to
  its norm, ``L`` would reach ``N``, a stack of ``N^3`` entries. When the
  stack would exceed a memory or work limit, a normal ``A`` is counted on
  the Vandermonde matrix ``[lambda_i^l]`` of its eigenvalues, which has the
  same singular values (the only place where eigenvalues are computed);
  otherwise a randomised block Krylov sequence may certify ``m = N``
  (``_krylov_certifies_full_degree``); failing both, a ``ValueError`` names
  the limit that was reached.
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


def _rank_from(s: np.ndarray, rtol: float, floor: float = 0.0) -> int:
    """The rule: count the singular values above rtol times the largest.

    ``s`` (r,) is sorted, largest first; ``rtol`` is a checked number
    in ``[0, 1)``. An empty or zero ``s`` counts 0 (all the matrices are
    zero, their span is ``{0}``). For computed lags, ``floor`` is a
    bound on the rounding error of forming them (``_lag_floors``),
    added to the threshold.
    """
    if s.size == 0 or s[0] == 0.0:
        return 0
    return int(np.count_nonzero(s > rtol * s[0] + floor))


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


def _abs_norm_bound(M: np.ndarray) -> float:
    """An upper bound on ``|| |M| ||_2``: ``min(||M||_F, sqrt(||M||_1 ||M||_inf))``.

    Both are bounds on the spectral norm of the entrywise absolute value
    ``|M|`` (the second is Hoelder's), and the second is exact for a
    diagonal ``M``.
    """
    a = np.abs(M)
    return float(min(np.sqrt(np.sum(a * a)), np.sqrt(a.sum(axis=0).max() * a.sum(axis=1).max())))


def _lag_rounding_bounds(A: np.ndarray, B: np.ndarray, C: np.ndarray, n: int) -> np.ndarray:
    """``xi_l >= ||fl(K_l) - K_l||_F`` for ``l < n``: the rounding error of the computed lags.

    ``fl(K_l)`` is the lag as the library forms it (``lag_operators``):
    ``W_0 = B``, ``W_l = fl(A W_(l-1))``, ``fl(K_l) = fl(C W_l)``; ``K_l = C A^l B``
    is the exact lag of the stored ``A``, ``B``, ``C``. Shape (n,).

    **Why this bounds the error.** A product of matrices with inner dimension
    ``N`` is computed, in any order of summation and with or without fused
    multiply-adds, with ``|fl(XY) - XY| <= gamma_N |X| |Y|`` entrywise, where
    ``gamma_N = N u / (1 - N u)`` and ``u = eps / 2`` (Higham, *Accuracy and
    Stability of Numerical Algorithms*, 2nd ed., Sec. 3.5; gradual underflow
    adds an absolute error of about ``N 2^-1074`` per entry, ignored here). So
    ``W_l = A W_(l-1) + F_l`` with ``||F_l||_F <= gamma_N || |A| ||_2 w_(l-1)``,
    where ``w_j = ||W_j||_F`` is the norm of the computed iterate. By
    induction ``W_l = A^l B + sum_(j=1..l) A^(l-j) F_j``, hence

        fl(K_l) - K_l = sum_(j=1..l) (C A^(l-j)) F_j + H_l,
        ||H_l||_F <= gamma_N || |C| ||_2 w_l,

    and with ``b_i >= ||C A^i||_2``

        ||fl(K_l) - K_l||_F <= gamma_N ( || |A| ||_2 sum_(j=1..l) b_(l-j) w_(j-1)
                                        + || |C| ||_2 w_l ).

    The function evaluates the right side with ``N eps`` in place of
    ``gamma_N`` (``N eps = (2 - N eps) gamma_N``): the factor ``2 - N eps``,
    nearly 2, to spare covers the terms of order ``eps^2`` that the bound's
    own ingredients carry (``w_j`` and ``b_i`` are norms of computed
    matrices, ``b_i = ||fl(C A^i)||_F``). So the bound is proved to first
    order in ``eps``: ``b_i`` stands for the exact ``||C A^i||_2``, and the
    spare factor covers the difference when the rounding of ``fl(C A^i)``
    is small next to ``C A^i`` itself, which a cancelling ``C A^i`` could
    violate (``b_i`` is not bounded by its own error bound here). Unlike a
    tolerance relative to ``||K_l||``, it does not shrink when the lags cancel: for
    ``A = diag(0.5, 0.6, 0.7)`` whose three modes' terms ``c_s b_s^T`` sum to
    zero, ``K_0 = K_1 = 0`` exactly, yet the computed ones are of size
    ``1e-16``, and the bound is of that order too. The sum over ``j`` is a
    convolution, evaluated by FFT in ``O(n log n)``; its own rounding error is
    at most a modest multiple of ``log2(L) eps ||b||_1 ||w||_1`` (Higham,
    Sec. 24.1; ``L`` the FFT length), so ``16 log2(L) eps ||b||_1 ||w||_1``
    is added, a change of order ``eps^2`` in ``xi_l``. ``B`` and ``C`` are
    first divided by powers of two (exact) and the bound scaled back, so their
    scale cannot overflow the computation. Time ``O(n N^2 (p + d))``, like
    the lags; memory ``O(n)``.
    """
    N = A.shape[0]
    # B and C to order one (exact): the bound is bilinear in them
    exp_b, exp_c = _exponent(B), _exponent(C)
    B, C = np.ldexp(B, -exp_b), np.ldexp(C, -exp_c)
    w = np.empty(n)      # ||W_j||_F, the computed A^j B
    b = np.empty(n)      # ||fl(C A^i)||_F >= ||C A^i||_2
    W, CA = B, C
    with np.errstate(over="ignore", invalid="ignore"):
        for l in range(n):
            w[l] = np.sqrt(np.vdot(W, W))
            b[l] = np.sqrt(np.vdot(CA, CA))
            if l + 1 < n:
                W = A @ W
                CA = CA @ A
        # conv[l] = sum_(i + j = l) b_i w_j, by FFT, made an upper bound
        L = 1 << int(2 * n - 1).bit_length()
        conv = np.fft.irfft(np.fft.rfft(b, L) * np.fft.rfft(w, L), L)[:n]
        conv = np.maximum(conv, 0.0) + 16 * np.log2(L) * EPS * b.sum() * w.sum()
        g = N * EPS
        e = g * _abs_norm_bound(C) * w
        e[1:] += g * _abs_norm_bound(A) * conv[:-1]
    if not np.all(np.isfinite(e)):
        raise ValueError(f"A's powers overflow in the rounding bound of the n = {n} lags (the norms of A^l B or "
                         "C A^l exceed the largest float); use fewer lags n or a stable A")
    return np.ldexp(e, exp_b + exp_c)


def _lag_floors(A: np.ndarray, B: np.ndarray, C: np.ndarray, n: int) -> np.ndarray:
    """``tau_l = (sum_(j<l) xi_j^2)^(1/2)`` for ``l = 1..n``: shape (n,), nondecreasing.

    With ``xi_j`` from ``_lag_rounding_bounds``, ``tau_l`` bounds (to
    first order in ``eps``) the Frobenius, hence the spectral, norm of
    ``fl(G_l) - G_l`` for the prefix
    ``G_l = [vec K_0, ..., vec K_(l-1)]``. By Weyl's inequality every singular
    value of the computed prefix is within ``tau_l`` of the exact one, so a
    singular value above ``tau_l`` (plus the SVD's own rounding, which the
    relative part of the threshold covers) belongs to a direction of the
    exact lags: counted against ``rtol sigma_1 + tau_l``, no prefix counts
    more than the exact rank of its lags.
    """
    e = _lag_rounding_bounds(A, B, C, n)
    top = float(e.max())
    if top == 0.0:
        return np.zeros(n)
    return top * np.sqrt(np.cumsum((e / top) ** 2))


def _tolerance(rtol, length: int, p: int, d: int) -> float:
    """The rule's relative tolerance for ``length`` matrices of size ``p x d``.

    ``rtol`` is a checked number, or ``None`` for the default ``max(length, p d) eps``.
    """
    return _default_rtol(length, p, d) if rtol is None else float(rtol)


def _prefix_count(G: np.ndarray, length: int, p: int, d: int, rtol, floors=None) -> int:
    """The rule's count for the first ``length`` columns of ``G``.

    ``floors`` (n,), optional: ``floors[length - 1]`` is added to the
    threshold (``_lag_floors``).
    """
    floor = 0.0 if floors is None else float(floors[length - 1])
    return _rank_from(np.linalg.svd(G[:, :length], compute_uv=False), _tolerance(rtol, length, p, d), floor)


def _interlacing_bound(s_b: np.ndarray, threshold_a: float) -> int:
    """An upper bound on the count of every prefix ``G_l`` with ``a <= l <= b``.

    ``s_b`` are the singular values of ``G_b`` and ``threshold_a`` is the threshold
    of ``G_a``, ``tol(a) s_1(G_a) + floor(a)``. Adding columns never lowers a
    singular value, so ``s_i(G_l) <= s_i(G_b)``, and the threshold of ``G_l`` is at
    least ``threshold_a`` (``tol``, ``s_1`` and the floor never decrease with ``l``):
    at most ``#{i : s_i(G_b) > threshold_a}`` singular values of ``G_l`` can count.
    """
    return int(np.count_nonzero(s_b > threshold_a))


def _running_count(G: np.ndarray, p: int, d: int, rtol,
                   cap: int, floors=None) -> int:
    """``min(cap, max over l <= n of the count of G[:, :l])``.

    ``G`` (p*d, n); ``rtol`` is a checked number, or ``None`` for the
    default tolerance of each prefix; ``floors`` (n,), optional, the
    rounding floors of computed lags (``_lag_floors``), added to
    each prefix's threshold. The full matrix is counted first: when it
    reaches ``cap``, no prefix is visited. Otherwise the prefixes are
    searched by bisection over intervals of lengths ``[a, b]``, skipping
    an interval when :func:`_interlacing_bound` shows that none of its
    prefixes can beat the best count so far. The answer is the exact
    maximum over all prefixes, usually after ``O(log n)`` SVDs.
    """
    # the singular values of the prefix G[:, :length], each SVD once
    @functools.cache
    def svals(length: int) -> np.ndarray:
        return np.linalg.svd(G[:, :length], compute_uv=False)

    n = G.shape[1]
    # the rule's relative tolerance for a prefix of a given length
    tol = functools.partial(_tolerance, rtol, p=p, d=d)

    # the rounding floor of a prefix (0 without floors)
    def floor(length: int) -> float:
        return 0.0 if floors is None else float(floors[length - 1])

    # a prefix's threshold: relative part plus rounding floor
    def threshold(length: int) -> float:
        return tol(length) * svals(length)[0] + floor(length)

    def count(length: int) -> int:
        return _rank_from(svals(length), tol(length), floor(length))

    best = count(n)
    # all n lags reach the cap
    if best >= cap:
        return cap
    intervals = [(1, n)]
    while intervals:
        a, b = intervals.pop()
        # a prefix of l columns counts at most min(l, p d)
        if min(b, p * d) <= best:
            continue
        # interlacing: no prefix of a length in [a, b] can count more
        if _interlacing_bound(svals(b), threshold(a)) <= best:
            continue
        best = max(best, count(a), count(b))
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

    Each prefix ``K_0, ..., K_{l-1}`` is counted by the module's rule, against
    ``rtol sigma_1`` plus the bound ``tau_l`` on the rounding of its lags (module
    docstring); ``k(l)`` is the running maximum of these counts, capped at ``m``, so
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
        value is passed to :func:`minimal_polynomial_degree`. It sets the
        relative part of each threshold; the rounding floor ``tau_l`` is
        added whatever ``rtol`` is.

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
    floors = _lag_floors(A, B, C, n)
    counts = np.array([_prefix_count(G, length, p, d, rtol, floors) for length in range(1, n + 1)], dtype=int)
    return np.minimum(np.maximum.accumulate(counts), _minimal_polynomial_degree(A, rtol))


def lag_span_dimension(A, B, C, n: int, rtol: float | None = None) -> int:
    """The lag-span dimension ``k(n) = dim span{C A^l B : 0 <= l < n}``.

    The ``pd x n`` matrix of vectorised lag operators is counted by the module's
    rule; ``k(n)`` is the largest count over its prefixes (first ``l <= n``
    columns), capped at ``m = minimal_polynomial_degree(A, rtol)``, so that
    ``k`` is nondecreasing in ``n`` and ``k(n) <= m`` (module docstring). Each
    prefix ``G_l`` is counted against ``rtol sigma_1(G_l) + tau_l``, where
    ``tau_l`` bounds (to first order in ``eps``) the rounding error of
    forming its lags
    (``_lag_floors``), so rounding in the computed lags is never counted,
    whatever ``A`` (normal or not) and ``rtol``: lags that cancel to zero
    (``A = diag(0.5, 0.6, 0.7)``, ``B`` with three equal rows, ``C`` with
    columns ``u, -2u, u``: ``K_0 = K_1 = 0``) count 0, and up to the SVD's own
    rounding ``k(n)`` is at most the exact value for the stored ``A``, ``B``,
    ``C``. In the common case one SVD decides: when the full matrix already
    counts ``m`` directions, no prefix is visited.

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
        :func:`minimal_polynomial_degree`. It sets the relative part of
        each threshold; the rounding floor ``tau_l`` is added whatever
        ``rtol`` is.

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
    # tau_l: a bound on the rounding error of the first l computed lags
    floors = _lag_floors(A, B, C, n)
    # the cap k(n) <= m of Prop. 2.1 (c); m is counted by a routine of
    # its own, whose docstring gives the shortcuts it takes
    m = _minimal_polynomial_degree(A, rtol)
    # the largest count over the prefixes G[:, :l], l <= n, each against
    # rtol sigma_1 + tau_l
    return _running_count(G, C.shape[0], B.shape[1], rtol, m, floors)


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
    non-normal ``A`` the computed powers can carry rounding errors above the
    default; pass a larger ``rtol`` there. (:func:`lag_span_dimension` does not
    need one on that account: its lags have a rounding floor of their own, and
    an ``m`` that counts rounding only loosens its cap ``k <= m``.)

    **How it is computed.** The powers are formed one at a time and stop at the
    first ``L`` where the remaining ones cannot matter: for ``l >= L``,
    ``||A^l||_F <= ||A^L||_F`` (``||A|| = 1``), so the unformed columns have
    Frobenius norm at most ``delta = sqrt(N - L) ||A^L||_F``. Appended to ``G_L``
    they lower no singular value (interlacing) and, by Weyl's inequality, raise
    each by at most ``delta`` (and add ones of at most ``delta``), so the
    threshold ``tau = rtol sigma_1(G_L)`` rises by at most ``rtol delta``. Once
    ``delta <= 1e-3 rtol sqrt(N)`` (at most ``1e-3 tau``, since
    ``sigma_1(G_L) >= ||vec I||_2 = sqrt(N)``) and no singular value of ``G_L``
    lies in ``(tau - delta, tau + rtol delta]`` (otherwise more powers are
    formed, to a ``delta`` a thousand times smaller), the counts of
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
