"""Tests of the Chapter 2 systems in ``ssmheads.systems``: ``jordan``, ``plateau``, ``random_with_lag_rank``."""

import numpy as np
import pytest

from ssmheads import LinearSSM, lag_span_dimension, lag_span_profile
from ssmheads.systems import jordan, plateau, random_with_lag_rank

# ------------------------------------------------------------ jordan


def _jordan_by_hand(blocks):
    """Block-diagonal matrix of Jordan blocks: eigenvalue on the diagonal, ones on the superdiagonal."""
    N = sum(size for _, size in blocks)
    A = np.zeros((N, N))
    start = 0
    for lam, size in blocks:
        for i in range(size):
            A[start + i, start + i] = lam
            if i + 1 < size:
                A[start + i, start + i + 1] = 1.0
        start += size
    return A


@pytest.mark.parametrize("blocks", [
    [(0.5, 2), (0.5, 1), (-0.2, 1)],
    [(0.9, 1)],
    [(0.0, 4)],
    [(-0.3, 3), (0.7, 2)],
    ((0.1, 1), (0.2, 1), (0.3, 1)),
])
def test_jordan_has_the_block_structure(blocks):
    s = jordan(blocks)
    assert isinstance(s, LinearSSM)
    N = sum(size for _, size in blocks)
    np.testing.assert_array_equal(s.A, _jordan_by_hand(blocks))
    np.testing.assert_array_equal(s.B, np.eye(N))
    np.testing.assert_array_equal(s.C, np.eye(N))
    assert (s.N, s.d, s.p) == (N, N, N)
    eig = np.sort(np.linalg.eigvals(s.A).real)
    np.testing.assert_allclose(eig, np.sort([lam for lam, size in blocks for _ in range(size)]), atol=1e-6)


def test_jordan_example_from_the_docstring():
    """``J_2(0.5) + [0.5] + [-0.2]``, written out entry by entry."""
    expected = np.array([[0.5, 1.0, 0.0, 0.0],
                         [0.0, 0.5, 0.0, 0.0],
                         [0.0, 0.0, 0.5, 0.0],
                         [0.0, 0.0, 0.0, -0.2]])
    np.testing.assert_array_equal(jordan([(0.5, 2), (0.5, 1), (-0.2, 1)]).A, expected)


def test_jordan_block_is_not_diagonalizable():
    """``(J_3(0.4) - 0.4 I)^2 != 0`` but ``^3 = 0``: a genuine Jordan block, not a diagonal matrix."""
    M = jordan([(0.4, 3)]).A - 0.4 * np.eye(3)
    assert np.any(M @ M != 0)
    np.testing.assert_array_equal(M @ M @ M, np.zeros((3, 3)))


def test_jordan_custom_input_and_output_maps():
    B = np.arange(6.0).reshape(3, 2)
    C = np.ones((4, 3))
    s = jordan([(0.5, 2), (-0.1, 1)], B=B, C=C)
    np.testing.assert_array_equal(s.B, B)
    np.testing.assert_array_equal(s.C, C)
    assert (s.N, s.d, s.p) == (3, 2, 4)
    s_b = jordan([(0.5, 2), (-0.1, 1)], B=B)
    np.testing.assert_array_equal(s_b.C, np.eye(3))
    s_c = jordan([(0.5, 2), (-0.1, 1)], C=C)
    np.testing.assert_array_equal(s_c.B, np.eye(3))


def test_jordan_lag_operators_are_the_powers():
    s = jordan([(0.5, 2), (0.5, 1), (-0.2, 1)])
    K = s.lag_operators(6)
    for l in range(6):
        np.testing.assert_allclose(K[l], np.linalg.matrix_power(s.A, l), rtol=1e-14, atol=1e-15)


def test_jordan_rejects_mismatched_custom_maps():
    with pytest.raises(ValueError, match=r"B has shape \(3, 1\), but axis 0 must be 2"):
        jordan([(0.5, 2)], B=np.ones((3, 1)))
    with pytest.raises(ValueError, match=r"C has shape \(1, 3\), but axis 1 must be 2"):
        jordan([(0.5, 2)], C=np.ones((1, 3)))


