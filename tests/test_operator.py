"""Tests of ``ssmheads.operator``: applying, building and reading interaction operators.

Operators are checked against loops written from the definitions in
``math.md`` §1.1 (``y_i = sum_j W_ij x_j``) and §1.4 (``W_ij = K_{i-j}`` for ``j <= i``).
"""

import numpy as np
import pytest
from helpers import assert_rel_close, rng

from ssmheads import (
    Convolution,
    LinearSSM,
    PositionwiseLinear,
    apply_interaction,
    block_norms,
    causality_violation,
    operator_of_linear_map,
    toeplitz_deviation,
    toeplitz_operator,
    trivial_interaction_form,
    two_route_gap,
)
from ssmheads.systems import random_stable

# ------------------------------------------------------------ apply_interaction


@pytest.mark.parametrize("n, p, d", [(1, 1, 1), (1, 3, 2), (5, 2, 3), (8, 4, 1)])
def test_apply_interaction_matches_loop(n, p, d):
    """``y_i = sum_j W[i, j] @ x_j``, written as a double loop."""
    g = rng(n * 100 + p * 10 + d)
    W, X = g.standard_normal((n, n, p, d)), g.standard_normal((n, d))
    expected = np.zeros((n, p))
    for i in range(n):
        for j in range(n):
            expected[i] += W[i, j] @ X[j]
    Y = apply_interaction(W, X)
    assert Y.shape == (n, p)
    assert_rel_close(Y, expected)


def test_apply_interaction_accepts_lists():
    W = [[[[2.0]]]]
    assert apply_interaction(W, [[3.0]]).tolist() == [[6.0]]


@pytest.mark.parametrize(
    "W, X, match",
    [
        (np.zeros((3, 3, 2, 2)), np.zeros((4, 2)), r"X has shape \(4, 2\), but axis 0 must be 3 \(the sequence length n of W\)"),
        (np.zeros((3, 3, 2, 2)), np.zeros((3, 5)), r"X has shape \(3, 5\), but axis 1 must be 2 \(the token width d of W\)"),
        (np.zeros((3, 3, 2, 2)), np.zeros(6), r"X must have shape \(n, d\) \(2 dimensions\); got shape \(6,\)"),
        (np.zeros((3, 3, 2, 2)), np.full((3, 2), np.nan), "X must contain only finite numbers"),
        (np.zeros((3, 3, 2, 2)), np.full((3, 2), np.inf), "X must contain only finite numbers"),
        (np.zeros((3, 3, 2, 2)), "abc", r"X must be a numeric array of shape \(n, d\); got str"),
        (np.zeros((3, 3, 2)), np.zeros((3, 2)), r"W must have shape \(n, n, p, d\) \(4 dimensions\)"),
        (np.zeros((3, 4, 2, 2)), np.zeros((3, 2)), "W must have shape .* with equal first two axes; got shape"),
        (np.zeros((0, 0, 2, 2)), np.zeros((0, 2)), r"W has shape \(0, 0, 2, 2\); the sequence length n must be at least 1"),
        (np.full((1, 1, 1, 1), np.inf), np.zeros((1, 1)), "W must contain only finite numbers"),
    ],
)
def test_apply_interaction_errors(W, X, match):
    with pytest.raises(ValueError, match=match):
        apply_interaction(W, X)


# ------------------------------------------------------------ toeplitz_operator


def _toeplitz_loop(K, n):
    L, p, d = K.shape
    W = np.zeros((n, n, p, d))
    for i in range(n):
        for j in range(n):
            if 0 <= i - j < L:
                W[i, j] = K[i - j]
    return W


@pytest.mark.parametrize("L, n", [(1, 1), (3, 1), (1, 5), (3, 7), (7, 7), (10, 4)])
def test_toeplitz_operator_matches_definition(L, n):
    K = rng(L + 10 * n).standard_normal((L, 2, 3))
    W = toeplitz_operator(K, n)
    assert W.shape == (n, n, 2, 3)
    np.testing.assert_array_equal(W, _toeplitz_loop(K, n))


def test_toeplitz_operator_with_fewer_lags_is_a_band():
    """With ``L < n`` the nonzero blocks are exactly those with ``0 <= i - j < L``."""
    L, n = 3, 8
    K = rng(0).standard_normal((L, 2, 2))
    norms = block_norms(toeplitz_operator(K, n))
    lag = np.subtract.outer(np.arange(n), np.arange(n))
    band = (lag >= 0) & (lag < L)
    assert np.all(norms[band] > 0)
    assert np.all(norms[~band] == 0)
    assert causality_violation(toeplitz_operator(K, n)) == 0.0


