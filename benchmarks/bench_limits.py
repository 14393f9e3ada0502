#!/usr/bin/env python3
"""Time and memory of the calls of issue 22 ("the library's last slow and lenient paths").

Usage: python benchmarks/bench_limits.py [substring ...]

Each call runs in a fresh process with one BLAS thread (numpy's allocations traced by
``tracemalloc``; an address-space cap of 6 GiB so that a runaway call fails instead of
swapping) and prints its user CPU time (the computation: on a shared machine the wall time
also counts other people's work, and the kernel's time to hand out fresh pages varies
tenfold with the load), its wall time, its peak of traced memory and how it ended (a result,
or the exception and the start of its message). The budgets are judged on the user time.
``PYTHONPATH=<another checkout>/lib`` times another version of the library (the numbers of
issue 22's "before" were taken so, at commit 127cb0d). Budgets (the issue's): a call with ``N <= 256`` or ``n <= 4096``
returns within 1 s or refuses at once; no call holds more than 2 GiB
(``ssmheads._validate.MAX_TOTAL_BYTES``). A refusal must be a ``ValueError``. Exits non-zero
if a budget is missed. Timings vary with the machine; nothing here is stored in the book.
"""
from __future__ import annotations

import json
import subprocess
import sys

SETUP = """
import numpy as np
import ssmheads as sh
from ssmheads import architectures as ar, gradients as gr, heads as hd, span, systems
E2 = np.eye(2)
RNG = np.random.default_rng(0)
"""

#: (label, setup, call, kind): kind "fast" (must return or refuse within 1 s, hold <= 2 GiB),
#: "refuse" (must raise ValueError at once), "bounded" (must hold <= 2 GiB; time reported).
CALLS = [
    ("decay_bound, random N = 64, rho = 0.999", "s = systems.random_stable(64, 2, 2, rho=0.999, seed=0)",
     "sh.decay_bound(s.A, s.B, s.C, np.arange(5)).kappa", "fast"),
    ("decay_bound, random N = 256, rho = 0.999", "s = systems.random_stable(256, 2, 2, rho=0.999, seed=0)",
     "sh.decay_bound(s.A, s.B, s.C, np.arange(5)).kappa", "fast"),
    ("decay_bound, Jordan block N = 64, rho = 0.999",
     "A = 0.999 * np.eye(64) + np.eye(64, k=1)",
     "sh.decay_bound(A, np.ones((64, 1)), np.ones((1, 64)), np.arange(5)).kappa", "fast"),
    ("minimal_polynomial_degree, random 1500 x 1500", "A = RNG.standard_normal((1500, 1500))",
     "sh.minimal_polynomial_degree(A)", "bounded"),
    ("minimal_polynomial_degree, random 256 x 256", "A = RNG.standard_normal((256, 256))",
     "sh.minimal_polynomial_degree(A)", "fast"),
    ("minimal_polynomial_degree, shift 256 x 256", "A = np.eye(256, k=-1)",
     "sh.minimal_polynomial_degree(A)", "fast"),
    ("minimal_polynomial_degree, I + shift 256 x 256", "A = np.eye(256) + np.eye(256, k=1)",
     "sh.minimal_polynomial_degree(A)", "fast"),
    ("minimal_polynomial_degree, orthogonal 256 x 256", "A = np.linalg.qr(RNG.standard_normal((256, 256)))[0]",
     "sh.minimal_polynomial_degree(A)", "fast"),
    ("default_rtol(m=0)", "", "span.default_rtol(0, 2, 2)", "refuse"),
    ("SoftmaxSinkHeads, values with d = 0", "", "hd.SoftmaxSinkHeads(np.zeros((1, 2, 3)), np.zeros((1, 2, 0)))",
     "refuse"),
    ("finite_difference_jacobian, complex f", "",
     "sh.finite_difference_jacobian(lambda Z: Z * (1 + 1j), np.ones((2, 2)))", "refuse"),
    ("Retention.forward, n = 8500", "", "ar.Retention(E2, E2, E2, 0.9).forward(np.ones((8500, 2)))", "bounded"),
    ("Retention.forward, n = 11000", "", "ar.Retention(E2, E2, E2, 0.9).forward(np.ones((11000, 2)))",
     "bounded"),
    ("Retention.forward, n = 4096", "", "ar.Retention(E2, E2, E2, 0.9).forward(np.ones((4096, 2)))", "fast"),
    ("ALiBiAttention.forward, n = 8500", "", "ar.ALiBiAttention(E2, E2, E2, 0.5).forward(np.ones((8500, 2)))",
     "bounded"),
    ("ALiBiAttention.coefficients, n = 8500", "",
     "ar.ALiBiAttention(E2, E2, E2, 0.5).coefficients(np.ones((8500, 2)))", "bounded"),
    ("RoPEAttention.forward, n = 8500", "", "ar.RoPEAttention(E2, E2, E2).forward(np.ones((8500, 2)))",
     "bounded"),
    ("RoPEAttention.coefficients, n = 8500", "",
     "ar.RoPEAttention(E2, E2, E2).coefficients(np.ones((8500, 2)))", "bounded"),
    ("Retention.chunkwise_forward(X, 10**7), n = 20000", "",
     "ar.Retention(E2, E2, E2, 0.9).chunkwise_forward(np.ones((20000, 2)), 10**7)", "bounded"),
    ("Mamba2.coefficients, n = 7500",
     "m2 = ar.Mamba2(RNG.standard_normal((4, 2)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 2)), "
     "RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2)), 2)",
     "m2.coefficients(np.ones((7500, 2)))", "bounded"),
    ("Mamba2.ssd_forward(X, 8000), n = 8000",
     "m2 = ar.Mamba2(RNG.standard_normal((4, 2)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 2)), "
     "RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2)), 2)",
     "m2.ssd_forward(np.ones((8000, 2)), 8000)", "bounded"),
    ("Hybrid([S4D, RoPE]).interaction, n = 4000",
     "h = ar.Hybrid([ar.S4D(-np.ones((2, 3)) + 1j, np.ones((2, 3)), np.ones((2, 3)), np.ones(2)), "
     "ar.RoPEAttention(E2, E2, E2)])",
     "h.interaction(np.ones((4000, 2)))", "fast"),
    ("diagonal_ssm_kernel(..., 10**7)", "",
     "gr.diagonal_ssm_kernel(np.array([-1.0, -2.0]), np.array([0.3, 1.0]), np.ones((2, 2)), np.ones((2, 2)), "
     "10**7)", "bounded"),
    ("ALiBiAttention(slope=1e308).forward", "",
     "ar.ALiBiAttention(E2, E2, E2, 1e308).forward(np.ones((4, 2)))", "bounded"),
    ("toeplitz_deviation, W with n = 4096, p = d = 2", "W = RNG.standard_normal((4096, 4096, 2, 2))",
     "sh.toeplitz_deviation(W)", "fast"),
    ("apply_interaction, W with n = 4096, p = d = 2", "W = RNG.standard_normal((4096, 4096, 2, 2))",
     "sh.apply_interaction(W, np.ones((4096, 2)))", "fast"),
    ("Mamba2.interaction, n = 4096",
     "m2 = ar.Mamba2(RNG.standard_normal((4, 2)), RNG.standard_normal((2, 4)), RNG.standard_normal((2, 2)), "
     "RNG.standard_normal((3, 2)), RNG.standard_normal((3, 2)), 2)",
     "m2.interaction(np.ones((4096, 2))).shape", "fast"),
    ("stationary_residual, random N = 256, p = d = 2", "s = systems.random_stable(256, 2, 2, rho=0.999, seed=0)",
     "hd.stationary_residual(s.A, s.B, s.C, 2)", "fast"),
    ("LinearSSM.forward, n = 10**6", "X = np.ones((10**6, 2))",
     "sh.LinearSSM(0.5 * E2, E2, E2).forward(X).shape", "bounded"),
    ("recall_eval, result with W = NaN", "r = gr.RecallResult(np.zeros(3), None, np.full((4, 4), np.nan), "
     "np.zeros(6), 0.0, 2)", "gr.recall_eval(r, [1, 2])", "refuse"),
    ("recall_eval, result with d_v = 0", "r = gr.RecallResult(np.zeros(3), None, np.zeros((4, 4)), np.zeros(6), "
     "0.0, 0)", "gr.recall_eval(r, [1, 2])", "refuse"),
]

