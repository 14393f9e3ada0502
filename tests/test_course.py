"""The course file (tools/course.py), read by make otter, make grade and make gradebook.

Quick tests, always run: the parser refuses what it should by key; the course module imports in
both environments and none of the tools; a course's exercise selection and points change the
Otter master notebook, and no course (or one that chooses everything) leaves it byte for byte
the book's; show_hidden_after_due sets Otter's show_hidden; grading takes its workers, marks
the dropped questions, skips the practice cells, and applies the time rule for hidden messages
(with an injected clock).

Tests that run Otter (``otter assign``, ``otter run``) run only in ``make test-otter``
(OTTER_REQUIRED=1), like tests/test_otter.py's, all ``extended`` (make test-otter-extended).
"""
from __future__ import annotations

import ast
import csv
import datetime as dt
import itertools
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
RANK_GAP = ROOT / "chapters" / "02_rank_gap.ipynb"     # the quickest master: auto, prose and pen-and-paper
EXAMPLE = ROOT / "instructors" / "course.example.yml"
OTTER_PYTHON = ROOT / ".venv-otter" / "bin" / "python"
OTTER_DIR = ROOT / os.environ.get("OTTER_DIR", "_build/otter")   # make test-otter: _build/otter-test
sys.path.insert(0, str(TOOLS))

import course as courses  # noqa: E402  (tools/ is not a package)
import gradebook  # noqa: E402
import make_otter  # noqa: E402
import otter_grade  # noqa: E402

REQUIRED = os.environ.get("OTTER_REQUIRED") == "1"
graded_here = pytest.mark.skipif(
    not REQUIRED, reason="runs Otter: run by `make test-otter` (OTTER_REQUIRED=1)")

UTC = dt.timezone.utc
DUE = dt.datetime(2026, 12, 1, 17, 0, tzinfo=UTC)


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# --------------------------------------------------------------------------- the parser

@pytest.mark.parametrize("text, words", [
    ("exercise: [ex3.4]\n", "unknown key(s) exercise"),
    ("exercises: 03_head_count\n", "exercises: expected a list"),
    ("exercises: []\n", "exercises: an empty list grades nothing"),
    ("exercises: [ex3.4, 3]\n", "exercises: expected a list"),
    ("points: [ex3.4]\n", "points: expected a mapping"),
    ("points: {ex3.4: 0}\n", "points: ex3.4: expected a number > 0"),
    ("points: {ex3.4: -2}\n", "points: ex3.4: expected a number > 0"),
    ("points: {ex3.4: five}\n", "points: ex3.4: expected a number > 0"),
    ("points: {ex3.4: true}\n", "points: ex3.4: expected a number > 0"),
    ("points: {3.4: 2}\n", "points: 3.4: expected a question name"),
    ("workers: 0\n", "workers: expected a whole number >= 1"),
    ("workers: 1.5\n", "workers: expected a whole number >= 1"),
    ("workers: true\n", "workers: expected a whole number >= 1"),
    ("workers: two\n", "workers: expected a whole number >= 1"),
    ("show_hidden_after_due: yes please\n", "show_hidden_after_due: expected true or false"),
    ("due: next friday\n", "due: 'next friday' is not an ISO date"),
    ("- exercises\n", "expected a mapping"),
])
def test_a_bad_course_file_is_refused_naming_the_file_and_the_key(tmp_path, text, words):
    path = _write(tmp_path / "course.yml", text)
    with pytest.raises(courses.CourseError) as caught:
        courses.read_course(path)
    assert str(path) in str(caught.value) and words in str(caught.value), str(caught.value)


def test_the_new_keys_are_read():
    course = courses.parse_course({"exercises": ["03_head_count", " ex-tail ", "ex2.2-written"],
                                   "points": {"ex3.4": 5, "ex-tail": 2.5}, "workers": 3,
                                   "show_hidden_after_due": True, "due": "2026-12-01T17:00:00Z"})
    assert course.exercises == ["03_head_count", "ex-tail", "ex2.2-written"]
    assert course.points == {"ex3.4": 5, "ex-tail": 2.5} and course.workers == 3
    assert course.show_hidden_after_due is True and course.due == DUE
    empty = courses.parse_course(None)
    assert empty.exercises is None and empty.points == {} and empty.workers is None
    assert empty.extra_credit is None and empty.extra_stars == (3,)    # three stars: extra credit by default


