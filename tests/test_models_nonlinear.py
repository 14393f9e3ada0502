"""Tests of the nonlinear layers of Chapter 1's gallery: ``ElmanRNN`` and ``KANLayer``.

The references are written here from the formulas (a loop over time with ``np.tanh``;
B-splines from ``scipy.interpolate.BSpline.basis_element``), so a test fails if the
library's operator route, its direct route or its docstring formula disagree.
"""

import numpy as np
import pytest
from helpers import assert_rel_close, rng
from scipy.interpolate import BSpline

from ssmheads import apply_interaction, causality_violation, finite_difference_jacobian, two_route_gap
from ssmheads.models import ElmanRNN, KANLayer, LinearSSM


def _rnn(N=4, d=2, p=3, seed=0, radius=0.9):
    g = rng(seed).standard_normal
    W_h = g((N, N))
    W_h *= radius / np.max(np.abs(np.linalg.eigvals(W_h)))
    return ElmanRNN(W_h, g((N, d)), g((p, N)))


def _kan(d=2, p=3, M=8, seed=0, grid=(-3.0, 3.0)):
    g = rng(seed).standard_normal
    return KANLayer(g((p, d, M)), g((p, d)), grid)


# ------------------------------------------------------------ ElmanRNN


def _rnn_loop(rnn, X):
    """States and outputs of h_t = tanh(W_h h_(t-1) + W_x x_t), y_t = W_y h_t, from the definition."""
    h, states, pre = np.zeros(rnn.N), [], []
    for x in X:
        z = rnn.W_h @ h + rnn.W_x @ x
        h = np.tanh(z)
        pre.append(z)
        states.append(h)
    return np.array(pre), np.array(states) @ rnn.W_y.T