def test_toeplitz_operator_with_no_lags_is_zero():
    assert not np.any(toeplitz_operator(np.zeros((0, 2, 2)), 3))


@pytest.mark.parametrize("n", [0, -1, 2.5, 3.0, True, "3", None])
def test_toeplitz_operator_rejects_bad_n(n):
    with pytest.raises(ValueError, match="n must be an integer >= 1; got"):
        toeplitz_operator(np.ones((2, 1, 1)), n)


def test_toeplitz_operator_accepts_numpy_integer_n():
    assert toeplitz_operator(np.ones((2, 1, 1)), np.int64(3)).shape == (3, 3, 1, 1)


def test_toeplitz_operator_rejects_bad_K():
    with pytest.raises(ValueError, match=r"K must have shape \(L, p, d\) \(3 dimensions\); got shape \(2, 2\)"):
        toeplitz_operator(np.ones((2, 2)), 3)
    with pytest.raises(ValueError, match="K must contain only finite numbers"):
        toeplitz_operator(np.full((2, 1, 1), np.nan), 3)


# ------------------------------------------------------------ block_norms


@pytest.mark.parametrize("ord_, numpy_ord", [("fro", "fro"), ("spectral", 2)])
def test_block_norms_match_numpy_per_block(ord_, numpy_ord):
    n, p, d = 5, 3, 4
    W = rng(1).standard_normal((n, n, p, d))
    expected = np.array([[np.linalg.norm(W[i, j], ord=numpy_ord) for j in range(n)] for i in range(n)])
    assert_rel_close(block_norms(W, ord=ord_), expected)


def test_block_norms_default_is_frobenius():
    W = rng(2).standard_normal((3, 3, 2, 2))
    np.testing.assert_array_equal(block_norms(W), block_norms(W, ord="fro"))


@pytest.mark.parametrize("bad", ["nuc", 2, "Fro", None])
def test_block_norms_rejects_bad_ord(bad):
    with pytest.raises(ValueError, match=r"ord must be 'fro' or 'spectral'; got"):
        block_norms(np.ones((2, 2, 1, 1)), ord=bad)


def test_block_norms_rejects_bad_W():
    with pytest.raises(ValueError, match="W must have shape .* with equal first two axes"):
        block_norms(np.ones((2, 3, 1, 1)))
    with pytest.raises(ValueError, match="the sequence length n must be at least 1"):
        block_norms(np.ones((0, 0, 1, 1)))


# ------------------------------------------------------------ causality_violation, toeplitz_deviation


def test_causality_violation_is_zero_on_lower_triangular_operator():
    n = 6
    W = rng(3).standard_normal((n, n, 2, 2)) * np.tril(np.ones((n, n)))[:, :, None, None]
    assert causality_violation(W) == 0.0


def test_causality_violation_reports_largest_upper_block():
    n = 5
    W = rng(4).standard_normal((n, n, 2, 2)) * np.tril(np.ones((n, n)))[:, :, None, None]
    W[1, 3] = [[3.0, 0.0], [0.0, 4.0]]  # Frobenius norm 5
    W[0, 1] = [[1.0, 0.0], [0.0, 0.0]]
    assert causality_violation(W) == pytest.approx(5.0, rel=1e-15)


@pytest.mark.parametrize("i, j", [(0, 1), (2, 3), (0, 4)])
def test_causality_violation_sees_every_upper_block(i, j):
    """A single nonzero block anywhere above the diagonal, including next to it, is reported."""
    W = np.zeros((5, 5, 2, 2))
    W[i, j, 0, 1] = -2.0
    assert causality_violation(W) == 2.0


def test_causality_violation_of_single_token_is_zero():
    assert causality_violation(np.ones((1, 1, 2, 2))) == 0.0


def test_toeplitz_deviation_is_zero_on_toeplitz_operator():
    W = toeplitz_operator(rng(5).standard_normal((4, 2, 3)), 9)
    assert toeplitz_deviation(W) == 0.0


def test_toeplitz_deviation_measures_largest_entry_change():
    W = toeplitz_operator(rng(6).standard_normal((9, 2, 2)), 9)
    W[4, 2, 1, 0] += 0.25  # breaks W[4,2] == W[3,1] == W[5,3]
    assert toeplitz_deviation(W) == pytest.approx(0.25, rel=1e-12)


def test_toeplitz_deviation_of_single_token_is_zero():
    assert toeplitz_deviation(rng(7).standard_normal((1, 1, 2, 2))) == 0.0


