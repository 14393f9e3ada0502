"""Tests of ``ssmheads.gradients``: Jacobians across distance (Chapter 4).

The mathematics is Chapter 4 (math.md §1.9): Proposition 4.1 (the Jacobian of a softmax head: value,
key and query paths), Theorem 4.1 and its construction (an input on which the last token
puts weight exactly ``a`` on one key, at any distance, and ``||dy_n/dx_key|| >= a
sigma_2(V)``), the dilution remark (bounded tokens cannot keep a weight up as ``n`` grows),
and Proposition 4.3 (a stable SSM's Jacobian is its lag operators and decays like
``kappa(rho_bar) rho_bar^l``; ``cond(S) rho^l`` when ``A`` is diagonalizable; a Jordan
block adds a polynomial factor). Checks G1-G5.

Every expected value is computed here independently of the function under test:
central finite differences of ``forward``, Proposition 4.1 written as a plain loop over
heads, positions and keys, lag operators by repeated multiplication, softmax weights of
the last row recomputed from the projections, and a brute-force maximum for Gelfand's
constant. The training experiments are tested in test_trainability.py. All random draws are seeded.
"""

import itertools

import numpy as np
import pytest
from helpers import assert_rel_close, rel_gap, rng

from ssmheads import (
    Convolution,
    LinearSSM,
    MultiHeadAttention,
    PositionwiseLinear,
    decay_bound,
    exact_heads,
    finite_difference_jacobian,
    gradient_profile,
    highway_input,
    jacobian,
    jacobian_row,
    lag_operators,
    softmax_heads,
)
from ssmheads import gradients
from ssmheads.gradients import DecayBound, gelfand_constant
from ssmheads.heads import FactorizedHeads, SoftmaxSinkHeads
from ssmheads.systems import jordan, random_attention, random_stable, rotation, rotation_matrix

FD_TOL = 1e-6  # the acceptance: analytic against finite differences, relative error <= 1e-6

# ------------------------------------------------------------ independent references


def _prop8_loop(mha, X):
    """Proposition 4.1 term by term: for each head, query ``i`` and key ``j`` it may see,

    ``a_ij V + a_ij (v_j - y_i) (W_K^T q_i)^T / sqrt(d_k)``, plus on ``j == i`` the query path
    ``sum_m a_im (v_m - y_i) (W_Q^T k_m)^T / sqrt(d_k)``; ``V = W_O W_V``, ``v_j = V x_j``.
    """
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    J = np.zeros((n, n, mha.p, mha.d))
    root = np.sqrt(mha.d_k)
    for h in range(mha.H):
        Wq, Wk = mha.W_Q[h], mha.W_K[h]
        V = mha.W_O[h] @ mha.W_V[h]
        for i in range(n):
            keys = list(range(i + 1)) if mha.causal else list(range(n))
            q = Wq @ X[i]
            scores = np.array([q @ (Wk @ X[m]) / root for m in keys])
            weights = np.exp(scores - scores.max())
            weights /= weights.sum()
            values = [V @ X[m] for m in keys]
            y = sum(w * v for w, v in zip(weights, values))
            for w, j, v in zip(weights, keys, values):
                J[i, j] += w * V  # value path
                J[i, j] += w * np.outer(v - y, Wk.T @ q) / root  # key path, through k_j
            for w, m, v in zip(weights, keys, values):
                J[i, i] += w * np.outer(v - y, Wq.T @ (Wk @ X[m])) / root  # query path, through q_i
    return J


def _lags_by_powers(A, B, C, n, D=None):
    """``K_l = C A^l B`` by repeated multiplication; ``D`` added at lag 0."""
    out, P = [], np.asarray(B, dtype=float)
    for _ in range(n):
        out.append(C @ P)
        P = A @ P
    K = np.array(out)
    if D is not None:
        K[0] = K[0] + D
    return K


def _toeplitz_by_loop(K, n):
    p, d = K.shape[1:]
    W = np.zeros((n, n, p, d))
    for i in range(n):
        for j in range(i + 1):
            if i - j < K.shape[0]:
                W[i, j] = K[i - j]
    return W


def _last_row_weights(mha, X, head=0):
    """Softmax weights of the last (causal) query on every key, from the projections: O(n)."""
    X = np.asarray(X, dtype=float)
    q = mha.W_Q[head] @ X[-1]
    s = (X @ mha.W_K[head].T) @ q / np.sqrt(mha.d_k)
    e = np.exp(s - s.max())
    return e / e.sum()


def _spectral(M):
    return float(np.linalg.svd(M, compute_uv=False)[0])


def _sigma2(M):
    return float(np.linalg.svd(M, compute_uv=False)[1])


# ------------------------------------------------------------ 1. analytic Jacobians against finite differences

ATTENTION_CASES = list(itertools.product([1, 2, 4], [True, False], [0.5, 3.0], [1, 2, 7]))


