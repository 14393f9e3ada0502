"""Tests of ``ssmheads.span``: operator span, interaction rank and the lag-span dimension k(n).

Known answers come from math.md Propositions 2 and 3 (checks B2-B6, B11); the
property tests draw random systems from fixed seeds. Every expected value is
computed here independently of the library (closed forms, ``order='F'``
vectorisation, numpy's SVD), never read back from the function under test.
"""

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from helpers import rng

from ssmheads import (
    interaction_rank,
    lag_operators,
    lag_span_bound,
    lag_span_dimension,
    lag_span_profile,
    minimal_polynomial_degree,
    singular_values,
    span_basis,
)
from ssmheads.span import default_rtol
from ssmheads.systems import diagonal, jordan, plateau, random_stable, random_with_lag_rank, rotation

EPS = np.finfo(float).eps


def _system(ssm):
    return ssm.A, ssm.B, ssm.C


def _min_n(n_max, cap):
    """The profile ``min(n, cap)`` for ``n = 1..n_max``."""
    return np.minimum(np.arange(1, n_max + 1), cap)


def _vec_f(mats):
    """Independent column-major vectorisation: columns ``M.reshape(-1, order='F')``, shape (p*d, m)."""
    return np.stack([M.reshape(-1, order="F") for M in mats], axis=1)


def _random_stable_A(g, N, rho=0.9):
    G = g.standard_normal((N, N))
    return G * (rho / np.max(np.abs(np.linalg.eigvals(G))))


def _well_conditioned(N, seed):
    """A similarity with condition number 3 (so the Jordan structure stays numerically clear-cut)."""
    g = rng(seed)
    Q1, _ = np.linalg.qr(g.standard_normal((N, N)))
    Q2, _ = np.linalg.qr(g.standard_normal((N, N)))
    return Q1 @ np.diag(np.linspace(1.0, 3.0, N)) @ Q2


# ------------------------------------------------------------ known answers (Proposition 3, checks B2-B6)


@pytest.mark.parametrize("theta", [0.3, 1.0, np.pi / 2, 2.0, 3.0, -1.1])
@pytest.mark.parametrize("rho", [0.9, 1.0])
def test_rotation_has_two_dimensional_lag_span(theta, rho):
    """``rho R(theta)`` with theta not a multiple of pi: k(n) = min(n, 2) (check B3)."""
    A, B, C = _system(rotation(theta, rho))
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 10), _min_n(10, 2))
    assert lag_span_dimension(A, B, C, 1) == 1
    assert lag_span_dimension(A, B, C, 10) == 2
    assert minimal_polynomial_degree(A) == 2
    assert lag_span_bound(A, B, C, 10) == 2


@pytest.mark.parametrize("theta", [0.0, np.pi, -np.pi, 2 * np.pi])
def test_rotation_by_a_multiple_of_pi_has_one_dimensional_lag_span(theta):
    """``R(k pi) = +-I``: every lag is a multiple of I, so k(n) = 1 (check B3)."""
    A, B, C = _system(rotation(theta, 0.9))
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 8), np.ones(8, dtype=int))
    assert lag_span_dimension(A, B, C, 8) == 1
    assert minimal_polynomial_degree(A) == 1
    assert lag_span_bound(A, B, C, 8) == 1


@pytest.mark.parametrize("eigenvalues, r", [
    ([0.9, 0.5, -0.3], 3),
    ([0.9, 0.5, 0.5, -0.3], 3),
    ([0.7, 0.7, 0.7, 0.7], 1),
    ([0.9, -0.9, 0.5, -0.5, 0.1, 0.0], 6),
    ([0.2, 0.8, 0.2, 0.8, -0.4], 3),
])
def test_diagonal_lag_span_counts_distinct_eigenvalues(eigenvalues, r):
    """``A = diag(lambda)``, ``B = C = I``: k(n) = min(n, r) with r distinct eigenvalues (check B2)."""
    A, B, C = _system(diagonal(eigenvalues))
    n = len(eigenvalues) + 3
    np.testing.assert_array_equal(lag_span_profile(A, B, C, n), _min_n(n, r))
    assert lag_span_dimension(A, B, C, n) == r
    assert minimal_polynomial_degree(A) == r
    assert lag_span_bound(A, B, C, n) == r


def test_jordan_example_has_three_dimensional_lag_span():
    """``J_2(0.5) + [0.5] + [-0.2]``: N = 4, m = 3 and k(n) = min(n, 3) (check B5)."""
    s = jordan([(0.5, 2), (0.5, 1), (-0.2, 1)])
    A, B, C = _system(s)
    assert A.shape == (4, 4)
    assert minimal_polynomial_degree(A) == 3
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 7), _min_n(7, 3))
    assert [lag_span_bound(A, B, C, n) for n in (1, 2, 3, 7)] == [1, 2, 3, 3]


