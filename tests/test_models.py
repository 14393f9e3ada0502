"""Tests of ``ssmheads.models``: every layer, both computation routes, independent references.

The references are written here from the formulas of ``math.md`` §1.3–1.4 and §2
(loops over heads, positions and taps) or come from scipy.signal, so a test
fails if the library's vectorized code and its docstring formula disagree.
"""

import numpy as np
import pytest
from helpers import assert_rel_close, rng
from scipy import signal

from ssmheads import (
    Convolution,
    LinearSSM,
    MultiHeadAttention,
    PositionwiseLinear,
    apply_interaction,
    causality_violation,
    lag_operators,
    toeplitz_deviation,
    two_route_gap,
)
from ssmheads.systems import random_attention, random_stable

SIZES = [1, 2, 5, 16]
SEEDS = [0, 1, 2]


def _ssm(N=4, d=2, p=3, seed=0, skip=False):
    """A random stable MIMO SSM (p != d), optionally with a skip term D."""
    base = random_stable(N, d, p, rho=0.9, seed=seed)
    D = rng(seed + 1000).standard_normal((p, d)) if skip else None
    return LinearSSM(base.A, base.B, base.C, D)


def _mha(H, causal, kernel, seed=0, d=3, p=5, d_k=2, d_v=4):
    """A random attention layer with p != d and d_k != d_v."""
    return random_attention(H, d, p=p, d_k=d_k, d_v=d_v, seed=seed, causal=causal, kernel=kernel, scale=1.5)


def _phi(u):
    """The linear-attention feature map ``elu(u) + 1``, from its definition."""
    return np.where(u > 0, u, np.expm1(np.minimum(u, 0.0))) + 1.0


# ------------------------------------------------------------ lag_operators


def _naive_lags(A, B, C, n, D=None):
    K = np.stack([C @ np.linalg.matrix_power(A, l) @ B for l in range(n)])
    if D is not None:
        K[0] += D
    return K


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100])
@pytest.mark.parametrize("skip", [False, True], ids=["D=None", "with D"])
def test_lag_operators_match_matrix_powers(n, skip):
    """``K[l] = C A^l B`` (``+ D`` at lag 0), for short and long lag ranges."""
    m = _ssm(N=5, d=2, p=3, seed=n, skip=skip)
    D = m.D if skip else None
    K = lag_operators(m.A, m.B, m.C, n, D=D)
    assert K.shape == (n, 3, 2)
    assert_rel_close(K, _naive_lags(m.A, m.B, m.C, n, D))


def _exact_lags(A, B, C, n):
    """``C A^l B`` in exact rational arithmetic (floats are dyadic rationals), rounded once at the end."""
    from fractions import Fraction

    Af, M, Cf = ([[Fraction(x) for x in row] for row in a.tolist()] for a in (A, B, C))
    N, d, p = B.shape[0], B.shape[1], C.shape[0]
    out = []
    for _ in range(n):
        out.append([[float(sum(Cf[a][k] * M[k][b] for k in range(N))) for b in range(d)] for a in range(p)])
        M = [[sum(Af[i][k] * M[k][b] for k in range(N)) for b in range(d)] for i in range(N)]
    return np.array(out)


def test_lag_operators_accurate_on_non_normal_A():
    """Propagating ``A^l B`` one lag at a time stays at rounding level for an ``A`` whose
    eigenvector matrix has condition number ~6e4 (repeated squaring, the previous algorithm,
    gave 1.7e-14 on this system and fails this test)."""
    rng = np.random.default_rng(1)
    N, n = 6, 64
    S = np.eye(N) + np.triu(10.0 * rng.standard_normal((N, N)), 1)
    A = S @ np.diag(np.linspace(-0.95, 0.95, N)) @ np.linalg.inv(S)
    B, C = rng.standard_normal((N, 2)), rng.standard_normal((2, N))
    assert np.linalg.cond(S) > 1e4
    exact = _exact_lags(A, B, C, n)
    K = lag_operators(A, B, C, n)
    errors = np.linalg.norm(K - exact, axis=(1, 2)) / np.linalg.norm(exact, axis=(1, 2))
    assert errors.max() < 1e-14


@pytest.mark.parametrize("n", [1, 2, 7, 33])
def test_lag_operators_match_scipy_dimpulse(n):
    """``scipy.signal.dimpulse`` of (A, B, C, 0) answers ``C A^(t-1) B`` at step t >= 1, so ``K_t`` is step ``t + 1``."""
    m = _ssm(N=4, d=3, p=2, seed=5)
    _, responses = signal.dimpulse((m.A, m.B, m.C, np.zeros((2, 3)), 1), n=n + 1)
    # responses[c] has shape (n + 1, p): the output for a unit impulse on input channel c.
    K_scipy = np.stack([r[1:] for r in responses], axis=-1)
    assert_rel_close(lag_operators(m.A, m.B, m.C, n), K_scipy)