@pytest.mark.parametrize("H, causal, scale, n", ATTENTION_CASES,
                         ids=[f"H{H}-{'causal' if c else 'full'}-scale{s}-n{n}" for H, c, s, n in ATTENTION_CASES])
def test_attention_jacobian_matches_finite_differences(H, causal, scale, n):
    """G1 for every shape: p != d, d_k != d_v, sharp (scale 3) and flat (scale 0.5) attention."""
    seed = 100 * H + 10 * n + int(causal) + int(2 * scale)
    for d, p, d_k, d_v in ((3, 2, 4, 5), (2, 4, 1, 3)):
        mha = random_attention(H, d, p=p, d_k=d_k, d_v=d_v, seed=seed, causal=causal, scale=scale)
        X = rng(seed + 1).standard_normal((n, d))
        J = jacobian(mha, X)
        assert J.shape == (n, n, p, d)
        fd = finite_difference_jacobian(mha.forward, X)
        assert rel_gap(J, fd) <= FD_TOL
        # Proposition 4.1 written out by hand gives the same array to rounding
        assert_rel_close(J, _prop8_loop(mha, X), 1e-12)


def test_attention_jacobian_is_not_the_operator():
    """The key and query paths are really there: dropping them (the operator alone) is wrong."""
    mha = random_attention(2, 3, seed=5, scale=3.0)
    X = rng(6).standard_normal((6, 3))
    J = jacobian(mha, X)
    assert rel_gap(mha.interaction(X), J) > 1e-2
    assert rel_gap(J, finite_difference_jacobian(mha.forward, X)) <= FD_TOL


def test_causal_attention_jacobian_vanishes_above_the_diagonal_and_full_attention_does_not():
    X = rng(7).standard_normal((5, 3))
    J = jacobian(random_attention(2, 3, seed=8, causal=True), X)
    upper = np.triu(np.ones((5, 5), dtype=bool), 1)
    assert np.all(J[upper] == 0)
    J_full = jacobian(random_attention(2, 3, seed=8, causal=False), X)
    assert np.min(np.abs(J_full[upper]).sum(axis=(1, 2))) > 1e-6


def test_prop8_loop_reference_is_itself_right():
    """The by-hand reference agrees with finite differences on its own (so it can referee)."""
    mha = random_attention(1, 2, p=3, d_k=2, d_v=4, seed=11, scale=2.0)
    X = rng(12).standard_normal((4, 2))
    assert rel_gap(_prop8_loop(mha, X), finite_difference_jacobian(mha.forward, X)) <= FD_TOL


def _ssm_with_D(seed=0, N=4, d=3, p=2):
    base = random_stable(N, d, p, rho=0.9, seed=seed)
    return LinearSSM(base.A, base.B, base.C, rng(seed + 50).standard_normal((p, d)))


def _abc(ssm):
    return ssm.A, ssm.B, ssm.C


def _linear_layers():
    g = rng(21)
    K = lag_operators(*_abc(random_stable(3, 2, 2, seed=22)), 6)
    return {
        "LinearSSM with D": _ssm_with_D(),
        "Convolution": Convolution(g.standard_normal((3, 2, 3))),
        "PositionwiseLinear": PositionwiseLinear(g.standard_normal((4, 3))),
        "FactorizedHeads": FactorizedHeads(g.standard_normal((3, 6)), g.standard_normal((3, 2, 3))),
        "exact_heads": exact_heads(*_abc(random_stable(4, 3, 2, seed=23)), 6),
        "SoftmaxSinkHeads": softmax_heads(K),
    }


@pytest.mark.parametrize("name", list(_linear_layers()))
@pytest.mark.parametrize("n", [1, 2, 6])
def test_linear_layer_jacobian_matches_finite_differences_and_operator(name, n):
    layer = _linear_layers()[name]
    X = rng(30 + n).standard_normal((n, layer.d))
    J = jacobian(layer, X)
    assert J.shape == (n, n, layer.p, layer.d)
    assert rel_gap(J, finite_difference_jacobian(layer.forward, X)) <= FD_TOL
    assert_rel_close(J, layer.interaction(X), 1e-15)


def test_softmax_sink_heads_come_from_softmax_heads():
    assert isinstance(_linear_layers()["SoftmaxSinkHeads"], SoftmaxSinkHeads)


def test_finite_difference_jacobian_of_a_known_map():
    """For ``y_i = sum_j M_ij x_j + c`` the central difference is exact up to rounding."""
    g = rng(40)
    M = g.standard_normal((4, 4, 2, 3))
    f = lambda X: np.einsum("ijpd,jd->ip", M, X) + 1.0  # noqa: E731
    X = g.standard_normal((4, 3))
    for eps in (1e-6, 1e-3, 0.5, 1):
        assert_rel_close(finite_difference_jacobian(f, X, eps=eps), M, 1e-8)
    # a quadratic map: central differences are exact for it too, whatever the step
    q = lambda X: (X ** 2).sum(axis=1, keepdims=True) * np.ones((1, 2))  # noqa: E731
    expected = np.zeros((4, 4, 2, 3))
    for i in range(4):
        expected[i, i] = 2 * X[i][None, :] * np.ones((2, 1))
    assert_rel_close(finite_difference_jacobian(q, X, eps=0.1), expected, 1e-12)


