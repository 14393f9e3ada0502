"""tools/exercise_catalogue.py: the exercise tables of the guide for instructors."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import exercise_catalogue as catalogue  # noqa: E402  (tools/ is not a package)

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _markdown_cells(path: Path) -> list[str]:
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells if c["cell_type"] == "markdown"]


def _independent_count() -> tuple[int, set[str]]:
    """The number of {exercise} directives, and the labels of those marked auto-checked, found by regex."""
    count, checked = 0, set()
    for path in CHAPTERS:
        for text in _markdown_cells(path):
            for m in re.finditer(r"^```\{exercise\}(.*)\n:label: (\S+)\n\n(.*)", text, re.M):
                count += 1
                if m.group(3).startswith("✓ *Auto-checked.*"):
                    checked.add(m.group(2))
    return count, checked


@pytest.fixture(scope="module")
def exercises():
    return catalogue.read_exercises(ROOT / "chapters")


def _rows(table: str) -> list[str]:
    lines = table.splitlines()
    assert lines[0].startswith("| Chapter |") and set(lines[1]) <= set("|:- ")
    return lines[2:]


def test_one_row_per_exercise(exercises):
    expected, _ = _independent_count()
    rows = _rows(catalogue.markdown_table(exercises))
    assert len(rows) == len(exercises) == expected
    assert expected >= 29  # the book's exercises as of writing; none may go missing
    for row, e in zip(rows, exercises):
        assert f"| {{numref}}`Exercise\u00a0%s <{e.label}>` |" in row and e.title in row
        assert f"</{e.docname}>" in row
        assert f"`{e.label} <" not in row, "the table shows a label (slug) instead of the exercise's number"
    assert len({e.label for e in exercises}) == len(exercises)


def test_checked_exercises_are_detected(exercises):
    _, titled_checked = _independent_count()
    assert {e.label for e in exercises if e.checked} == titled_checked
    assert {"ex-ema", "ex-lag-span-by-hand", "ex-build-heads", "ex-head-jacobian"} <= titled_checked
    assert not {"ex-shift", "ex-first-token", "ex-sign-head", "ex-jordan-peak"} & titled_checked
    for row, e in zip(_rows(catalogue.markdown_table(exercises)), exercises):
        assert row.rstrip().endswith("| yes |" if e.checked else "| no |")


def test_titles_hold_no_brackets_of_their_own(exercises):
    """The site shows "Exercise 3.1 (Title)": a bracket in the title would nest."""
    for e in exercises:
        assert not re.search(r"[()]", re.sub(r"\$[^$]*\$", "", e.title)), e.title


def test_every_chapter_has_enough_exercises(exercises):
    counts = catalogue.chapter_counts(exercises)
    assert sorted(counts) == list(range(1, len(CHAPTERS) + 1))
    for chapter, (n, checked) in counts.items():
        assert n >= 6 and checked >= 2, (chapter, n, checked)


@pytest.mark.parametrize("difficulty, shown", [(1, "★☆☆"), (2, "★★☆"), (3, "★★★")])
def test_difficulty_as_stars(difficulty, shown):
    assert catalogue.stars(difficulty) == shown


@pytest.mark.parametrize("bad", [0, 4, "2", None])
def test_stars_refuses_other_values(bad):
    with pytest.raises(ValueError, match="difficulty must be 1, 2 or 3"):
        catalogue.stars(bad)


def test_table_shows_each_difficulty(exercises):
    assert {e.difficulty for e in exercises} == {1, 2, 3}
    for row, e in zip(_rows(catalogue.markdown_table(exercises)), exercises):
        assert f"| {catalogue.stars(e.difficulty)} |" in row


def test_problem_sets_use_every_exercise_once(exercises):
    table = catalogue.problem_sets(exercises)
    rows = table.splitlines()[2:]
    assert len(rows) == len(CHAPTERS)
    for e in exercises:
        assert table.count(f"{{numref}}`Exercise\u00a0%s <{e.label}>`") == 1, e.label
    assert table.count("✓") == sum(e.checked for e in exercises)


# --------------------------------------------------------------------------- errors, on small notebooks

EXERCISE = "```{exercise} Title\n:label: ex-a\n\nDo something.\n```"
CHECKED = ("```{exercise} Title\n:label: ex-a\n\n✓ *Auto-checked.* Write f.\n\n"
           "    def f():\n        ...\n\n    check_f(f)\n```")
META = {"label": "ex-a", "topic": "a topic", "difficulty": 2}


def _write(tmp_path: Path, *cells: tuple[str, dict | None], name: str = "01_test.ipynb") -> Path:
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "id": f"c{i}", "source": text,
         "metadata": {} if meta is None else {"exercise": meta}}
        for i, (text, meta) in enumerate([("# A chapter", None), *cells])]}
    path = tmp_path / name
    path.write_text(json.dumps(nb))
    return path


def test_reads_a_small_chapter(tmp_path):
    path = _write(tmp_path, (EXERCISE, META), (CHECKED.replace("ex-a", "ex-b"), {**META, "label": "ex-b"}))
    first, second = catalogue.read_chapter(path)
    assert (first.chapter, first.chapter_title, first.label, first.checked) == (1, "A chapter", "ex-a", False)
    assert (second.label, second.checked, second.title, second.difficulty) == ("ex-b", True, "Title", 2)


def test_an_unclosed_fence_runs_to_the_end_of_the_cell(tmp_path):
    (exercise,) = catalogue.read_chapter(_write(tmp_path, (EXERCISE.removesuffix("\n```"), META)))
    assert exercise.label == "ex-a"


def test_exercise_without_metadata_is_an_error(tmp_path):
    path = _write(tmp_path, (EXERCISE, None))
    with pytest.raises(catalogue.CatalogueError, match=r"01_test.ipynb, cell 1: exercise 'ex-a' has no 'exercise' metadata"):
        catalogue.read_chapter(path)


@pytest.mark.parametrize("meta, message", [
    ({"label": "ex-a", "topic": "t"}, "lacks difficulty"),
    ({**META, "label": "ex-other"}, "metadata label 'ex-other' but the directive's :label: is 'ex-a'"),
    ({**META, "difficulty": 5}, "difficulty of ex-a is 5; expected 1, 2 or 3"),
    ({**META, "difficulty": True}, "difficulty of ex-a is True"),
    ({**META, "topic": " "}, "the topic of ex-a is empty"),
])
def test_bad_metadata_is_an_error(tmp_path, meta, message):
    with pytest.raises(catalogue.CatalogueError, match=re.escape(message)):
        catalogue.read_chapter(_write(tmp_path, (EXERCISE, meta)))


def test_checked_mark_and_stub_must_agree(tmp_path):
    with pytest.raises(catalogue.CatalogueError, match=r"is marked .✓ \*Auto-checked\.\*. but its stub calls no check"):
        catalogue.read_chapter(_write(tmp_path, (CHECKED.replace("    check_f(f)\n", ""), META)))
    with pytest.raises(catalogue.CatalogueError, match=r"calls a check but its body does not start with"):
        catalogue.read_chapter(_write(tmp_path, (CHECKED.replace("✓ *Auto-checked.* ", ""), META)))


@pytest.mark.parametrize("title", ["Title (checked)", "Build (the) heads"])
def test_a_title_with_brackets_is_an_error(tmp_path, title):
    with pytest.raises(catalogue.CatalogueError, match=r"has brackets; the site shows it in brackets already"):
        catalogue.read_chapter(_write(tmp_path, (EXERCISE.replace("Title", title), META)))


def test_math_in_a_title_may_hold_brackets(tmp_path):
    (exercise,) = catalogue.read_chapter(_write(tmp_path, (EXERCISE.replace("Title", "Heads on $(0, 1)$"), META)))
    assert exercise.title == "Heads on $(0, 1)$"


def test_metadata_without_exercise_and_two_exercises_in_a_cell_are_errors(tmp_path):
    with pytest.raises(catalogue.CatalogueError, match="has exercise metadata but no {exercise} directive"):
        catalogue.read_chapter(_write(tmp_path, ("Just text.", META)))
    with pytest.raises(catalogue.CatalogueError, match="2 exercises in one cell"):
        catalogue.read_chapter(_write(tmp_path, (EXERCISE + "\n\n" + EXERCISE, META)))


def test_duplicate_labels_across_chapters_are_an_error(tmp_path):
    _write(tmp_path, (EXERCISE, META), name="01_a.ipynb")
    _write(tmp_path, (EXERCISE, META), name="02_b.ipynb")
    with pytest.raises(catalogue.CatalogueError, match="labels used twice: ex-a"):
        catalogue.read_exercises(tmp_path)