def test_plateau_stalls_then_grows():
    """Proposition 2(e): k = 1, 1, 2, 2, 2; the bound at n = 5 is 2 and m = 3 (check B6)."""
    A, B, C = _system(plateau())
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 5), [1, 1, 2, 2, 2])
    assert [lag_span_dimension(A, B, C, n) for n in range(1, 6)] == [1, 1, 2, 2, 2]
    assert lag_span_bound(A, B, C, 5) == 2
    assert lag_span_bound(A, B, C, 1) == 1
    assert minimal_polynomial_degree(A) == 3


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("N", [1, 3, 6])
def test_siso_systems_have_one_dimensional_lag_span(N, seed):
    """p = d = 1: every lag is a 1 x 1 matrix, so k(n) = 1 (check M2)."""
    A, B, C = _system(random_stable(N, 1, 1, seed=seed))
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 12), np.ones(12, dtype=int))
    assert lag_span_dimension(A, B, C, 40) == 1
    assert lag_span_bound(A, B, C, 40) == 1


@pytest.mark.parametrize("zero", ["B", "C", "both"])
def test_zero_input_or_output_map_gives_zero(zero):
    A = _random_stable_A(rng(3), 4)
    B = np.zeros((4, 2)) if zero in ("B", "both") else rng(4).standard_normal((4, 2))
    C = np.zeros((3, 4)) if zero in ("C", "both") else rng(5).standard_normal((3, 4))
    assert lag_span_dimension(A, B, C, 6) == 0
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 6), np.zeros(6, dtype=int))
    assert lag_span_bound(A, B, C, 6) == 0
    assert interaction_rank(lag_operators(A, B, C, 6)) == 0
    assert span_basis(lag_operators(A, B, C, 6)).shape == (0, 3, 2)


@pytest.mark.parametrize("k, d, p", [(1, 1, 1), (2, 1, 2), (3, 2, 2), (4, 2, 2), (4, 4, 1), (6, 2, 3), (9, 3, 3)])
def test_random_with_lag_rank_has_the_requested_lag_rank(k, d, p):
    A, B, C = _system(random_with_lag_rank(k, d, p))
    n = k + 4
    np.testing.assert_array_equal(lag_span_profile(A, B, C, n), _min_n(n, k))
    assert lag_span_dimension(A, B, C, 3 * k + 5) == k
    assert minimal_polynomial_degree(A) == k


def test_profile_agrees_with_dimension_at_every_length():
    A, B, C = _system(random_stable(5, 2, 2, seed=7))
    profile = lag_span_profile(A, B, C, 9)
    assert profile.shape == (9,) and np.issubdtype(profile.dtype, np.integer)
    assert list(profile) == [lag_span_dimension(A, B, C, n) for n in range(1, 10)]
    assert list(profile) == [1, 2, 3, 4, 4, 4, 4, 4, 4]  # min(n, pd = 4, N = 5)


@pytest.mark.parametrize("fn", [lag_span_dimension, lag_span_bound, minimal_polynomial_degree, interaction_rank])
def test_integer_results_are_python_ints(fn):
    A, B, C = _system(plateau())
    args = {lag_span_dimension: (A, B, C, 4), lag_span_bound: (A, B, C, 4),
            minimal_polynomial_degree: (A,), interaction_rank: (lag_operators(A, B, C, 4),)}[fn]
    assert type(fn(*args)) is int


# ------------------------------------------------------------ factorized heads (Lemma 1, check B1)


@pytest.mark.parametrize("p, d", [(2, 2), (2, 3), (3, 3), (1, 4)])
def test_factorized_heads_have_rank_equal_to_head_count(p, d):
    n = 5
    for H in range(1, p * d + 1):
        g = rng(100 * H + 10 * p + d)
        V = g.standard_normal((H, p, d))
        alpha = g.standard_normal((H, n, n))
        W = np.einsum("hij,hpd->ijpd", alpha, V)
        blocks = W.reshape(-1, p, d)
        assert interaction_rank(blocks) == H, (H, p, d)
        basis = span_basis(blocks)
        assert basis.shape == (H, p, d)
        # every value map V_h lies in the span found from the blocks
        coeffs = np.einsum("apd,hpd->ha", basis, V)
        residual = V - np.einsum("ha,apd->hpd", coeffs, basis)
        assert np.linalg.norm(residual) <= 1e-10 * np.linalg.norm(V)


@pytest.mark.parametrize("p, d, H", [(2, 2, 5), (2, 2, 9), (1, 3, 4), (2, 3, 12)])
def test_more_heads_than_pd_saturate_at_pd(p, d, H):
    g = rng(H)
    V = g.standard_normal((H, p, d))
    alpha = g.standard_normal((H, 6, 6))
    W = np.einsum("hij,hpd->ijpd", alpha, V)
    assert interaction_rank(W.reshape(-1, p, d)) == p * d
    assert singular_values(W.reshape(-1, p, d)).shape == (p * d,)


# ------------------------------------------------------------ property tests (Propositions 2 and 3(b), checks B4, B11)


def _draws(seed, count):
    g = rng(seed)
    for _ in range(count):
        N, p, d, n = (int(g.integers(1, 7)), int(g.integers(1, 4)), int(g.integers(1, 4)), int(g.integers(1, 11)))
        yield N, p, d, n, _random_stable_A(g, N), g.standard_normal((N, d)), g.standard_normal((p, N))


