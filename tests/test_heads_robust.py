"""``ssmheads.heads`` on hard inputs: extreme scales, oversized requests, and the fast Stein solve.

* Scale: every function of the lags divides them by a power of two before forming
  squares, so scaling ``K`` by ``2^e`` scales the answer exactly (checked bit for bit
  where the answer is homogeneous), a lag of size ``1e155`` is not infinite and one of
  size ``1e-300`` is not zero (pointedness of alternating lags at both scales). An answer
  that does not fit in a float is refused with a ``ValueError`` naming the argument.
* Work: sizes that would allocate more than 1 GiB or run for minutes are refused with a
  ``ValueError`` naming the argument that sets them.
* ``stationary_residual`` solves a Stein equation of size ``N min(p, d)`` instead of
  ``N^2``; it is compared with the former ``N^2 x N^2`` solve (kept below as a reference,
  for ``N <= 8``) and with the truncated sum ``sum_l vec K_l vec K_l^T`` for larger ``N``.
"""

import time

import numpy as np
import pytest
from helpers import assert_rel_close, rng
from scipy.linalg import solve_discrete_lyapunov

from ssmheads import (
    exact_heads,
    fit_heads,
    head_count_curve,
    is_pointed,
    lag_operators,
    nonnegative_head_count,
    nonnegative_heads,
    optimal_heads,
    softmax_heads,
)
from ssmheads.heads import stationary_residual, white_noise_weights
from ssmheads.systems import diagonal, random_stable, rotation

# ------------------------------------------------------------ references


def _stationary_reference(A, B, C, H_max):
    """The former implementation: the Stein equation for ``P`` on ``N^2 x N^2`` matrices (O(N^6))."""
    N = A.shape[0]
    vec_I = np.eye(N).reshape(-1, order="F")
    IA = np.kron(np.eye(N), A)
    P = solve_discrete_lyapunov(IA, np.outer(vec_I, vec_I))
    M = np.kron(B.T, C) @ P @ np.kron(B, C.T)
    lam = np.clip(np.sort(np.linalg.eigvalsh((M + M.T) / 2))[::-1], 0.0, None)
    tails = np.concatenate([np.cumsum(lam[::-1])[::-1], [0.0]])
    return np.array([tails[min(H, lam.size)] for H in range(H_max + 1)])


def _truncated_sum(A, B, C, n, H_max):
    """Tails of the eigenvalues of ``sum_{l<n} vec K_l vec K_l^T``, lags by sequential products."""
    P, cols = np.asarray(B, dtype=float), []
    for _ in range(n):
        cols.append((C @ P).reshape(-1, order="F"))
        P = A @ P
    G = np.array(cols).T
    lam = np.sort(np.linalg.eigvalsh(G @ G.T))[::-1]
    return np.array([lam[H:].sum() for H in range(H_max + 1)])


def _non_normal(N, d, p, rho, cond, seed):
    """``A = S diag(lambda) S^-1`` with ``cond(S) = cond``: real eigenvalues in [-rho, rho]."""
    g = rng(seed)
    U, _ = np.linalg.qr(g.standard_normal((N, N)))
    V, _ = np.linalg.qr(g.standard_normal((N, N)))
    S = U @ np.diag(np.geomspace(1.0, 1.0 / cond, N)) @ V.T
    lam = rho * np.linspace(-1.0, 1.0, N)
    A = S @ np.diag(lam) @ np.linalg.inv(S)
    return A, g.standard_normal((N, d)), g.standard_normal((p, N))


# ------------------------------------------------------------ stationary_residual: the fast solve


@pytest.mark.parametrize("N, d, p", [(1, 1, 1), (2, 2, 2), (3, 1, 2), (4, 3, 1), (5, 2, 3), (6, 3, 2),
                                     (8, 2, 2), (8, 4, 1)])
