"""The rounding floor of ``lag_span_dimension``: lags that cancel to zero are not counted.

When the modes of a diagonal ``A`` cancel (``sum_s c_s b_s^T = 0``), lags that are
exactly zero come out as rounding of size 1e-16, and the relative rule alone counts
such a prefix as full rank for any ``rtol``. Each prefix is therefore counted against
``rtol sigma_1 + tau_l``, with ``tau_l`` a bound on the rounding error of its lags.

The expected values are exact: the rank of the lags of the stored floats in rational
arithmetic (``fractions.Fraction``), and their rounding errors against 60-digit
arithmetic (mpmath), never read back from the library.
"""

from fractions import Fraction

import mpmath as mp
import numpy as np
import pytest

from ssmheads import lag_operators, lag_span_dimension, lag_span_profile, minimal_polynomial_degree
from ssmheads.span import _lag_floors, _lag_rounding_bounds, _running_count, _vec
from ssmheads.systems import diagonal, random_stable, rotation


def _cancelling(eigenvalues):
    """``A = diag(eigenvalues)`` (3 of them), three equal rows ``b`` of ``B``, columns
    ``u, -2u, u`` of ``C``: the modes' terms ``c_s b_s^T`` sum to ``0 * u b^T``."""
    u, b = np.random.default_rng(1).standard_normal((2, 2))
    return np.diag(eigenvalues), np.array([b, b, b]), np.array([u, -2 * u, u]).T


def _two_pairs(delta):
    """``A = diag(0.5, 0.5 + delta, -0.3, -0.3 + delta)``, two pairs of modes that
    nearly cancel: ``K_l = (a^l - (a + delta)^l) u b^T + (...) c b'^T``, exact k = 2."""
    u, b, c, b2 = np.random.default_rng(0).standard_normal((4, 2))
    A = np.diag([0.5, 0.5 + delta, -0.3, -0.3 + delta])
    return A, np.array([b, b, b2, b2]), np.array([u, -u, c, -c]).T


CANCELLING = {
    "diag(0.5, 0.6, 0.7), three modes cancel": _cancelling([0.5, 0.6, 0.7]),
    "diag(0.5, 0.51, 0.52), three modes cancel": _cancelling([0.5, 0.51, 0.52]),
    "two pairs, delta = 1e-3": _two_pairs(1e-3),
    "two pairs, delta = 1e-1": _two_pairs(1e-1),
}


def _exact_lags(A, B, C, n):
    """The lags of the stored floats in rational arithmetic, each as a flat list."""
    def mat(X):
        return [[Fraction(float(x)) for x in row] for row in np.atleast_2d(X)]

    def mul(X, Y):
        return [[sum(X[i][t] * Y[t][j] for t in range(len(Y))) for j in range(len(Y[0]))] for i in range(len(X))]

    A_, C_, W = mat(A), mat(C), mat(B)
    lags = []
    for _ in range(n):
        K = mul(C_, W)
        lags.append([K[i][j] for j in range(len(K[0])) for i in range(len(K))])  # vec, column-major
        W = mul(A_, W)
    return lags


def _exact_rank(rows):
    """Rank of a list of rational vectors, by Gaussian elimination."""
    rows, rank = [list(r) for r in rows], 0
    for col in range(len(rows[0]) if rows else 0):
        pivot = next((i for i in range(rank, len(rows)) if rows[i][col] != 0), None)
        if pivot is None:
            continue
        rows[rank], rows[pivot] = rows[pivot], rows[rank]
        for i in range(len(rows)):
            if i != rank and rows[i][col] != 0:
                f = rows[i][col] / rows[rank][col]
                rows[i] = [x - f * y for x, y in zip(rows[i], rows[rank])]
        rank += 1
    return rank


def _exact_profile(A, B, C, n):
    """Exact ``k(1), ..., k(n)``: ranks of the rational prefixes (constant from n = N on)."""
    N = A.shape[0]
    lags = _exact_lags(A, B, C, min(n, N))
    profile = [_exact_rank(lags[:length]) for length in range(1, min(n, N) + 1)]
    return profile + [profile[-1]] * (n - len(profile))


@pytest.mark.parametrize("name", list(CANCELLING))
def test_lags_that_cancel_are_counted_exactly(name):
    A, B, C = CANCELLING[name]
    exact = _exact_profile(A, B, C, 64)
    assert lag_span_dimension(A, B, C, 64) == exact[-1]
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 64), exact)


