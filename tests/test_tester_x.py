"""Findings of the outside tester (issue 11 follow-up, part X): each exact reproducing call, fixed."""

import time

import numpy as np
import pytest

import ssmheads as sh
from ssmheads import heads, models, span


def _mha():
    return sh.systems.random_attention(1, 2)


# 1. exact_heads counts heads by the rule of lag_span_dimension
def test_exact_heads_matches_lag_span_dimension_running_count():
    A, I = np.diag([0.5, 0.5 + 1e-12]), np.eye(2)
    k = span.lag_span_dimension(A, I, I, 4096)
    assert k == 2
    fh = heads.exact_heads(A, I, I, 4096)
    assert fh.num_heads == k
    K = models.lag_operators(A, I, I, 4096)
    err = np.max(np.abs(fh.lag_operators() - K)) / np.max(np.abs(K))
    assert err < 1e-10


# 1b. ... including the rounding floor tau_l: lags that cancel to zero get no
# head (Chapter 2's cancelling modes: K_0 = K_1 = 0 exactly, computed ones of
# size 1e-16, which the relative rule alone counted as a second head)
@pytest.mark.parametrize("seed", range(4))
def test_exact_heads_count_the_rounding_floor_like_lag_span_dimension(seed):
    rng = np.random.default_rng(seed)
    A = np.diag([0.5, 0.6, 0.7])
    b, u = rng.standard_normal(4), rng.standard_normal(3)
    B, C = np.tile(b, (3, 1)), np.stack([u, -2 * u, u], axis=1)
    for n in (2, 3, 8, 64):
        k = span.lag_span_dimension(A, B, C, n)
        assert k == (0 if n <= 2 else 1)  # the exact values
        fh = heads.exact_heads(A, B, C, n)
        assert fh.num_heads == k
        if k:  # the one head still reproduces every lag
            K = models.lag_operators(A, B, C, n)
            err = np.max(np.abs(fh.lag_operators() - K)) / np.max(np.abs(K))
            assert err < 1e-12


@pytest.mark.parametrize("seed", range(6))
def test_exact_heads_match_lag_span_dimension_on_random_systems(seed):
    rng = np.random.default_rng(100 + seed)
    N, p, d = (int(v) for v in rng.integers(1, 6, size=3))
    s = sh.systems.random_stable(N, p, d, seed=seed)
    for n in (1, 5, 40):
        k = span.lag_span_dimension(s.A, s.B, s.C, n)
        fh = heads.exact_heads(s.A, s.B, s.C, n)
        assert fh.num_heads == k
        K = models.lag_operators(s.A, s.B, s.C, n)
        err = np.max(np.abs(fh.lag_operators() - K)) / np.max(np.abs(K))
        assert err < 1e-10


# 2. span near overflow
def test_span_rank_basis_singular_values_near_overflow():
    rng = np.random.default_rng(0)
    K = rng.standard_normal((20, 3, 3))
    K = K / abs(K).max() * 1.5e308
    assert span.interaction_rank(K) == 9
    basis = span.span_basis(K)
    assert basis.shape == (9, 3, 3)
    gram = np.einsum("apd,bpd->ab", basis, basis)
    assert np.max(np.abs(gram - np.eye(9))) < 1e-12
    with pytest.raises(ValueError, match="mats"):
        span.singular_values(K)
    small = span.singular_values(K * 1e-10)
    assert np.all(np.isfinite(small)) and small[0] > 1e298


# 3. non-finite forward
@pytest.mark.parametrize("call, name", [
    (lambda: models.Convolution(np.full((2, 1, 1), 1e200)).forward(np.full((3, 1), 1e200)), "X"),
    (lambda: models.PositionwiseLinear(np.full((1, 1), 1e200)).forward(np.full((3, 1), 1e200)), "X"),
    (lambda: heads.FactorizedHeads(np.full((1, 3), 1e200), np.full((1, 1, 1), 1e200)).forward(np.ones((3, 1))),
     "coefficients"),
    (lambda: heads.FactorizedHeads(np.full((1, 3), 1e200), np.full((1, 1, 1), 1e200)).lag_operators(),
     "coefficients"),
    (lambda: heads.SoftmaxSinkHeads(np.zeros((1, 3, 4)), np.full((1, 1, 1), 1e300)).forward(
        np.full((3, 1), 1e300)), "values"),
])
def test_forward_overflow_raises(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# 4. memory and time guards
def test_white_noise_weights_guard():
    for n in (10**9, 10**20):
        with pytest.raises(ValueError, match="^n would make"):
            heads.white_noise_weights(n)


def test_factorized_forward_guard():
    with pytest.raises(ValueError, match="^X would make"):
        heads.FactorizedHeads(np.ones((1, 20000)), np.ones((1, 1, 1))).forward(np.ones((20000, 1)))


def test_softmax_sink_interaction_guard():
    with pytest.raises(ValueError, match="^X would make"):
        heads.SoftmaxSinkHeads(np.zeros((1, 2000, 2001)), np.ones((1, 32, 32))).interaction(np.ones((2000, 32)))


def test_stationary_residual_guards():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="B and C"):
        heads.stationary_residual(np.diag([.5, .4, .3, .2]), rng.standard_normal((4, 100)),
                                  rng.standard_normal((100, 4)), 2)
    start = time.perf_counter()
    with pytest.raises(ValueError, match="^A is too large"):
        heads.stationary_residual(np.diag(np.linspace(-.9, .9, 3000)), np.ones((3000, 1)), np.ones((1, 3000)), 1)
    assert time.perf_counter() - start < 7.0
    with pytest.raises(ValueError, match="^A is too far from normal"):
        heads.stationary_residual(np.array([[.5, 1e200], [0, .5]]), np.ones((2, 1)), np.ones((1, 2)), 1)