@pytest.mark.parametrize("eps", [0, -1e-6, float("nan"), float("inf"), True, "1e-6", None])
def test_finite_difference_jacobian_rejects_bad_steps(eps):
    with pytest.raises(ValueError, match="eps must be a positive number"):
        finite_difference_jacobian(lambda X: X, np.ones((2, 2)), eps=eps)


def test_finite_difference_jacobian_rejects_bad_inputs():
    with pytest.raises(ValueError, match=r"X must have shape \(n, d\)"):
        finite_difference_jacobian(lambda X: X, np.ones(3))


# ------------------------------------------------------------ 2. the SSM Jacobian is the lag operators


@pytest.mark.parametrize("kind", ["normal", "huge", "zero", "tiny", "ones"])
def test_ssm_jacobian_equals_lag_operators_for_every_input(kind):
    ssm = _ssm_with_D(seed=3)
    n = 9
    X = {"normal": rng(1).standard_normal((n, 3)), "huge": 1e150 * rng(2).standard_normal((n, 3)),
         "zero": np.zeros((n, 3)), "tiny": 1e-200 * rng(3).standard_normal((n, 3)), "ones": np.ones((n, 3))}[kind]
    K = _lags_by_powers(ssm.A, ssm.B, ssm.C, n, ssm.D)
    J = jacobian(ssm, X)
    assert_rel_close(J, _toeplitz_by_loop(K, n), 1e-13)
    np.testing.assert_array_equal(J, jacobian(ssm, np.zeros((n, 3))))
    for i in (0, 4, n - 1, -1):
        np.testing.assert_array_equal(jacobian_row(ssm, X, i), J[i])


def test_ssm_jacobian_is_a_true_derivative():
    """Not only equal to the lags: the lags are the derivative of the recurrence."""
    ssm = _ssm_with_D(seed=4)
    X = rng(5).standard_normal((7, 3))
    assert rel_gap(jacobian(ssm, X), finite_difference_jacobian(ssm.forward, X)) <= FD_TOL


def test_ssm_jacobian_row_at_long_sequences_is_the_reversed_lags():
    ssm = random_stable(3, 2, 2, rho=0.99, seed=6)
    n = 4096
    row = jacobian_row(ssm, np.zeros((n, 2)))
    K = _lags_by_powers(ssm.A, ssm.B, ssm.C, n)
    assert_rel_close(row, K[::-1], 1e-10)


# ------------------------------------------------------------ 3. jacobian_row, gradient_profile, errors


def _all_models():
    models = dict(_linear_layers())
    models["attention causal"] = random_attention(2, 3, p=2, d_k=4, seed=60, scale=2.0)
    models["attention full"] = random_attention(3, 3, p=4, d_v=2, seed=61, causal=False)
    return models


@pytest.mark.parametrize("name", list(_all_models()))
def test_jacobian_row_is_the_row_of_jacobian(name):
    model = _all_models()[name]
    n = 6
    X = rng(62).standard_normal((n, model.d))
    J = jacobian(model, X)
    for i in list(range(n)) + [-1, -3, -n, np.int64(2), np.int32(-2)]:
        row = jacobian_row(model, X, i)
        assert row.shape == (n, model.p, model.d)
        assert_rel_close(row, J[int(i)], 1e-13)
    assert_rel_close(jacobian_row(model, X), J[-1], 1e-13)


@pytest.mark.parametrize("name", ["attention causal", "attention full", "LinearSSM with D", "Convolution"])
@pytest.mark.parametrize("i", [0, 3, -1, -4])
def test_gradient_profile_is_the_spectral_norm_against_distance(name, i):
    model = _all_models()[name]
    n = 6
    X = rng(63).standard_normal((n, model.d))
    J = jacobian(model, X)
    distances, norms = gradient_profile(model, X, i)
    i_pos = i % n
    np.testing.assert_array_equal(distances, np.arange(i_pos + 1))
    assert np.issubdtype(distances.dtype, np.integer)
    expected = np.array([_spectral(J[i_pos, i_pos - l]) for l in range(i_pos + 1)])
    assert_rel_close(norms, expected, 1e-13)


def test_gradient_profile_default_is_the_last_position_and_ssm_norms_are_lag_norms():
    ssm = random_stable(4, 2, 3, rho=0.9, seed=64)
    n = 30
    distances, norms = gradient_profile(ssm, rng(65).standard_normal((n, 2)))
    K = _lags_by_powers(ssm.A, ssm.B, ssm.C, n)
    np.testing.assert_array_equal(distances, np.arange(n))
    assert_rel_close(norms, [_spectral(M) for M in K], 1e-12)
    # spectral, not Frobenius: the Frobenius norm would be strictly larger here
    assert np.all(norms < np.linalg.norm(K, axis=(1, 2)))