@pytest.mark.parametrize("n", [1, 2, 7, 20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rnn_forward_is_the_tanh_recurrence(n, seed):
    rnn = _rnn(seed=seed)
    X = rng(seed + 10).standard_normal((n, 2))
    assert_rel_close(rnn.forward(X), _rnn_loop(rnn, X)[1], 1e-13)


@pytest.mark.parametrize("n", [1, 2, 7, 20])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rnn_two_routes_agree(n, seed):
    rnn = _rnn(N=5, d=3, p=2, seed=seed, radius=1.5)
    X = 2 * rng(seed + 20).standard_normal((n, 3))
    assert two_route_gap(rnn, X) < 1e-12


def test_rnn_operator_is_the_product_of_chord_slopes():
    """W_ij = W_y D_i W_h D_(i-1) ... W_h D_j W_x with D_t = diag(tanh(z_t) / z_t), from the loop's z_t."""
    rnn = _rnn(seed=3)
    X = rng(4).standard_normal((6, 2))
    z, _ = _rnn_loop(rnn, X)
    D = [np.diag(np.tanh(zt) / zt) for zt in z]
    W = rnn.interaction(X)
    for i in range(6):
        for j in range(6):
            if j > i:
                assert np.all(W[i, j] == 0)
                continue
            M = D[j] @ rnn.W_x
            for t in range(j + 1, i + 1):
                M = D[t] @ rnn.W_h @ M
            assert_rel_close(W[i, j], rnn.W_y @ M, 1e-12)


def test_rnn_operator_blocks_read_only_earlier_tokens():
    """Block (i, j) with j <= i does not change when tokens after i change: a causal form of a causal map."""
    rnn = _rnn(seed=5)
    X = rng(6).standard_normal((8, 2))
    Z = X.copy()
    Z[5:] = rng(7).standard_normal((3, 2))
    W, W_other = rnn.interaction(X), rnn.interaction(Z)
    assert np.array_equal(W[:5, :5], W_other[:5, :5])
    assert causality_violation(W) == 0.0
    assert np.max(np.abs(W[5:] - W_other[5:])) > 1e-3


def test_rnn_map_is_time_invariant_and_its_operator_moves_with_the_input():
    rnn = _rnn(seed=8)
    X = rng(9).standard_normal((9, 2))
    s = 3
    delayed = np.concatenate([np.zeros((s, 2)), X[:-s]])
    assert np.array_equal(rnn.forward(delayed)[s:], rnn.forward(X)[:-s])
    assert_rel_close(rnn.interaction(delayed)[s:, s:], rnn.interaction(X)[:-s, :-s], 1e-13)


def test_rnn_operator_is_input_dependent_and_not_toeplitz():
    rnn = _rnn(seed=10)
    X, Z = rng(11).standard_normal((8, 2)), rng(12).standard_normal((8, 2))
    W = rnn.interaction(X)
    assert np.max(np.abs(W - rnn.interaction(Z))) > 0.05 * np.max(np.abs(W))
    assert np.max(np.abs(W[1:, 1:] - W[:-1, :-1])) > 0.05 * np.max(np.abs(W))


def test_rnn_on_small_inputs_is_the_linear_ssm():
    """As the input shrinks, tanh(z)/z -> 1 and the operator tends to C A^(i-j) B with A = W_h, B = W_x, C = W_y."""
    rnn = _rnn(seed=13)
    X = 1e-7 * rng(14).standard_normal((7, 2))
    ssm = LinearSSM(rnn.W_h, rnn.W_x, rnn.W_y)
    W, W_lin = rnn.interaction(X), ssm.interaction(X)
    assert np.max(np.abs(W - W_lin)) < 1e-10 * np.max(np.abs(W_lin))


def test_rnn_operator_is_not_the_jacobian():
    """Chords are not tangents: the operator differs from dy_i/dx_j on an input of unit size."""
    rnn = _rnn(seed=15)
    X = rng(16).standard_normal((6, 2))
    J = finite_difference_jacobian(rnn.forward, X)
    W = rnn.interaction(X)
    assert np.max(np.abs(J - W)) > 0.05 * np.max(np.abs(W))


def test_rnn_zero_input_has_unit_slopes():
    rnn = _rnn(seed=17)
    W = rnn.interaction(np.zeros((4, 2)))
    ssm = LinearSSM(rnn.W_h, rnn.W_x, rnn.W_y)
    assert_rel_close(W, ssm.interaction(np.zeros((4, 2))), 1e-13)
    assert np.all(rnn.forward(np.zeros((4, 2))) == 0)


@pytest.mark.parametrize("scale", [1e155, 1e-300])
def test_rnn_is_finite_and_consistent_at_extreme_scales(scale):
    rnn = _rnn(seed=18)
    X = scale * rng(19).standard_normal((6, 2))
    Y = rnn.forward(X)
    W = rnn.interaction(X)
    assert np.all(np.isfinite(Y)) and np.all(np.isfinite(W))
    assert two_route_gap(rnn, X) < 1e-12


def test_rnn_attributes_repr_and_read_only_parameters():
    W_h = np.eye(3) * 0.5
    rnn = ElmanRNN(W_h, np.ones((3, 2)), np.ones((4, 3)))
    assert (rnn.N, rnn.d, rnn.p) == (3, 2, 4)
    assert repr(rnn) == "ElmanRNN(N=3, d=2, p=4)"
    W_h[0, 0] = 9.0
    assert rnn.W_h[0, 0] == 0.5
    with pytest.raises(ValueError):
        rnn.W_x[0, 0] = 1.0


@pytest.mark.parametrize("args, match", [
    ((np.ones((2, 3)), np.ones((2, 2)), np.ones((2, 2))), "W_h must be square"),
    ((np.ones((2, 2)), np.ones((3, 2)), np.ones((2, 2))), "W_x has shape"),
    ((np.ones((2, 2)), np.ones((2, 2)), np.ones((2, 3))), "W_y has shape"),
    ((np.ones((2, 2)), np.ones((2, 0)), np.ones((2, 2))), "W_x has shape"),
    ((np.ones((2, 2)), np.ones((2, 2)), np.ones((0, 2))), "W_y has shape"),
    ((np.full((2, 2), np.nan), np.ones((2, 2)), np.ones((2, 2))), "W_h must contain only finite"),
])
def test_rnn_constructor_errors(args, match):
    with pytest.raises(ValueError, match=match):
        ElmanRNN(*args)


@pytest.mark.parametrize("X, match", [(np.ones((3, 3)), "X has shape"), (np.ones(3), "X must have shape"),
                                      (np.ones((0, 2)), "X has shape")])
def test_rnn_rejects_bad_inputs(X, match):
    rnn = _rnn()
    for method in (rnn.forward, rnn.interaction):
        with pytest.raises(ValueError, match=match):
            method(X)


def test_rnn_overflowing_drive_names_X_and_W_x():
    rnn = ElmanRNN(np.eye(2), np.full((2, 2), 1e200), np.eye(2))
    with pytest.raises(ValueError, match=r"X and W_x are too large"):
        rnn.forward(np.full((3, 2), 1e200))


def test_rnn_operator_size_guard_names_X():
    rnn = _rnn()
    with pytest.raises(ValueError, match=r"^X would make the operator W"):
        rnn.interaction(np.ones((20000, 2)))


# ------------------------------------------------------------ KANLayer


def _spline_reference(coef, grid, x):
    """sum_m coef[m] B_m(x) with B_m = BSpline.basis_element on the layer's uniform knots."""
    a, b = grid
    M = len(coef)
    step = (b - a) / (M - 3)
    knots = a + step * (np.arange(M + 4) - 3)
    total = np.zeros_like(x, dtype=float)
    for m in range(M):
        total += coef[m] * np.nan_to_num(BSpline.basis_element(knots[m:m + 5], extrapolate=False)(x))
    return total


def _kan_reference(kan, X):
    """y_(i,p) = sum_q base[p, q] silu(x_iq) + S_pq(x_iq) - S_pq(0), from the definition."""
    grid = tuple(kan.grid)
    Y = np.zeros((X.shape[0], kan.p))
    for p in range(kan.p):
        for q in range(kan.d):
            x = X[:, q]
            spline = _spline_reference(kan.coef[p, q], grid, x) - _spline_reference(kan.coef[p, q], grid,
                                                                                     np.zeros(1))
            Y[:, p] += kan.base[p, q] * x / (1 + np.exp(-x)) + spline
    return Y


@pytest.mark.parametrize("M", [4, 5, 8, 12])
@pytest.mark.parametrize("grid", [(-1.0, 1.0), (-3.0, 2.0), (0.5, 4.0)])
def test_kan_forward_matches_scipy_bsplines(M, grid):
    kan = _kan(d=3, p=2, M=M, seed=M, grid=grid)
    X = 3 * rng(M + 1).standard_normal((40, 3))       # inside, near and outside the grid
    assert_rel_close(kan.forward(X), _kan_reference(kan, X), 1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kan_two_routes_agree_and_the_operator_is_positionwise(seed):
    kan = _kan(seed=seed)
    X = 2 * rng(seed + 5).standard_normal((9, 2))
    assert two_route_gap(kan, X) < 1e-12
    W = kan.interaction(X)
    off = ~np.eye(9, dtype=bool)
    assert np.all(W[off] == 0)
    for i in range(9):                                   # W_ii depends on x_i only
        Z = X.copy()
        Z[np.arange(9) != i] = rng(seed + 6).standard_normal((8, 2))
        assert np.array_equal(kan.interaction(Z)[i, i], W[i, i])


def test_kan_operator_entries_are_chord_slopes():
    kan = _kan(seed=3)
    X = rng(4).standard_normal((5, 2))
    W = kan.interaction(X)
    phi = kan.phi(X)
    for i in range(5):
        assert_rel_close(W[i, i], phi[i] / X[i][None, :], 1e-12)


def test_kan_phi_vanishes_at_zero_and_its_slope_there_is_the_derivative():
    kan = _kan(d=2, p=3, M=7, seed=5, grid=(-2.0, 2.5))
    assert np.all(kan.phi(np.zeros((1, 2))) == 0)
    assert np.all(kan.forward(np.zeros((3, 2))) == 0)
    W0 = kan.interaction(np.zeros((1, 2)))[0, 0]
    eps = 1e-6
    step = np.full((1, 2), eps)
    derivative = (kan.phi(step) - kan.phi(-step))[0] / (2 * eps)
    assert_rel_close(W0, derivative, 1e-8)
    near = kan.interaction(np.full((1, 2), 1e-7))[0, 0]    # continuous at 0
    assert np.max(np.abs(near - W0)) < 1e-5 * np.max(np.abs(W0))


def test_kan_map_is_time_invariant_and_its_operator_moves_with_the_input():
    kan = _kan(seed=6)
    X = rng(7).standard_normal((8, 2))
    s = 3
    delayed = np.concatenate([np.zeros((s, 2)), X[:-s]])
    assert np.array_equal(kan.forward(delayed)[s:], kan.forward(X)[:-s])
    assert np.array_equal(kan.interaction(delayed)[s:, s:], kan.interaction(X)[:-s, :-s])


def test_kan_blocks_fill_the_space_of_matrices():
    """Every entry of W_ii is its own function of one coordinate: generically the blocks span all p x d."""
    from ssmheads import interaction_rank
    kan = _kan(d=2, p=3, seed=8)
    blocks = np.concatenate([kan.interaction(X)[np.arange(6), np.arange(6)]
                             for X in rng(9).standard_normal((4, 6, 2))])
    assert interaction_rank(blocks) == 6


@pytest.mark.parametrize("scale", [1e155, 1e-300])
def test_kan_is_finite_and_consistent_at_extreme_scales(scale):
    kan = _kan(seed=10)
    X = scale * rng(11).standard_normal((6, 2))
    assert np.all(np.isfinite(kan.forward(X))) and np.all(np.isfinite(kan.interaction(X)))
    assert two_route_gap(kan, X) < 1e-12


def test_kan_attributes_repr_and_read_only_parameters():
    coef = np.ones((3, 2, 6))
    kan = KANLayer(coef, np.ones((3, 2)))
    assert (kan.p, kan.d, kan.M, kan.G) == (3, 2, 6, 3)
    assert repr(kan) == "KANLayer(d=2, p=3, G=3)"
    assert kan.grid.tolist() == [-1.0, 1.0]
    coef[0, 0, 0] = 5.0
    assert kan.coef[0, 0, 0] == 1.0
    with pytest.raises(ValueError):
        kan.base[0, 0] = 2.0


@pytest.mark.parametrize("args, match", [
    ((np.ones((2, 2, 3)), np.ones((2, 2))), "coef has shape"),
    ((np.ones((2, 2, 5)), np.ones((2, 3))), "base must have shape"),
    ((np.ones((0, 2, 5)), np.ones((0, 2))), "coef has shape"),
    ((np.ones((2, 2, 5)), np.ones((2, 2)), (1.0, 1.0)), "grid must be an interval"),
    ((np.ones((2, 2, 5)), np.ones((2, 2)), (1.0, -1.0)), "grid must be an interval"),
    ((np.ones((2, 2, 5)), np.ones((2, 2)), (0.0, 1.0, 2.0)), "grid must be an interval"),
    ((np.ones((2, 2, 5)), np.ones((2, 2)), (-1e308, 1e308)), "grid must be an interval"),
    ((np.ones((2, 2, 5)), np.ones((2, 2)), "ab"), "grid must be"),
])
def test_kan_constructor_errors(args, match):
    with pytest.raises(ValueError, match=match):
        KANLayer(*args)


@pytest.mark.parametrize("X, match", [(np.ones((3, 3)), "X has shape"), (np.ones(3), "X must have shape"),
                                      (np.full((2, 2), np.inf), "X must contain only finite")])
def test_kan_rejects_bad_inputs(X, match):
    kan = _kan()
    for method in (kan.forward, kan.interaction, kan.phi):
        with pytest.raises(ValueError, match=match):
            method(X)


def test_apply_interaction_of_the_nonlinear_layers_is_their_output():
    for layer in (_rnn(seed=20), _kan(seed=20)):
        X = rng(21).standard_normal((5, layer.d))
        assert_rel_close(apply_interaction(layer.interaction(X), X), layer.forward(X), 1e-12)


@pytest.mark.parametrize("layer", ["Elman RNN", "KAN layer"])
def test_explorer_offers_the_nonlinear_layers(layer):
    import matplotlib.pyplot as plt

    from ssmheads.widgets import operator_explorer_figure
    from ssmheads.widgets.ch1 import LAYER_NAMES, _nonlinear_layer

    assert layer in LAYER_NAMES
    fig = operator_explorer_figure(layer, n=6, seed=2)
    assert fig.get_suptitle() == f"{layer}: the operator depends on the input"
    plt.close(fig)
    model = _nonlinear_layer(layer, 3, 4)
    assert (model.d, model.p) == (3, 3)
    assert two_route_gap(model, rng(5).standard_normal((7, 3))) < 1e-12


def test_explorer_layers_are_the_chapters():
    """The explorer draws the RNN first and then the KAN layer from one generator, as Chapter 1's table does."""
    from ssmheads.widgets.ch1 import _nonlinear_layer

    g = rng(3).standard_normal
    W_h = g((4, 4))
    W_h *= 0.9 / np.max(np.abs(np.linalg.eigvals(W_h)))
    rnn = ElmanRNN(W_h, g((4, 2)), g((2, 4)) / 2)
    kan = KANLayer(g((2, 2, 8)), g((2, 2)), grid=(-3.0, 3.0))
    got_rnn, got_kan = _nonlinear_layer("Elman RNN", 2, 3), _nonlinear_layer("KAN layer", 2, 3)
    assert np.array_equal(got_rnn.W_h, rnn.W_h) and np.array_equal(got_rnn.W_y, rnn.W_y)
    assert np.array_equal(got_kan.coef, kan.coef) and np.array_equal(got_kan.base, kan.base)