def test_structure_readers_validate_W():
    for reader in (causality_violation, toeplitz_deviation):
        with pytest.raises(ValueError, match="W must have shape .* with equal first two axes"):
            reader(np.zeros((2, 3, 1, 1)))
        with pytest.raises(ValueError, match=r"W must have shape \(n, n, p, d\) \(4 dimensions\)"):
            reader(np.zeros((2, 2)))


# ------------------------------------------------------------ operator_of_linear_map


@pytest.mark.parametrize("n, p, d", [(4, 3, 2), (3, 2, 2), (2, 1, 3), (1, 2, 2)])
def test_operator_of_linear_map_reads_a_dense_matrix(n, p, d):
    """A linear map given by a dense ``(n p, n d)`` matrix: ``W[i, j, a, c] = M[i p + a, j d + c]``."""
    M = rng(8).standard_normal((n * p, n * d))
    W = operator_of_linear_map(lambda X: (M @ X.reshape(-1)).reshape(n, p), n, d)
    assert W.shape == (n, n, p, d)
    np.testing.assert_array_equal(W, M.reshape(n, p, n, d).transpose(0, 2, 1, 3))


def _ssm_with_skip():
    base = random_stable(3, 2, 3, seed=1)
    return LinearSSM(base.A, base.B, base.C, D=rng(9).standard_normal((3, 2)))


@pytest.mark.parametrize("n", [1, 2, 6])
@pytest.mark.parametrize(
    "make_layer",
    [
        _ssm_with_skip,
        lambda: Convolution(rng(10).standard_normal((3, 3, 2))),
        lambda: PositionwiseLinear(rng(11).standard_normal((3, 2))),
    ],
    ids=["LinearSSM", "Convolution", "PositionwiseLinear"],
)
def test_operator_of_linear_map_recovers_layer_interaction(make_layer, n):
    """For a linear layer the operator is unique, so probing ``forward`` gives ``interaction``."""
    layer = make_layer()
    X = rng(12).standard_normal((n, layer.d))
    W = operator_of_linear_map(layer.forward, n, layer.d)
    assert_rel_close(W, layer.interaction(X), tol=1e-13)


@pytest.mark.parametrize("name, n, d", [("n", 0, 2), ("n", 2.5, 2), ("n", True, 2), ("d", 2, 0), ("d", 2, 1.0)])
def test_operator_of_linear_map_rejects_bad_sizes(name, n, d):
    with pytest.raises(ValueError, match=f"{name} must be an integer >= 1; got"):
        operator_of_linear_map(lambda X: X, n, d)


def test_operator_of_linear_map_rejects_bad_outputs():
    with pytest.raises(ValueError, match=r"f\(X\) must have shape \(n, p\) \(2 dimensions\); got shape \(6,\)"):
        operator_of_linear_map(lambda X: X.reshape(-1), 3, 2)
    with pytest.raises(ValueError, match=r"f must return an array of shape \(n, p\) = \(3, p\) with p >= 1; got shape \(2, 2\)"):
        operator_of_linear_map(lambda X: X[:2], 3, 2)


# ------------------------------------------------------------ trivial_interaction_form


def test_trivial_interaction_form_reproduces_a_nonlinear_map():
    """Remark 1: ``W_ij = y_i x_j^T / ||X||_F^2`` reproduces any output, here ``tanh(cumsum(X))``."""
    X = rng(13).standard_normal((7, 3))
    Y = np.tanh(np.cumsum(X, axis=0)) @ rng(14).standard_normal((3, 2))
    W = trivial_interaction_form(Y, X)
    assert W.shape == (7, 7, 2, 3)
    assert_rel_close(apply_interaction(W, X), Y)


def test_trivial_interaction_form_differs_from_the_operator_of_a_linear_map():
    """Two operators, one output: the trivial form is a different operator from the Jacobian."""
    layer = Convolution(rng(15).standard_normal((2, 2, 2)))
    X = rng(16).standard_normal((5, 2))
    W_trivial = trivial_interaction_form(layer.forward(X), X)
    assert_rel_close(apply_interaction(W_trivial, X), layer.forward(X))
    assert np.max(np.abs(W_trivial - layer.interaction(X))) > 1e-3