def test_the_three_cancelling_modes_have_zero_first_lags_and_k_one():
    """K_0 = K_1 = 0 exactly (rational arithmetic), computed as rounding; k(1) = k(2) = 0, k = 1."""
    A, B, C = CANCELLING["diag(0.5, 0.6, 0.7), three modes cancel"]
    lags = _exact_lags(A, B, C, 3)
    assert all(x == 0 for x in lags[0] + lags[1]) and any(x != 0 for x in lags[2])
    assert np.abs(lag_operators(A, B, C, 2)).max() > 0  # the computed K_0, K_1 are rounding, not zero
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 6), [0, 0, 1, 1, 1, 1])
    # any rtol: the floor does not depend on it
    for rtol in (1e-12, 1e-10, 1e-6):
        assert lag_span_dimension(A, B, C, 64, rtol=rtol) == 1


@pytest.mark.parametrize("name", [name for name in CANCELLING if name != "two pairs, delta = 1e-1"])
def test_without_the_floor_rounding_is_counted(name):
    """The relative rule alone (floors off) counts more than the exact k: the floor is what fixes it.
    (At delta = 1e-1 the true directions are large enough that the relative rule alone is right.)"""
    A, B, C = CANCELLING[name]
    G = _vec(lag_operators(A, B, C, 64))
    alone = _running_count(G, C.shape[0], B.shape[1], None, cap=64)
    assert alone > _exact_profile(A, B, C, 64)[-1]


def _nonnormal(cond, seed):
    """``A = S diag(lambda) S^-1`` with ``|lambda| <= 0.9`` and ``cond(S)`` about ``cond``."""
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    V, _ = np.linalg.qr(rng.standard_normal((5, 5)))
    S = U @ np.diag(np.logspace(0, -np.log10(cond), 5)) @ V.T
    A = S @ np.diag(rng.uniform(-0.9, 0.9, 5)) @ np.linalg.inv(S)
    return A, rng.standard_normal((5, 2)), rng.standard_normal((3, 5))


BOUND_CASES = {
    **{name: system for name, system in CANCELLING.items()},
    "rotation": (rotation(1.0, rho=0.9).A, np.eye(2), np.eye(2)),
    "random stable": tuple(getattr(random_stable(6, 2, 3, seed=4), x) for x in "ABC"),
    "non-normal, cond(S) = 1e3": _nonnormal(1e3, 0),
    "non-normal, cond(S) = 1e6": _nonnormal(1e6, 1),
    "B and C of size 1e-200 and 1e150": (diagonal([0.9, 0.5]).A, 1e-200 * np.eye(2), 1e150 * np.ones((1, 2))),
}


@pytest.mark.parametrize("name", list(BOUND_CASES))
def test_the_rounding_bound_holds(name):
    """xi_l >= ||fl(K_l) - K_l||_F, with K_l from 60-digit arithmetic on the stored floats."""
    A, B, C = BOUND_CASES[name]
    n = 40
    K = lag_operators(A, B, C, n)
    e = _lag_rounding_bounds(A, B, C, n)
    mp.mp.dps = 60
    A_, C_, W = mp.matrix(A.tolist()), mp.matrix(C.tolist()), mp.matrix(B.tolist())
    for l in range(n):
        exact = C_ * W
        err = mp.sqrt(sum((mp.mpf(float(K[l, i, j])) - exact[i, j]) ** 2
                          for i in range(K.shape[1]) for j in range(K.shape[2])))
        assert float(err) <= e[l], (l, float(err), e[l])
        W = A_ * W
    floors = _lag_floors(A, B, C, n)
    assert np.all(np.diff(floors) >= 0) and np.isclose(floors[-1], np.linalg.norm(e))


def test_the_floor_changes_nothing_on_the_books_clear_cases():
    """Systems whose directions stand far above rounding keep their k (min(n, pd, N) or the plateau)."""
    pair = diagonal([0.5, 0.5 + 1e-12])
    assert [lag_span_dimension(pair.A, pair.B, pair.C, n) for n in (64, 1024, 8192)] == [2, 2, 2]
    s = random_stable(16, 8, 8, rho=0.9, seed=9)
    assert lag_span_dimension(s.A, s.B, s.C, 64) == 16
    assert minimal_polynomial_degree(s.A) == 16