def test_random_systems_respect_the_bound_and_are_generic():
    """400 random (A, B, C, n): k(n) <= min(n, rank B rank C, m) always and = min(n, pd, N) (check B4)."""
    seen = set()
    for N, p, d, n, A, B, C in _draws(2024, 400):
        k = lag_span_dimension(A, B, C, n)
        bound = lag_span_bound(A, B, C, n)
        assert k <= bound, (N, p, d, n, k, bound)
        assert k == min(n, p * d, N), (N, p, d, n, k)
        assert bound == min(n, p * d, N)  # generic B, C have full rank and generic A has m = N
        seen.add(k)
    assert seen == set(range(1, 7))  # the draws exercise every possible answer 1..6 (N <= 6)


def test_random_profiles_are_nondecreasing_and_reach_k():
    """Proposition 2(d) on random systems: the profile never decreases and ends at k(n)."""
    for N, p, d, n, A, B, C in _draws(7, 120):
        profile = lag_span_profile(A, B, C, n)
        assert np.all(np.diff(profile) >= 0), profile
        assert profile[-1] == lag_span_dimension(A, B, C, n)
        np.testing.assert_array_equal(profile, _min_n(n, min(p * d, N)))


def test_low_rank_input_and_output_maps_bound_k():
    """``B = B1 B2`` and ``C = C1 C2`` of low rank: k(n) <= rank B * rank C (Prop. 2(b), check B11)."""
    g = rng(11)
    hit_product_bound = 0
    for _ in range(200):
        N, p, d, n = int(g.integers(2, 7)), int(g.integers(1, 4)), int(g.integers(1, 4)), int(g.integers(1, 11))
        rb, rc = int(g.integers(1, min(N, d) + 1)), int(g.integers(1, min(N, p) + 1))
        A = _random_stable_A(g, N)
        B = g.standard_normal((N, rb)) @ g.standard_normal((rb, d))
        C = g.standard_normal((p, rc)) @ g.standard_normal((rc, N))
        k = lag_span_dimension(A, B, C, n)
        assert k <= rb * rc, (N, p, d, n, rb, rc, k)
        assert k <= lag_span_bound(A, B, C, n)
        assert lag_span_bound(A, B, C, n) == min(n, rb * rc, N)
        assert k == min(n, rb * rc, N)  # generic within the low-rank family
        hit_product_bound += k == rb * rc < min(n, p * d, N)
    assert hit_product_bound > 10  # the rank product, not n, pd or N, is the binding constraint in many draws


def test_rank_one_maps_give_one_dimensional_span():
    """``B = b e^T``, ``C = f c^T``: every lag is a multiple of ``f e^T`` whatever A is."""
    g = rng(12)
    A = _random_stable_A(g, 5)
    B = np.outer(g.standard_normal(5), g.standard_normal(3))
    C = np.outer(g.standard_normal(4), g.standard_normal(5))
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 8), np.ones(8, dtype=int))
    assert lag_span_bound(A, B, C, 8) == 1


# ------------------------------------------------------------ span_basis and singular_values


def _low_rank_mats(seed, m, p, d, r):
    """m random p x d matrices spanning exactly r dimensions."""
    g = rng(seed)
    generators = g.standard_normal((r, p, d))
    return np.einsum("mr,rpd->mpd", g.standard_normal((m, r)), generators)


CASES = [(0, 7, 2, 3, 3), (1, 4, 3, 3, 4), (2, 12, 2, 2, 4), (3, 5, 4, 1, 2), (4, 3, 2, 5, 3), (5, 9, 3, 2, 1)]


@pytest.mark.parametrize("seed, m, p, d, r", CASES)
def test_span_basis_is_an_orthonormal_basis_of_the_span(seed, m, p, d, r):
    mats = _low_rank_mats(seed, m, p, d, r)
    basis = span_basis(mats)
    assert basis.shape == (r, p, d)
    assert interaction_rank(mats) == r
    gram = np.einsum("apd,bpd->ab", basis, basis)
    np.testing.assert_allclose(gram, np.eye(r), atol=1e-12)
    coeffs = np.einsum("apd,mpd->ma", basis, mats)
    residual = mats - np.einsum("ma,apd->mpd", coeffs, basis)
    assert np.linalg.norm(residual) <= 1e-10 * np.linalg.norm(mats)


@pytest.mark.parametrize("seed, m, p, d, r", CASES)
def test_singular_values_match_column_major_svd(seed, m, p, d, r):
    mats = _low_rank_mats(seed, m, p, d, r)
    s = singular_values(mats)
    assert s.shape == (min(m, p * d),)
    assert np.all(np.diff(s) <= 0), "not sorted descending"
    expected = np.linalg.svd(_vec_f(mats), compute_uv=False)
    np.testing.assert_allclose(s, expected, rtol=1e-12, atol=1e-12 * expected[0])
    assert np.all(s[r:] <= 1e-12 * s[0]) and s[r - 1] > 1e-3 * s[0]