# 5. lag_span_profile length cap
def test_lag_span_profile_cap():
    with pytest.raises(ValueError, match="^n must be at most"):
        span.lag_span_profile([[.5]], [[1.]], [[1.]], 10**5)
    s = sh.systems.random_stable(16, 8, 8)
    with pytest.raises(ValueError, match="^n must be at most"):
        span.lag_span_profile(s.A, s.B, s.C, 20000)


# 6. messages
def test_kernel_array_message():
    mha = _mha()
    with pytest.raises(ValueError, match="kernel must be"):
        models.MultiHeadAttention(mha.W_Q, mha.W_K, mha.W_V, mha.W_O, kernel=np.array(["softmax", "linear"]))


@pytest.mark.parametrize("strict", [np.array([True, False]), "abc"])
def test_strict_message(strict):
    with pytest.raises(ValueError, match="strict must be"):
        heads.nonnegative_heads(np.ones((3, 1, 1)), strict=strict)


def test_softmax_overflow_message():
    mha = _mha()
    layer = models.MultiHeadAttention(mha.W_Q * 1e300, mha.W_K, mha.W_V, mha.W_O)
    with np.errstate(over="ignore", invalid="ignore"):
        with pytest.raises(ValueError, match="softmax") as info:
            layer.forward(np.full((4, 2), 1e10))
    assert "W_Q" in str(info.value) and "nan" not in str(info.value)


def test_factorized_heads_argument_names():
    fh = heads.FactorizedHeads(np.ones((1, 3)), np.ones((1, 1, 1)))
    with pytest.raises(ValueError, match="^n_or_X"):
        fh.interaction(n_or_X="abc")
    with pytest.raises(ValueError, match="^n_or_X"):
        fh.interaction(n_or_X=np.ones((2, 5)))
    with pytest.raises(ValueError, match="^n must"):
        fh.lag_operators(n=np.ones((2, 1)))
    with pytest.raises(ValueError, match="^n = 4 exceeds"):
        fh.lag_operators(n=4)


# 7. minimal_polynomial_degree of large normal matrices whose powers do not decay
def _orthogonal(N, seed):
    Q, R = np.linalg.qr(np.random.default_rng(seed).standard_normal((N, N)))
    return Q * np.sign(np.diag(R))


def test_minimal_polynomial_degree_large_normal():
    assert span.minimal_polynomial_degree(np.eye(800)) == 1
    assert span.minimal_polynomial_degree(np.diag(np.tile([1.0, -1.0], 300))) == 2
    assert span.minimal_polynomial_degree(_orthogonal(800, 0)) == 800


def test_normal_degree_agrees_with_stacked_powers():
    rng = np.random.default_rng(1)
    for N in range(2, 41, 3):
        S = rng.standard_normal((N, N))
        Q = _orthogonal(N, 100 + N)
        cases = [np.eye(N), np.diag(np.tile([1.0, -1.0], N)[:N]), _orthogonal(N, N),
                 np.diag(rng.integers(1, 4, N) / 3.0), S + S.T,
                 Q @ np.diag(np.round(rng.uniform(-1, 1, N), 1)) @ Q.T]
        for A in cases:
            A = A / np.linalg.norm(A, 2)
            assert span._is_normal(A)
            assert span._normal_degree(A, span.default_rtol(N, N, N)) == span.minimal_polynomial_degree(A)


def test_linear_attention_forward_runs_long_sequences_in_blocks():
    """Outside tester: n = 120000 with d_k = d_v = 32 ran out of a 2 GiB cap (two (1, n, 32, 32)
    arrays). The causal running sums are now carried through blocks of rows; the result equals
    the one-pass cumsum exactly."""
    import ssmheads as sh
    from ssmheads import models

    layer = sh.systems.random_attention(2, 3, d_k=4, d_v=5, kernel="linear")
    X = np.random.default_rng(0).standard_normal((300, 3))
    old = models._BLOCK_ENTRIES
    try:
        models._BLOCK_ENTRIES = 2 * 5 * 4 * 7  # blocks of 7 rows
        blocked = layer.forward(X)
    finally:
        models._BLOCK_ENTRIES = old
    assert np.array_equal(blocked, layer.forward(X))  # same additions in the same order
    assert sh.two_route_gap(layer, X) < 1e-12
    big = sh.systems.random_attention(1, 1, d_k=32, d_v=32, kernel="linear")
    assert np.all(np.isfinite(big.forward(np.ones((120000, 1)))))
