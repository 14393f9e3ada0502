"""tools/problem_set_length.py: the length estimate of each chapter's problem set."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import exercise_catalogue as catalogue  # noqa: E402  (tools/ is not a package)
import problem_set_length as psl  # noqa: E402

LengthError = psl.LengthError


# --------------------------------------------------------------------------- a made-up chapter


def _md(text, **metadata):
    return {"cell_type": "markdown", "metadata": metadata, "source": text}


def _code(text):
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [], "source": text}


def exercise_cells(label, difficulty=2, statement="Prove the claim.", written="The proof.",
                   code="", inline=False):
    """An exercise and its solution: gated (start, code, end) or, with ``inline``, a {solution} box."""
    box = f"```{{exercise}} A title\n:label: {label}\n\n{statement}\n```"
    meta = {"exercise": {"label": label, "topic": "a topic", "difficulty": difficulty}}
    if inline:
        return [_md(box + f"\n\n```{{solution}} {label}\n:class: dropdown\n\n{written}\n```", **meta)]
    cells = [_md(box, **meta), _md(f"```{{solution-start}} {label}\n:class: dropdown\n```\n{written}")]
    if code:
        cells.append(_code(code))
    return cells + [_md("```{solution-end}\n```")]


def write_chapter(folder: Path, name="01_made_up", prose="Some prose of the chapter.", cells=None):
    cells = [_md(f"# A made-up chapter\n\n{prose}")] + (cells if cells is not None
                                                      else exercise_cells("ex-one"))
    nb = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def work(chapter, levels=(1, 2, 3)):
    return chapter.work_minutes("low", levels), chapter.work_minutes("high", levels)


# --------------------------------------------------------------------------- the book's chapters


@pytest.fixture(scope="module")
def book():
    return psl.measure_book(ROOT / "chapters")


def _rows(table):
    lines = table.splitlines()
    assert lines[0].startswith("| Chapter |") and set(lines[1]) <= set("|:- ")
    return [[c.strip() for c in row.strip("|").split("|")] for row in lines[2:]]


def test_the_counts_agree_with_the_catalogue(book):
    exercises = catalogue.read_exercises(ROOT / "chapters")
    assert [m.exercise.label for c in book for m in c.exercises] == [e.label for e in exercises]
    counts = catalogue.chapter_counts(exercises)
    rows = _rows(psl.chapter_table(book))
    assert len(rows) == len(book) == len(counts)
    for row, c in zip(rows, book):
        n, checked = counts[c.number]
        assert f"`{c.number} </chapters/" in row[0]
        assert row[1] == f"{checked} / {n - checked}"
        mine = [e for e in exercises if e.chapter == c.number]
        assert row[2] == " / ".join(str(sum(e.difficulty == d for e in mine)) for d in (1, 2, 3))
        assert row[3] == f"{c.prose_words:,}"
        assert (row[6] == "—") == (not any(e.difficulty == 3 for e in mine))


def test_every_exercise_of_the_book_is_measured(book):
    for c in book:
        assert c.prose_words > 3000, (c.number, c.prose_words)
        for m in c.exercises:
            label = m.exercise.label
            assert m.statement_words >= 20, (label, m.statement_words)
            assert m.solution_words + m.solution_code > 0, label
            # the stub's code is not read as words: no statement holds its function call
            assert m.statement_words < 400, (label, m.statement_words)
    ema = next(m for c in book for m in c.exercises if m.exercise.label == "ex-ema")
    # the EMA's model answer is a few lines, and its checks are not counted
    assert 3 <= ema.solution_code <= 15, ema.solution_code


def test_the_table_reads_as_ranges_of_hours(book):
    for row, c in zip(_rows(psl.chapter_table(book)), book):
        for cell in (row[4], row[5]):
            lo, hi = (float(x) for x in cell.split("–"))
            assert 0 <= lo < hi
        lo, hi = (float(x) for x in row[5].split("–"))
        assert lo * 60 <= c.work_minutes("low", (1, 2)) and c.work_minutes("high", (1, 2)) <= hi * 60


# --------------------------------------------------------------------------- counting words and code


@pytest.mark.parametrize("text, words", [
    ("$y_i=(1-\\gamma)x_i$", 8),                                   # y i = 1 - gamma x i
    ("$\\text{for all } x$", 3),
    ("$\\mathbb R^{n\\times d}$", 4),                              # R n times d
    ("$\\frac{a}{b}$", 3),                                         # a over b
    ("$\\left(\\,a\\right)$", 1),
    ("$$\na+b\n$$ (eq-sum)", 3),                                   # the label is not read
    ("```{exercise} Two words\n:label: ex-x\n\nOne two three.\n```", 5),
    ("```{prf:theorem} Head count\n:label: thm-h\n\nBody text here.\n```", 5),
    ("````{admonition} Aside\n```{figure} a/b.png\n:width: 50%\n\nCaption words.\n```\n````", 3),
    ("Text.\n\n    def f(x):\n        ...\n\n    check_f(f)\n", 1),   # an indented stub
    ("Before.\n```python\nx = 1\n```\nAfter.", 2),
    ("See {prf:ref}`thm-x` and {doc}`the chapter <02_rank_gap>`.", 6),
    ("As in {cite}`a2020,b2021`.", 8),
    ("[the site](https://example.org/a-b-c) ![alt text](fig.png)", 2),
    ("(sec-x)=\n## A heading\n<!-- a comment here -->", 2),
    ("Call `ema_operator(n, d)` now.", 6),                        # ema operator n d
    ("A row-stochastic matrix, don't 3.1", 5),
])
def test_count_words(text, words):
    assert psl.count_words(text) == words


def test_count_code_leaves_out_the_books_checks_and_the_stubs_given_lines():
    cell = "\n".join([
        "from ssmheads.exercises import check_f   # given with the stub",
        "",
        "def f(x):",
        "    # a comment",
        "    y = (x +",
        "         1)",
        "    assert y > 0",
        "    return y",
        "result = check_f(f)",
        "print(result)",
        "print(",
        '    "a long report")',
        "assert result",
        "%time f(1)",
    ])
    assert psl.count_code(cell) == 4          # def, the two lines of y = ..., return
    assert psl.count_code("x = [1,\n") == 1   # not Python: a line at a time, no crash
    assert psl.count_code("") == 0


# --------------------------------------------------------------------------- the estimate


def test_a_worked_exercise():
    e = catalogue.Exercise(1, "T", "chapters/01_t", "A title", "ex-a", "topic", 2, False)
    m = psl.Measured(e, statement_words=100, solution_words=80, solution_code=10)
    # 100 words read at 200 and 100 a minute, 80 written at 8 and 4, 10 lines at 1 and 3
    # minutes, two stars at 10 and 30 minutes
    assert m.minutes("low") == pytest.approx(0.5 + 10 + 10 + 20)
    assert m.minutes("high") == pytest.approx(1 + 20 + 30 + 60)


def test_the_rates_stay_below_the_published_ones():
    assert psl.READING_WPM[1] < psl.READING_WPM[0] <= psl.LEARNING_WPM < psl.NONFICTION_WPM
    assert psl.WRITING_WPM[1] < psl.WRITING_WPM[0] < psl.COMPOSING_WPM
    for rate in psl.RATES.values():
        assert 0 < rate.low < rate.high
        assert "assumption" in rate.why      # each says which part is assumed


def test_longer_solutions_give_longer_estimates(tmp_path):
    base = psl.measure_chapter(write_chapter(tmp_path / "a", cells=exercise_cells(
        "ex-one", written="The proof is short.", code="x = 1\n")))
    variants = {
        "longer written solution": exercise_cells(
            "ex-one", written="The proof is short. " + "Then a further step follows. " * 20,
            code="x = 1\n"),
        "more code": exercise_cells("ex-one", written="The proof is short.",
                                    code="x = 1\n" + "y = x + 1\n" * 12),
        "more stars": exercise_cells("ex-one", difficulty=3, written="The proof is short.",
                                     code="x = 1\n"),
        "longer statement": exercise_cells("ex-one", statement="Prove it. " * 60,
                                           written="The proof is short.", code="x = 1\n"),
        "another exercise": exercise_cells("ex-one", written="The proof is short.", code="x = 1\n")
        + exercise_cells("ex-two", difficulty=1, written="Short.", inline=True),
    }
    for k, (what, cells) in enumerate(variants.items()):
        other = psl.measure_chapter(write_chapter(tmp_path / f"v{k}", cells=cells))
        lo, hi = work(other)
        assert lo > work(base)[0] and hi > work(base)[1], what
    more_prose = psl.measure_chapter(write_chapter(tmp_path / "p", prose="Words of text. " * 500))
    assert more_prose.prose_words > base.prose_words + 1000
    assert more_prose.reading_minutes("low") > base.reading_minutes("high")


def test_a_three_star_exercise_is_counted_apart(tmp_path):
    chapter = psl.measure_chapter(write_chapter(tmp_path, cells=exercise_cells("ex-core")
                                                + exercise_cells("ex-hard", difficulty=3)))
    assert work(chapter, (1, 2))[0] < work(chapter)[0]
    assert work(chapter, (1, 2))[0] + work(chapter, (3,))[0] == pytest.approx(work(chapter)[0])


def test_the_solution_is_not_read_as_chapter_prose(tmp_path):
    short = psl.measure_chapter(write_chapter(tmp_path / "s", cells=exercise_cells("ex-one")))
    long = psl.measure_chapter(write_chapter(tmp_path / "l", cells=exercise_cells(
        "ex-one", written="More and more words. " * 50)))
    inline = psl.measure_chapter(write_chapter(tmp_path / "i", cells=exercise_cells(
        "ex-one", written="More and more words. " * 50, inline=True)))
    assert short.prose_words == long.prose_words == inline.prose_words
    assert long.exercises[0].solution_words == inline.exercises[0].solution_words >= 200


def test_calibrate():
    e = catalogue.Exercise(1, "T", "chapters/01_t", "A title", "ex-a", "topic", 1, False)
    ms = [psl.Measured(e, 50, 40 * k, 5 * k) for k in (1, 2, 3)]
    ratios = psl.calibrate(ms, [m.minutes("low") for m in ms])
    assert ratios["low"] == pytest.approx(1.0) and ratios["high"] < 1
    ratios = psl.calibrate(ms, [2 * m.minutes("high") for m in ms])
    assert ratios["high"] == pytest.approx(2.0)


def test_ranges_round_outwards():
    assert psl.hours(29, 31) == "0–1"
    assert psl.hours(60, 90) == "1–1.5"
    assert psl.hours(61, 89) == "1–1.5"
    assert psl.hours(59, 91) == "0.5–2"
    assert psl.minutes(33, 71) == "30–75"


# --------------------------------------------------------------------------- refusals


def test_an_exercise_without_a_solution_is_refused(tmp_path):
    cells = exercise_cells("ex-one")[:1]
    with pytest.raises(LengthError, match=r"01_made_up\.ipynb: no solution for ex-one"):
        psl.measure_chapter(write_chapter(tmp_path, cells=cells))


def test_a_solution_of_another_exercise_is_refused(tmp_path):
    cells = exercise_cells("ex-one") + exercise_cells("ex-two")[1:]
    with pytest.raises(LengthError, match=r"cell \d+: a solution of 'ex-two', which is not an exercise"):
        psl.measure_chapter(write_chapter(tmp_path, cells=cells))


def test_an_unclosed_solution_is_refused(tmp_path):
    cells = exercise_cells("ex-one")[:-1]
    with pytest.raises(LengthError, match=r"01_made_up\.ipynb: a \{solution-start\} has no \{solution-end\}"):
        psl.measure_chapter(write_chapter(tmp_path, cells=cells))


def test_bad_exercise_metadata_is_refused_with_the_cell(tmp_path):
    cells = exercise_cells("ex-one")
    del cells[0]["metadata"]["exercise"]["difficulty"]
    with pytest.raises(LengthError, match=r"01_made_up\.ipynb, cell 1: exercise metadata lacks difficulty"):
        psl.measure_chapter(write_chapter(tmp_path, cells=cells))


def test_bad_chapters_are_refused(tmp_path):
    with pytest.raises(LengthError, match="has no exercises"):
        psl.measure_chapter(write_chapter(tmp_path / "none", cells=[]))
    bad = tmp_path / "bad" / "01_bad.ipynb"
    bad.parent.mkdir()
    bad.write_text("{not json")
    with pytest.raises(LengthError, match=r"01_bad\.ipynb: not a notebook"):
        psl.measure_chapter(bad)
    with pytest.raises(LengthError, match="no such chapter notebook"):
        psl.measure_chapter(tmp_path / "missing.ipynb")
    with pytest.raises(LengthError, match="not a folder of chapter notebooks"):
        psl.measure_book(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(LengthError, match=r"no chapter notebooks \(\*\.ipynb\)"):
        psl.measure_book(tmp_path / "empty")


@pytest.mark.parametrize("low, high, message", [
    (-1, 2, "low must be a positive number"),
    (1, math.nan, "high must be a positive number"),
    (True, 2, "low must be a positive number"),
    ("1", 2, "low must be a positive number"),
    (3, 1, "must not exceed high"),
])
def test_bad_rates_are_refused(low, high, message):
    with pytest.raises(LengthError, match=message):
        psl.Rate(low, high, "minutes per thing", "why")


def test_bad_arguments_are_refused(book):
    chapter = book[0]
    with pytest.raises(LengthError, match="end must be 'low' or 'high'; got 'middle'"):
        chapter.reading_minutes("middle")
    with pytest.raises(LengthError, match="end must be 'low' or 'high'"):
        chapter.exercises[0].minutes("fast")
    with pytest.raises(LengthError, match="rates must map code, idea, reading, writing"):
        chapter.work_minutes("low", rates={"reading": psl.RATES["reading"]})
    with pytest.raises(LengthError, match="0 <= low <= high"):
        psl.hours(90, 60)
    with pytest.raises(LengthError, match="0 <= low <= high"):
        psl.minutes(-1, 60)
    with pytest.raises(LengthError, match="one observed time per exercise"):
        psl.calibrate(list(chapter.exercises), [10.0])
    with pytest.raises(LengthError, match="positive number of minutes; got 0"):
        psl.calibrate(list(chapter.exercises[:1]), [0])


def test_the_command_line(tmp_path, capsys):
    write_chapter(tmp_path / "chapters")
    assert psl.main(["--chapters", str(tmp_path / "chapters"), "--exercises"]) == 0
    out = capsys.readouterr().out
    assert "| Chapter |" in out and "| ex-one | ★★☆ | by hand |" in out
    assert "\n| 1 | 0 / 1 | 0 / 1 / 0 |" in out and "{doc}" not in out   # plain numbers
    assert "An estimate, not a measurement of students" in out and "Brysbaert 2019" in out
    assert psl.main(["--chapters", str(tmp_path / "nowhere")]) == 2
    err = capsys.readouterr().err
    assert re.search(r"problem_set_length\.py: .*nowhere: not a folder of chapter notebooks", err)


def test_cells_left_out_of_the_page_are_not_read(tmp_path):
    shown = psl.measure_chapter(write_chapter(tmp_path / "a"))
    hidden = _md("Words only the source has. " * 40, tags=["remove-cell"])
    other = psl.measure_chapter(write_chapter(tmp_path / "b", cells=[hidden] + exercise_cells("ex-one")))
    assert other.prose_words == shown.prose_words
