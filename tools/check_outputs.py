#!/usr/bin/env python3
"""Check the chapters' stored outputs with nbval under two numerical set-ups.

Usage: python tools/check_outputs.py [--setup NAME ...] [--workers N] [NOTEBOOK ...]
       (default: both set-ups, 2 workers, chapters/*.ipynb)

A printed number must not depend on the machine that prints it. Two things
change the last bits of a floating-point result from one machine to the next:
the BLAS kernel OpenBLAS picks for the processor (Haswell, SkylakeX, Zen, ...),
with its summation order, and numpy's own SIMD loops (AVX2, AVX-512, ...) for
functions such as ``exp`` and ``sin``. A cell that prints a count at a
tolerance's edge, or the outcome of a long training run, can then print
something else on the reader's machine. So every chapter is checked twice
(:data:`SETUPS`):

``native``
    this machine's own OpenBLAS kernel and threads, and numpy's best SIMD
    (what a reader gets);
``portable``
    OpenBLAS's ``Sandybridge`` kernel (one thread) and numpy limited to its
    baseline SIMD (``NPY_DISABLE_CPU_FEATURES``): a different summation order in
    every matrix product and different ``exp``/``sin``/``cos`` loops than on any
    machine with AVX2 or AVX-512. On an AVX2 machine (OpenBLAS's Haswell kernel)
    and on an AVX-512 one (SkylakeX) alike, the two set-ups differ in both.

Each cell may take :data:`CELL_TIMEOUT` seconds. A notebook in which a cell
timed out is checked once more, alone: nbclient and nbval have been seen to
wait for a kernel reply that never came, with the kernel idle (a lost message,
not a slow cell; see ``tools/run_notebooks.py``), and a second run of such a
notebook has always finished in seconds.

Exit status 0 when every notebook passes under every set-up; it prints each
set-up's time.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: Seconds each cell may take, for every tool that executes the chapters (this check,
#: tools/run_notebooks.py, tools/check_standalone.py, the site build's pages with code).
CELL_TIMEOUT = 120
#: Source of a fix for a lost wake-up in nbclient (nbclient#312), applied by every tool that runs
#: the chapters with nbclient (tools/run_notebooks.py; the standalone check's driver, which runs in
#: another environment and so takes the source). When a cell shows an ipywidgets Output widget,
#: nbclient's stand-in for it sends a ``comm_msg`` on the shell socket while it awaits the cell's
#: ``execute_reply`` on that socket; jupyter_client sends through a synchronous shadow of the asyncio
#: socket, and libzmq signals a message that arrives after a send only if ``ZMQ_EVENTS`` is read
#: (pyzmq#1203), so the reply can sit unread, the kernel idle, until the cell's timeout. Reading
#: ``ZMQ_EVENTS`` through the asyncio socket after each such send wakes the waiting poll (measured:
#: stalls in 4 of 300 explorer cells without it, 0 of 200 with it). nbval has no such stand-in.
NBCLIENT_WAKEUP_FIX = """
import zmq
from nbclient.output_widget import OutputWidget

if not getattr(OutputWidget._publish_msg, "rechecks_zmq_events", False):
    _publish_msg = OutputWidget._publish_msg

    def _publish_msg_then_recheck(self, *args, **kwargs):
        _publish_msg(self, *args, **kwargs)
        self.kernel_client.shell_channel.socket.get(zmq.EVENTS)

    _publish_msg_then_recheck.rechecks_zmq_events = True
    OutputWidget._publish_msg = _publish_msg_then_recheck
"""


def fix_nbclient_wakeup() -> None:
    """Apply :data:`NBCLIENT_WAKEUP_FIX` in this process (idempotent)."""
    exec(NBCLIENT_WAKEUP_FIX, {})


#: numpy's SIMD groups above its x86-64 baseline; disabling one the machine lacks is harmless.
_NUMPY_SIMD = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"
SETUPS: dict[str, dict[str, str]] = {
    "native": {},
    "portable": {"OPENBLAS_CORETYPE": "Sandybridge", "OPENBLAS_NUM_THREADS": "1",
                 "NPY_DISABLE_CPU_FEATURES": _NUMPY_SIMD},
}


#: The chapters whose runs take longest (training loops: about 15 s each, the others 5 s).
SLOWEST = ("04_", "06_")


def nbval(notebooks: list[Path], env: dict[str, str], workers: int, cell_timeout: float, report: Path) -> int:
    """Run nbval on ``notebooks`` (one kernel per notebook); the JUnit report goes to ``report``."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--nbval", "--nbval-current-env",
           "--nbval-sanitize-with", str(ROOT / "tests" / "nbval_sanitize.cfg"),
           "--nbval-cell-timeout", f"{cell_timeout:g}", f"--junitxml={report}"]
    # rootdir: the notebooks' folder, so that the report names each by its file name
    cmd.append(f"--rootdir={os.path.commonpath([p.parent for p in notebooks])}")
    if workers > 1 and len(notebooks) > 1:
        cmd += ["-n", str(min(workers, len(notebooks))), "--dist", "loadfile"]
    return subprocess.run(cmd + [str(p) for p in notebooks], cwd=ROOT, env=env).returncode


def failures(report: Path) -> dict[str, bool]:
    """Notebook file name -> whether one of its failing cells timed out, for each failing notebook."""
    out: dict[str, bool] = {}
    if report.exists():
        for case in ET.parse(report).getroot().iter("testcase"):
            for failure in [f for f in case if f.tag in ("failure", "error")]:
                text = (failure.get("message") or "") + (failure.text or "")
                name = case.get("classname", "")
                out[name] = out.get(name, False) or "Timeout of" in text
    return out


def check(setup: str, notebooks: list[Path], workers: int, cell_timeout: float) -> bool:
    env = dict(os.environ, MPLBACKEND="Agg", **SETUPS[setup])
    shown = " ".join(f"{k}={v}" for k, v in SETUPS[setup].items()) or "this machine's own kernel and SIMD"
    print(f"check_outputs: {setup} ({shown})", flush=True)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "nbval.xml"
        ok = nbval(notebooks, env, workers, cell_timeout, report) == 0
        failed = failures(report)
        again = [p for p in notebooks if failed.get(p.name)]
        if not ok and again and len(again) == len(failed):
            print(f"check_outputs: a cell timed out in {', '.join(p.name for p in again)}; checking "
                  f"{'it' if len(again) == 1 else 'them'} once more", flush=True)
            ok = nbval(again, env, workers, cell_timeout, Path(tmp) / "again.xml") == 0
    print(f"check_outputs: {setup}: {'passed' if ok else 'FAILED'} in {time.perf_counter() - start:.0f} s",
          flush=True)
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--setup", action="append", choices=sorted(SETUPS),
                        help="a set-up to check (repeatable; default: all)")
    parser.add_argument("--workers", type=int, default=2, help="notebooks checked at once (default 2)")
    parser.add_argument("--cell-timeout", type=float, default=CELL_TIMEOUT,
                        help=f"seconds each cell may take (default {CELL_TIMEOUT})")
    args = parser.parse_args()
    # the slowest chapters first, so that no worker is left alone with one at the end (measured:
    # one set-up in 48 s instead of 55 s)
    notebooks = [p.resolve() for p in args.notebooks] or \
        sorted((ROOT / "chapters").glob("*.ipynb"), key=lambda p: (not p.name.startswith(SLOWEST), p.name))
    results = [check(s, notebooks, args.workers, args.cell_timeout) for s in (args.setup or list(SETUPS))]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