@pytest.mark.parametrize("i", [6, -7, 100, 1.0, 2.5, "0", True, None, np.float64(1)])
@pytest.mark.parametrize("name", ["attention causal", "LinearSSM with D", "PositionwiseLinear"])
def test_row_position_must_be_an_integer_in_range(name, i):
    model = _all_models()[name]
    X = np.ones((6, model.d))
    with pytest.raises(ValueError, match=r"i must be an integer position in \[-6, 6\)"):
        jacobian_row(model, X, i)
    with pytest.raises(ValueError, match=r"i must be an integer position in \[-6, 6\)"):
        gradient_profile(model, X, i)


@pytest.mark.parametrize("call", [jacobian, jacobian_row, gradient_profile], ids=["jacobian", "row", "profile"])
def test_linear_kernel_attention_has_no_analytic_jacobian(call):
    mha = random_attention(2, 3, seed=70, kernel="linear")
    with pytest.raises(ValueError, match=r"softmax kernel.*got kernel='linear'"):
        call(mha, np.ones((4, 3)))


@pytest.mark.parametrize("model", [np.eye(2), "ssm", None, object(), rotation_matrix(0.3)],
                         ids=["array", "string", "None", "object", "matrix"])
@pytest.mark.parametrize("call", [jacobian, jacobian_row, gradient_profile], ids=["jacobian", "row", "profile"])
def test_unsupported_objects_are_rejected(call, model):
    with pytest.raises(ValueError, match=r"model must be a LinearSSM, MultiHeadAttention \(softmax\).*got "):
        call(model, np.ones((4, 2)))


def test_object_with_an_interaction_method_is_still_rejected():
    class Impostor:
        d = p = 2

        def interaction(self, X):
            return np.zeros((len(X), len(X), 2, 2))

    with pytest.raises(ValueError, match="got Impostor"):
        jacobian(Impostor(), np.ones((3, 2)))


@pytest.mark.parametrize("X, match", [
    (np.ones((4, 2)), r"X has shape \(4, 2\), but axis 1 must be 3"),
    (np.ones(3), r"X must have shape \(n, d\)"),
    (np.full((4, 3), np.nan), "X must contain only finite numbers"),
    (np.ones((0, 3)), "the sequence length n must be at least 1"),
], ids=["width", "1-D", "NaN", "empty"])
@pytest.mark.parametrize("call", [jacobian, jacobian_row], ids=["jacobian", "row"])
def test_bad_inputs_are_rejected(call, X, match):
    with pytest.raises(ValueError, match=match):
        call(random_attention(1, 3, seed=71), X)
    with pytest.raises(ValueError, match=match):
        call(random_stable(2, 3, 2, seed=72), X)


# ------------------------------------------------------------ 4. Theorem 4.1: the gradient highway

HIGHWAY_LAYERS = [(2, 2, 1), (3, 3, 2), (2, 3, 4), (3, 2, 5)]  # (d, p, seed)
HIGHWAY_LENGTHS = [2, 3, 8, 64, 512, 4096]


@pytest.mark.parametrize("d, p, seed", HIGHWAY_LAYERS, ids=[f"d{d}-p{p}-seed{s}" for d, p, s in HIGHWAY_LAYERS])
@pytest.mark.parametrize("a", [0.3, 0.9])
def test_highway_bound_holds_on_the_construction(d, p, seed, a):
    """G2: weight exactly a on the key and ||dy_n/dx_1|| >= a sigma_2(V), for n up to 4096."""
    head = random_attention(1, d, p=p, seed=seed)
    sigma2 = _sigma2(head.value_maps()[0])
    assert sigma2 > 0.05  # the theorem's assumption sigma_2(V) > 0 holds, with room
    bound = a * sigma2
    norms = []
    for n in HIGHWAY_LENGTHS:
        X = highway_input(head, n, a)
        assert X.shape == (n, d)
        assert np.all(X[1:n - 1] == 0)  # zero tokens between the key and the query
        weights = _last_row_weights(head, X)
        assert abs(weights[0] - a) <= 1e-9, (n, weights[0])
        block = jacobian_row(head, X)[0]
        norms.append(_spectral(block))
        assert norms[-1] >= bound * (1 - 1e-12), (n, norms[-1], bound)
    # the norm stays bounded as n grows (it rises slowly with ||x_1|| ~ log n, not with n)
    assert max(norms) < 20 * min(norms)


@pytest.mark.parametrize("n, a", [(2, 0.3), (3, 0.9), (8, 0.6)])
def test_highway_jacobian_row_matches_finite_differences(n, a):
    head = random_attention(1, 2, seed=1)
    X = highway_input(head, n, a)
    fd = finite_difference_jacobian(head.forward, X)[n - 1]
    assert rel_gap(jacobian_row(head, X), fd) <= FD_TOL


