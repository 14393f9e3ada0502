#!/usr/bin/env python3
"""Timing of ssmheads.architectures (issue 13): the forms of each layer over n, and rank_table.

Usage: python benchmarks/bench_architectures.py

For each layer and form, the best time over n = 64 ... 1024 and the log-log slope
of time against n (1: linear, recurrent; 2: quadratic, parallel). Budgets:
rank_table(n=16, seed=0) below 3 s; Mamba.jacobian at n = 64 below 1 s. Exits
non-zero if a budget is missed. Timings vary with the machine; nothing here is
stored in the book.
"""
import sys

import numpy as np
from timing import best_time

from ssmheads import architectures as ar

NS = (64, 128, 256, 512, 1024)


def layers():
    g = np.random.default_rng(0).standard_normal
    d = 4
    ret = ar.Retention(g((4, d)), g((4, d)), g((d, d)), 0.95, theta=0.1)
    la = ar.LinearAttention(g((4, d)), g((4, d)), g((d, d)))
    s4 = ar.S4D(-np.exp(g((d, 8))) + 1j * g((d, 8)), g((d, 8)), g((d, 8)), np.full(d, 0.1))
    m = ar.Mamba(g((8, d)), g((8, 8)) / 3, g((8, 8)), g((8, 8)), g((8, 8)) * 0.3)
    m2 = ar.Mamba2(g((8, d)), g((d, 8)), g((2, d)), g((8, d)), g((8, d)), 2)
    return {
        "LinearAttention.forward (parallel)": la.forward,
        "LinearAttention.recurrent_forward": la.recurrent_forward,
        "Retention.forward (parallel)": ret.forward,
        "Retention.recurrent_forward": ret.recurrent_forward,
        "Retention.chunkwise_forward(64)": lambda X: ret.chunkwise_forward(X, 64),
        "S4D.forward (recurrence)": s4.forward,
        "S4D.convolution_forward (FFT)": s4.convolution_forward,
        "Mamba.forward (scan)": m.forward,
        "Mamba2.forward (recurrence)": m2.forward,
        "Mamba2.ssd_forward(64)": lambda X: m2.ssd_forward(X, 64),
    }


def main() -> int:
    ok = True
    X = np.random.default_rng(1).standard_normal((max(NS), 4))
    print(f"{'form':40s} " + " ".join(f"n={n:<6d}" for n in NS) + "  slope")
    for name, f in layers().items():
        times = [best_time(lambda: f(X[:n]), repeats=3) for n in NS]
        slope = np.polyfit(np.log(NS), np.log(times), 1)[0]
        print(f"{name:40s} " + " ".join(f"{t * 1e3:6.2f}ms" for t in times) + f"  {slope:.2f}")
    t = best_time(lambda: ar.rank_table(n=16, seed=0), repeats=2)
    print(f"rank_table(n=16): {t:.2f} s (budget 3 s)")
    ok &= t < 3.0
    g = np.random.default_rng(2).standard_normal
    m = ar.Mamba(g((4, 4)), g((4, 4)), g((4, 4)), g((4, 4)), g((4, 4)))
    t = best_time(lambda: m.jacobian(X[:64]), repeats=2)
    print(f"Mamba.jacobian(n=64, d=4, d_inner=4, N=4): {t:.3f} s (budget 1 s)")
    ok &= t < 1.0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
