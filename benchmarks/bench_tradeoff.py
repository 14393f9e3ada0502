#!/usr/bin/env python3
"""The full sweep of Chapter 6's bench: every architecture on every task, three seeds.

Usage: python benchmarks/bench_tradeoff.py [--jobs 2] [--out lib/ssmheads/data/tradeoff.json]

Trains each architecture of ``ssmheads.bench.ARCHITECTURES`` with ``ssmheads.bench.train``
(default steps, seeds 0, 1, 2) on

* the emulation task (distance 8: only the lag of the recorded Jacobian),
* the delay task at L = DELAYS,
* the selective copy at L = SELECT,

and writes every run (final and test loss, the loss curve, the Jacobian at distance L
at initialisation and after training, the parameter count; 6 significant digits) to the
results file that Chapter 6 draws its figures and tables from,
``lib/ssmheads/data/tradeoff.json`` (``ssmheads.bench.RESULTS``: it is installed with the
package, so the chapter finds it in Colab too). The chapter re-runs a few of these runs
and asserts that they reproduce the file's loss curves, so a change of the bench's code
that changes the results makes the chapter fail until this script is run again.

``--controls`` trains only the controlled runs (:func:`control_configurations`: S4D with
every step size 1/32 on the delay at L = CONTROL_DELAYS, three seeds) and adds them to the
existing file, leaving its other runs as they are.

Prints one line per run and, at the end, the wall-clock and CPU time of the sweep (also
stored in the file's ``meta``).
"""
from __future__ import annotations

import argparse
import platform
import sys
import time
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

SEEDS = (0, 1, 2)
DELAYS = (4, 16, 48)
SELECT = (8, 63)
EMULATION_LAG = 8


def configurations():
    from ssmheads import bench  # no JAX import: bench imports it on first use

    grid = [("emulation", EMULATION_LAG)] + [("delay", L) for L in DELAYS] + [("selective-copy", L) for L in SELECT]
    return [(a, task, L, s) for a in bench.ARCHITECTURES for task, L in grid for s in SEEDS]


CONTROL_DELAYS = (4, 48)


def control_configurations():
    """The controlled runs: S4D with every step size 1/32 (``"s4d-dt32"``), delay, L in CONTROL_DELAYS."""
    return [("s4d-dt32", "delay", L, s) for L in CONTROL_DELAYS for s in SEEDS]


def run_one(config):
    from ssmheads import bench

    a, task, L, s = config
    start = time.process_time()
    record = bench._record(bench.train(a, task, L, seed=s))
    record["cpu_seconds"] = round(time.process_time() - start, 1)
    return record


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (default 2, the cores here)")
    parser.add_argument("--out", type=Path, default=ROOT / "lib" / "ssmheads" / "data" / "tradeoff.json")
    parser.add_argument("--only", default=None, help="comma-separated architectures (for a partial rerun)")
    parser.add_argument("--controls", action="store_true",
                        help="train only the controlled runs and add them to the existing file")
    args = parser.parse_args()

    configs = control_configurations() if args.controls else configurations()
    if args.only:
        keep = set(args.only.split(","))
        configs = [c for c in configs if c[0] in keep]
    wall, cpu = time.perf_counter(), time.process_time()
    records = []
    # spawned workers (not forked: JAX is multithreaded), each with JAX's default settings, as in the chapter
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        for record in pool.map(run_one, configs):
            records.append(record)
            print(f"{record['architecture']:17s} {record['task']:14s} L={record['distance']:2d} "
                  f"seed {record['seed']}: final {record['final_loss']:.4f} test {record['test_loss']:.4f} "
                  f"({record['cpu_seconds']:.0f} s)", flush=True)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu + sum(r["cpu_seconds"] for r in records)
    import jax
    from ssmheads import bench

    if args.controls:
        data = bench.load_results(args.out)
        keys = {(r["architecture"], r["task"], r["distance"], r["seed"]) for r in records}
        records = [dict(r, losses=list(map(float, r["losses"]))) for r in data["runs"]
                   if (r["architecture"], r["task"], r["distance"], r["seed"]) not in keys] + records
        meta = dict(data["meta"], controls={"runs": len(keys), "wall_seconds": round(wall),
                                             "cpu_seconds": round(cpu), "jobs": args.jobs})
        bench.save_results(records, args.out, meta)
        print(f"bench_tradeoff: {len(keys)} controlled runs added to {args.out.relative_to(ROOT)} "
              f"in {wall:.0f} s (CPU {cpu:.0f} s)")
        return 0
    if args.only and args.out.exists():
        old = bench.load_results(args.out)["runs"]
        keep = {(r["architecture"], r["task"], r["distance"], r["seed"]) for r in records}
        records = [dict(r, losses=list(map(float, r["losses"]))) for r in old
                   if (r["architecture"], r["task"], r["distance"], r["seed"]) not in keep] + records
    order = {c: i for i, c in enumerate(configurations())}
    records.sort(key=lambda r: order.get((r["architecture"], r["task"], r["distance"], r["seed"]), 1 << 30))
    meta = {"seeds": list(SEEDS), "delays": list(DELAYS), "select": list(SELECT), "emulation_lag": EMULATION_LAG,
            "wall_seconds": round(wall), "cpu_seconds": round(cpu), "jobs": args.jobs, "jax": jax.__version__,
            "python": platform.python_version(), "machine": platform.machine()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    bench.save_results(records, args.out, meta)
    print(f"bench_tradeoff: {len(records)} runs written to {args.out.relative_to(ROOT)} in {wall:.0f} s "
          f"(CPU {cpu:.0f} s, {args.jobs} workers)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