def test_highway_norm_does_not_depend_on_distance_but_ssm_norm_does():
    """G4: the key at distance 255, 191, 127, 55, 1 at n = 256 gives the same Jacobian block."""
    head = random_attention(1, 2, seed=4)
    n = 256
    blocks, norms = [], []
    for key in (0, 64, 128, 200, 254):
        X = highway_input(head, n, 0.9, key=key)
        assert abs(_last_row_weights(head, X)[key] - 0.9) <= 1e-9
        block = jacobian_row(head, X)[key]
        blocks.append(block)
        norms.append(_spectral(block))
    assert max(norms) - min(norms) <= 1e-10 * max(norms)
    for block in blocks[1:]:
        assert_rel_close(block, blocks[0], 1e-10)
    ssm = LinearSSM(0.9 * rotation_matrix(0.3), np.eye(2), np.eye(2))
    _, ssm_norms = gradient_profile(ssm, np.zeros((n, 2)))
    for dist in (1, 55, 127, 191, 255):
        assert ssm_norms[dist] == pytest.approx(0.9 ** dist, rel=1e-9)
    assert ssm_norms[255] / ssm_norms[1] < 1e-10


def test_highway_on_another_head_of_a_multi_head_layer():
    mha = random_attention(3, 3, seed=80)
    X = highway_input(mha, 50, 0.7, key=10, head=2)
    assert abs(_last_row_weights(mha, X, head=2)[10] - 0.7) <= 1e-9
    assert abs(_last_row_weights(mha, X, head=0)[10] - 0.7) > 1e-3  # exact for the chosen head only


def test_highway_key_norm_grows_like_log_n():
    """The remark's price: staying at weight a needs a key of norm ~ log n."""
    head = random_attention(1, 2, seed=1)
    key_norms = np.array([np.linalg.norm(highway_input(head, n, 0.9)[0]) for n in (8, 64, 512, 4096, 32768)])
    assert np.all(np.diff(key_norms) > 0)
    steps = np.diff(key_norms)  # each step multiplies n by 8: the norm grows by about c log 8
    assert np.max(steps) / np.min(steps) < 1.5


NOT_A_WEIGHT = [0, 1, 0.0, 1.0, -0.1, 1.5, float("nan"), "0.5", None]


@pytest.mark.parametrize("a", NOT_A_WEIGHT, ids=[repr(a) for a in NOT_A_WEIGHT])
def test_highway_rejects_weights_outside_the_open_interval(a):
    with pytest.raises(ValueError, match="a must be a number strictly between 0 and 1"):
        highway_input(random_attention(1, 2, seed=1), 8, a)


@pytest.mark.parametrize("key", [7, 8, -1, 1.5, True, None, "0"])
def test_highway_rejects_keys_out_of_range(key):
    with pytest.raises(ValueError, match=r"key must be an integer position in \[0, n - 1\) = \[0, 7\)"):
        highway_input(random_attention(1, 2, seed=1), 8, 0.5, key=key)


@pytest.mark.parametrize("n", [1, 0, -3, 2.0, True])
def test_highway_rejects_short_or_non_integer_lengths(n):
    with pytest.raises(ValueError, match="n must be an integer >= 2"):
        highway_input(random_attention(1, 2, seed=1), n, 0.5)


@pytest.mark.parametrize("head", [1, -1, 0.0, True])
def test_highway_rejects_heads_out_of_range(head):
    with pytest.raises(ValueError, match=r"head must be an integer in \[0, 1\)"):
        highway_input(random_attention(1, 2, seed=1), 8, 0.5, head=head)


@pytest.mark.parametrize("layer", [random_attention(1, 2, seed=1, kernel="linear"), rotation(0.3),
                                   np.eye(2), None], ids=["linear kernel", "LinearSSM", "array", "None"])
def test_highway_needs_softmax_attention(layer):
    with pytest.raises(ValueError, match="attention must be a MultiHeadAttention with the softmax kernel"):
        highway_input(layer, 8, 0.5)


def test_highway_rejects_a_head_whose_scores_ignore_the_input():
    W_Q = np.array([[[1.0, 0.0], [0.0, 0.0]]])
    W_K = np.array([[[0.0, 0.0], [0.0, 1.0]]])  # W_K^T W_Q = 0, W_Q and W_K both nonzero
    mha = MultiHeadAttention(W_Q, W_K, np.eye(2)[None], np.eye(2)[None])
    assert np.all(W_K[0].T @ W_Q[0] == 0)
    with pytest.raises(ValueError, match="W_K\\^T W_Q = 0"):
        highway_input(mha, 8, 0.5)
    # the other head of a two-head layer is fine
    good = random_attention(1, 2, seed=1)
    two = MultiHeadAttention(np.concatenate([W_Q, good.W_Q]), np.concatenate([W_K, good.W_K]),
                             np.concatenate([np.eye(2)[None], good.W_V]), np.concatenate([np.eye(2)[None], good.W_O]))
    with pytest.raises(ValueError, match="W_K\\^T W_Q = 0"):
        highway_input(two, 8, 0.5, head=0)
    assert abs(_last_row_weights(two, highway_input(two, 8, 0.5, head=1), head=1)[0] - 0.5) <= 1e-9