@pytest.mark.parametrize("seed, m, p, d", [(20, 4, 2, 3), (21, 6, 3, 2), (22, 3, 4, 4)])
def test_span_basis_is_the_left_singular_vectors_of_the_column_major_stack(seed, m, p, d):
    """Basis matrix ``a`` is +-``u_a`` of ``[vec M_1, ...]`` (order='F'), ordered by singular value."""
    mats = rng(seed).standard_normal((m, p, d))
    U, s, _ = np.linalg.svd(_vec_f(mats), full_matrices=False)
    basis = span_basis(mats)
    r = min(m, p * d)
    assert basis.shape == (r, p, d)
    for a in range(r):
        expected = U[:, a].reshape(p, d, order="F")
        sign = np.sign(np.sum(basis[a] * expected))
        np.testing.assert_allclose(sign * basis[a], expected, atol=1e-12)
        # each basis matrix carries energy s_a^2 in the input
        assert np.sum(np.einsum("pd,mpd->m", basis[a], mats) ** 2) == pytest.approx(s[a] ** 2, rel=1e-10)


def test_basis_of_one_non_square_matrix_is_that_matrix_normalised():
    """vec and its inverse must use the same order: a 2 x 3 matrix comes back as itself, not transposed or permuted."""
    mats = np.zeros((1, 2, 3))
    mats[0] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
    (b,) = span_basis(mats)
    np.testing.assert_allclose(b, mats[0] / np.linalg.norm(mats[0]) * np.sign(b[0, 0]), atol=1e-15)


def test_empty_set_of_matrices():
    empty = np.zeros((0, 2, 3))
    assert interaction_rank(empty) == 0
    assert singular_values(empty).shape == (0,)
    assert span_basis(empty).shape == (0, 2, 3)


def test_span_of_the_lag_operators_is_spanned_by_its_basis():
    A, B, C = _system(random_with_lag_rank(4, 3, 2, seed=1))
    K = lag_operators(A, B, C, 30)
    basis = span_basis(K)
    assert basis.shape == (4, 2, 3)
    residual = K - np.einsum("la,apd->lpd", np.einsum("apd,lpd->la", basis, K), basis)
    assert np.linalg.norm(residual) <= 1e-10 * np.linalg.norm(K)


# ------------------------------------------------------------ minimal_polynomial_degree


@pytest.mark.parametrize("N", [1, 2, 5, 9])
def test_minimal_polynomial_of_zero_and_multiples_of_identity(N):
    assert minimal_polynomial_degree(np.zeros((N, N))) == 1
    for c in (1.0, -0.3, 7.5e3):
        assert minimal_polynomial_degree(c * np.eye(N)) == 1


@pytest.mark.parametrize("N", [1, 2, 3, 6, 10, 16])
def test_minimal_polynomial_of_nilpotent_shift_is_N(N):
    assert minimal_polynomial_degree(np.eye(N, k=-1)) == N
    assert minimal_polynomial_degree(np.eye(N, k=1)) == N


@pytest.mark.parametrize("eigenvalues", [[0.5, 0.5, 0.2], [1.0, 2.0, 2.0, 3.0, 3.0, 3.0], [-1.0, 1.0, -1.0, 1.0],
                                          [0.0, 0.0, 4.0], [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8]])
def test_minimal_polynomial_of_diagonal_counts_distinct_eigenvalues(eigenvalues):
    assert minimal_polynomial_degree(np.diag(eigenvalues)) == len(set(eigenvalues))


JORDAN_CASES = [
    ([(0.5, 2), (0.5, 1), (-0.2, 1)], 3),
    ([(0.5, 3), (0.5, 1), (-0.2, 2)], 5),
    ([(0.9, 2), (0.1, 2), (-0.5, 1)], 5),
    ([(0.0, 3), (0.7, 1)], 4),
    ([(0.3, 1), (0.3, 1), (0.3, 1)], 1),
    ([(0.5, 4)], 4),
    ([(0.5, 1), (0.5, 2), (0.5, 2)], 2),
    ([(-0.4, 2), (0.8, 3), (0.1, 1), (-0.4, 1)], 6),
]


@pytest.mark.parametrize("blocks, m", JORDAN_CASES, ids=[str(b) for b, _ in JORDAN_CASES])
def test_minimal_polynomial_of_jordan_forms_under_similarity(blocks, m):
    """m = sum over distinct eigenvalues of the largest block size, unchanged by a similarity."""
    largest = {}
    for lam, size in blocks:
        largest[lam] = max(largest.get(lam, 0), size)
    assert sum(largest.values()) == m  # the table above is right
    J = jordan(blocks).A
    assert minimal_polynomial_degree(J) == m
    for seed in range(5):
        S = _well_conditioned(J.shape[0], seed)
        assert minimal_polynomial_degree(S @ J @ np.linalg.inv(S)) == m, seed


@pytest.mark.parametrize("c", [1e-8, 1e8, -1.0, 1e-3, 1e3])
def test_minimal_polynomial_is_scale_invariant(c):
    g = rng(30)
    for A in (g.standard_normal((5, 5)), np.diag([1.0, 1.0, 2.0, 3.0, 3.0]), jordan([(0.5, 2), (0.5, 1), (-0.2, 1)]).A,
              np.eye(6, k=-1)):
        assert minimal_polynomial_degree(c * A) == minimal_polynomial_degree(A)


