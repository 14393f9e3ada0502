#!/usr/bin/env python3
"""Timings of ssmheads.heads (issue: Chapter 3).

Usage: python benchmarks/bench_heads.py

1. optimal_heads for n = 4096, p = d = 8 (lags of systems.random_stable(16, 8, 8, seed=0)),
   H = 8, white-noise weights: best of several runs after a warm-up; for comparison,
   the thin and the full SVD of the same 64 x 4096 matrix.
2. Time to get within 1% of the optimal per-position white-noise error on
   systems.diagonal with 4 distinct eigenvalues, n = 16, H = 2: optimal_heads gets
   there in one call (timed); fit_heads (default settings, record_every = 10) is
   timed once, the first recorded step whose expected error is within 1% of the
   optimum is found, and converted to time as total_time * step / steps (every
   step costs the same). Prints both times and their ratio.

3. stationary_residual for systems.random_stable(N, 3, 3, seed=0), N = 20, 40, 60 (best of
   several runs): a Stein equation of size N min(p, d); for comparison the former solve of
   the N^2 x N^2 Stein equation for P (O(N^6)), at N = 20 only (46 s at N = 40 here; at
   N = 60 it did not finish in 300 s).

One line per measurement. Exits non-zero if fit_heads never gets within 1%.
"""
import sys
import time

import numpy as np
from timing import best_time

from scipy.linalg import solve_discrete_lyapunov

from ssmheads import fit_heads, head_count_curve, optimal_heads, systems
from ssmheads.heads import stationary_residual, white_noise_weights


def stein_n_squared(A, B, C):
    """The former stationary solve: P = vec(I) vec(I)^T + (I kron A) P (I kron A)^T, then M_inf."""
    N = A.shape[0]
    vec_I = np.eye(N).reshape(-1, order="F")
    P = solve_discrete_lyapunov(np.kron(np.eye(N), A), np.outer(vec_I, vec_I))
    return np.kron(B.T, C) @ P @ np.kron(B, C.T)




def main() -> int:
    ssm = systems.random_stable(16, 8, 8, seed=0)
    n = 4096
    K = ssm.lag_operators(n)
    w = white_noise_weights(n)
    t_big = best_time(lambda: optimal_heads(K, 8, w))
    residual = optimal_heads(K, 8, w)[2]
    print(f"optimal_heads, n=4096, p=d=8, H=8, weights n-l: {t_big * 1e3:.1f} ms; "
          f"error per position {residual / n:.3e}")
    G = K.transpose(0, 2, 1).reshape(n, 64).T * np.sqrt(w)  # the 64 x 4096 matrix G_w
    t_thin = best_time(lambda: np.linalg.svd(G, full_matrices=False))
    t_full = best_time(lambda: np.linalg.svd(G, full_matrices=True), repeats=3)
    print(f"  for comparison, SVD of the 64 x 4096 matrix G_w: thin {t_thin * 1e3:.1f} ms, "
          f"full_matrices=True {t_full * 1e3:.1f} ms")

    ssm = systems.diagonal([0.9, 0.6, -0.4, 0.2])
    n, H = 16, 2
    K = ssm.lag_operators(n)
    w = white_noise_weights(n)
    optimum = head_count_curve(K, H, w)[H] / n
    t_opt = best_time(lambda: optimal_heads(K, H, w))
    _, _, residual = optimal_heads(K, H, w)
    assert abs(residual / n - optimum) <= 1e-12 * optimum
    print(f"optimal_heads, diagonal k=4, n=16, H=2: at the optimum {optimum:.4e} in one call, {t_opt * 1e6:.0f} us")

    start = time.perf_counter()
    result = fit_heads(K, H, record_every=10)
    t_fit = time.perf_counter() - start
    steps = result.losses.size
    record_steps = np.minimum(np.arange(result.expected_errors.size) * result.record_every, steps)
    within = np.nonzero(result.expected_errors <= 1.01 * optimum)[0]
    if within.size == 0:
        print(f"fit_heads, diagonal k=4, n=16, H=2: never within 1% of the optimum in {steps} steps "
              f"({t_fit:.2f} s); final error {result.expected_errors[-1]:.4e} vs {optimum:.4e}")
        return 1
    step = int(record_steps[within[0]])
    t_reach = t_fit * step / steps
    print(f"fit_heads, diagonal k=4, n=16, H=2: within 1% at step {step} of {steps}, "
          f"{t_reach:.3f} s (whole run {t_fit:.2f} s); final error {result.expected_errors[-1]:.4e}")
    print(f"time to within 1% of the optimum: fit_heads / optimal_heads = {t_reach / t_opt:.0f}x")

    for N in (20, 40, 60):
        ssm = systems.random_stable(N, 3, 3, seed=0)
        t_new = best_time(lambda: stationary_residual(ssm.A, ssm.B, ssm.C, 4))
        line = f"stationary_residual, N={N}, p=d=3: {t_new * 1e3:.1f} ms"
        if N == 20:
            t_old = best_time(lambda: stein_n_squared(ssm.A, ssm.B, ssm.C), repeats=1)
            line += f"; the former N^2 x N^2 Stein solve {t_old:.2f} s ({t_old / t_new:.0f}x)"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
