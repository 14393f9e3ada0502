"""The pointer from a chapter's source to its portable notebook, and no product holding it.

A reader who opens ``chapters/NN_name.ipynb`` in Jupyter sees the book's MyST source.
Its cell 1 (right after the set-up cell, which stays first) is a plain-Markdown note
tagged ``remove-cell`` and ``source-only`` that names ``notebooks/NN_name.ipynb``, the
version made for Jupyter. The site and the PDF drop it (``remove-cell``); the portable,
student and Otter notebooks drop it because :func:`bookkit.core.gated_cells`, the walk
they are all built on, leaves ``source-only`` cells out.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_assignments  # noqa: E402  (tools/ is not a package)
import portable  # noqa: E402
from bookkit import core  # noqa: E402

BOOK = portable.Book(ROOT)
CHAPTERS = [page.path for page in BOOK.chapters()]
by_chapter = pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
POINTER_TEXT = "the book's source"     # a phrase of the pointer, to find it in any product

# MyST a plain front end would show raw: directive fences, roles, targets, labelled math, options.
MYST = re.compile(r"(`{3,}|:{3,})\s*\{|\{[A-Za-z][\w:+-]*\}`|^\s*\([^()\s]+\)=\s*$|\$\$|^:[\w-]+:", re.M)


def _chapter(path: Path):
    return nbformat.read(path, as_version=4)


def _holds_pointer(nb) -> list[int]:
    return [i for i, c in enumerate(nb.cells)
            if core.source_only(c) or POINTER_TEXT in c.source or c.get("id") == "source-pointer"]


def test_there_are_chapters():
    assert len(CHAPTERS) >= 6


@by_chapter
def test_cell_1_points_to_the_chapters_own_portable_notebook(chapter):
    nb = _chapter(chapter)
    setup, pointer, title = nb.cells[0], nb.cells[1], nb.cells[2]
    assert setup.cell_type == "code" and "SSMHEADS_SOURCE" in setup.source, "the set-up cell must stay first"
    assert pointer.cell_type == "markdown"
    assert {"remove-cell", "source-only"} <= set(pointer.metadata.get("tags", []))
    portable_name = f"notebooks/{chapter.name}"
    assert f"[{portable_name}](../{portable_name})" in pointer.source, "it must name its own portable notebook"
    assert (ROOT / portable_name).exists()
    assert re.findall(r"notebooks/[\w.-]+\.ipynb", pointer.source) == [portable_name] * 2, \
        "it names no other chapter's notebook"
    assert "numbered as on the site" in pointer.source and POINTER_TEXT in pointer.source
    assert not MYST.search(pointer.source), f"MyST in the pointer: {MYST.search(pointer.source).group(0)!r}"
    assert title.cell_type == "markdown" and title.source.startswith("# "), "the title follows the pointer"
    assert _holds_pointer(nb) == [1], "one pointer per chapter"


def test_the_myst_detector_sees_myst():
    for text in ("```{note}\nx\n```", "See {prf:ref}`thm-x`.", "(sec-x)=\n## X", "$$\nx\n$$ (eq-x)",
                 ":::{tip}\nx\n:::", ":class: tip"):
        assert MYST.search(text), text


@by_chapter
def test_no_committed_portable_notebook_holds_it(chapter):
    nb = nbformat.read(ROOT / "notebooks" / chapter.name, as_version=4)
    assert _holds_pointer(nb) == []
    assert nb.cells[0].cell_type == "code" and "SSMHEADS_SOURCE" in nb.cells[0].source
    assert nb.cells[1].source.startswith("# "), "the title is the portable notebook's first markdown cell"


@by_chapter
def test_no_student_notebook_holds_it(chapter):
    source = _chapter(chapter)
    student, _ = make_assignments.student_notebook(source, where=chapter.name,
                                                   numbers=core.exercise_numbers(BOOK))
    assert _holds_pointer(student) == []       # the MyST student notebook (make assignments MYST=1)
    assert _holds_pointer(portable.student_version(source, BOOK.docname_of(chapter), BOOK)) == []
    assert _holds_pointer(portable.render_notebook(source, BOOK.docname_of(chapter), BOOK)[0]) == []
    staged, _ = make_assignments.strip_solutions(source, where=chapter.name)   # the students' site
    assert _holds_pointer(staged) == []
    assert _holds_pointer(source) == [1], "the source itself is not changed"


def test_no_otter_master_notebook_holds_it():
    make_otter = pytest.importorskip("make_otter")
    chapter = next(p for p in CHAPTERS if p.name.startswith("06_"))
    hidden = make_otter.load_hidden(ROOT / "instructors" / "hidden_tests.py")
    master, _ = make_otter.master_notebook(chapter, BOOK, hidden)
    assert _holds_pointer(master) == []


def test_the_walk_leaves_out_source_only_cells():
    cells = [nbformat.v4.new_code_cell("setup", metadata={"tags": ["remove-cell"]}),
             nbformat.v4.new_markdown_cell("Pointer.", metadata={"tags": ["remove-cell", "source-only"]}),
             nbformat.v4.new_markdown_cell("# Title"),
             nbformat.v4.new_markdown_cell("Only here.", metadata={"tags": ["source-only"]})]
    walked = list(core.gated_cells(cells))
    assert [(w.index, w.cell.source) for w in walked] == [(0, "setup"), (2, "# Title")]
    assert core.source_only(cells[1]) and not core.source_only(cells[0]) and not core.source_only({})