@pytest.mark.parametrize("c", [1e-200, 1e200])
def test_minimal_polynomial_is_scale_invariant_at_extreme_scales(c):
    A = np.diag([1.0, 1.0, 2.0, 3.0, 3.0])
    assert minimal_polynomial_degree(c * A) == 3


@pytest.mark.parametrize("N", range(1, 17))
def test_minimal_polynomial_of_random_matrix_is_N(N):
    for seed in range(3):
        assert minimal_polynomial_degree(rng(40 + seed).standard_normal((N, N))) == N


def test_minimal_polynomial_never_exceeds_N():
    g = rng(50)
    for _ in range(60):
        N = int(g.integers(1, 9))
        kind = int(g.integers(0, 3))
        if kind == 0:
            A = g.standard_normal((N, N)) * 10.0 ** g.uniform(-3, 3)
        elif kind == 1:
            A = np.diag(g.integers(-2, 3, size=N).astype(float))
        else:
            A = np.triu(g.standard_normal((N, N)))
        m = minimal_polynomial_degree(A)
        assert 1 <= m <= N


def test_minimal_polynomial_rtol_merges_close_eigenvalues():
    A = np.diag([0.5, 0.5 + 1e-9, 0.2])
    assert minimal_polynomial_degree(A) == 3
    assert minimal_polynomial_degree(A, rtol=1e-6) == 2


# ------------------------------------------------------------ tolerance


def test_default_rtol_formula():
    for m, p, d in [(1, 1, 1), (3, 2, 2), (10, 2, 2), (4, 3, 5), (4096, 8, 8)]:
        assert default_rtol(m, p, d) == max(m, p * d) * EPS
    with pytest.raises(ValueError, match=r"^m must be an integer >= 1; got 0"):  # issue 22: no empty list
        default_rtol(0, 2, 3)


def test_default_tolerance_is_max_of_m_and_pd():
    """Two orthogonal directions with singular values 1 and t: the default keeps t iff t > max(m, pd) eps."""
    p = d = 2
    for m in (2, 10):
        tol = max(m, p * d) * EPS
        for t, expected in ((1.5 * tol, 2), (0.5 * tol, 1)):
            mats = np.zeros((m, p, d))
            mats[0, 0, 0] = 1.0
            mats[1, 1, 1] = t
            assert interaction_rank(mats) == expected, (m, t)
            assert interaction_rank(mats, rtol=None) == expected
            assert span_basis(mats).shape[0] == expected
    # with m = 10 the default (10 eps) is larger than the pd-based 4 eps: 5 eps is dropped
    mats = np.zeros((10, 2, 2))
    mats[0, 0, 0], mats[1, 1, 1] = 1.0, 5 * EPS
    assert interaction_rank(mats) == 1
    assert interaction_rank(mats, rtol=4 * EPS) == 2


def test_large_rtol_drops_small_directions():
    """Rotation with rho = 0.1 and n = 2: singular values about 1.42 and 0.119."""
    A, B, C = _system(rotation(1.0, rho=0.1))
    K = lag_operators(A, B, C, 2)
    s = singular_values(K)
    assert s[1] / s[0] == pytest.approx(0.0839, abs=1e-3)
    assert lag_span_dimension(A, B, C, 2) == 2
    assert lag_span_dimension(A, B, C, 2, rtol=0.05) == 2
    assert lag_span_dimension(A, B, C, 2, rtol=0.5) == 1
    assert interaction_rank(K, rtol=0.5) == 1
    assert span_basis(K, rtol=0.5).shape == (1, 2, 2)
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 4, rtol=0.5), [1, 1, 1, 1])
    np.testing.assert_array_equal(lag_span_profile(A, B, C, 4), [1, 2, 2, 2])


def test_rtol_zero_counts_every_nonzero_direction():
    mats = np.zeros((3, 2, 2))
    mats[0, 0, 0], mats[1, 0, 1] = 1.0, 1e-300
    assert interaction_rank(mats, rtol=0.0) == 2
    assert interaction_rank(mats) == 1


# ------------------------------------------------------------ errors


SYSTEM_FUNCTIONS = [lag_span_dimension, lag_span_profile, lag_span_bound]
I2 = np.eye(2)


@pytest.mark.parametrize("fn", SYSTEM_FUNCTIONS)
@pytest.mark.parametrize("A, B, C, n, match", [
    (np.zeros((2, 3)), I2, I2, 3, r"A must be square"),
    (np.eye(2, 3), np.eye(2), I2, 3, r"A must be square"),
    (I2, np.eye(3), I2, 3, r"B has shape \(3, 3\), but axis 0 must be 2"),
    (I2, I2, np.eye(3), 3, r"C has shape \(3, 3\), but axis 1 must be 2"),
    (I2, np.ones(2), I2, 3, r"B must have shape \(N, d\)"),
    (I2, I2, I2, 0, r"n must be an integer >= 1; got 0"),
    (I2, I2, I2, -4, r"n must be an integer >= 1; got -4"),
    (I2, I2, I2, 2.0, r"n must be an integer >= 1; got 2.0"),
    (I2, I2, I2, "3", r"n must be an integer >= 1; got '3'"),
    (I2, I2, I2, True, r"n must be an integer >= 1; got True"),
    ([[np.nan, 0.0], [0.0, 1.0]], I2, I2, 3, r"A must contain only finite numbers"),
    (I2, [[np.inf, 0.0], [0.0, 1.0]], I2, 3, r"B must contain only finite numbers"),
    (1j * I2, I2, I2, 3, r"A must be real"),
    (I2, I2, 1j * I2, 3, r"C must be real"),
    (np.ones(4), I2, I2, 3, r"A must have shape \(N, N\)"),
], ids=["A not square", "A 2x3", "B rows", "C columns", "B 1-D", "n=0", "n<0", "n float", "n str", "n bool",
        "A NaN", "B inf", "A complex", "C complex", "A 1-D"])