# ------------------------------------------------------------ 5. dilution


def _dilution_bound(head, R, n):
    delta = 2 * R ** 2 * _spectral(head.W_Q[0].T @ head.W_K[0]) / np.sqrt(head.d_k)
    return np.exp(delta) / (np.exp(delta) + n - 1)


@pytest.mark.parametrize("R", [0.5, 1.0, 2.0])
def test_bounded_tokens_dilute_the_weight(R):
    """G3: tokens of norm <= R give a_{n,1} <= e^Delta / (e^Delta + n - 1), which tends to 0."""
    head = random_attention(1, 3, seed=90, scale=2.0)
    lengths = [8, 64, 512, 4096]
    bounds = [_dilution_bound(head, R, n) for n in lengths]
    for n, bound in zip(lengths, bounds):
        for seed in range(3):
            X = rng(91 + seed).standard_normal((n, 3))
            X *= R / np.linalg.norm(X, axis=1, keepdims=True)
            weights = _last_row_weights(head, X)
            if n <= 512:  # the layer's own weights agree (its n x n table is too big at n = 4096)
                assert_rel_close(head.coefficients(X)[0, -1], weights, 1e-12)
            assert np.max(weights) <= bound, (n, np.max(weights), bound)  # every key, not only the first
    assert np.all(np.diff(bounds) < 0)
    assert _dilution_bound(head, R, 10 ** 9) < 1e-3 * bounds[0]


def test_dilution_bound_is_attained_by_the_worst_bounded_input():
    """Delta is the right constant: the extreme input (query along the top singular vector,
    the first key aligned with it, the other keys opposite) approaches the bound as n grows."""
    head = random_attention(1, 3, seed=90, scale=2.0)
    R = 1.0
    M = head.W_K[0].T @ head.W_Q[0]
    u = np.linalg.svd(M)[2][0]
    w = M @ (R * u)
    for n, closeness in ((64, 0.9), (4096, 0.998)):
        X = np.tile(-R * w / np.linalg.norm(w), (n, 1))
        X[0] = R * w / np.linalg.norm(w)
        X[-1] = R * u
        weight = _last_row_weights(head, X)[0]
        bound = _dilution_bound(head, R, n)
        assert closeness * bound <= weight <= bound


# ------------------------------------------------------------ 6. Gelfand's constant and the decay bound


def _kappa_brute(A, rho_bar, lags=5000):
    P, best = np.eye(A.shape[0]), 0.0
    for lag in range(lags):
        best = max(best, _spectral(P) / rho_bar ** lag)
        P = A @ P
    return best


@pytest.mark.parametrize("seed", range(5))
def test_decay_bound_holds_for_random_diagonalizable_systems(seed):
    """G5: ||C A^l B|| <= ||C|| ||B|| cond(S) rho^l and <= ||C|| ||B|| kappa rho_bar^l, l < 400."""
    ssm = random_stable(4, 2, 3, rho=0.9, seed=seed)
    lags = np.arange(400)
    bound = decay_bound(ssm.A, ssm.B, ssm.C, lags)
    assert isinstance(bound, DecayBound)
    np.testing.assert_array_equal(bound.lags, lags)
    assert bound.rho_bar == pytest.approx(0.95)
    norms = np.array([_spectral(K) for K in _lags_by_powers(ssm.A, ssm.B, ssm.C, 400)])
    assert bound.diagonalizable is not None and bound.cond_S is not None
    assert np.all(norms <= bound.diagonalizable * (1 + 1e-12))
    assert np.all(norms <= bound.general * (1 + 1e-12))
    scale = _spectral(ssm.C) * _spectral(ssm.B)
    assert_rel_close(bound.diagonalizable, scale * bound.cond_S * 0.9 ** lags, 1e-9)
    assert_rel_close(bound.general, scale * bound.kappa * 0.95 ** lags, 1e-12)
    assert 1 <= bound.kappa <= bound.cond_S * (1 + 1e-9)  # ||A^l|| <= cond(S) rho^l <= cond(S) rho_bar^l
    assert bound.kappa == pytest.approx(_kappa_brute(ssm.A, 0.95, 800), rel=1e-9)
    assert bound.kappa == pytest.approx(gelfand_constant(ssm.A, 0.95), rel=1e-12)


def test_decay_bound_with_a_chosen_rho_bar_and_list_lags():
    ssm = random_stable(3, 2, 2, rho=0.8, seed=7)
    bound = decay_bound(ssm.A, ssm.B, ssm.C, [0, 5, 50], rho_bar=0.85)
    assert bound.rho_bar == 0.85
    assert bound.kappa == pytest.approx(_kappa_brute(ssm.A, 0.85, 1000), rel=1e-9)
    norms = [_spectral(K) for K in _lags_by_powers(ssm.A, ssm.B, ssm.C, 51)[[0, 5, 50]]]
    assert np.all(norms <= bound.general) and np.all(norms <= bound.diagonalizable)


