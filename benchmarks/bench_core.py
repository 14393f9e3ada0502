#!/usr/bin/env python3
"""Timing budgets of the library core (issue: the spine).

Usage: python benchmarks/bench_core.py

1. MultiHeadAttention(...).interaction(X) for n = 512, d = p = 8, H = 4: budget 0.5 s.
2. lag_operators for n = 4096, N = 16, p = d = 8, against the impulse responses of the
   same system from scipy.signal.dimpulse: budget at least 20x faster (issue 11: accuracy on
   non-normal A first; lag_operators now propagates A^l B one lag at a time, as a recurrence does).

Times are the best of several runs (time.perf_counter), after one warm-up call.
Exits non-zero if a budget is missed.
"""
import sys
import time

import numpy as np
from timing import best_time
from scipy import signal

from ssmheads import lag_operators, systems




def main() -> int:
    ok = True
    mha = systems.random_attention(H=4, d=8, seed=0)
    X = np.random.default_rng(0).standard_normal((512, 8))
    t_mha = best_time(lambda: mha.interaction(X))
    ok &= t_mha <= 0.5
    print(f"MultiHeadAttention.interaction, n=512, d=p=8, H=4: {t_mha:.3f} s (budget 0.5 s)")

    ssm = systems.random_stable(N=16, d=8, p=8, rho=0.99, seed=0)
    n = 4096
    K = lag_operators(ssm.A, ssm.B, ssm.C, n)
    # dimpulse simulates one input channel at a time; its step t+1 holds K_t (D = 0).
    _, responses = signal.dimpulse((ssm.A, ssm.B, ssm.C, np.zeros((8, 8)), 1), n=n + 1)
    K_scipy = np.stack(responses, axis=2)[1:]
    agree = np.max(np.abs(K - K_scipy)) / np.max(np.abs(K_scipy))
    assert agree < 1e-10, agree
    t_lags = best_time(lambda: lag_operators(ssm.A, ssm.B, ssm.C, n))
    t_scipy = best_time(lambda: signal.dimpulse((ssm.A, ssm.B, ssm.C, np.zeros((8, 8)), 1), n=n + 1), repeats=3)
    ratio = t_scipy / t_lags
    ok &= ratio >= 20
    print(f"lag_operators, n=4096, N=16, p=d=8: {t_lags * 1e3:.2f} ms; scipy.signal.dimpulse: "
          f"{t_scipy * 1e3:.1f} ms; ratio {ratio:.0f}x (budget >= 20x); agreement {agree:.1e}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
