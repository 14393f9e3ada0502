#!/usr/bin/env python3
"""Timing budget of ssmheads.span (issue: Chapter 2).

Usage: python benchmarks/bench_span.py

lag_span_dimension for n = 4096, N = 16, p = d = 8: budget 0.2 s. The time is
split into forming the lag operators and the one SVD of the 64 x 4096 matrix,
to show which dominates. Best of several runs after a warm-up. Exits non-zero
if the budget is missed.
"""
import sys
import time

import numpy as np
from timing import best_time

from ssmheads import lag_operators, lag_span_dimension, singular_values, systems




def main() -> int:
    ssm = systems.random_stable(N=16, d=8, p=8, rho=0.9, seed=0)
    n = 4096
    k = lag_span_dimension(ssm.A, ssm.B, ssm.C, n)
    assert k == 16, k
    K = lag_operators(ssm.A, ssm.B, ssm.C, n)
    t_total = best_time(lambda: lag_span_dimension(ssm.A, ssm.B, ssm.C, n))
    t_lags = best_time(lambda: lag_operators(ssm.A, ssm.B, ssm.C, n))
    t_svd = best_time(lambda: singular_values(K))
    print(f"lag_span_dimension, n=4096, N=16, p=d=8: {t_total * 1e3:.1f} ms (budget 200 ms); k = {k}")
    print(f"  of which forming the lags {t_lags * 1e3:.1f} ms, the SVD of the 64 x 4096 matrix {t_svd * 1e3:.1f} ms")
    return 0 if t_total <= 0.2 else 1


if __name__ == "__main__":
    sys.exit(main())