def test_jordan_block_has_only_the_general_bound():
    """G5, Jordan case: J_3(0.9) is not diagonalizable; kappa(0.95) ~ 111.5 and the bound holds."""
    ssm = jordan([(0.9, 3)])
    A = ssm.A
    lags = np.arange(400)
    bound = decay_bound(A, ssm.B, ssm.C, lags, rho_bar=0.95)
    assert bound.diagonalizable is None and bound.cond_S is None
    norms = np.array([_spectral(K) for K in _lags_by_powers(A, ssm.B, ssm.C, 400)])
    assert np.all(norms <= bound.general * (1 + 1e-12))
    # and the bound is not loose: it is attained at the maximising lag (B = C = I)
    assert np.max(norms / bound.general) == pytest.approx(1.0, rel=1e-9)
    kappa = gelfand_constant(A, 0.95)
    assert round(kappa, 1) == 111.5
    assert kappa == pytest.approx(_kappa_brute(A, 0.95), rel=1e-9)
    assert bound.kappa == pytest.approx(kappa, rel=1e-12)


def test_gelfand_rate_approaches_the_spectral_radius_from_above():
    A = jordan([(0.9, 3)]).A
    rates = [_spectral(np.linalg.matrix_power(A, l)) ** (1 / l) for l in (10, 100, 1000)]
    assert [round(r, 2) for r in rates] == [1.35, 0.98, 0.91]
    assert rates[2] == pytest.approx(0.912, abs=5e-4)
    assert rates[0] > rates[1] > rates[2] > 0.9


def test_jordan_block_decays_like_a_degree_two_polynomial_times_rho_to_the_l():
    """||J_3(0.9)^l|| ~ C(l, 2) 0.9^(l - 2): the polynomial factor has degree m - 1 = 2."""
    A = jordan([(0.9, 3)]).A
    for l, tol in ((200, 0.02), (1000, 0.005)):
        leading = l * (l - 1) / 2 * 0.9 ** (l - 2)
        assert _spectral(np.linalg.matrix_power(A, l)) / leading == pytest.approx(1.0, abs=tol)


def test_gelfand_constant_of_a_normal_matrix_is_one():
    assert gelfand_constant(0.9 * rotation_matrix(0.7), 0.95) == pytest.approx(1.0, abs=1e-12)
    assert gelfand_constant(np.array([[0.5]]), 0.6) == 1.0
    assert gelfand_constant(np.zeros((2, 2)), 0.1) == 1.0
    # larger rho_bar, smaller constant; closer to rho, larger
    A = jordan([(0.9, 3)]).A
    assert gelfand_constant(A, 0.99) < gelfand_constant(A, 0.95) < gelfand_constant(A, 0.92)


def test_gelfand_constant_finds_a_late_maximum_after_an_early_spike():
    """||A^l|| / rho_bar^l is not unimodal here: a nilpotent block spikes at l = 1 (10.5), the
    ratio falls to 3.7 at l = 2, and J_5(0.9)'s polynomial transient peaks near l = 75 (about 3e4)."""
    A = np.zeros((7, 7))
    A[0, 1] = 10.0
    A[2:, 2:] = jordan([(0.9, 5)]).A
    brute = _kappa_brute(A, 0.95, 3000)
    assert brute > 1e4
    assert gelfand_constant(A, 0.95) == pytest.approx(brute, rel=1e-9)
    # max_lag caps the search: only l <= max_lag are looked at
    assert gelfand_constant(A, 0.95, max_lag=1) == pytest.approx(10 / 0.95, rel=1e-12)
    assert gelfand_constant(A, 0.95, max_lag=30) == pytest.approx(_kappa_brute(A, 0.95, 31), rel=1e-12)


@pytest.mark.parametrize("rho_bar", [0.9, 0.5, 0.0, -1.0, float("nan"), "0.95", None])
def test_gelfand_constant_needs_rho_bar_above_the_spectral_radius(rho_bar):
    with pytest.raises(ValueError, match=r"rho_bar must exceed the spectral radius 0\.9 of A"):
        gelfand_constant(jordan([(0.9, 3)]).A, rho_bar)


@pytest.mark.parametrize("A, match", [
    (np.ones((2, 3)), r"A must be square with N >= 1"),
    (np.ones(3), r"A must have shape \(N, N\)"),
    (np.full((2, 2), np.nan), "A must contain only finite numbers"),
])
def test_gelfand_constant_rejects_bad_matrices(A, match):
    with pytest.raises(ValueError, match=match):
        gelfand_constant(A, 0.95)