def test_the_gradebook_reads_the_same_model():
    """tools/gradebook.py takes the course file from tools/course.py (one parser, not two)."""
    assert gradebook.parse_course is courses.parse_course and gradebook.read_course is courses.read_course
    assert gradebook.Course is courses.Course
    course = gradebook.parse_course({"exercises": ["ex3.4"], "points": {"ex3.4": 3}, "workers": 2})
    assert course.extra_stars == (3,) and course.dropped == []


def test_the_course_module_imports_no_tool_and_runs_in_both_environments():
    tree = ast.parse((TOOLS / "course.py").read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert imported <= {"__future__", "datetime", "math", "dataclasses", "pathlib", "yaml"}, imported
    pythons = [Path(sys.executable)] + ([OTTER_PYTHON] if OTTER_PYTHON.exists() else [])
    for python in pythons:
        done = subprocess.run([str(python), "-c", "import sys; sys.path.insert(0, sys.argv[1]); import course; "
                               "print(course.read_course(sys.argv[2]).workers)", str(TOOLS), str(EXAMPLE)],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == "2", (python, done.stderr)


def test_the_examples_names_are_the_books():
    """Every chapter, label and question the example file names exists (make otter would refuse it)."""
    course = courses.read_course(EXAMPLE)
    numbers = make_otter.core.exercise_numbers(make_otter.core.Book(ROOT))
    known = {p.stem for p in CHAPTERS} | set(numbers)
    known |= {make_otter.question_name(n, written) for n in numbers.values() for written in (False, True)}
    for ref in [*course.exercises, *course.points, *course.dropped, *course.weights]:
        assert ref in known, ref
    assert course.show_hidden_after_due is False and course.due is not None


# --------------------------------------------------------------------------- the selection

def test_a_selection_grades_what_the_course_names_and_refuses_what_it_does_not_know():
    sel = make_otter.Selection(courses.parse_course({"exercises": ["03_head_count", "ex-a", "ex2.1-written"],
                                                     "points": {"ex-a": 5, "ex3.2": 3}}), "course.yml")
    assert sel.graded("03_head_count", "ex3.2", "ex-b")            # its chapter
    assert sel.graded("02_rank_gap", "ex2.3", "ex-a")              # its label
    assert sel.graded("02_rank_gap", "ex2.3-written", "ex-a")      # a label: every part
    assert not sel.graded("02_rank_gap", "ex2.1", "ex-c")          # the code part is not named ...
    assert sel.graded("02_rank_gap", "ex2.1-written", "ex-c")      # ... its prose part is
    assert sel.points("ex2.3", "ex-a", 2, 0.5) == 2.5 and sel.points("ex2.3-written", "ex-a", 2, 0.5) == 2.5
    assert sel.points("ex3.2", "ex-b", 2) == 3 and sel.points("ex2.9", "ex-z", 4) == 4
    assert isinstance(sel.points("ex3.2", "ex-b", 2), int)          # "points: 3", as the book writes them
    sel.check()
    for course, words in [({"exercises": ["ex9.9"]}, "exercises: 'ex9.9': neither a chapter"),
                          ({"points": {"ex-nowhere": 2}}, "points: 'ex-nowhere': neither"),
                          ({"points": {"02_rank_gap": 2}}, "points: '02_rank_gap': a chapter"),
                          ({"exercises": ["ex-a"], "points": {"ex2.1": 2}}, "points: 'ex2.1': not graded")]:
        sel = make_otter.Selection(courses.parse_course(course), "course.yml")
        sel.graded("02_rank_gap", "ex2.1", "ex-c")
        sel.graded("02_rank_gap", "ex2.3", "ex-a")
        with pytest.raises(make_otter.OtterError, match=words.replace("(", r"\(")):
            sel.check()


@pytest.fixture(scope="module")
def book():
    return make_otter.portable.Book(ROOT)


@pytest.fixture(scope="module")
def hidden():
    import ssmheads  # noqa: F401  (the hidden tests import it: once here, not in the first test's time)

    return make_otter.load_hidden(ROOT / "instructors" / "hidden_tests.py")


def _master(book, hidden, course: dict | None):
    """Chapter 2's master (and questions, selection) with cell ids drawn from a counter, not at random."""
    counter = itertools.count()
    drawn = nbformat.v4.nbbase.random_cell_id
    nbformat.v4.nbbase.random_cell_id = lambda: f"cell-{next(counter)}"
    try:
        selection = None if course is None else make_otter.Selection(courses.parse_course(course))
        master, questions = make_otter.master_notebook(RANK_GAP, book, hidden, selection=selection)
    finally:
        nbformat.v4.nbbase.random_cell_id = drawn
    return master, questions, selection


@pytest.fixture(scope="module")
def books_master(book, hidden):
    """Chapter 2's master without a course: the book's assignment."""
    return _master(book, hidden, None)


def test_choosing_every_exercise_leaves_the_master_the_books(book, hidden, books_master):
    plain, questions, _ = books_master
    every, chosen, _ = _master(book, hidden, {"exercises": [p.stem for p in CHAPTERS]})
    assert nbformat.writes(every) == nbformat.writes(plain)          # byte for byte
    assert [q.__dict__ for q in chosen] == [q.__dict__ for q in questions]


def test_show_hidden_after_due_sets_otters_show_hidden_and_nothing_else(book, hidden, books_master):
    plain, _, _ = books_master
    shown, _, _ = _master(book, hidden, {"show_hidden_after_due": True})
    differ = [k for k, (a, b) in enumerate(zip(plain.cells, shown.cells)) if a != b]
    assert differ == [0] and len(shown.cells) == len(plain.cells)   # only the assignment config
    assert "  show_hidden: false" in plain.cells[0].source
    assert plain.cells[0].source.replace("show_hidden: false", "show_hidden: true") == shown.cells[0].source


def test_the_course_chooses_the_questions_and_their_points(book, hidden, books_master):
    _, book_questions, _ = books_master
    course = {"exercises": ["ex-three-dims", "ex2.3-written", "ex2.5"], "points": {"ex-three-dims": 5, "ex2.5": 3}}
    master, questions, selection = _master(book, hidden, course)
    assert [(q.name, q.points, q.manual) for q in questions] == [
        ("ex2.2", 2.5, False), ("ex2.2-written", 2.5, True),     # a label's 5 points, split evenly
        ("ex2.3-written", 2, True),                              # the prose part alone, the book's points
        ("ex2.5", 3, True)]
    assert len(book_questions) > len(questions)
    # Otter's question headers, and the hidden cases' shares adding up to the question's points
    raws = [c.source for c in master.cells if c.cell_type == "raw" and c.source.startswith("# BEGIN QUESTION")]
    assert [r.split("\n")[1:3] for r in raws] == [["name: ex2.2", "points: 2.5"], ["name: ex2.2-written", "manual: true"],
                                                  ["name: ex2.3-written", "manual: true"], ["name: ex2.5", "manual: true"]]
    start = next(k for k, c in enumerate(master.cells) if c.source.startswith("# BEGIN QUESTION\nname: ex2.2\n"))
    end = next(k for k in range(start, len(master.cells)) if master.cells[k].source == "# END TESTS")
    shares = [float(c.source.split("points: ")[1].split("\n")[0]) for c in master.cells[start:end]
              if c.cell_type == "code" and "hidden: true" in c.source]
    assert shares and sum(shares) == pytest.approx(2.5)
    # The others stay, marked Practice, their cells skipped by grading; the note says so.
    practice = selection.practice["02_rank_gap"]
    assert practice == ["ex-lag-span-by-hand", "ex-longer-plateau", "ex-similarity", "ex-head-plus-residual",
                        "ex-predict-sigma"]
    stubs = {c.metadata.get("exercise_stub"): c for c in master.cells if c.metadata.get("exercise_stub")}
    assert "otter_ignore" in stubs["ex-lag-span-by-hand"].metadata["tags"]
    assert "otter_ignore" in stubs["ex-longer-plateau"].metadata["tags"]     # its code is practice ...
    assert "# BEGIN SOLUTION" not in stubs["ex-longer-plateau"].source
    assert "# BEGIN SOLUTION" in stubs["ex-three-dims"].source               # ... a graded stub holds the answer
    texts = "\n".join(c.source for c in master.cells if c.cell_type == "markdown")
    assert texts.count("*Practice: this exercise is not graded") == 4
    assert texts.count("its questions in prose are, below.*") == 1
    assert make_otter.PRACTICE in texts
    works = [c for c in master.cells if c.cell_type == "code" and "(practice: not graded)" in c.source]
    assert len(works) == 3 and all("otter_ignore" in c.metadata["tags"] for c in works)


# --------------------------------------------------------------------------- grading

@pytest.mark.parametrize("show, due, flag, now, hide, words", [
    (None, None, None, DUE, False, "in full (the default"),
    (False, DUE, None, DUE + dt.timedelta(days=9), True, "has show_hidden_after_due: false"),
    (True, DUE, None, DUE - dt.timedelta(seconds=1), True, "has not passed"),
    (True, DUE, None, DUE, True, "has not passed"),                        # at the due time: not yet
    (True, DUE, None, DUE + dt.timedelta(seconds=1), False, "has passed"),
    (True, None, None, DUE, True, "but no due date"),
    (False, DUE, False, DUE, False, "--show-hidden-cases, over course.yml's show_hidden_after_due: false"),
    (True, DUE, True, DUE + dt.timedelta(days=1), True, "--hide-hidden-cases, over course.yml's"),
    (None, None, True, DUE, True, "(--hide-hidden-cases)"),
])
def test_the_time_rule_for_hidden_messages(show, due, flag, now, hide, words):
    course = courses.Course(show_hidden_after_due=show, due=due)
    got, why = otter_grade.hidden_policy(course, flag, now, "course.yml")
    assert got is hide and words in why, why


def _fake_otter_dir(tmp_path: Path) -> Path:
    otter = tmp_path / "otter"
    (otter / "01_alpha").mkdir(parents=True)
    (otter / "01_alpha" / "source.json").write_text(json.dumps({"questions": [
        {"name": "ex1.1", "label": "ex-a", "points": 2, "manual": False, "number": "1.1"},
        {"name": "ex1.1-written", "label": "ex-a", "points": 2, "manual": True, "number": "1.1"},
        {"name": "ex1.2", "label": "ex-b", "points": 4, "manual": True, "number": "1.2"}]}))
    return otter


def test_grading_takes_workers_dropped_and_hidden_messages_from_the_course(tmp_path, monkeypatch, capsys):
    otter = _fake_otter_dir(tmp_path)
    (tmp_path / "subs").mkdir()
    calls = []
    monkeypatch.setattr(otter_grade, "grade_folder", lambda *a, **k: calls.append((a, k)))
    monkeypatch.setattr(otter_grade, "_now", lambda: DUE + dt.timedelta(hours=1))
    course = _write(tmp_path / "course.yml", "workers: 3\ndropped: [ex-a]\nshow_hidden_after_due: true\n"
                                             "due: 2026-12-01T17:00:00Z\n")
    base = [str(tmp_path / "subs"), "--otter-dir", str(otter), "--course", str(course)]
    assert otter_grade.main(base) == 0
    args, kwargs = calls[-1]
    assert args[4] == 3 and kwargs["hide_hidden"] is False and kwargs["dropped"] == {"ex1.1", "ex1.1-written"}
    assert "hidden cases: in full (" in capsys.readouterr().out
    otter_grade.main(base + ["--workers", "5", "--hide-hidden-cases"])       # the command line wins
    args, kwargs = calls[-1]
    assert args[4] == 5 and kwargs["hide_hidden"] is True
    monkeypatch.setattr(otter_grade, "_now", lambda: DUE - dt.timedelta(hours=1))
    otter_grade.main(base)
    assert calls[-1][1]["hide_hidden"] is True and "has not passed" in capsys.readouterr().out
    otter_grade.main(base[:-2])                                                # no course: as before
    assert calls[-1][0][4] == 2 and calls[-1][1]["hide_hidden"] is False and calls[-1][1]["dropped"] == set()
    with pytest.raises(SystemExit):
        otter_grade.main(base[:-1] + [str(_write(tmp_path / "bad.yml", "dropped: [ex-z]\n"))])
    assert "dropped: 'ex-z' is neither a question" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        otter_grade.main(base[:-1] + [str(_write(tmp_path / "bad.yml", "workers: 0\n"))])
    assert "workers: expected a whole number" in capsys.readouterr().err


def test_a_dropped_question_is_graded_and_marked(tmp_path, monkeypatch, capsys):
    otter = _fake_otter_dir(tmp_path)
    (tmp_path / "subs").mkdir()
    nbformat.write(nbformat.v4.new_notebook(), tmp_path / "subs" / "ann.ipynb")

    def grade_one(student, notebook, problem, chapter, otter_dir, timeout, hide_hidden=False):
        return [otter_grade.Row(student, "ex1.1", 1.5, 2, "5 of 6 hidden cases passed"),
                otter_grade.Row(student, "ex1.1-written", "", 2, "graded by hand"),
                otter_grade.Row(student, "ex1.2", "", 4, "graded by hand")], 1.0, "graded"

    monkeypatch.setattr(otter_grade, "grade_one", grade_one)
    out = tmp_path / "grades.csv"
    otter_grade.grade_folder(tmp_path / "subs", out, otter, workers=1, dropped={"ex1.1", "ex1.1-written"})
    with open(out, newline="", encoding="utf-8") as f:
        rows = {r["question"]: r for r in csv.DictReader(f)}
    assert rows["ex1.1"]["score"] == "1.5"                                   # graded ...
    assert rows["ex1.1"]["message"] == f"5 of 6 hidden cases passed | {otter_grade.DROPPED}"   # ... and marked
    assert rows["ex1.1-written"]["message"].startswith("graded by hand")     # make hand-scores still finds it
    assert rows["ex1.2"]["message"] == "graded by hand"
    printed = capsys.readouterr().out
    assert "ann: 0 of 0 auto-graded points, 4 more to grade by hand (2 dropped questions graded, not counted)" \
        in printed


def test_grading_skips_the_practice_cells_and_does_not_read_them(tmp_path):
    def stub(label: str, source: str) -> dict:
        return {"cell_type": "code", "id": f"stub-{label}", "metadata": {"exercise_stub": label}, "outputs": [],
                "execution_count": None, "source": source}

    handed = {"cells": [stub("ex-p", "def f(x):\n    ...\ncheck_f(f)"), stub("ex-g", "def g(x):\n    ...")],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "01_alpha" / "student").mkdir(parents=True)
    (tmp_path / "01_alpha" / "student" / "01_alpha.ipynb").write_text(json.dumps(handed))
    submitted = json.loads(json.dumps(handed))
    submitted["cells"][0]["source"] = "def f(x):\n    return eval('x')\ncheck_f(f)"    # practice, filled in
    submitted["cells"][1]["source"] = "def g(x):\n    return x"
    path = _write(tmp_path / "ann.ipynb", json.dumps(submitted))
    questions = [{"name": "ex1.1", "label": "ex-g", "number": "1.1", "manual": False}]
    nb, _, flags = otter_grade._prepared(path, "01_alpha", questions, tmp_path, 5.0, None, {"ex-p"})
    cell = next(c for c in nb["cells"] if c.get("id") == "stub-ex-p")
    assert "otter_ignore" in cell["metadata"]["tags"] and flags["ex1.1"] == []      # skipped, not read
    # Without a course (nothing is practice) the cell runs, and a changed cell is read, as before.
    nb, _, flags = otter_grade._prepared(path, "01_alpha", questions, tmp_path, 5.0, None)
    cell = next(c for c in nb["cells"] if c.get("id") == "stub-ex-p")
    assert "otter_ignore" not in (cell["metadata"].get("tags") or [])
    assert any("runs code from a string (eval)" in f for f in flags["ex1.1"]), flags


def test_make_otter_refuses_a_bad_course_before_it_makes_anything(tmp_path, capsys):
    bad = _write(tmp_path / "course.yml", "points: {ex3.4: 0}\n")
    with pytest.raises(SystemExit) as stop:
        make_otter.main(["--course", str(bad), "--out", str(tmp_path / "out"), "--otter", "/nonexistent/otter"])
    assert stop.value.code == 2 and "points: ex3.4: expected a number > 0" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.extended   # builds every chapter's master (about 10 s)
def test_make_otter_refuses_an_unknown_exercise_before_otter_assign(tmp_path):
    course = _write(tmp_path / "course.yml", "exercises: [ex3.4, ex-nowhere]\n")
    never = _write(tmp_path / "otter", "#!/bin/sh\necho otter assign ran >&2\nexit 1\n")
    never.chmod(0o755)
    with pytest.raises(make_otter.OtterError, match="exercises: 'ex-nowhere': neither a chapter"):
        make_otter.make_all(out=tmp_path / "out", otter=never, verbose=False, course=course)
    assert not any((tmp_path / "out").rglob("assign.log"))


# --------------------------------------------------------------------------- with Otter (make test-otter)

@graded_here
@pytest.mark.extended   # otter assign on one chapter (about 20 s; the gate checks the wiring without Otter)
def test_a_course_makes_its_assignment_with_otter(book, hidden, tmp_path):
    """otter assign on Chapter 2 with a course: its questions and points, show_hidden in the zip, practice kept."""
    course = _write(tmp_path / "course.yml", "exercises: [ex-three-dims, ex2.5]\npoints: {ex2.5: 3}\n"
                                             "show_hidden_after_due: true\n")
    selection = make_otter.Selection(courses.read_course(course))
    made = make_otter.master_notebook(RANK_GAP, book, hidden, seconds=8, selection=selection)
    out = tmp_path / "out"
    questions, _ = make_otter.make_chapter(RANK_GAP, out, book, ROOT / "instructors" / "hidden_tests.py", hidden,
                                           make_otter.otter_command(), None, 8, made,
                                           make_otter.course_record(course, selection, RANK_GAP.stem))
    record = json.loads((out / RANK_GAP.stem / "source.json").read_text())
    assert [(q["name"], q["points"]) for q in record["questions"]] == [("ex2.2", 2), ("ex2.2-written", 2),
                                                                        ("ex2.5", 3)]
    assert record["course"]["file"] == "course.yml" and "ex-lag-span-by-hand" in record["course"]["practice"]
    with zipfile.ZipFile(make_otter.autograder_zip(out, RANK_GAP.stem)) as z:
        assert json.loads(z.read("otter_config.json"))["show_hidden"] is True
        tests = {Path(n).stem for n in z.namelist() if n.startswith("tests/")}
    assert tests == {"ex2.2"}                                   # the only auto-graded question chosen
    student = nbformat.read(out / RANK_GAP.stem / "student" / RANK_GAP.name, as_version=4)
    text = "\n".join(c.source for c in student.cells)
    assert "*Practice: this exercise is not graded" in text and make_otter.PRACTICE in text
    stub = next(c for c in student.cells if c.metadata.get("exercise_stub") == "ex-lag-span-by-hand")
    assert "otter_ignore" in stub.metadata["tags"] and "..." in stub.source   # the stub, as students know it


@graded_here
@pytest.mark.extended   # grades one submission through otter run (about 15 s)
def test_grading_with_a_course_hides_before_the_due_date_and_marks_dropped(tmp_path):
    import test_otter

    stem = CHAPTERS[0].stem
    assert (OTTER_DIR / stem / "source.json").exists(), f"no assignments in {OTTER_DIR}: run `make test-otter`"
    student = nbformat.read(OTTER_DIR / stem / "student" / f"{stem}.ipynb", as_version=4)
    master = nbformat.read(OTTER_DIR / stem / "master" / f"{stem}.ipynb", as_version=4)
    (tmp_path / "subs").mkdir()
    nbformat.write(make_otter.answered(student, master, {"ex-ema": test_otter.EMA_WITHOUT_ONE_MINUS_GAMMA}),
                   tmp_path / "subs" / "carl.ipynb")
    course = _write(tmp_path / "course.yml", "show_hidden_after_due: true\ndue: 2999-01-01T00:00:00Z\n"
                                             "dropped: [ex1.2]\nworkers: 1\n")
    out = tmp_path / "grades.csv"
    done = subprocess.run([str(OTTER_PYTHON), str(TOOLS / "otter_grade.py"), str(tmp_path / "subs"), "--out", str(out),
                           "--otter-dir", str(OTTER_DIR), "--course", str(course)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "hidden cases: without their values" in done.stdout and "has not passed" in done.stdout
    with open(out, newline="", encoding="utf-8") as f:
        rows = {r["question"]: r for r in csv.DictReader(f)}
    assert "1 of 6 hidden cases passed" in rows["ex1.1"]["message"]
    assert "hidden case 2 of 6: " in rows["ex1.1"]["message"] and "hidden: hidden case" not in rows["ex1.1"]["message"]
    assert rows["ex1.2"]["message"].endswith(otter_grade.DROPPED) and rows["ex1.2"]["score"] == rows["ex1.2"]["max"]