@pytest.mark.parametrize("blocks, match", [
    ([], r"blocks must contain at least one \(eigenvalue, size\) pair; got none"),
    ((), r"blocks must contain at least one \(eigenvalue, size\) pair; got none"),
    ([(0.5, 0)], r"size must be an integer >= 1; got 0"),
    ([(0.5, 2), (0.1, -1)], r"size must be an integer >= 1; got -1"),
    ([(0.5, 2.0)], r"size must be an integer >= 1; got 2.0"),
    ([(0.5, True)], r"size must be an integer >= 1; got True"),
    ([(np.nan, 2)], r"eigenvalue must be finite; got nan"),
    ([(0.5, 1), (np.inf, 1)], r"eigenvalue must be finite; got inf"),
    ([("half", 2)], r"eigenvalue must be a real number; got 'half'"),
    ([(1j, 2)], r"eigenvalue must be a real number; got 1j"),
    ([0.5], r"blocks must be a sequence of \(eigenvalue, size\) pairs; got \[0.5\]"),
    ([0.5, 2], r"blocks must be a sequence of \(eigenvalue, size\) pairs"),
    (5, r"blocks must be a sequence of \(eigenvalue, size\) pairs; got 5"),
    (None, r"blocks must be a sequence of \(eigenvalue, size\) pairs; got None"),
], ids=["empty list", "empty tuple", "size 0", "size -1", "size float", "size bool", "eigenvalue nan", "eigenvalue inf",
        "eigenvalue str", "eigenvalue complex", "list of floats", "flat pair", "int", "None"])
def test_jordan_rejects_bad_blocks(blocks, match):
    with pytest.raises(ValueError, match=match):
        jordan(blocks)


@pytest.mark.parametrize("blocks", [[(0.5,)], [(0.5, 2, 3)], "ab"], ids=["1-tuple", "3-tuple", "string"])
def test_jordan_rejects_entries_that_are_not_pairs_naming_blocks(blocks):
    with pytest.raises(ValueError, match=r"blocks must be a sequence of \(eigenvalue, size\) pairs"):
        jordan(blocks)


# ------------------------------------------------------------ plateau


