#!/usr/bin/env python3
"""Execute chapter notebooks top to bottom in a fresh kernel and store their outputs.

Usage: python tools/run_notebooks.py [NOTEBOOK ...]   (default: chapters/*.ipynb)

This is how the stored outputs that nbval compares against are produced: one
clean run, execution counts 1, 2, 3, ... Widget views are not stored (they need a
live kernel). It prints each notebook's total time and
its slowest cells, and exits non-zero if a notebook exceeds the time budget
(--total seconds) or a cell exceeds --cell seconds.
"""
import argparse
import sys
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from check_outputs import CELL_TIMEOUT, fix_nbclient_wakeup  # noqa: E402  (shared by the tools that run chapters)
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def coalesce_streams(nb) -> None:
    """Merge consecutive outputs of the same stream (how they are chunked depends on timing)."""
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        merged = []
        for out in cell.outputs:
            if (out.output_type == "stream" and merged and merged[-1].output_type == "stream"
                    and merged[-1].name == out.name):
                merged[-1].text += out.text
            else:
                merged.append(out)
        cell.outputs = merged


def drop_widget_outputs(nb) -> None:
    """Store no widget views or widget state.

    A widget needs a live kernel; its stored view would be dead on the static
    site, and its state carries random model ids that change on every run. The
    figure drawn before each explorer is what readers without a kernel see.
    """
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "code" and any(WIDGET_VIEW in o.get("data", {}) for o in cell.outputs):
            cell.outputs = []


def run(path: Path, cell_budget: float, total_budget: float, attempts: int = 2) -> bool:
    """Run ``path`` and store its outputs; a cell that times out gets one fresh rerun of the notebook.

    nbclient was seen (three times in one day, always in Chapter 3's explorer cell) to wait
    for a kernel message that never came, with the kernel idle, until the cell timeout: a
    lost message, not a slow cell. The timeout is CELL_TIMEOUT (120 s per cell); a rerun
    of such a notebook has always finished in seconds.
    """
    from nbclient.exceptions import CellTimeoutError

    for attempt in range(1, attempts + 1):
        try:
            return _run(path, cell_budget, total_budget)
        except CellTimeoutError as exc:
            print(f"{path.name}: a cell timed out ({str(exc).splitlines()[0][:100]}); "
                  + ("running the notebook again" if attempt < attempts else "giving up"), flush=True)
    return False


def _run(path: Path, cell_budget: float, total_budget: float) -> bool:
    fix_nbclient_wakeup()
    nb = nbformat.read(path, as_version=4)
    timings = []

    class TimedClient(NotebookClient):
        async def async_execute_cell(self, cell, cell_index, *args, **kwargs):
            start = time.perf_counter()
            result = await super().async_execute_cell(cell, cell_index, *args, **kwargs)
            if cell.cell_type == "code":
                timings.append((time.perf_counter() - start, cell_index))
            return result

    client = TimedClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                         resources={"metadata": {"path": str(path.parent)}})
    start = time.perf_counter()
    client.execute()
    total = time.perf_counter() - start
    for cell in nb.cells:  # execution metadata holds timestamps; keep the stored notebook stable
        cell.metadata.pop("execution", None)
    drop_widget_outputs(nb)
    coalesce_streams(nb)
    nbformat.write(nb, path)
    slow = sorted(timings, reverse=True)[:3]
    ok = total <= total_budget and all(t <= cell_budget for t, _ in timings)
    print(f"{path.relative_to(ROOT)}: {total:.1f} s in all (budget {total_budget:.0f} s); "
          f"slowest cells: " + ", ".join(f"#{i} {t:.2f} s" for t, i in slow) + ("" if ok else "  OVER BUDGET"))
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--cell", type=float, default=5.0, help="budget per cell, seconds (default 5)")
    parser.add_argument("--total", type=float, default=20.0, help="budget per notebook, seconds (default 20)")
    args = parser.parse_args()
    paths = [p.resolve() for p in args.notebooks] or sorted((ROOT / "chapters").glob("*.ipynb"))
    results = [run(p, args.cell, args.total) for p in paths]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