@pytest.mark.parametrize("max_lag", [0, -1, 2.0])
def test_gelfand_constant_rejects_bad_max_lag(max_lag):
    with pytest.raises(ValueError, match="max_lag must be an integer >= 1"):
        gelfand_constant(np.eye(2) * 0.5, 0.9, max_lag=max_lag)


@pytest.mark.parametrize("A", [1.1 * np.eye(2), np.array([[0.5, 0.0], [0.0, -1.0]]), np.eye(3)],
                         ids=["growing", "marginal", "identity"])
def test_decay_bound_rejects_unstable_systems(A):
    with pytest.raises(ValueError, match="A must be stable"):
        decay_bound(A, np.eye(A.shape[0]), np.eye(A.shape[0]), np.arange(3))


def test_decay_bound_on_a_rotation_says_the_system_is_not_stable():
    """The book's marginal example (math.md: 'a rotation ... has no attenuation') should be
    rejected as not stable, not with a message about an argument the caller did not give."""
    A = rotation_matrix(0.3)
    with pytest.raises(ValueError, match="A must be stable"):
        decay_bound(A, np.eye(2), np.eye(2), np.arange(3))


@pytest.mark.parametrize("rho_bar", [0.9, 0.8, 1.0, 1.2, float("nan"), "0.95"])
def test_decay_bound_rejects_rho_bar_outside_the_interval(rho_bar):
    ssm = jordan([(0.9, 2)])
    with pytest.raises(ValueError, match=r"rho_bar must lie in \(rho\(A\), 1\) = \(0\.9, 1\)"):
        decay_bound(ssm.A, ssm.B, ssm.C, np.arange(3), rho_bar=rho_bar)


@pytest.mark.parametrize("lags", [[-1, 0], [0.5, 1.0], np.array([[0, 1]]), np.arange(3.0), ["a"]],
                         ids=["negative", "fractional", "2-D", "float dtype", "strings"])
def test_decay_bound_rejects_bad_lags(lags):
    ssm = jordan([(0.9, 2)])
    with pytest.raises(ValueError, match="lags must be a 1-D array of nonnegative integers"):
        decay_bound(ssm.A, ssm.B, ssm.C, lags)


def test_decay_bound_checks_the_system_shapes():
    with pytest.raises(ValueError, match=r"B has shape \(3, 2\), but axis 0 must be 2"):
        decay_bound(0.5 * np.eye(2), np.ones((3, 2)), np.ones((2, 2)), np.arange(3))


# ------------------------------------------------------------ scale-safe attention Jacobians (issue 11)


@pytest.mark.parametrize("H, causal", [(1, True), (2, False), (4, True)])
@pytest.mark.parametrize("scale", [1e3, 1e10, 1e100, 1e155])
def test_attention_jacobian_of_a_saturated_softmax_is_the_value_path(H, causal, scale):
    """On a huge input every head puts weight exactly 1 on one key, so the key and query paths
    a_ij (P_j - O_i) vanish and J = sum_h alpha_h V_h; the Jacobian must be that, and finite, not
    NaN (overflowed scores) or the rounding error of two huge terms (wrong from |X| near 1e10)."""
    mha = random_attention(H, 2, p=2, d_k=3, d_v=2, seed=7 + H, causal=causal)
    X = rng(3).standard_normal((6, 2)) * scale
    alpha = mha.coefficients(X)
    assert set(np.unique(alpha)) == {0.0, 1.0}
    J = jacobian(mha, X)
    np.testing.assert_array_equal(J, np.tensordot(alpha, mha.value_maps(), axes=(0, 0)))
    np.testing.assert_array_equal(jacobian_row(mha, X, 2), J[2])


def test_attention_jacobian_at_a_large_scale_still_matches_finite_differences():
    """Sharp but not saturated attention (weights from 1e-70 up, five of them in (0.01, 0.99); asserted:
    at least two): the key and query paths matter (J is far from the value path) and still match finite differences."""
    mha = random_attention(2, 3, seed=21, scale=1.0)
    X = rng(22).standard_normal((5, 3)) * 4.0
    alpha = mha.coefficients(X)
    assert np.min(alpha[alpha > 0]) < 1e-60 and np.sum((alpha > 0.01) & (alpha < 0.99)) >= 2
    J = jacobian(mha, X)
    assert rel_gap(J, np.tensordot(alpha, mha.value_maps(), axes=(0, 0))) > 0.2
    assert rel_gap(J, finite_difference_jacobian(mha.forward, X, eps=1e-6)) <= FD_TOL


def test_attention_jacobian_refuses_inputs_whose_queries_overflow_naming_X():
    base = random_attention(2, 3, seed=1)
    mha = MultiHeadAttention(base.W_Q * 1e10, base.W_K, base.W_V, base.W_O)
    X = rng(2).standard_normal((4, 3)) * 1e300  # finite, but W_Q x is about 1e310
    with pytest.raises(ValueError, match=r"^X is too large for this layer: its queries and keys overflow"):
        jacobian(mha, X)