def test_stationary_residual_matches_the_n_squared_stein_solve(N, d, p):
    """Both branches (d <= p: states vec(A^l B); d > p: the transposes) against the former solve."""
    s = random_stable(N, d, p, rho=0.9, seed=N + 10 * d + 100 * p)
    got = stationary_residual(s.A, s.B, s.C, p * d + 2)
    expected = _stationary_reference(s.A, s.B, s.C, p * d + 2)
    assert got.shape == (p * d + 3,)
    assert_rel_close(got, expected, 1e-11)
    assert np.all(got[p * d:] == 0.0)


@pytest.mark.parametrize("N, d, p, rho", [(30, 2, 3, 0.8), (40, 3, 2, 0.9), (60, 2, 2, 0.7)])
def test_stationary_residual_matches_the_truncated_sum_for_large_N(N, d, p, rho):
    s = random_stable(N, d, p, rho=rho, seed=N)
    n = int(np.ceil(np.log(1e-20) / np.log(rho)))  # rho^(2n) < 1e-40: the rest of the sum is below rounding
    assert_rel_close(stationary_residual(s.A, s.B, s.C, 5), _truncated_sum(s.A, s.B, s.C, n, 5), 1e-10)


def test_stationary_residual_on_a_non_normal_system():
    """cond(S) = 1e3: the lags grow by a factor of about 1e2 before they decay; the solve follows the sum."""
    A, B, C = _non_normal(12, 2, 3, 0.8, 1e3, seed=4)
    lags = np.linalg.norm(lag_operators(A, B, C, 40), axis=(1, 2))
    assert lags.max() > 10 * lags[0]  # transient growth: genuinely non-normal
    assert_rel_close(stationary_residual(A, B, C, 4), _truncated_sum(A, B, C, 400, 4), 1e-10)


def test_stationary_residual_is_fast_at_N_60():
    """The N^2 x N^2 solve took 46 s at N = 40 here and did not finish at N = 60; this takes milliseconds."""
    s = random_stable(60, 3, 3, rho=0.9, seed=0)
    start = time.perf_counter()
    stationary_residual(s.A, s.B, s.C, 4)
    assert time.perf_counter() - start < 5.0


def test_stationary_residual_scales_exactly_with_B_and_C():
    s = random_stable(4, 2, 2, rho=0.9, seed=2)
    base = stationary_residual(s.A, s.B, s.C, 4)
    got = stationary_residual(s.A, s.B * 2.0**100, s.C * 2.0**50, 4)  # degree 2 in each: 2^300
    np.testing.assert_array_equal(np.ldexp(got, -300), base)
    tiny = stationary_residual(s.A, s.B * 2.0**-400, s.C, 4)  # 2^-800 * O(1): still a normal float
    np.testing.assert_array_equal(np.ldexp(tiny, 800), base)


@pytest.mark.parametrize("which", ["B", "C"])
def test_stationary_residual_refuses_an_overflowing_residual_naming_B_and_C(which):
    s = random_stable(4, 2, 2, rho=0.9, seed=2)
    B, C = (s.B * 1e155, s.C) if which == "B" else (s.B, s.C * 1e155)
    with pytest.raises(ValueError, match=r"B and C are too large"):
        stationary_residual(s.A, B, C, 2)


def test_stationary_residual_caps_H_max_by_memory_and_is_fast_below_the_cap():
    s = random_stable(3, 2, 2, rho=0.9, seed=1)
    start = time.perf_counter()
    curve = stationary_residual(s.A, s.B, s.C, 10**7)
    assert time.perf_counter() - start < 5.0
    assert curve.shape == (10**7 + 1,) and np.all(curve[4:] == 0.0) and np.all(np.isfinite(curve))
    with pytest.raises(ValueError, match=r"H_max would make the residual curve .* use H_max <= 4"):
        stationary_residual(s.A, s.B, s.C, 2**28)


def test_stationary_residual_names_the_spectral_radius():
    A = rotation(1.0, 1.0).A
    with pytest.raises(ValueError, match=r"spectral radius is 1 >= 1"):
        stationary_residual(A, np.eye(2), np.eye(2), 2)


