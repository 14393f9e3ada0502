#!/usr/bin/env python3
"""Run the parts of ``make test`` in lanes: the parts of one lane one after another, the lanes at once.

Usage: python tools/test_parts.py --lane "test-lib test-otter" --lane "test-notebooks test-pdf" ...

Each part is ``make PART``; its output goes to ``_build/test-logs/PART.log`` and one line says
when it passed or failed and how long it took. A part that fails has its log's last 150 lines
printed at the end (the whole log stays on disk); every part runs even when another failed.
The last line reads ``test-parts: N passed, M failed, in T s: PART S s, ...``; the exit
status is 1 if any part failed. Two lanes keep both cores of a two-core machine busy while a
part that runs on one (LaTeX, Sphinx, Otter's assign) is running.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TAIL = 150


def run_lane(parts: list[str], logs: Path, results: dict, lock: threading.Lock, make: str) -> None:
    for part in parts:
        start = time.monotonic()
        log = logs / f"{part}.log"
        with open(log, "w", encoding="utf-8") as f:
            done = subprocess.run([make, "--no-print-directory", part], cwd=ROOT, stdout=f,
                                  stderr=subprocess.STDOUT)
        seconds = time.monotonic() - start
        with lock:
            results[part] = (done.returncode == 0, seconds, log)
            print(f"test-parts: {part} {'passed' if done.returncode == 0 else 'FAILED'} in {seconds:.0f} s "
                  f"(log: {log.relative_to(ROOT)})", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lane", action="append", required=True, help="the parts of one lane, in order")
    parser.add_argument("--logs", type=Path, default=ROOT / "_build" / "test-logs")
    args = parser.parse_args(argv)
    lanes = [lane.split() for lane in args.lane if lane.split()]
    order = [part for lane in lanes for part in lane]
    args.logs.mkdir(parents=True, exist_ok=True)
    make = os.environ.get("MAKE", "make")
    results: dict[str, tuple[bool, float, Path]] = {}
    lock = threading.Lock()
    start = time.monotonic()
    print(f"test-parts: {len(lanes)} lanes at once: " + " | ".join(" ".join(lane) for lane in lanes), flush=True)
    threads = [threading.Thread(target=run_lane, args=(lane, args.logs, results, lock, make)) for lane in lanes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failed = [part for part in order if not results[part][0]]
    for part in failed:
        lines = results[part][2].read_text(encoding="utf-8", errors="replace").splitlines()
        print(f"\n===== {part} FAILED: the last {min(TAIL, len(lines))} of {len(lines)} lines of "
              f"{results[part][2].relative_to(ROOT)} =====")
        print("\n".join(lines[-TAIL:]))
    times = ", ".join(f"{part} {results[part][1]:.0f} s" for part in order)
    print(f"test-parts: {len(order) - len(failed)} passed, {len(failed)} failed, "
          f"in {time.monotonic() - start:.0f} s: {times}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