CHILD = """
import ctypes, json, re, resource, sys, time, tracemalloc, warnings
warnings.simplefilter("ignore")
resource.setrlimit(resource.RLIMIT_AS, (6 * 2**30, 6 * 2**30))
setup, call = sys.argv[1], sys.argv[2]
g = {}
exec(setup, g)
for path in sorted(set(re.findall(r"(/\\S*openblas\\S*\\.so\\S*)", open("/proc/self/maps").read()))):
    lib = ctypes.CDLL(path)
    for symbol in ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads"):
        if hasattr(lib, symbol):
            getattr(lib, symbol)(ctypes.c_int(1))
            break
tracemalloc.start()
start, cpu = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_utime
try:
    result = eval(call, g)
    outcome = "result " + repr(result)[:60].replace(chr(10), " ")
except Exception as exc:
    outcome = f"{type(exc).__name__}: {str(exc)[:150]}"
elapsed, cpu = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_utime - cpu
peak = tracemalloc.get_traced_memory()[1]
print(json.dumps({"seconds": cpu, "wall": elapsed, "peak": peak, "outcome": outcome}))
"""


def run(setup: str, call: str, timeout: float = 300) -> dict:
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, SETUP + setup, call], capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"seconds": timeout, "wall": timeout, "peak": float("nan"), "outcome": "timeout"}
    if done.returncode:
        return {"seconds": float("nan"), "wall": float("nan"), "peak": float("nan"),
                "outcome": f"crashed: {done.stderr[-150:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(patterns: list[str]) -> int:
    failed = 0
    for label, setup, call, kind in CALLS:
        if patterns and not any(p in label for p in patterns):
            continue
        got = run(setup, call)
        refused = got["outcome"].startswith("ValueError")
        ok = got["peak"] <= 2**31 and (
            (kind == "fast" and got["seconds"] <= 1.0) or (kind == "refuse" and refused and got["seconds"] <= 1.0)
            or kind == "bounded" and (refused and got["seconds"] <= 1.0 or not refused))
        failed += not ok
        print(f"{'ok  ' if ok else 'MISS'} user {got['seconds']:6.2f} s (wall {got['wall']:6.2f} s) "
              f"{got['peak'] / 2**30:5.2f} GiB  {label}: "
              f"{got['outcome']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