# ------------------------------------------------------------ scale safety of the lag functions


K8 = random_stable(4, 2, 3, rho=0.9, seed=7).lag_operators(8)
ALTERNATING = lag_operators([[-0.5]], [[1.0]], [[1.0]], 8)  # signs + - + -: the cone is a line, not pointed


@pytest.mark.parametrize("e", [300, -400])
def test_optimal_heads_scale_exactly(e):
    w = white_noise_weights(8)
    c, V, residual = optimal_heads(K8, 2, w)
    c_s, V_s, residual_s = optimal_heads(np.ldexp(K8, e), 2, w)
    np.testing.assert_array_equal(V_s, V)
    np.testing.assert_array_equal(np.ldexp(c_s, -e), c)
    assert np.ldexp(residual_s, -2 * e) == residual and residual > 0
    curve = head_count_curve(np.ldexp(K8, e), 5, w)
    np.testing.assert_array_equal(np.ldexp(curve, -2 * e), head_count_curve(K8, 5, w))


def test_optimal_heads_refuse_a_residual_beyond_the_largest_float_naming_K():
    """At K * 1e155 the error with no heads is about 1e310: refused, not returned as infinity."""
    with pytest.raises(ValueError, match=r"^K is too large"):
        head_count_curve(K8 * 1e155, 3)
    with pytest.raises(ValueError, match=r"^K is too large"):
        optimal_heads(K8 * 1e160, 0)
    with pytest.raises(ValueError, match=r"^K and weights are too large"):
        optimal_heads(K8 * 1e150, 0, np.full(8, 1e20))
    c, V, residual = optimal_heads(K8 * 1e150, 1)  # the tail after one head, about 1e300, fits
    assert np.isfinite(residual) and residual > 0
    assert_rel_close(residual / 1e300, optimal_heads(K8, 1)[2], 1e-12)


@pytest.mark.parametrize("scale", [1e155, 1e-300])
def test_pointedness_does_not_depend_on_the_scale(scale):
    """Squares of 1e155 overflow and of 1e-300 underflow: neither may make every lag count as zero."""
    assert not is_pointed(ALTERNATING) and not is_pointed(ALTERNATING * scale)
    assert is_pointed(-ALTERNATING[::2] * scale)  # even lags only: all positive multiples of one matrix
    for K in (ALTERNATING, K8):
        assert nonnegative_head_count(K * scale) == nonnegative_head_count(K)
    assert nonnegative_head_count(ALTERNATING * scale) == 2  # k = 1, not pointed: one extra head


@pytest.mark.parametrize("scale", [1e155, 1e-300])
@pytest.mark.parametrize("strict", [False, True])
def test_nonnegative_and_softmax_heads_reproduce_scaled_lags(scale, strict):
    for K in (ALTERNATING, K8):
        heads = nonnegative_heads(K * scale, strict=strict)
        assert heads.num_heads == nonnegative_heads(K, strict=strict).num_heads
        assert np.all(heads.coefficients >= 0)
        assert_rel_close(heads.lag_operators(), K * scale, 1e-12)
    soft = softmax_heads(K8 * scale)
    assert_rel_close(soft.interaction(np.zeros((8, 2)))[:, 0], K8 * scale, 1e-12)  # W[i, 0] = K_i


def test_nonnegative_heads_refuse_coefficients_beyond_the_largest_float():
    """Lags (-1/2)^l J with J the 4 x 4 matrix of ones: not pointed; the coordinate of K_0 on the unit
    basis matrix J / 4 is 4 max|K|, and strict heads add 0.1 of it: coefficient 4.4 max|K|."""
    K = ALTERNATING * np.ones((1, 4, 4))
    with pytest.raises(ValueError, match=r"^K is too large: the head coefficients"):
        nonnegative_heads(K * 1e308, strict=True)  # 4.4e308, 2.4 times the largest float
    heads = nonnegative_heads(K * 2e307, strict=True)  # 8.8e307, half of it
    assert heads.num_heads == 2 and np.all(np.isfinite(heads.coefficients))  # k = 1, not pointed
    assert_rel_close(heads.lag_operators(), K * 2e307, 1e-12)