def test_system_functions_reject_bad_input(fn, A, B, C, n, match):
    with pytest.raises(ValueError, match=match):
        fn(A, B, C, n)


BAD_RTOL = [(-0.1, "-0.1"), (1.0, "1.0"), (2.5, "2.5"), (np.nan, "nan"), ("tight", "'tight'"), ([0.1], r"\[0.1\]"),
            (1j, "1j"), (True, "True")]


@pytest.mark.parametrize("rtol, shown", BAD_RTOL, ids=[s for _, s in BAD_RTOL])
def test_rtol_out_of_range_or_non_numeric_is_rejected(rtol, shown):
    A, B, C = _system(plateau())
    K = lag_operators(A, B, C, 3)
    match = rf"rtol must be a number in \[0, 1\) or None; got {shown}"
    calls = [lambda: interaction_rank(K, rtol), lambda: span_basis(K, rtol), lambda: lag_span_dimension(A, B, C, 3, rtol),
             lambda: lag_span_profile(A, B, C, 3, rtol), lambda: lag_span_bound(A, B, C, 3, rtol),
             lambda: minimal_polynomial_degree(A, rtol)]
    for call in calls:
        with pytest.raises(ValueError, match=match):
            call()


@pytest.mark.parametrize("fn", [interaction_rank, span_basis, singular_values])
@pytest.mark.parametrize("mats, match", [
    (np.zeros((2, 2)), r"mats must have shape \(m, p, d\) \(3 dimensions\); got shape \(2, 2\)"),
    (np.zeros((2, 2, 2, 2)), r"mats must have shape \(m, p, d\) \(3 dimensions\); got shape \(2, 2, 2, 2\)"),
    (np.zeros(3), r"mats must have shape \(m, p, d\)"),
    (np.zeros((3, 0, 2)), r"mats has shape \(3, 0, 2\); each matrix must be at least 1 x 1"),
    (np.full((2, 2, 2), np.nan), r"mats must contain only finite numbers"),
    (np.ones((2, 2, 2)) * 1j, r"mats must be real"),
    ("blocks", r"mats must be a numeric array of shape \(m, p, d\); got str"),
], ids=["2-D", "4-D", "1-D", "empty matrix", "NaN", "complex", "str"])
def test_matrix_set_functions_reject_bad_input(fn, mats, match):
    with pytest.raises(ValueError, match=match):
        fn(mats)


@pytest.mark.parametrize("A, match", [
    (np.zeros((2, 3)), r"A must be square with N >= 1, shape \(N, N\); got shape \(2, 3\)"),
    (np.zeros((0, 0)), r"A must be square with N >= 1"),
    (np.zeros(3), r"A must have shape \(N, N\) \(2 dimensions\); got shape \(3,\)"),
    ([[np.nan]], r"A must contain only finite numbers"),
    (1j * np.eye(2), r"A must be real"),
])
def test_minimal_polynomial_rejects_bad_input(A, match):
    with pytest.raises(ValueError, match=match):
        minimal_polynomial_degree(A)


def test_validation_does_not_modify_inputs():
    A, B, C = (np.array(x) for x in _system(random_stable(3, 2, 2, seed=1)))
    copies = [x.copy() for x in (A, B, C)]
    lag_span_profile(A, B, C, 5)
    lag_span_bound(A, B, C, 5)
    minimal_polynomial_degree(A)
    for x, y in zip((A, B, C), copies):
        np.testing.assert_array_equal(x, y)


# ------------------------------------------------------------ regressions: example systems stay exact


def test_random_with_lag_rank_seed_17_stays_within_the_state_size():
    """Once produced k(12) = 4 > N = 3 when its A was non-normal (||A|| = 5.7 at rho = 0.9)."""
    A, B, C = _system(random_with_lag_rank(3, 3, 3, seed=17))
    assert A.shape == (3, 3)
    assert lag_span_dimension(A, B, C, 12) <= lag_span_bound(A, B, C, 12) == 3


def test_random_with_lag_rank_profile_is_nondecreasing():
    """Once rose to 7 > N = 5 and fell back, from rounding in the lags of a non-normal A."""
    A, B, C = _system(random_with_lag_rank(5, 3, 3, rho=0.5, seed=9))
    profile = lag_span_profile(A, B, C, 12)
    assert np.all(np.diff(profile) >= 0) and profile.max() <= 5, profile


# ------------------------------------------------------------ speed


