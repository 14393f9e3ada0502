#!/usr/bin/env python3
"""Report how far inside its threshold every numerical assert of the chapters passes.

Usage: python tools/assert_margins.py [NOTEBOOK ...] [--top K] [--min-margin M]

The book's rule: every claim is an ``assert`` that would fail if the
mathematics or the code were wrong, and no assert passes by a hair: each must
sit at least 2x inside its threshold. This script runs each chapter's code
cells in order (in this process, matplotlib on Agg, IPython magics and shell
lines skipped) with every ``assert`` rewritten so that its comparisons are
measured as they are evaluated:

* ``a < t`` / ``a <= t`` with positive numbers: margin ``t / a``;
* ``a > t`` / ``a >= t``: margin ``a / t``;
* ``close(a, b, tol)`` (any call named ``close``): margin ``tol / relative_gap(a, b)``;
* ``np.all(...)``, ``all(...)`` and ``and`` chains are looked into; an
  elementwise comparison of arrays counts its worst element;
  comparisons where neither side is a float (integer counts: exact or wrong)
  and equalities are not margins and are skipped.

It prints the tightest K margins of each notebook and exits non-zero if any
measured margin is below ``--min-margin`` (default 2).
"""
from __future__ import annotations

import argparse
import ast
import contextlib
import io
import math
import os
import sys
from pathlib import Path

from bookkit.core import chapter_files, has_tag  # the chapters and their cells' tags: the book's model

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("MPLBACKEND", "Agg")

_OPS = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


class _Recorder:
    def __init__(self):
        self.rows: list[tuple[float, str]] = []
        self.where = ""

    def _floats(self, v):
        """``v`` as a float array, or None for integers, booleans and non-numbers (not margins)."""
        import numpy as np
        try:
            arr = np.asarray(v)
        except (TypeError, ValueError):
            return None
        if arr.dtype.kind not in "f":
            return None
        return arr.astype(float)

    def cmp(self, left, op, right, text):
        import numpy as np
        result = {"<": lambda: left < right, "<=": lambda: left <= right,
                  ">": lambda: left > right, ">=": lambda: left >= right}[op]()
        a, t = self._floats(left), self._floats(right)
        if a is None and t is None:
            return result
        a = np.asarray(left, dtype=float) if a is None else a
        t = np.asarray(right, dtype=float) if t is None else t
        try:
            a, t = np.broadcast_arrays(a, t)
        except ValueError:
            return result
        keep = np.isfinite(a) & np.isfinite(t)
        if op in ("<", "<="):
            keep &= (t > 0) & (a >= 0)
            ratios = np.where(a[keep] > 0, t[keep] / np.where(a[keep] > 0, a[keep], 1), np.inf)
        else:
            keep &= (t > 0) & (a > 0)
            ratios = a[keep] / t[keep]
        if ratios.size:
            self.rows.append((float(ratios.min()), f"{self.where}: {text}"))
        return result

    def close(self, fn, args, kwargs, text):
        from ssmheads.numerics import relative_gap
        result = fn(*args, **kwargs)
        if len(args) >= 2:
            tol = kwargs.get("tol", args[2] if len(args) > 2 else 1e-12)
            try:
                gap = relative_gap(args[0], args[1])
            except ValueError:
                return result
            if tol > 0:
                self.rows.append((tol / gap if gap > 0 else math.inf, f"{self.where}: {text}"))
        return result


class _Rewrite(ast.NodeTransformer):
    """Route the comparisons an ``assert`` claims to be true through the recorder.

    Only comparisons in a truth position count: the assert's test itself, the
    operands of an ``and``, and the argument (or generator element) of
    ``all``/``np.all``. A comparison nested in ``==`` or ``or`` is not a claim
    that it holds, so it is left alone.
    """

    def __init__(self, source: str):
        self.source = source

    def visit_Assert(self, node: ast.Assert):
        node.test = self._claim(node.test)
        return node

    def _text(self, node) -> str:
        return (ast.get_source_segment(self.source, node) or "?").replace("\n", " ")[:110]

    def _recorder(self, attr: str, args: list) -> ast.Call:
        func = ast.Attribute(value=ast.Name("__margins__", ast.Load()), attr=attr, ctx=ast.Load())
        return ast.Call(func=func, args=args, keywords=[])

    def _claim(self, node):
        if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.And):
            node.values = [self._claim(v) for v in node.values]
            return node
        if isinstance(node, ast.Compare):
            if len(node.ops) == 1 and type(node.ops[0]) in _OPS:
                return self._recorder("cmp", [node.left, ast.Constant(_OPS[type(node.ops[0])]),
                                              node.comparators[0], ast.Constant(self._text(node))])
            return node
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if name == "all" and len(node.args) == 1:
                arg = node.args[0]
                if isinstance(arg, (ast.GeneratorExp, ast.ListComp)):
                    arg.elt = self._claim(arg.elt)
                else:
                    node.args[0] = self._claim(arg)
                return node
            if name == "close" and not any(isinstance(a, ast.Starred) for a in node.args):
                kwargs = ast.Dict(keys=[ast.Constant(k.arg) for k in node.keywords],
                                  values=[k.value for k in node.keywords])
                return self._recorder("close", [node.func, ast.List(elts=node.args, ctx=ast.Load()), kwargs,
                                                ast.Constant(self._text(node))])
        return node


def _runnable(source: str) -> str:
    lines = [ln for ln in source.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    return "\n".join(lines)


def measure(path: Path) -> list[tuple[float, str]]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import nbformat

    nb = nbformat.read(path, as_version=4)
    rec = _Recorder()
    namespace = {"__margins__": rec, "__name__": "__main__", "display": lambda *a, **k: None}
    cwd = os.getcwd()
    os.chdir(path.parent)
    try:
        for index, cell in enumerate(nb.cells):
            if cell.cell_type != "code" or has_tag(cell, "remove-cell"):
                continue
            source = _runnable(cell.source)
            tree = _Rewrite(source).visit(ast.parse(source))
            ast.fix_missing_locations(tree)
            rec.where = f"cell {index}"
            with contextlib.redirect_stdout(io.StringIO()):
                exec(compile(tree, f"{path.name}:cell{index}", "exec"), namespace)
            plt.close("all")
    finally:
        os.chdir(cwd)
    return sorted(rec.rows, key=lambda r: r[0])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--min-margin", type=float, default=2.0)
    args = parser.parse_args()
    paths = args.notebooks or chapter_files(ROOT / "chapters")
    failed = False
    for path in paths:
        rows = measure(path.resolve())
        print(f"{path.name}: {len(rows)} measured comparisons; tightest {min(args.top, len(rows))}:")
        for margin, text in rows[:args.top]:
            flag = "  <-- below the minimum" if margin < args.min_margin else ""
            print(f"  {margin:10.3g}x  {text}{flag}")
        failed |= any(m < args.min_margin for m, _ in rows)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
