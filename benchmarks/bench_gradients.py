#!/usr/bin/env python3
"""Timing budgets of ssmheads.gradients (issue: Chapter 4).

Usage: python benchmarks/bench_gradients.py

jacobian of a 4-head softmax attention layer (systems.random_attention(4, 8, seed=0),
causal, d = p = 8) at n = 256 on a seeded standard normal input X (256, 8):

1. best of 3 runs after one warm-up call: budget 1 s;
2. at least 100x faster than finite_difference_jacobian(mha.forward, X) on the same
   input, timed once (it makes 2 n d = 4096 calls of forward; about 20 s).

Prints both times, their ratio and the maximum relative difference between the two
Jacobians (max |J - J_fd| / max |J_fd|).

3. train_diagonal_ssm(48, 96, modes=32) with the default steps (Chapter 4's trainability
   experiment, one run): budget 1 s; and delay_task_sweep over Chapter 4's grid
   (5 delays 4..48, below the capacity ceiling 2 M = 64, x 3 radius ranges x 3 seeds, n = 96):
   budget 8 s (a notebook cell's limit is 10 s).

Exits non-zero if a budget is missed.
"""
import sys
import time

import numpy as np
from timing import best_time

from ssmheads import finite_difference_jacobian, jacobian, systems
from ssmheads.gradients import delay_task_sweep, train_diagonal_ssm




def main() -> int:
    mha = systems.random_attention(4, 8, seed=0)
    n = 256
    X = np.random.default_rng(0).standard_normal((n, 8))

    t_jac = best_time(lambda: jacobian(mha, X))
    J = jacobian(mha, X)
    print(f"jacobian, softmax attention H=4, n=256, d=p=8: {t_jac:.3f} s (budget 1 s)")

    start = time.perf_counter()
    J_fd = finite_difference_jacobian(mha.forward, X)
    t_fd = time.perf_counter() - start
    ratio = t_fd / t_jac
    gap = float(np.max(np.abs(J - J_fd)) / np.max(np.abs(J_fd)))
    print(f"finite_difference_jacobian, same input (one run): {t_fd:.1f} s; "
          f"ratio {ratio:.0f}x (budget >= 100x); max relative difference {gap:.1e}")

    t_train = best_time(lambda: train_diagonal_ssm(48, 96, modes=32, radius=(0.9, 0.999), seed=0), repeats=3)
    print(f"train_diagonal_ssm, L=48, n=96, 32 modes, default steps: {t_train:.3f} s (budget 1 s)")
    grid = dict(Ls=[4, 12, 24, 36, 48], n=96, radii=[(0.0, 0.5), (0.5, 0.9), (0.9, 0.999)], seeds=[0, 1, 2])
    t_sweep = best_time(lambda: delay_task_sweep(**grid), repeats=1)
    print(f"delay_task_sweep, 5 delays x 3 radius ranges x 3 seeds: {t_sweep:.2f} s (budget 8 s)")

    ok = t_jac <= 1.0 and ratio >= 100 and t_train <= 1.0 and t_sweep <= 8.0
    if not ok:
        print("BUDGET MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