def test_lag_span_dimension_is_fast_for_long_sequences():
    """n = 4096, N = 16, p = d = 8: one SVD of a 64 x 4096 matrix and O(log n) products."""
    A, B, C = _system(random_stable(16, 8, 8, seed=0))
    assert lag_span_dimension(A, B, C, 4096) == 16  # warm-up, and the answer min(n, pd, N)
    best = np.inf
    for _ in range(3):
        start = time.perf_counter()
        k = lag_span_dimension(A, B, C, 4096)
        best = min(best, time.perf_counter() - start)
        assert k == 16
    # The budget is 0.2 s (benchmarks/bench_span.py measures it, typically ~20 ms); on a
    # loaded 2-core machine BLAS threads compete, so this guard only catches gross
    # regressions such as a Python loop over lags or an SVD of the full operator.
    assert best < 1.0, f"lag_span_dimension took {best:.3f} s for n = 4096"



@pytest.mark.parametrize("k, d, p", [(3, 2, 2), (4, 2, 2), (5, 3, 2), (6, 3, 3), (9, 3, 3)])
def test_random_with_lag_rank_is_exact_over_many_seeds(k, d, p):
    for seed in range(40):
        A, B, C = _system(random_with_lag_rank(k, d, p, seed=seed))
        profile = lag_span_profile(A, B, C, k + 3)
        assert profile.tolist() == [min(n, k) for n in range(1, k + 4)], (seed, profile)


# ------------------------------------------------------------ one rule for k and m (issue 9, Chapter 2 point 3)


def _running_matrix_rank(columns):
    """Independent reference: max over prefixes of numpy.linalg.matrix_rank (the rule, rtol max(l, rows) eps)."""
    return max(np.linalg.matrix_rank(columns[:, :length]) for length in range(1, columns.shape[1] + 1))


def test_minimal_polynomial_degree_is_the_running_rank_of_the_scaled_powers():
    """m = max over l <= N of matrix_rank [vec I, ..., vec A^(l-1)], for A scaled to unit norm."""
    g = rng(60)
    cases = [g.standard_normal((N, N)) for N in (1, 3, 6)] + [np.diag([0.5, 0.5 + 1e-13, 0.2]),
                                                             np.diag([0.5, 0.5, 0.2]), np.eye(5, k=-1),
                                                             np.diag([0.5, 0.5 + 1e-7, 0.5 + 2e-7])]
    for A in cases:
        N = A.shape[0]
        S = A / np.linalg.norm(A, 2)
        powers = np.stack([np.linalg.matrix_power(S, l).reshape(-1, order="F") for l in range(N)], axis=1)
        assert minimal_polynomial_degree(A) == max(1, _running_matrix_rank(powers))


def test_lag_span_dimension_is_the_running_rank_capped_at_m():
    """k(n) = min(max over l <= n of matrix_rank(G_l), m), against an independent reference."""
    g = rng(61)
    for _ in range(40):
        N, p, d, n = int(g.integers(1, 6)), int(g.integers(1, 4)), int(g.integers(1, 4)), int(g.integers(1, 12))
        A, B, C = _random_stable_A(g, N), g.standard_normal((N, d)), g.standard_normal((p, N))
        lags = [C @ np.linalg.matrix_power(A, l) @ B for l in range(n)]
        want = min(_running_matrix_rank(_vec_f(lags)), minimal_polynomial_degree(A))
        assert lag_span_dimension(A, B, C, n) == want
        assert lag_span_profile(A, B, C, n)[-1] == want


@pytest.mark.parametrize("delta", [1e-1, 1e-4, 1e-8, 1e-12, 1e-13])
def test_k_and_m_agree_for_nearly_equal_eigenvalues(delta):
    """diag(0.5, 0.5 + delta), B = C = I: k(n) = m = 2 well above rounding (the old 1e-12 tolerance gave m = 1)."""
    A, B, C = _system(diagonal([0.5, 0.5 + delta]))
    assert minimal_polynomial_degree(A) == 2
    for n in (2, 4, 8, 16):
        assert lag_span_dimension(A, B, C, n) == 2


def test_decaying_pair_stays_resolved_at_long_lengths():
    """Referee's example: diag(0.5, 0.5 + 1e-12) once gave k(1024) = 2 but k(4096) = 1."""
    A, B, C = _system(diagonal([0.5, 0.5 + 1e-12]))
    assert [lag_span_dimension(A, B, C, n) for n in (2, 1024, 4096, 8192)] == [2, 2, 2, 2]


def test_three_eigenvalue_cluster_profiles_are_monotone():
    """0.5, 0.5 + d, 0.5 + 2d with d = 1e-7 once gave a profile 3 until n = 37, then 2."""
    A, B, C = _system(diagonal([0.5, 0.5 + 1e-7, 0.5 + 2e-7]))
    profile = lag_span_profile(A, B, C, 64)
    assert np.all(np.diff(profile) >= 0) and profile[-1] == 3 == minimal_polynomial_degree(A)