def test_plateau_matrices_are_as_documented():
    s = plateau()
    np.testing.assert_array_equal(s.A, [[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    np.testing.assert_array_equal(s.B, [[1.0], [0.0], [0.0]])
    np.testing.assert_array_equal(s.C, [[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    np.testing.assert_array_equal(s.D, np.zeros((2, 1)))
    assert (s.N, s.d, s.p) == (3, 1, 2)
    e = np.eye(3)
    np.testing.assert_array_equal(s.A @ e[:, 0], e[:, 1])  # e_1 -> e_2
    np.testing.assert_array_equal(s.A @ e[:, 1], e[:, 2])  # e_2 -> e_3
    np.testing.assert_array_equal(s.A @ e[:, 2], np.zeros(3))  # e_3 -> 0


def test_plateau_lag_operators():
    """``K_0 = K_1 = (1, 0)^T``, ``K_2 = (0, 1)^T`` and ``K_l = 0`` from l = 3 on (A is nilpotent)."""
    K = plateau().lag_operators(6)
    assert K.shape == (6, 2, 1)
    np.testing.assert_array_equal(K[0], [[1.0], [0.0]])
    np.testing.assert_array_equal(K[1], [[1.0], [0.0]])
    np.testing.assert_array_equal(K[2], [[0.0], [1.0]])
    np.testing.assert_array_equal(K[3:], np.zeros((3, 2, 1)))


# ------------------------------------------------------------ random_with_lag_rank


@pytest.mark.parametrize("k, d, p", [(1, 1, 1), (2, 1, 2), (3, 2, 2), (4, 2, 2), (6, 2, 3), (9, 3, 3), (5, 5, 1)])
@pytest.mark.parametrize("rho", [0.9, 0.5, 1.5])
def test_random_with_lag_rank_shapes_and_spectral_radius(k, d, p, rho):
    s = random_with_lag_rank(k, d, p, rho=rho, seed=4)
    assert isinstance(s, LinearSSM)
    assert (s.N, s.d, s.p) == (k, d, p)
    assert abs(s.spectral_radius - rho) <= 1e-10
    lam = np.linalg.eigvals(s.A)
    assert np.max(np.abs(lam)) == pytest.approx(rho, abs=1e-10)
    assert np.all(np.abs(lam.imag) <= 1e-8)  # real eigenvalues
    if k > 1:
        gaps = np.abs(lam[:, None] - lam[None, :]) + np.eye(k)
        assert gaps.min() > 1e-3 * rho  # distinct, well separated


def test_random_with_lag_rank_default_spectral_radius():
    assert random_with_lag_rank(3, 2, 2).spectral_radius == pytest.approx(0.9, abs=1e-10)


@pytest.mark.parametrize("k, d, p", [(1, 1, 1), (3, 2, 2), (4, 4, 1), (6, 2, 3)])
@pytest.mark.parametrize("seed", [0, 1, 5])
def test_random_with_lag_rank_has_lag_rank_k(k, d, p, seed):
    s = random_with_lag_rank(k, d, p, seed=seed)
    n = 2 * k + 3
    np.testing.assert_array_equal(lag_span_profile(s.A, s.B, s.C, n), np.minimum(np.arange(1, n + 1), k))


def test_random_with_lag_rank_has_lag_rank_k_for_every_seed():
    s = random_with_lag_rank(3, 3, 3, seed=17)
    assert lag_span_dimension(s.A, s.B, s.C, 12) == 3


def test_random_with_lag_rank_is_reproducible_per_seed():
    a, b = random_with_lag_rank(4, 2, 3, seed=11), random_with_lag_rank(4, 2, 3, seed=11)
    for x, y in ((a.A, b.A), (a.B, b.B), (a.C, b.C)):
        np.testing.assert_array_equal(x, y)
    c = random_with_lag_rank(4, 2, 3, seed=12)
    assert not np.allclose(a.A, c.A)
    assert not np.allclose(a.B, c.B)
    assert not np.allclose(a.C, c.C)


def test_random_with_lag_rank_leaves_global_random_state_alone():
    np.random.seed(123)
    before = np.random.random()
    np.random.seed(123)
    random_with_lag_rank(3, 2, 2, seed=0)
    assert np.random.random() == before


@pytest.mark.parametrize("kwargs, match", [
    (dict(k=5, d=2, p=2), r"k must be at most p \* d = 4 .*; got 5"),
    (dict(k=7, d=3, p=2), r"k must be at most p \* d = 6 .*; got 7"),
    (dict(k=2, d=1, p=1), r"k must be at most p \* d = 1 .*; got 2"),
    (dict(k=0, d=1, p=1), r"k must be an integer >= 1; got 0"),
    (dict(k=2.0, d=2, p=2), r"k must be an integer >= 1; got 2.0"),
    (dict(k=2, d=0, p=2), r"d must be an integer >= 1; got 0"),
    (dict(k=2, d=2, p=-1), r"p must be an integer >= 1; got -1"),
    (dict(k=2, d=2, p=2, seed=-1), r"seed must be an integer >= 0; got -1"),
    (dict(k=2, d=2, p=2, seed=1.5), r"seed must be an integer >= 0; got 1.5"),
    (dict(k=2, d=2, p=2, seed="0"), r"seed must be an integer >= 0; got '0'"),
    (dict(k=2, d=2, p=2, seed=None), r"seed must be an integer >= 0; got None"),
    (dict(k=2, d=2, p=2, rho=0.0), r"rho must be positive; got 0.0"),
    (dict(k=2, d=2, p=2, rho=-0.5), r"rho must be positive; got -0.5"),
    (dict(k=2, d=2, p=2, rho=np.nan), r"rho must be finite; got nan"),
    (dict(k=2, d=2, p=2, rho="big"), r"rho must be a real number; got 'big'"),
], ids=["k>pd (4)", "k>pd (6)", "k>pd (1)", "k=0", "k float", "d=0", "p<0", "seed<0", "seed float", "seed str",
        "seed None", "rho=0", "rho<0", "rho nan", "rho str"])
def test_random_with_lag_rank_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        random_with_lag_rank(**kwargs)