def test_lag_operators_of_nilpotent_shift():
    """math.md Prop. 2(e): the shift e1 -> e2 -> e3 with B = e1 gives K = (1,0), (1,0), (0,1), 0, ..."""
    A = np.eye(3, k=-1)
    B = np.array([[1.0], [0.0], [0.0]])
    C = np.array([[1.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    K = lag_operators(A, B, C, 5)
    np.testing.assert_array_equal(K[:, :, 0], [[1, 0], [1, 0], [0, 1], [0, 0], [0, 0]])


def test_linear_ssm_lag_operators_include_D():
    m = _ssm(skip=True)
    K = m.lag_operators(6)
    assert_rel_close(K, _naive_lags(m.A, m.B, m.C, 6, m.D))
    assert_rel_close(K[0], m.C @ m.B + m.D)


def test_linear_ssm_attributes():
    m = _ssm(N=4, d=2, p=3, skip=False)
    assert (m.N, m.d, m.p) == (4, 2, 3)
    assert m.D.shape == (3, 2) and not np.any(m.D)
    assert repr(m) == "LinearSSM(N=4, d=2, p=3)"
    assert m.spectral_radius == pytest.approx(0.9, rel=1e-12)
    assert LinearSSM(np.diag([0.5, -2.0]), np.eye(2), np.eye(2)).spectral_radius == 2.0


# ------------------------------------------------------------ LinearSSM.forward vs scipy.signal.dlsim


@pytest.mark.parametrize("n", [1, 2, 9])
def test_linear_ssm_forward_matches_scipy_dlsim(n):
    """dlsim runs ``x[k+1] = A x[k] + B u[k]``, ``y[k] = C x[k] + D u[k]`` with ``x[0] = 0``.

    Its state ``x[k+1]`` is our ``h_k`` (the state *after* reading token ``k``), so
    with ``D = 0`` our ``y_k = C h_k`` is dlsim's output one step later: run it on
    the input padded with one zero row and drop its first output. The skip term
    acts on the same step: ``y_k = y_dlsim[k + 1] + D x_k``.
    """
    m = _ssm(N=4, d=2, p=3, seed=n, skip=True)
    X = rng(n).standard_normal((n, 2))
    padded = np.vstack([X, np.zeros((1, 2))])
    _, y_dlsim, x_dlsim = signal.dlsim((m.A, m.B, m.C, np.zeros((3, 2)), 1), padded)
    assert_rel_close(m.forward(X), y_dlsim[1:] + X @ m.D.T)
    # The same claim without a shift: (A, B, C A, C B + D) reads the state before the update.
    _, y_same_step, _ = signal.dlsim((m.A, m.B, m.C @ m.A, m.C @ m.B + m.D, 1), X)
    assert_rel_close(m.forward(X), y_same_step)
    # And the states themselves: h_k = x_dlsim[k + 1].
    assert_rel_close(x_dlsim[1:] @ m.C.T, m.forward(X) - X @ m.D.T)


def test_linear_ssm_forward_without_D_is_the_causal_sum():
    """``y_i = sum_{j <= i} C A^(i-j) B x_j`` written as a double loop."""
    m = _ssm(seed=3)
    X = rng(3).standard_normal((6, 2))
    expected = np.zeros((6, 3))
    for i in range(6):
        for j in range(i + 1):
            expected[i] += m.C @ np.linalg.matrix_power(m.A, i - j) @ m.B @ X[j]
    assert_rel_close(m.forward(X), expected)


# ------------------------------------------------------------ two routes, every model


def _layer_cases():
    cases = [
        ("LinearSSM", lambda s: _ssm(seed=s)),
        ("LinearSSM+D", lambda s: _ssm(seed=s, skip=True)),
        ("Convolution L=1", lambda s: Convolution(rng(s).standard_normal((1, 3, 2)))),
        ("Convolution L=3", lambda s: Convolution(rng(s).standard_normal((3, 3, 2)))),
        ("Convolution L=20", lambda s: Convolution(rng(s).standard_normal((20, 3, 2)))),
        ("PositionwiseLinear", lambda s: PositionwiseLinear(rng(s).standard_normal((3, 2)))),
    ]
    for kernel in ("softmax", "linear"):
        for causal in (True, False):
            for H in (1, 2, 4):
                name = f"MHA {kernel} {'causal' if causal else 'noncausal'} H={H}"
                cases.append((name, lambda s, H=H, c=causal, k=kernel: _mha(H, c, k, seed=s)))
    return cases


LAYER_CASES = _layer_cases()


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("make", [c[1] for c in LAYER_CASES], ids=[c[0] for c in LAYER_CASES])
def test_two_routes_agree(make, n):
    """``forward(X) == apply_interaction(interaction(X), X)`` to 1e-12 relative, on several seeds."""
    for seed in SEEDS:
        layer = make(seed)
        X = rng(100 + seed).standard_normal((n, layer.d))
        Y = layer.forward(X)
        assert Y.shape == (n, layer.p)
        assert layer.interaction(X).shape == (n, n, layer.p, layer.d)
        assert_rel_close(apply_interaction(layer.interaction(X), X), Y)
        assert two_route_gap(layer, X) < 1e-12


# ------------------------------------------------------------ MultiHeadAttention against loops


def _softmax_attention_loop(mha, X):
    """Coefficients and output from the formula, one head, one query at a time."""
    n = X.shape[0]
    alpha = np.zeros((mha.H, n, n))
    Y = np.zeros((n, mha.p))
    for h in range(mha.H):
        q, k, v = X @ mha.W_Q[h].T, X @ mha.W_K[h].T, X @ mha.W_V[h].T
        for i in range(n):
            js = range(i + 1) if mha.causal else range(n)
            scores = np.array([q[i] @ k[j] / np.sqrt(mha.d_k) for j in js])
            e = np.exp(scores - scores.max())
            for j, a in zip(js, e / e.sum()):
                alpha[h, i, j] = a
                Y[i] += a * (mha.W_O[h] @ v[j])
    return alpha, Y


def _linear_attention_loop(mha, X):
    """``alpha_ij = phi(q_i).phi(k_j) / sum_m phi(q_i).phi(k_m)``, with the same output sum."""
    n = X.shape[0]
    alpha = np.zeros((mha.H, n, n))
    Y = np.zeros((n, mha.p))
    for h in range(mha.H):
        q, k, v = _phi(X @ mha.W_Q[h].T), _phi(X @ mha.W_K[h].T), X @ mha.W_V[h].T
        for i in range(n):
            js = list(range(i + 1) if mha.causal else range(n))
            Z = sum(q[i] @ k[m] for m in js)
            for j in js:
                alpha[h, i, j] = q[i] @ k[j] / Z
                Y[i] += alpha[h, i, j] * (mha.W_O[h] @ v[j])
    return alpha, Y


@pytest.mark.parametrize("n", [1, 4, 9])
@pytest.mark.parametrize("H", [1, 2, 4])
@pytest.mark.parametrize("causal", [True, False], ids=["causal", "noncausal"])
@pytest.mark.parametrize("kernel", ["softmax", "linear"])
def test_attention_matches_loop_reference(kernel, causal, H, n):
    mha = _mha(H, causal, kernel, seed=H + n)
    X = rng(n).standard_normal((n, mha.d))
    loop = _softmax_attention_loop if kernel == "softmax" else _linear_attention_loop
    alpha, Y = loop(mha, X)
    assert_rel_close(mha.coefficients(X), alpha)
    assert_rel_close(mha.forward(X), Y)


def test_phi_is_elu_plus_one():
    """Sanity check of the test's own feature map: elu(u) + 1 = u + 1 for u > 0, e^u for u <= 0."""
    u = np.array([-3.0, -0.5, 0.0, 0.5, 2.0])
    np.testing.assert_allclose(_phi(u), [np.exp(-3.0), np.exp(-0.5), 1.0, 1.5, 3.0], rtol=1e-15)


def test_attention_forward_is_the_sum_over_heads():
    """``Y = sum_h alpha^h X W_V^h^T W_O^h^T``: the concatenated heads times the stacked W_O."""
    for kernel in ("softmax", "linear"):
        mha = _mha(4, True, kernel, seed=7)
        X = rng(7).standard_normal((6, mha.d))
        alpha = mha.coefficients(X)
        per_head = sum(alpha[h] @ X @ mha.W_V[h].T @ mha.W_O[h].T for h in range(mha.H))
        assert_rel_close(mha.forward(X), per_head)


def test_value_maps_are_OV_circuits():
    mha = _mha(4, True, "softmax", seed=8)
    V = mha.value_maps()
    assert V.shape == (4, mha.p, mha.d)
    for h in range(4):
        assert_rel_close(V[h], mha.W_O[h] @ mha.W_V[h])


def test_attention_interaction_is_alpha_times_value_maps():
    mha = _mha(2, False, "softmax", seed=9)
    X = rng(9).standard_normal((5, mha.d))
    alpha, V, W = mha.coefficients(X), mha.value_maps(), mha.interaction(X)
    for i in range(5):
        for j in range(5):
            assert_rel_close(W[i, j], alpha[0, i, j] * V[0] + alpha[1, i, j] * V[1])


def test_attention_attributes_and_repr():
    mha = _mha(2, False, "linear")
    assert (mha.H, mha.d, mha.p, mha.d_k, mha.d_v) == (2, 3, 5, 2, 4)
    assert mha.causal is False and mha.kernel == "linear"
    assert repr(mha) == "MultiHeadAttention(H=2, d=3, p=5, d_k=2, d_v=4, causal=False, kernel='linear')"


def test_attention_accepts_numpy_bool_causal():
    mha = random_attention(1, 2, causal=np.bool_(False))
    assert mha.causal is False


def test_softmax_attention_is_stable_for_large_scores():
    """Scores of order 1e3 must not overflow (the max is subtracted before exp)."""
    mha = random_attention(2, 3, seed=0, scale=1e3)
    X = rng(0).standard_normal((6, 3))
    alpha = mha.coefficients(X)
    assert np.all(np.isfinite(alpha))
    np.testing.assert_allclose(alpha.sum(axis=2), 1.0, rtol=1e-12)


# ------------------------------------------------------------ Convolution, PositionwiseLinear against loops


@pytest.mark.parametrize("L, n", [(1, 1), (1, 6), (3, 1), (3, 6), (8, 5)])
def test_convolution_matches_tap_loop(L, n):
    """``y_i = sum_{l < L, l <= i} K_l x_{i-l}``: tokens before the start are zero."""
    K = rng(L * 10 + n).standard_normal((L, 3, 2))
    X = rng(n).standard_normal((n, 2))
    expected = np.zeros((n, 3))
    for i in range(n):
        for l in range(L):
            if i - l >= 0:
                expected[i] += K[l] @ X[i - l]
    conv = Convolution(K)
    assert (conv.L, conv.p, conv.d) == (L, 3, 2)
    assert repr(conv) == f"Convolution(L={L}, d=2, p=3)"
    assert_rel_close(conv.forward(X), expected)


def test_convolution_matches_numpy_convolve_per_channel():
    """For p = d = 1 the layer is the first n samples of ``np.convolve(x, k)``."""
    k, x = rng(1).standard_normal(4), rng(2).standard_normal(10)
    conv = Convolution(k[:, None, None])
    assert_rel_close(conv.forward(x[:, None])[:, 0], np.convolve(x, k)[:10])


def test_positionwise_linear_is_tokenwise():
    W = rng(3).standard_normal((3, 2))
    X = rng(4).standard_normal((5, 2))
    layer = PositionwiseLinear(W)
    assert (layer.p, layer.d) == (3, 2)
    assert repr(layer) == "PositionwiseLinear(d=2, p=3)"
    assert_rel_close(layer.forward(X), np.array([W @ x for x in X]))
    Wop = layer.interaction(X)
    for i in range(5):
        for j in range(5):
            np.testing.assert_array_equal(Wop[i, j], W if i == j else np.zeros((3, 2)))


# ------------------------------------------------------------ structure of the operators


CAUSAL_LAYERS = {
    "LinearSSM": lambda: _ssm(skip=True),
    "Convolution": lambda: Convolution(rng(0).standard_normal((3, 3, 2))),
    "PositionwiseLinear": lambda: PositionwiseLinear(rng(0).standard_normal((3, 2))),
    "softmax causal": lambda: _mha(2, True, "softmax"),
    "linear causal": lambda: _mha(2, True, "linear"),
}
LTI_LAYERS = {k: CAUSAL_LAYERS[k] for k in ("LinearSSM", "Convolution", "PositionwiseLinear")}
ATTENTION_LAYERS = {
    f"{kernel} {'causal' if causal else 'noncausal'}": (lambda k=kernel, c=causal: _mha(2, c, k))
    for kernel in ("softmax", "linear") for causal in (True, False)
}


@pytest.mark.parametrize("make", CAUSAL_LAYERS.values(), ids=CAUSAL_LAYERS.keys())
def test_causal_layers_have_causal_operators(make):
    layer = make()
    X = rng(1).standard_normal((7, layer.d))
    assert causality_violation(layer.interaction(X)) == 0.0


@pytest.mark.parametrize("kernel", ["softmax", "linear"])
def test_noncausal_attention_looks_ahead(kernel):
    """The future changes the past: perturbing the last token changes output 0."""
    mha = _mha(2, False, kernel)
    X = rng(2).standard_normal((6, mha.d))
    assert causality_violation(mha.interaction(X)) > 1e-3
    X2 = X.copy()
    X2[-1] += 1.0
    assert np.max(np.abs(mha.forward(X2)[0] - mha.forward(X)[0])) > 1e-6


@pytest.mark.parametrize("make", LTI_LAYERS.values(), ids=LTI_LAYERS.keys())
def test_time_invariant_layers_are_toeplitz_and_input_independent(make):
    layer = make()
    X1, X2 = rng(3).standard_normal((8, layer.d)), rng(4).standard_normal((8, layer.d))
    W1, W2 = layer.interaction(X1), layer.interaction(X2)
    assert toeplitz_deviation(W1) == 0.0
    np.testing.assert_array_equal(W1, W2)


@pytest.mark.parametrize("make", ATTENTION_LAYERS.values(), ids=ATTENTION_LAYERS.keys())
def test_attention_is_neither_toeplitz_nor_input_independent(make):
    layer = make()
    X1, X2 = rng(5).standard_normal((8, layer.d)), rng(6).standard_normal((8, layer.d))
    W1, W2 = layer.interaction(X1), layer.interaction(X2)
    assert toeplitz_deviation(W1) > 1e-3
    assert np.max(np.abs(W1 - W2)) > 1e-3


@pytest.mark.parametrize("make", ATTENTION_LAYERS.values(), ids=ATTENTION_LAYERS.keys())
def test_attention_coefficients_are_row_stochastic(make):
    """Rows are nonnegative and sum to 1; causal rows are exactly zero above the diagonal."""
    layer = make()
    X = rng(7).standard_normal((9, layer.d))
    alpha = layer.coefficients(X)
    assert alpha.shape == (layer.H, 9, 9)
    assert np.all(alpha >= 0)
    np.testing.assert_allclose(alpha.sum(axis=2), 1.0, rtol=0, atol=1e-14)
    upper = np.triu(np.ones((9, 9), dtype=bool), k=1)
    if layer.causal:
        assert np.all(alpha[:, upper] == 0.0)
    else:
        assert np.all(alpha[:, upper] > 0.0)


def test_ssm_interaction_uses_X_only_for_its_length():
    m = _ssm()
    np.testing.assert_array_equal(m.interaction(np.zeros((5, 2))), m.interaction(rng(8).standard_normal((5, 2))))


# ------------------------------------------------------------ input validation

GOOD_A, GOOD_B, GOOD_C = np.eye(3) * 0.5, np.ones((3, 2)), np.ones((4, 3))


def _mha_parts(H=2, d=3, d_k=2, d_v=4, p=5):
    return dict(W_Q=np.ones((H, d_k, d)), W_K=np.ones((H, d_k, d)), W_V=np.ones((H, d_v, d)), W_O=np.ones((H, p, d_v)))


def _mha_with(**changes):
    parts = _mha_parts()
    parts.update(changes)
    return MultiHeadAttention(**parts)


SYSTEM_ERRORS = [
    ("A not square", dict(A=np.ones((3, 2))), r"A must be square, shape \(N, N\); got shape \(3, 2\)"),
    ("A 1-D", dict(A=np.ones(3)), r"A must have shape \(N, N\) \(2 dimensions\); got shape \(3,\)"),
    ("A empty", dict(A=np.ones((0, 0)), B=np.ones((0, 2)), C=np.ones((4, 0))), r"A has shape \(0, 0\); the state size N must be at least 1"),
    ("A NaN", dict(A=np.full((3, 3), np.nan)), "A must contain only finite numbers"),
    ("B rows", dict(B=np.ones((2, 2))), r"B has shape \(2, 2\), but axis 0 must be 3 \(the state size N of A\)"),
    ("B no columns", dict(B=np.ones((3, 0))), r"B has shape \(3, 0\); the token width d must be at least 1"),
    ("C columns", dict(C=np.ones((4, 2))), r"C has shape \(4, 2\), but axis 1 must be 3 \(the state size N of A\)"),
    ("C no rows", dict(C=np.ones((0, 3))), r"C has shape \(0, 3\); the output width p must be at least 1"),
    ("D shape", dict(D=np.ones((2, 4))), r"D must have shape \(p, d\) = \(4, 2\) \(p from C, d from B\); got shape \(2, 4\)"),
    ("D inf", dict(D=np.full((4, 2), np.inf)), "D must contain only finite numbers"),
    ("B non-numeric", dict(B="abc"), r"B must be a numeric array of shape \(N, d\); got str"),
]


@pytest.mark.parametrize("changes, match", [c[1:] for c in SYSTEM_ERRORS], ids=[c[0] for c in SYSTEM_ERRORS])
def test_system_errors(changes, match):
    """The same (A, B, C, D) checks guard the LinearSSM constructor and lag_operators."""
    args = dict(A=GOOD_A, B=GOOD_B, C=GOOD_C, D=None)
    args.update(changes)
    with pytest.raises(ValueError, match=match):
        LinearSSM(**args)
    with pytest.raises(ValueError, match=match):
        lag_operators(args["A"], args["B"], args["C"], 4, D=args["D"])


@pytest.mark.parametrize("n", [0, -2, 2.5, True, np.float64(3.0), "4"])
def test_lag_operators_rejects_bad_n(n):
    with pytest.raises(ValueError, match="n must be an integer >= 1; got"):
        lag_operators(GOOD_A, GOOD_B, GOOD_C, n)
    with pytest.raises(ValueError, match="n must be an integer >= 1; got"):
        LinearSSM(GOOD_A, GOOD_B, GOOD_C).lag_operators(n)


MHA_ERRORS = [
    ("H of W_K", dict(W_K=np.ones((3, 2, 3))), r"W_K has shape \(3, 2, 3\), but axis 0 must be 2 \(the number of heads H of W_Q\)"),
    ("H of W_V", dict(W_V=np.ones((1, 4, 3))), r"W_V has shape \(1, 4, 3\), but axis 0 must be 2 \(the number of heads H of W_Q\)"),
    ("H of W_O", dict(W_O=np.ones((4, 5, 4))), r"W_O has shape \(4, 5, 4\), but axis 0 must be 2 \(the number of heads H of W_Q\)"),
    ("d_k of W_K", dict(W_K=np.ones((2, 3, 3))), r"W_K has shape \(2, 3, 3\), but axis 1 must be 2 \(the key width d_k of W_Q\)"),
    ("d of W_K", dict(W_K=np.ones((2, 2, 4))), r"W_K has shape \(2, 2, 4\), but axis 2 must be 3 \(the token width d of W_Q\)"),
    ("d of W_V", dict(W_V=np.ones((2, 4, 2))), r"W_V has shape \(2, 4, 2\), but axis 2 must be 3 \(the token width d of W_Q\)"),
    ("d_v of W_O", dict(W_O=np.ones((2, 5, 3))), r"W_O has shape \(2, 5, 3\), but axis 2 must be 4 \(the value width d_v of W_V\)"),
    ("W_Q 2-D", dict(W_Q=np.ones((2, 3))), r"W_Q must have shape \(H, d_k, d\) \(3 dimensions\); got shape \(2, 3\)"),
    ("W_O 2-D", dict(W_O=np.ones((5, 4))), r"W_O must have shape \(H, p, d_v\) \(3 dimensions\)"),
    ("W_V NaN", dict(W_V=np.full((2, 4, 3), np.nan)), "W_V must contain only finite numbers"),
    ("no heads", dict(**_mha_parts(H=0)), r"W_Q has shape \(0, 2, 3\); the number of heads H must be at least 1"),
    ("no key width", dict(**_mha_parts(d_k=0)), r"W_Q has shape \(2, 0, 3\); the key width d_k must be at least 1"),
    ("no token width", dict(**_mha_parts(d=0)), r"W_Q has shape \(2, 2, 0\); the token width d must be at least 1"),
    ("no value width", dict(**_mha_parts(d_v=0)), r"W_V has shape \(2, 0, 3\); the value width d_v must be at least 1"),
    ("no output width", dict(**_mha_parts(p=0)), r"W_O has shape \(2, 0, 4\); the output width p must be at least 1"),
    ("kernel name", dict(kernel="cosine"), r"kernel must be 'softmax' or 'linear'; got 'cosine'"),
    ("kernel case", dict(kernel="Softmax"), r"kernel must be 'softmax' or 'linear'; got 'Softmax'"),
    ("causal int", dict(causal=1), "causal must be True or False; got 1"),
    ("causal str", dict(causal="yes"), "causal must be True or False; got 'yes'"),
    ("causal None", dict(causal=None), "causal must be True or False; got None"),
]


@pytest.mark.parametrize("changes, match", [c[1:] for c in MHA_ERRORS], ids=[c[0] for c in MHA_ERRORS])
def test_attention_constructor_errors(changes, match):
    with pytest.raises(ValueError, match=match):
        _mha_with(**changes)


CONV_PL_ERRORS = [
    ("kernel 2-D", lambda: Convolution(np.ones((3, 2))), r"kernel must have shape \(L, p, d\) \(3 dimensions\); got shape \(3, 2\)"),
    ("no taps", lambda: Convolution(np.ones((0, 2, 2))), r"kernel has shape \(0, 2, 2\); the number of taps L must be at least 1"),
    ("kernel p=0", lambda: Convolution(np.ones((2, 0, 2))), r"kernel has shape \(2, 0, 2\); the output width p must be at least 1"),
    ("kernel d=0", lambda: Convolution(np.ones((2, 2, 0))), r"kernel has shape \(2, 2, 0\); the token width d must be at least 1"),
    ("kernel inf", lambda: Convolution(np.full((2, 2, 2), -np.inf)), "kernel must contain only finite numbers"),
    ("W 3-D", lambda: PositionwiseLinear(np.ones((1, 2, 2))), r"W must have shape \(p, d\) \(2 dimensions\); got shape \(1, 2, 2\)"),
    ("W p=0", lambda: PositionwiseLinear(np.ones((0, 2))), r"W has shape \(0, 2\); the output width p must be at least 1"),
    ("W d=0", lambda: PositionwiseLinear(np.ones((2, 0))), r"W has shape \(2, 0\); the token width d must be at least 1"),
]


@pytest.mark.parametrize("build, match", [c[1:] for c in CONV_PL_ERRORS], ids=[c[0] for c in CONV_PL_ERRORS])
def test_convolution_and_positionwise_constructor_errors(build, match):
    with pytest.raises(ValueError, match=match):
        build()


ALL_LAYERS = {
    "LinearSSM": lambda: _ssm(d=2),
    "Convolution": lambda: Convolution(np.ones((3, 3, 2))),
    "PositionwiseLinear": lambda: PositionwiseLinear(np.ones((3, 2))),
    "MHA softmax": lambda: _mha(2, True, "softmax", d=2),
    "MHA linear": lambda: _mha(2, False, "linear", d=2),
}
BAD_INPUTS = [
    ("wrong width", np.ones((4, 3)), r"X has shape \(4, 3\), but axis 1 must be 2 \(the layer's token width d\)"),
    ("1-D", np.ones(4), r"X must have shape \(n, d\) \(2 dimensions\); got shape \(4,\)"),
    ("3-D", np.ones((1, 4, 2)), r"X must have shape \(n, d\) \(2 dimensions\); got shape \(1, 4, 2\)"),
    ("NaN", np.array([[0.0, np.nan]]), "X must contain only finite numbers; got NaN or infinity"),
    ("inf", np.array([[np.inf, 0.0], [0.0, 0.0]]), "X must contain only finite numbers; got NaN or infinity"),
    ("empty", np.ones((0, 2)), r"X has shape \(0, 2\); the sequence length n must be at least 1"),
    ("ragged", [[1.0, 2.0], [3.0]], r"X must be a numeric array of shape \(n, d\)"),
]


@pytest.mark.parametrize("X, match", [c[1:] for c in BAD_INPUTS], ids=[c[0] for c in BAD_INPUTS])
@pytest.mark.parametrize("make", ALL_LAYERS.values(), ids=ALL_LAYERS.keys())
def test_layers_reject_bad_inputs(make, X, match):
    """Every public method that takes X checks it the same way."""
    layer = make()
    methods = [layer.forward, layer.interaction] + ([layer.coefficients] if hasattr(layer, "coefficients") else [])
    for method in methods:
        with pytest.raises(ValueError, match=match):
            method(X)


# ------------------------------------------------------------ parameters are copied and frozen


COPY_CASES = {
    "LinearSSM": (lambda a: LinearSSM(a["A"], a["B"], a["C"], a["D"]),
                  lambda: dict(A=np.eye(2) * 0.5, B=np.ones((2, 2)), C=np.ones((3, 2)), D=np.ones((3, 2)))),
    "MultiHeadAttention": (lambda a: MultiHeadAttention(a["W_Q"], a["W_K"], a["W_V"], a["W_O"]), _mha_parts),
    "Convolution": (lambda a: Convolution(a["kernel"]), lambda: dict(kernel=np.ones((3, 2, 2)))),
    "PositionwiseLinear": (lambda a: PositionwiseLinear(a["W"]), lambda: dict(W=np.ones((2, 2)))),
}


@pytest.mark.parametrize("build, make_arrays", COPY_CASES.values(), ids=COPY_CASES.keys())
def test_constructors_copy_their_inputs(build, make_arrays):
    """Mutating the caller's arrays afterwards leaves the model alone; the caller's arrays stay writeable."""
    arrays = make_arrays()
    layer = build(arrays)
    X = np.linspace(-1, 1, 4 * layer.d).reshape(4, layer.d)
    before = layer.forward(X)
    for name, arr in arrays.items():
        assert arr.flags.writeable, f"the caller's {name} was made read-only"
        arr[...] = 7.0
        stored = getattr(layer, name)
        assert not np.shares_memory(stored, arr)
        assert not np.any(stored == 7.0)
    np.testing.assert_array_equal(layer.forward(X), before)


@pytest.mark.parametrize("build, make_arrays", COPY_CASES.values(), ids=COPY_CASES.keys())
def test_model_parameters_are_read_only(build, make_arrays):
    arrays = make_arrays()
    layer = build(arrays)
    for name in arrays:
        with pytest.raises(ValueError, match="read-only"):
            getattr(layer, name)[...] = 0.0


def test_linear_ssm_default_D_is_read_only_zero():
    m = LinearSSM(GOOD_A, GOOD_B, GOOD_C)
    with pytest.raises(ValueError, match="read-only"):
        m.D[0, 0] = 1.0


# ---- issue 11: unstable systems, size guards, scale-safe attention ----------------------------

def test_unstable_ssm_names_the_spectral_radius_and_the_overflow_length():
    import warnings as _w
    from ssmheads import systems as _systems
    ssm = LinearSSM(1.5 * _systems.rotation_matrix(0.3), np.eye(2), np.eye(2))
    with _w.catch_warnings():
        _w.simplefilter("error")  # no RuntimeWarning on the way to the error
        with pytest.raises(ValueError, match=r"spectral radius 1\.5 > 1 .* overflows the largest float at t = \d+"):
            ssm.forward(np.ones((3000, 2)))
        with pytest.raises(ValueError, match=r"spectral radius 1\.5 > 1 .* at l = \d+"):
            ssm.interaction(np.ones((3000, 2)))
    short = ssm.forward(np.ones((100, 2)))  # short sequences of an unstable system are computed as usual
    assert np.all(np.isfinite(short)) and np.max(np.abs(short)) > 1.5 ** 90


def test_size_guards_refuse_before_allocating():
    ssm = LinearSSM(0.5 * np.eye(2), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match=r"X would make the operator W .* GiB, above the limit of 1\.00 GiB"):
        ssm.interaction(np.ones((20000, 2)))
    with pytest.raises(ValueError, match=r"n = 10000000 lags is more than"):
        lag_operators(np.eye(2) * 0.5, np.eye(2), np.eye(2), 10**7)
    att = MultiHeadAttention(*(np.ones((1, 2, 2)),) * 4)
    with pytest.raises(ValueError, match=r"X would make the attention weights alpha .* use forward\(X\)"):
        att.coefficients(np.ones((20000, 2)))
    with pytest.raises(ValueError, match=r"X would make the operator W"):
        Convolution(np.ones((2, 1, 1))).interaction(np.ones((20000, 1)))


def test_softmax_forward_by_row_blocks_matches_the_full_weights(monkeypatch):
    import ssmheads.models as models
    rng = np.random.default_rng(3)
    att = MultiHeadAttention(rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 2)),
                             rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2)))
    X = rng.standard_normal((9, 2))
    full = att.forward(X)
    monkeypatch.setattr(models, "_BLOCK_ENTRIES", 2 * 9 * 2)  # blocks of 2 rows
    assert np.max(np.abs(att.forward(X) - full)) < 1e-13