@pytest.mark.parametrize("size", [2, 3])
def test_clusters_never_give_k_above_m_or_a_falling_profile(size):
    """Eigenvalues 0.5 + j delta (j < size), delta through the resolution limit: zero violations of k <= m,
    monotone profiles, and the single-length routine agrees with the profile."""
    deltas = np.logspace(-17, -1, 81) if size == 2 else np.logspace(-9, -6, 31)
    for delta in deltas:
        A, B, C = _system(diagonal([0.5 + j * delta for j in range(size)]))
        m = minimal_polynomial_degree(A)
        profile = lag_span_profile(A, B, C, 64)
        assert np.all(np.diff(profile) >= 0) and profile.max() <= m, (delta, profile, m)
        for n in (2, 8, 64):
            assert lag_span_dimension(A, B, C, n) == profile[n - 1]


def test_k_equals_min_n_m_for_identity_maps_except_at_the_resolution_limit():
    """B = C = I: Proposition (a) says k(n) = min(n, m); computed, they differ only for delta < 1e-14."""
    for delta in np.logspace(-17, -1, 161):
        A, B, C = _system(diagonal([0.5, 0.5 + delta]))
        m = minimal_polynomial_degree(A)
        for n in (2, 4, 16):
            if lag_span_dimension(A, B, C, n) != min(n, m):
                assert delta < 1e-14, (delta, n)


@settings(max_examples=60, deadline=None)
@given(N=st.integers(1, 6), p=st.integers(1, 3), d=st.integers(1, 3), n=st.integers(1, 16),
       seed=st.integers(0, 2**31 - 1), cluster=st.floats(1e-16, 1e-3), clustered=st.booleans())
def test_profiles_are_nondecreasing_and_bounded_by_m(N, p, d, n, seed, cluster, clustered):
    """Random systems, some with eigenvalue clusters of spread ``cluster``: profile monotone, k <= m, and
    the profile's last value is lag_span_dimension."""
    g = rng(seed)
    if clustered:
        Q = _well_conditioned(N, seed)
        A = Q @ np.diag(0.6 + cluster * np.arange(N)) @ np.linalg.inv(Q)
    else:
        A = _random_stable_A(g, N)
    B, C = g.standard_normal((N, d)), g.standard_normal((p, N))
    profile = lag_span_profile(A, B, C, n)
    assert np.all(np.diff(profile) >= 0)
    assert profile.max() <= minimal_polynomial_degree(A)
    assert profile[-1] == lag_span_dimension(A, B, C, n)


def test_minimal_polynomial_default_tolerance_is_the_rank_rule():
    """Powers of diag(1, 1 + t): sigma_2/sigma_1 is about t/2; the default threshold is N^2 eps = 4 eps."""
    assert minimal_polynomial_degree(np.diag([1.0, 1.0 + 64 * EPS])) == 2
    assert minimal_polynomial_degree(np.diag([1.0, 1.0 + 2 * EPS])) == 1
    assert minimal_polynomial_degree(np.diag([1.0, 1.0 + 64 * EPS]), rtol=1e-10) == 1


def _brute_running_count(A, B, C, n):
    """The definition, one SVD per prefix: min(m, max over l <= n of the rule's count of K_0..K_{l-1}),
    each prefix against rtol sigma_1 plus its rounding floor tau_l."""
    from ssmheads.span import _finite_lags, _lag_floors, _prefix_count, _vec

    G = _vec(_finite_lags(A, B, C, n))
    floors = _lag_floors(A, B, C, n)
    best = max(_prefix_count(G, length, C.shape[0], B.shape[1], None, floors) for length in range(1, n + 1))
    return min(best, minimal_polynomial_degree(A))


@pytest.mark.parametrize("seed", range(60))
def test_the_pruned_prefix_search_finds_the_exact_running_count(seed):
    rng = np.random.default_rng(seed)
    N, p, d, n = int(rng.integers(1, 7)), int(rng.integers(1, 3)), int(rng.integers(1, 3)), int(rng.integers(1, 60))
    if seed % 3 == 0:
        A = rng.standard_normal((N, N))
        A *= 0.95 / max(abs(np.linalg.eigvals(A)))
    elif seed % 3 == 1:  # clustered eigenvalues: the counts of prefixes disagree
        A = np.diag(0.5 + 10.0 ** rng.uniform(-16, -3) * np.arange(N))
    else:
        A = np.diag(rng.uniform(-0.3, 0.3, N))
    B, C = rng.standard_normal((N, d)), rng.standard_normal((p, N))
    assert lag_span_dimension(A, B, C, n) == _brute_running_count(A, B, C, n)


def test_a_count_that_only_a_short_prefix_reaches_is_found_quickly():
    """diag(0.5, 0.5 + 1e-12): the long matrix counts 1 (its threshold grows with n), short prefixes count 2."""
    A, I = np.diag([0.5, 0.5 + 1e-12]), np.eye(2)
    start = time.process_time()  # CPU time: a loaded machine stretches the wall time, not the work
    k = lag_span_dimension(A, I, I, 4096)
    elapsed = time.process_time() - start
    assert k == _brute_running_count(A, I, I, 512) == 2
    assert elapsed < 0.5, f"{elapsed:.3f} s of CPU: the prefix search should need O(log n) SVDs, not n"
