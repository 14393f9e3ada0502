"""Property tests (hypothesis) of the library's identities on random instances, including
non-normal and badly scaled ones. Hypothesis draws the *parameters* (sizes, seeds, condition
numbers, scales) and shrinks a failure to the smallest of them; the arrays are drawn from
``np.random.default_rng(seed)``. Runs are derandomized, so CI sees the same examples every time.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ssmheads import LinearSSM, lag_operators, lag_span_dimension, minimal_polynomial_degree, optimal_heads
from ssmheads.gradients import finite_difference_jacobian, jacobian
from ssmheads.operator import two_route_gap
from ssmheads.systems import random_attention

EPS = np.finfo(float).eps
PROFILE = settings(derandomize=True, deadline=None, database=None, max_examples=40)

seeds = st.integers(0, 2**31 - 1)


def _matrix_with_condition(g, N, log_cond):
    """A random N x N matrix with singular values spread geometrically from 1 to 10^log_cond."""
    U = np.linalg.qr(g.standard_normal((N, N)))[0]
    V = np.linalg.qr(g.standard_normal((N, N)))[0]
    return U @ np.diag(np.logspace(0, log_cond, N)) @ V.T


def _spectrum_block(g, N, rho, separated):
    """Block-diagonal matrix with real eigenvalues and 2 x 2 rotation blocks, spectral radius <= rho.
    ``separated``: eigenvalues at least about 0.1 apart (no resolution-limit cases)."""
    D = np.zeros((N, N))
    i = 0
    while i < N:
        if i + 1 < N and g.random() < 0.4:
            r, t = rho * g.uniform(0.3, 1.0), g.uniform(0.3, 2.8)
            D[i:i + 2, i:i + 2] = r * np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
            i += 2
        else:
            D[i, i] = rho * g.uniform(-1.0, 1.0)
            i += 1
    if separated:  # replace with a well-separated real spectrum, repeats allowed (exactly)
        grid = rho * np.linspace(-1.0, 1.0, 11)
        D = np.diag(g.choice(grid, size=N))
    return D


def _non_normal_system(seed, N, d, p, log_cond, separated=False, rho=0.9):
    g = np.random.default_rng(seed)
    S = _matrix_with_condition(g, N, log_cond)
    A = S @ _spectrum_block(g, N, rho, separated) @ np.linalg.inv(S)
    B = g.standard_normal((N, d))
    C = g.standard_normal((p, N))
    return A, B, C


def _reference_lags(A, B, C, n):
    """Sequential C A^l B in extended precision (np.longdouble), independent of the library."""
    Al, Bl, Cl = (np.asarray(M, dtype=np.longdouble) for M in (A, B, C))
    x = Bl.copy()
    out = np.empty((n, C.shape[0], B.shape[1]), dtype=np.longdouble)
    for lag in range(n):
        out[lag] = Cl @ x
        x = Al @ x
    return out


def _power_norms(A, n):
    norms, P = np.empty(n), np.eye(A.shape[0])
    for lag in range(n):
        norms[lag] = np.linalg.norm(P, 2)
        P = A @ P
    return norms


def _sequence_scale(A, B, C, n):
    """``eps (1 + ||A||) max_j ||A^j B|| max_i ||C A^i||``: the size of one step's rounding error in a
    sequential propagation of the lags, carried forward by ``C A^i``. (A product ``A^m A^m``
    instead, as repeated squaring forms, errs by ``eps ||A^m||^2``, up to ``cond(S)`` times more.)"""
    x, y, right, left = B.copy(), C.copy(), 0.0, 0.0
    for _ in range(n):
        right, left = max(right, np.linalg.norm(x, 2)), max(left, np.linalg.norm(y, 2))
        x, y = A @ x, y @ A
    return EPS * (1.0 + np.linalg.norm(A, 2)) * right * left


sizes = st.tuples(st.integers(1, 8), st.integers(1, 3), st.integers(1, 3))  # N, d, p


@settings(PROFILE, max_examples=100)
@given(seed=seeds, size=sizes, n=st.integers(1, 80), log_cond=st.floats(0.0, 6.0), log_scale=st.floats(-3.0, 3.0))
def test_lag_operators_match_an_extended_precision_sequential_reference(seed, size, n, log_cond, log_scale):
    N, d, p = size
    A, B, C = _non_normal_system(seed, N, d, p, log_cond)
    B, C = B * 10.0 ** log_scale, C * 10.0 ** (-2 * log_scale)  # badly scaled input and output maps
    error = float(np.max(np.abs(lag_operators(A, B, C, n) - _reference_lags(A, B, C, n))))
    # measured: at most 0.75 of the scale on 300 instances up to cond(S) = 1e6, where repeated
    # squaring reaches 3000 (above 4 in 30% of them)
    assert error <= 4.0 * _sequence_scale(A, B, C, n)


@PROFILE
@given(seed=seeds, size=sizes, n=st.integers(1, 40), log_cond=st.floats(0.0, 4.0), log_scale=st.floats(-3.0, 3.0))
def test_ssm_forward_equals_its_interaction_operator_applied(seed, size, n, log_cond, log_scale):
    N, d, p = size
    A, B, C = _non_normal_system(seed, N, d, p, log_cond)
    ssm = LinearSSM(A, B, C)
    X = np.random.default_rng(seed + 1).standard_normal((n, d)) * 10.0 ** log_scale
    Y = ssm.forward(X)
    # two_route_gap is max|forward - W X| / max|forward|; the forward recurrence and W X are two
    # sequential computations of the same sums, so the gap is at the lags' rounding level
    tol = 4.0 * n * d * _sequence_scale(A, B, C, n) * np.max(np.abs(X)) / max(float(np.max(np.abs(Y))), 1e-300)
    assert two_route_gap(ssm, X) <= max(tol, 1e-12)


@PROFILE
@given(seed=seeds, size=sizes, log_cond=st.floats(0.0, 1.0))
def test_lag_span_dimension_is_monotone_and_bounded(seed, size, log_cond):
    N, d, p = size
    A, B, C = _non_normal_system(seed, N, d, p, log_cond, separated=True)
    m = minimal_polynomial_degree(A)
    ks = [lag_span_dimension(A, B, C, n) for n in range(1, 2 * N + 2)]
    assert all(a <= b for a, b in zip(ks, ks[1:]))
    for n, k in enumerate(ks, start=1):
        assert k <= min(n, p * d, m)


@PROFILE
@given(seed=seeds, size=sizes, n=st.integers(1, 20), log_cond_t=st.floats(0.0, 1.0),
       b=st.floats(-60.0, 60.0), c=st.floats(-60.0, 60.0), a=st.floats(0.7, 1.3), sign=st.sampled_from([-1.0, 1.0]))
def test_lag_span_dimension_is_invariant_under_similarity_and_scaling(seed, size, n, log_cond_t, b, c, a, sign):
    N, d, p = size
    A, B, C = _non_normal_system(seed, N, d, p, 0.5, separated=True)
    k = lag_span_dimension(A, B, C, n)
    T = _matrix_with_condition(np.random.default_rng(seed + 2), N, log_cond_t)  # cond(T) <= 10
    Ti = np.linalg.inv(T)
    assert lag_span_dimension(T @ A @ Ti, T @ B, C @ Ti, n) == k
    assert lag_span_dimension(A, B * 10.0 ** b, C * 10.0 ** c, n) == k
    assert lag_span_dimension(sign * a * A, B, C, n) == k


@PROFILE
@given(seed=seeds, n=st.integers(1, 30), p=st.integers(1, 3), d=st.integers(1, 3), H=st.integers(0, 10),
       log_scale=st.floats(-100.0, 100.0), weighted=st.booleans())
def test_optimal_heads_residual_is_the_tail_of_an_independent_svd(seed, n, p, d, H, log_scale, weighted):
    g = np.random.default_rng(seed)
    # lags with a decaying spectrum, so that the tail is far below the total
    K = np.einsum("r,rl,rpd->lpd", np.logspace(0, -6, 4), g.standard_normal((4, n)), g.standard_normal((4, p, d)))
    K *= 10.0 ** log_scale
    w = g.uniform(0.1, 10.0, size=n) if weighted else np.ones(n)
    coefficients, values, residual = optimal_heads(K, H, weights=w if weighted else None)
    # an independent SVD: row-major vec, transposed matrix, the gesvd driver
    import scipy.linalg
    s = scipy.linalg.svd((K.reshape(n, p * d) * np.sqrt(w)[:, None]), compute_uv=False, lapack_driver="gesvd")
    tail = float(np.sum(s[H:] ** 2))
    total = float(np.sum(s ** 2))
    assert abs(residual - tail) <= 1e-12 * total
    # and the heads attain it: the weighted loss of sum_h c_h(l) V_h
    approx = np.einsum("hl,hpd->lpd", coefficients, values)
    loss = float(np.sum(w * np.sum((K - approx) ** 2, axis=(1, 2))))
    assert abs(loss - residual) <= 1e-12 * total


@settings(derandomize=True, deadline=None, database=None, max_examples=15)
@given(seed=seeds, H=st.integers(1, 2), d=st.integers(1, 3), n=st.integers(1, 5), scale=st.floats(0.1, 3.0),
       causal=st.booleans())
def test_attention_jacobian_matches_central_differences(seed, H, d, n, scale, causal):
    mha = random_attention(H, d, seed=seed, scale=scale, causal=causal)
    X = np.random.default_rng(seed + 3).standard_normal((n, d))
    J = jacobian(mha, X)
    F = finite_difference_jacobian(mha.forward, X, eps=1e-5)
    # central differences: truncation O(eps^2) times third derivatives, rounding O(eps_mach / eps)
    assert np.max(np.abs(J - F)) <= 1e-6 * max(1.0, float(np.max(np.abs(J))))