def test_exact_heads_scale_and_name_their_own_arguments():
    s = random_stable(4, 2, 3, rho=0.9, seed=7)
    heads = exact_heads(s.A, s.B * 1e150, s.C * 1e150, 8)
    assert heads.num_heads == 4
    assert_rel_close(heads.lag_operators(), K8 * 1e300, 1e-12)
    with pytest.raises(ValueError, match=r"^rtol must be a number in \[0, 1\)"):
        exact_heads(s.A, s.B, s.C, 8, rtol=2.0)
    with pytest.raises(ValueError, match=r"entries of A, B, C .* are too large"):
        exact_heads(s.A, s.B * 1e300, s.C * 1e300, 8)


# ------------------------------------------------------------ work guards


def test_optimal_heads_caps_H_by_memory_and_returns_zero_heads_fast():
    start = time.perf_counter()
    c, V, residual = optimal_heads(K8, 10**6)
    assert time.perf_counter() - start < 5.0
    assert c.shape == (10**6, 8) and np.all(c[6:] == 0.0) and np.all(V[6:] == 0.0) and residual == 0.0
    with pytest.raises(ValueError, match=r"^H would make the coefficients c_h\(l\) .* use H <= min\(p\*d, n\) = 6"):
        optimal_heads(K8, 10**8)


def test_head_count_curve_caps_H_max():
    curve = head_count_curve(K8, 10**6)
    assert curve.shape == (10**6 + 1,) and np.all(curve[6:] == 0.0)
    with pytest.raises(ValueError, match=r"^H_max would make the residual curve"):
        head_count_curve(K8, 2**28)


@pytest.mark.parametrize("kwargs, match", [
    ({"steps": 10**7}, r"^steps is too large: steps = 10000000, batch = 2, H = 1 .* floating-point operations"),
    ({"H": 10**7}, r"^H would make the heads' parameters"),
    ({"batch": 10**7}, r"^batch would make the shifted white-noise inputs"),
    ({"batch": 10**4, "steps": 10**4}, r"^batch is too large"),
    ({"lr": 2.0}, r"^lr must be at most 1"),
    ({"final_lr": 1e155}, r"^final_lr must be at most 1"),
], ids=["steps", "H", "batch memory", "batch work", "lr", "final_lr"])
def test_fit_heads_refuses_oversized_runs_naming_the_argument(kwargs, match):
    args = {"H": 1, "steps": 2, "batch": 2}
    args.update(kwargs)
    with pytest.raises(ValueError, match=match):
        fit_heads(K8, **args)


def test_fit_heads_names_batch_or_K_for_the_shifted_inputs():
    """(batch n, n d) floats: n = 3000, d = 2, batch = 16 is 2.15 GiB; n = 12000 alone is over 1 GiB."""
    with pytest.raises(ValueError, match=r"^batch would make .* 2\.15 GiB"):
        fit_heads(np.zeros((3000, 1, 2)), 1, steps=2)
    with pytest.raises(ValueError, match=r"^K would make .* use a smaller batch, or fewer lags n of K"):
        fit_heads(np.zeros((12000, 1, 1)), 1, steps=2, batch=1)


def test_fit_heads_refuses_lags_whose_squares_overflow():
    with pytest.raises(ValueError, match=r"^K must have entries of size at most 1e\+100 .* max\|K\| = 1\.\d+e\+155"):
        fit_heads(K8 * 1e155, 1, steps=2)
    result = fit_heads(K8 * 1e-300, 1, steps=2)  # tiny lags: finite losses
    assert np.all(np.isfinite(result.losses)) and np.all(np.isfinite(result.expected_errors))