@pytest.mark.parametrize("causal", [True, False])
def test_softmax_attention_is_finite_and_right_at_extreme_scales(causal):
    rng = np.random.default_rng(4)
    att = MultiHeadAttention(rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 2)),
                             rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2)), causal=causal)
    X = rng.standard_normal((7, 2)) * 1e155
    alpha = att.coefficients(X)
    assert np.all(np.isfinite(alpha)) and np.max(np.abs(alpha.sum(axis=2) - 1)) < 1e-12
    # scores of size ~1e310 make softmax a hard maximum: each row puts its weight on its best key(s)
    Q = np.einsum("hkd,nd->hnk", att.W_Q, X / 1e155)
    K = np.einsum("hkd,nd->hnk", att.W_K, X / 1e155)
    scores = Q @ K.transpose(0, 2, 1)
    if causal:
        scores = np.where(np.tril(np.ones((7, 7), dtype=bool)), scores, -np.inf)
    best = scores == scores.max(axis=2, keepdims=True)
    assert np.all(alpha[~best] == 0.0)
    Y = att.forward(X)
    assert np.max(np.abs(Y - np.einsum("ijpd,jd->ip", att.interaction(X), X))) / np.max(np.abs(Y)) < 1e-12


def test_linear_attention_at_huge_scale_is_right_or_names_X_and_the_safe_scale():
    rng = np.random.default_rng(5)
    att = MultiHeadAttention(rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 2)),
                             rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2)), kernel="linear")
    X = rng.standard_normal((7, 2))
    with pytest.raises(ValueError, match=r"X is too large for the linear kernel.*multiply X by at most"):
        att.forward(X * 1e155)
    # at 1e200 the features phi are ~1e200 and their products overflow: the normalised path still gives
    # the ratio of finite numbers, and the two routes agree
    positive = MultiHeadAttention(np.abs(att.W_Q), np.abs(att.W_K), att.W_V, att.W_O, kernel="linear")
    Xp = np.abs(X)  # all features positive: phi(u) = u + 1, no underflow
    Y = positive.forward(Xp * 1e200)
    W = positive.interaction(Xp * 1e200)
    assert np.all(np.isfinite(Y))
    assert np.max(np.abs(Y - np.einsum("ijpd,jd->ip", W, Xp * 1e200))) / np.max(np.abs(Y)) < 1e-12