def test_trivial_interaction_form_errors():
    with pytest.raises(ValueError, match=r"X must be nonzero: the construction divides by \|\|X\|\|_F\^2"):
        trivial_interaction_form(np.ones((3, 2)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"Y has shape \(2, 2\), but axis 0 must be 3 \(the sequence length n of X\)"):
        trivial_interaction_form(np.ones((2, 2)), np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"Y must have shape \(n, p\)"):
        trivial_interaction_form(np.ones(3), np.ones((3, 2)))
    with pytest.raises(ValueError, match="X must contain only finite numbers"):
        trivial_interaction_form(np.ones((3, 2)), np.full((3, 2), np.nan))


# ------------------------------------------------------------ two_route_gap


class _Layer:
    """A hand-made layer for two_route_gap: ``forward`` and ``interaction`` given directly."""

    def __init__(self, forward, interaction):
        self.forward, self.interaction = forward, interaction


def test_two_route_gap_is_relative_to_the_output():
    W = rng(17).standard_normal((4, 4, 2, 2))
    X = rng(18).standard_normal((4, 2))
    Y = apply_interaction(W, X)
    assert two_route_gap(_Layer(lambda X: Y, lambda X: W), X) == 0.0
    shifted = Y.copy()
    shifted[2, 1] += 1e-3
    expected = 1e-3 / np.max(np.abs(shifted))
    assert two_route_gap(_Layer(lambda X: shifted, lambda X: W), X) == pytest.approx(expected, rel=1e-9)


def test_two_route_gap_detects_a_wrong_operator():
    """The transposed operator is not the layer's operator: the gap is of order 1."""
    layer = Convolution(rng(19).standard_normal((3, 2, 2)))
    X = rng(20).standard_normal((6, 2))
    wrong = _Layer(layer.forward, lambda X: layer.interaction(X).transpose(1, 0, 2, 3))
    assert two_route_gap(wrong, X) > 0.1


def test_two_route_gap_on_zero_output_is_absolute():
    X = np.ones((3, 1))
    W = np.zeros((3, 3, 1, 1))
    assert two_route_gap(_Layer(lambda X: np.zeros((3, 1)), lambda X: W), X) == 0.0
    assert two_route_gap(_Layer(lambda X: np.full((3, 1), 0.0), lambda X: W + 0.5), X) == pytest.approx(1.5)


@pytest.mark.parametrize("not_a_layer", [3, np.eye(2), object()])
def test_two_route_gap_rejects_objects_without_methods(not_a_layer):
    with pytest.raises(ValueError, match=r"layer must have forward\(X\) and interaction\(X\) methods; got"):
        two_route_gap(not_a_layer, np.ones((2, 2)))


# ---- issue 11: clear messages, size guards, scale safety ----------------------------------------

def test_operator_of_linear_map_requires_a_callable_and_wraps_its_errors():
    with pytest.raises(ValueError, match="f must be callable"):
        operator_of_linear_map(5, 5, 2)

    def broken(X):
        raise RuntimeError("bug")

    with pytest.raises(ValueError, match=r"f raised RuntimeError on the unit probe at position 0"):
        operator_of_linear_map(broken, 3, 2)
    with pytest.raises(ValueError, match=r"n and d would make the operator W .* GiB"):
        operator_of_linear_map(lambda X: X, 4, 10**7)


def test_toeplitz_deviation_of_a_zero_size_W_names_W():
    W = np.zeros((3, 3, 2, 2))
    with pytest.raises(ValueError, match=r"W has shape \(3, 3, 2, 0\); the block sizes p and d"):
        toeplitz_deviation(W[..., :0])


def test_toeplitz_operator_refuses_a_multi_gib_operator():
    with pytest.raises(ValueError, match=r"n would make the operator W an array of shape \(20000x20000x2x2\)"):
        toeplitz_operator(np.ones((3, 2, 2)), 20000)
    assert toeplitz_operator(np.ones((3, 2, 2)), 4, max_bytes=10**6).shape == (4, 4, 2, 2)


@pytest.mark.parametrize("scale", [1e155, 1e-300])
def test_norms_and_trivial_form_are_scale_safe(scale):
    rng = np.random.default_rng(6)
    W = rng.standard_normal((4, 4, 2, 2))
    X = rng.standard_normal((4, 2))
    assert np.max(np.abs(block_norms(W * scale) / scale - block_norms(W))) < 1e-12 * np.max(block_norms(W))
    assert abs(causality_violation(W * scale) / scale - causality_violation(W)) < 1e-12 * causality_violation(W)
    T = trivial_interaction_form(X[:, :1], X * scale)
    assert np.all(np.isfinite(T))
    assert np.max(np.abs(np.einsum("ijpd,jd->ip", T, X * scale) - X[:, :1])) < 1e-12
