"""The catalogue of the book's exercises, read from the chapter notebooks.

Every exercise is a markdown cell holding a ``{exercise}`` directive, and the
cell's metadata describes it::

    "exercise": {"label": "ex-ema", "topic": "...", "difficulty": 1}

An exercise is *checked* when its directive holds the stub a student fills in,
ending in a call to a ``check_...`` function of ``ssmheads.exercises``; its body
then starts with the mark ``✓ *Auto-checked.*`` (the title stays a plain title:
the site renders it in brackets, "Exercise 3.1 (Build the heads)", so a title holds
no brackets of its own). This module reads all of that, refuses inconsistent
metadata with :class:`CatalogueError`, and renders the tables of the guide for
instructors (``book/instructors.md``) as MyST Markdown, naming each exercise by the
number the site gives it (``{numref}`` to its label: "Exercise 3.1").

What an exercise, its label and options, the auto-checked mark, a chapter's number and
its title are is the book's model (tools/bookkit/core.py: :func:`~bookkit.core.exercise_blocks`,
:data:`~bookkit.core.CHECKED_MARK`, :func:`~bookkit.core.chapter_file_number`,
:func:`~bookkit.core.first_heading`); this module reads the exercises' metadata and makes
the tables. Standard library only (the parts of the core it uses need no more), so the
guide's cell can import it from any kernel.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from bookkit.core import CHECKED_MARK, cell_source, chapter_file_number, chapter_files, exercise_blocks, first_heading

ROOT = Path(__file__).resolve().parent.parent
_CHECK_CALL = re.compile(r"^\s*check_\w+\(.*\)\s*$", re.M)
STAR, NO_STAR = "★", "☆"


class CatalogueError(ValueError):
    """An exercise cell whose metadata is missing or disagrees with its directive."""


@dataclass(frozen=True)
class Exercise:
    chapter: int        # the chapter's number (from its file name, 01_... -> 1)
    chapter_title: str  # the notebook's first heading
    docname: str        # e.g. "chapters/01_unified_operator"
    title: str          # the directive's title
    label: str
    topic: str
    difficulty: int     # 1, 2 or 3
    checked: bool       # has a stub that calls a check of ssmheads.exercises
    shows_answer: bool = False  # points to a listing of the library's source that answers it


_source = cell_source      # kept for the callers that used it (tools/hand_scores.py)


def read_chapter(path: Path) -> list[Exercise]:
    """The exercises of one chapter notebook, in order."""
    path = Path(path)
    nb = json.loads(path.read_text(encoding="utf-8"))
    number = chapter_file_number(path)
    if number is None:
        raise CatalogueError(f"{path.name}: a chapter's file name starts with its number, e.g. 01_...")
    chapter = int(number)
    markdown = [(i, cell_source(c), c.get("metadata", {})) for i, c in enumerate(nb["cells"])
                if c["cell_type"] == "markdown"]
    heading = first_heading(text for _, text, _ in markdown) or path.stem
    exercises = []
    for index, text, metadata in markdown:
        where = f"{path.name}, cell {index}"
        directives = exercise_blocks(text)
        meta = metadata.get("exercise")
        if not directives:
            if meta is not None:
                raise CatalogueError(f"{where}: has exercise metadata but no {{exercise}} directive")
            continue
        if len(directives) > 1:
            raise CatalogueError(f"{where}: {len(directives)} exercises in one cell; "
                                 "give each its own cell so its metadata describes it")
        block = directives[0]
        title, body, label = block.title, block.body, block.label or None
        if not isinstance(meta, dict):
            raise CatalogueError(f"{where}: exercise {label or title!r} has no 'exercise' metadata "
                                 '(expected {"label": ..., "topic": ..., "difficulty": 1, 2 or 3})')
        missing = [key for key in ("label", "topic", "difficulty") if key not in meta]
        if missing:
            raise CatalogueError(f"{where}: exercise metadata lacks {', '.join(missing)}")
        if meta["label"] != label:
            raise CatalogueError(f"{where}: metadata label {meta['label']!r} but the directive's "
                                 f":label: is {label!r}")
        if meta["difficulty"] not in (1, 2, 3) or isinstance(meta["difficulty"], bool):
            raise CatalogueError(f"{where}: difficulty of {label} is {meta['difficulty']!r}; "
                                 "expected 1, 2 or 3")
        if not str(meta["topic"]).strip():
            raise CatalogueError(f"{where}: the topic of {label} is empty")
        if re.search(r"[()]", re.sub(r"\$[^$]*\$", "", title)):
            raise CatalogueError(f"{where}: the title of {label}, {title!r}, has brackets; the site shows it "
                                 "in brackets already (Exercise 1.1 (Title)). A checked exercise starts its "
                                 f"body with {CHECKED_MARK!r} instead of a '(checked)' in the title")
        checked = bool(_CHECK_CALL.search(body))
        marked = block.marked_checked
        if checked != marked:
            raise CatalogueError(
                f"{where}: {label} " + (f"calls a check but its body does not start with {CHECKED_MARK!r}"
                                        if checked else
                                        f"is marked {CHECKED_MARK!r} but its stub calls no check_... function"))
        exercises.append(Exercise(
            chapter=chapter, chapter_title=heading, docname=f"chapters/{path.stem}",
            title=title, label=label, topic=str(meta["topic"]).strip(),
            difficulty=int(meta["difficulty"]), checked=checked,
            shows_answer=bool(re.search(r"\blist(?:ings?|ed)\b", body))))
    return exercises


def read_exercises(chapters: Path = ROOT / "chapters") -> list[Exercise]:
    """The exercises of every chapter notebook in ``chapters``, in chapter order."""
    paths = chapter_files(chapters)
    if not paths:
        raise CatalogueError(f"no chapter notebooks in {chapters}")
    exercises = [e for path in paths for e in read_chapter(path)]
    labels = [e.label for e in exercises]
    duplicates = sorted({x for x in labels if labels.count(x) > 1})
    if duplicates:
        raise CatalogueError(f"exercise labels used twice: {', '.join(duplicates)}")
    return exercises


def stars(difficulty: int) -> str:
    """``1 -> "★☆☆"``, ``2 -> "★★☆"``, ``3 -> "★★★"``."""
    if difficulty not in (1, 2, 3):
        raise ValueError(f"difficulty must be 1, 2 or 3; got {difficulty!r}")
    return STAR * difficulty + NO_STAR * (3 - difficulty)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _ref(label: str) -> str:
    """A link to the exercise showing the number the site gives it: "Exercise 3.1" (unbroken)."""
    return f"{{numref}}`Exercise\u00a0%s <{label}>`"


def _chapter_link(e: Exercise) -> str:
    return f"{{doc}}`{e.chapter} </{e.docname}>`"


def markdown_table(exercises: list[Exercise]) -> str:
    """One row per exercise: chapter, "Exercise N.M" (a link), title, topic, difficulty in stars, auto-checked."""
    rows = ["| Chapter | Exercise | Title | Topic | Difficulty | Auto-checked |",
            "| :---: | --- | --- | --- | :---: | :---: |"]
    for e in exercises:
        rows.append(f"| {_chapter_link(e)} | {_ref(e.label)} | {_cell(e.title)} | {_cell(e.topic)} | "
                    f"{stars(e.difficulty)} | {'yes' if e.checked else 'no'} |")
    return "\n".join(rows)


def chapter_counts(exercises: list[Exercise]) -> dict[int, tuple[int, int]]:
    """``{chapter: (exercises, checked exercises)}``."""
    counts: dict[int, tuple[int, int]] = {}
    for e in exercises:
        n, c = counts.get(e.chapter, (0, 0))
        counts[e.chapter] = (n + 1, c + e.checked)
    return counts


def problem_sets(exercises: list[Exercise]) -> str:
    """A suggested weekly problem set per chapter, as a Markdown table built from the metadata.

    Week *w* takes chapter *w*: a warm-up of the difficulty-1 exercises, the core
    of the difficulty-2 ones, and the difficulty-3 ones as optional challenges.
    Checked exercises are marked ✓, so each set mixes code the students can check
    themselves with pen-and-paper questions that need a reader.
    """
    rows = ["| Week | Chapter | Warm-up (★☆☆) | Core (★★☆) | Challenge, optional (★★★) | checked / pen and paper |",
            "| :---: | --- | --- | --- | --- | :---: |"]
    for week, chapter in enumerate(sorted({e.chapter for e in exercises}), start=1):
        mine = [e for e in exercises if e.chapter == chapter]
        by_level = [", ".join(_ref(e.label) + (" ✓" if e.checked else "") for e in mine if e.difficulty == d)
                    or "—" for d in (1, 2, 3)]
        checked = sum(e.checked for e in mine)
        first = mine[0]
        rows.append(f"| {week} | {{doc}}`{_cell(first.chapter_title)} </{first.docname}>` | "
                    + " | ".join(by_level) + f" | {checked} / {len(mine) - checked} |")
    return "\n".join(rows)
