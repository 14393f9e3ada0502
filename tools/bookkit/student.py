"""The student version of a chapter, in MyST: solutions removed, a code cell after each exercise.

Every product that hands a chapter to students starts here: the student notebooks and the
students' site (tools/make_assignments.py), the portable student notebooks
(tools/portable.py), the Otter assignments (tools/make_otter.py) and the student PDF:

* every gated solution is removed (the walk of :func:`bookkit.core.gated_cells`, which
  also leaves out the cells tagged ``source-only``), and every ``{solution}`` directive block;
* the stub of each auto-checked exercise (the indented Python block inside the
  ``{exercise}`` directive, ending in a ``check_...(...)`` call) moves out of the
  markdown into a code cell right after the exercise; every other exercise gets an empty
  code cell, ``# Exercise 1.5: your work (not auto-checked)``;
* outputs and execution counts are cleared, except the listings of the library's source
  (cells tagged ``source-listing``).
"""
from __future__ import annotations

import ast
import re
import sys
import textwrap
from dataclasses import dataclass

import nbformat

from bookkit.core import CHECKED_MARK, directive_blocks, directive_label, gated_cells, label_of, tidy

_CLOSING = re.compile(r"^ {0,3}(`{3,}|:{3,})\s*$")
_CHECK_CALL = re.compile(r"\bcheck_\w+\s*\(")
# A checked exercise's body starts with this mark (older chapters: "(checked)" in the title).
_CHECKED_MARK = CHECKED_MARK


class LayoutError(ValueError):
    """A notebook's exercises or solutions are laid out in a way this script does not handle."""


@dataclass
class Stats:
    exercises: int = 0
    stubs: int = 0
    solutions_removed: int = 0
    work_cells: int = 0

    def line(self, name: str) -> str:
        return (f"{name}: {self.exercises} exercises, {self.stubs} stubs moved to code cells, "
                f"{self.work_cells} empty code cells for the others, "
                f"{self.solutions_removed} solutions removed")


def remove_solution_directives(source: str) -> tuple[str, int]:
    """``source`` without its ``{solution}`` blocks, and how many were removed."""
    lines = source.split("\n")
    blocks = directive_blocks(lines, "solution")
    for first, last, _, _ in reversed(blocks):
        del lines[first:last + 1]
    return (tidy(lines) if blocks else source), len(blocks)


def _stub_in(body: list[str]) -> tuple[int, int] | None:
    """The first indented code block of an exercise body that is valid Python, as ``(first, last)``."""
    k = 0
    while k < len(body):
        line = body[k]
        indented = line.startswith("    ") or line.startswith("\t")
        if indented and line.strip() and (k == 0 or not body[k - 1].strip()):
            end = k
            while end + 1 < len(body) and (not body[end + 1].strip() or body[end + 1][:4] == "    "
                                           or body[end + 1].startswith("\t")):
                end += 1
            while not body[end].strip():
                end -= 1
            code = textwrap.dedent("\n".join(body[k:end + 1]).expandtabs(4))
            try:
                ast.parse(code)
            except SyntaxError:
                k = end + 1
                continue
            return k, end
        k += 1
    return None


def split_exercise_stubs(source: str) -> tuple[str, list[tuple[str, str]]]:
    """Move the stub code blocks out of the ``{exercise}`` directives of a markdown cell.

    Returns the markdown without the stubs and a list of ``(label, code)``, one
    per exercise that has a stub, in order; ``code`` is dedented.
    """
    lines = source.split("\n")
    found = []
    for first, last, _, _ in directive_blocks(lines, "exercise"):
        body = lines[first + 1:last]
        label = label_of(body)
        span = _stub_in(body)
        if span is None:
            continue
        a, b = first + 1 + span[0], first + 1 + span[1]
        found.append((a, b, label, textwrap.dedent("\n".join(lines[a:b + 1]).expandtabs(4))))
    if not found:
        return source, []
    for a, b, _, _ in reversed(found):
        del lines[a:b + 1]
        if a < len(lines) and _CLOSING.match(lines[a]) and not lines[a - 1].strip():
            del lines[a - 1]  # no blank line left before the closing fence
    return tidy(lines), [(label, code) for _, _, label, code in found]


# --------------------------------------------------------------------------- notebooks

def strip_solutions(nb, where: str = "notebook"):
    """A copy of ``nb`` without its solutions (gated and directive), outputs kept; and the count removed."""
    nb = nbformat.from_dict(nb)  # deep copy
    cells, removed = [], 0
    for placed in gated_cells(nb.cells, where, LayoutError):
        removed += placed.role == "start"
        if placed.role != "outside":
            continue
        cell = placed.cell
        if cell.cell_type == "markdown":
            cell.source, n = remove_solution_directives(cell.source)
            removed += n
            if n and not cell.source.strip():
                continue
        cells.append(cell)
    nb.cells = cells
    return nb, removed


def _cell_id(prefix: str, label: str, fallback: int) -> str:
    """A fixed cell id (not nbformat's random one), so that the same chapter gives the same file."""
    return prefix + (re.sub(r"[^A-Za-z0-9_-]", "-", label)[:64 - len(prefix)] or str(fallback))


def student_notebook(nb, where: str = "notebook", numbers: dict[str, str] | None = None):
    """The student version of chapter notebook ``nb`` (not modified) and its :class:`Stats`.

    ``numbers`` (see :func:`bookkit.core.exercise_numbers`) names the exercises in their empty code
    cells ("# Exercise 1.5: your work"); without it, or for an exercise not in it, the
    exercise's title is used.
    """
    numbers = numbers or {}
    nb, removed = strip_solutions(nb, where)
    stats = Stats(solutions_removed=removed)
    cells = []
    for cell in nb.cells:
        if cell.cell_type == "code":
            if "source-listing" not in cell.metadata.get("tags", []):
                cell.outputs = []   # a listing keeps its output: the library's source, shown as text
            cell.execution_count = None
            cell.metadata.pop("execution", None)
            for output in cell.outputs:
                output.pop("execution_count", None) if output.get("output_type") != "execute_result" \
                    else output.update(execution_count=None)
        cells.append(cell)
        if cell.cell_type != "markdown":
            continue
        lines = cell.source.split("\n")
        exercises = directive_blocks(lines, "exercise")
        stats.exercises += len(exercises)
        cell.source, stubs = split_exercise_stubs(cell.source)
        checked = sum("(checked)" in arg or _CHECKED_MARK in "\n".join(lines[a:b])
                      for a, b, _, arg in exercises)
        if checked > sum(bool(_CHECK_CALL.search(code)) for _, code in stubs):
            print(f"warning: {where}: an exercise marked as checked has no stub ending in a check_... call",
                  file=sys.stderr)
        stubs = list(stubs)            # in the order of their exercises
        for first, last, _, title in exercises:
            label = directive_label(lines, first, last)
            if stubs and stubs[0][0] == label:
                stub = nbformat.v4.new_code_cell(stubs.pop(0)[1])
                stub.metadata["exercise_stub"] = label
                stub.id = _cell_id("stub-", label, stats.stubs)
                cells.append(stub)
                stats.stubs += 1
                continue
            name = numbers.get(label) or (f"“{title}”" if title else label)
            work = nbformat.v4.new_code_cell(f"# Exercise {name}: your work (not auto-checked)\n")
            work.metadata["exercise_work"] = label
            work.id = _cell_id("work-", label, stats.work_cells)
            cells.append(work)
            stats.work_cells += 1
        if stubs:
            raise LayoutError(f"{where}: stubs left unplaced: {[label for label, _ in stubs]}")
    nb.cells = cells
    nb.metadata.pop("widgets", None)
    return nb, stats

