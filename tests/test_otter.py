"""The Otter-Grader assignments (tools/make_otter.py) and their grading (tools/otter_grade.py).

Two kinds of tests:

* quick ones, always run: the instructors' requirements stay out of the readers'
  environment, the grading script reads folders and messages as documented;
* the assignments made and graded, which need Otter's environment (.venv-otter, ``make
  otter-env``). They run in ``make test-otter`` (OTTER_REQUIRED=1), which makes the
  assignments in _build/otter-test (OTTER_DIR) first; elsewhere they are skipped, saying why.

The graded ones grade, in one run of the grading command, the reference solutions (each
chapter's autograder notebook), each untouched student notebook, and planted answers.
"""

from __future__ import annotations

import csv
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
# make test grades Chapter 1's and 3's reference answers and untouched notebooks through Otter
# (tests/test_hidden_tests.py runs every hidden test on the book's answers in-process); make
# test-extended (EXTENDED=1) every chapter's.
UNTOUCHED = REFERENCES = CHAPTERS if os.environ.get("EXTENDED") == "1" else [CHAPTERS[0], CHAPTERS[2]]
OTTER_PYTHON = ROOT / ".venv-otter" / "bin" / "python"
OTTER_DIR = ROOT / os.environ.get("OTTER_DIR", "_build/otter")   # make test-otter: _build/otter-test
sys.path.insert(0, str(ROOT / "tools"))

import exercise_catalogue as catalogue  # noqa: E402  (tools/ is not a package)
import make_assignments  # noqa: E402
import make_otter  # noqa: E402
import otter_grade  # noqa: E402

REQUIRED = os.environ.get("OTTER_REQUIRED") == "1"
graded_here = pytest.mark.skipif(
    not REQUIRED, reason="makes and grades the Otter assignments: run by `make test-otter` (OTTER_REQUIRED=1)")

EMA_WITHOUT_ONE_MINUS_GAMMA = '''\
from ssmheads.exercises import check_ema_operator

def ema_operator(n, d, gamma):
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    weight = np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0)   # the factor 1 - gamma forgotten
    return weight[:, :, None, None] * np.eye(d)

check_ema_operator(ema_operator)'''


TAMPERED = '''\
import ssmheads.exercises
ssmheads.exercises.check_ema_operator = lambda f: True
sh.LinearSSM.interaction = lambda self, X: np.zeros((len(X), len(X), len(X[0]), len(X[0])))

def ema_operator(n, d, gamma):
    return np.zeros((n, n, d, d))'''

RENAMED = EMA_WITHOUT_ONE_MINUS_GAMMA.replace("def ema_operator", "def my_ema").replace("(ema_operator)", "(my_ema)")

# The guide's worked example (book/instructors.md) beyond Ada, Blaise and Carl: an unusual honest answer
# (Fay: Python lists and loops), a power written as a quotient (Gus: gamma^i / gamma^j, which is 0/0 at
# gamma = 0, one of the hidden cases), a reference imported (Eve), a package grading lacks (Dora).
EMA_WITH_LISTS = '''\
from ssmheads.exercises import check_ema_operator

def ema_operator(n, d, gamma):
    rows = []
    for i in range(n):
        row = []
        for j in range(n):
            w = (1 - gamma) * gamma ** (i - j) if j <= i else 0.0
            row.append([[w if r == c else 0.0 for c in range(d)] for r in range(d)])
        rows.append(row)
    return rows

check_ema_operator(ema_operator)'''

EMA_AS_A_QUOTIENT = '''\
from ssmheads.exercises import check_ema_operator

def ema_operator(n, d, gamma):
    i = np.arange(n)[:, None]
    j = np.arange(n)[None, :]
    weight = np.where(j <= i, (1 - gamma) * gamma ** i / gamma ** j, 0.0)
    return weight[:, :, None, None] * np.eye(d)

check_ema_operator(ema_operator)'''

EMA_FROM_THE_REFERENCE = '''\
from ssmheads.exercises import check_ema_operator
from ssmheads.exercises.ch1 import _ema_reference

def ema_operator(n, d, gamma):
    return _ema_reference(n, d, gamma)

check_ema_operator(ema_operator)'''

GUIDE_STUDENTS = ("ada", "blaise", "carl", "dora", "eve", "fay", "gus")


def plant_the_guides_example(otter_dir: Path, folder: Path) -> None:
    """The submissions of the guide's worked example (Chapter 1), written into ``folder``.

    Ada answers everything, Blaise hands in the untouched notebook, Carl forgets the factor
    1 - gamma of Exercise 1.1, Dora adds ``import seaborn`` to the chapter's import cell, Eve
    imports the check's reference, Fay answers with lists, Gus writes gamma^(i-j) as gamma^i / gamma^j.
    """
    stem = CHAPTERS[0].stem
    student = _read(otter_dir / stem / "student" / f"{stem}.ipynb")
    master = _read(otter_dir / stem / "master" / f"{stem}.ipynb")
    nbformat.write(make_otter.answered(student, master, prose="(an answer in prose)"), folder / "ada.ipynb")
    nbformat.write(student, folder / "blaise.ipynb")
    nbformat.write(make_otter.answered(student, master, {"ex-ema": EMA_WITHOUT_ONE_MINUS_GAMMA}), folder / "carl.ipynb")
    dora = make_otter.answered(student, master)
    imports = next(c for c in dora.cells if c.cell_type == "code" and c.source.startswith("import numpy as np"))
    imports.source = "import seaborn as sns\n" + imports.source
    nbformat.write(dora, folder / "dora.ipynb")
    nbformat.write(make_otter.answered(student, master, {"ex-ema": EMA_FROM_THE_REFERENCE}), folder / "eve.ipynb")
    nbformat.write(make_otter.answered(student, master, {"ex-ema": EMA_WITH_LISTS}), folder / "fay.ipynb")
    nbformat.write(make_otter.answered(student, master, {"ex-ema": EMA_AS_A_QUOTIENT}), folder / "gus.ipynb")


def _pins(path: Path) -> dict[str, str]:
    return {name.lower().replace("_", "-"): version
            for name, version in re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", path.read_text(), re.M)}


# --------------------------------------------------------------------------- always

def test_the_instructors_requirements_stay_out_of_the_readers_environment():
    instructors, readers = _pins(ROOT / "requirements-instructor.txt"), _pins(ROOT / "requirements.txt")
    binder = _pins(ROOT / "binder" / "requirements.txt")
    assert instructors["otter-grader"] == "7.0.0"
    for name in ("otter-grader", "pandas", "nbconvert", "python-on-whales"):
        assert name not in readers and name not in binder, name
    differ = {n: (v, readers[n]) for n, v in instructors.items() if n in readers and readers[n] != v}
    assert not differ, f"requirements-instructor.txt pins these differently from requirements.txt: {differ}"
    assert "-r requirements" not in (ROOT / "requirements-instructor.txt").read_text()


def test_the_grading_command_reads_a_folder_of_submissions(tmp_path):
    (tmp_path / "ada.ipynb").write_text("{}")
    (tmp_path / "blaise").mkdir()
    (tmp_path / "blaise" / "hw1.ipynb").write_text("{}")
    (tmp_path / "blaise" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "notes.txt").write_text("not a submission")
    assert [(s, p and p.name, why) for s, p, why in otter_grade.submissions(tmp_path)] == [
        ("ada", "ada.ipynb", ""), ("blaise", "hw1.ipynb", ""),
        ("notes", None, "NOT GRADED: notes.txt is not a notebook (.ipynb)")]   # reported, not dropped
    (tmp_path / "notes.txt").unlink()
    (tmp_path / "carl").mkdir()
    (tmp_path / "carl" / "hw1.pdf").write_text("%PDF")
    assert otter_grade.submissions(tmp_path)[-1] == ("carl", None, "NOT GRADED: no notebook (.ipynb) in carl/ "
                                                                   "(found hw1.pdf)")
    (tmp_path / "carl" / "hw1.pdf").unlink()
    (tmp_path / "carl").rmdir()
    # A student folder with two notebooks, or two submissions under one name, is reported, not fatal.
    (tmp_path / "blaise" / "hw1 (2).ipynb").write_text("{}")
    (tmp_path / "ada").mkdir()
    (tmp_path / "ada" / "x.ipynb").write_text("{}")
    found = {s: (p, why) for s, p, why in otter_grade.submissions(tmp_path)}
    assert found["blaise"][0] is None and "2 notebooks in blaise/" in found["blaise"][1]
    assert found["ada"][0] is None and "two submissions named ada" in found["ada"][1]
    with pytest.raises(FileNotFoundError, match="is not a folder"):
        otter_grade.submissions(tmp_path / "missing")
    assert otter_grade.assignment_of(tmp_path / "ada.ipynb") == (None, "is not a notebook (no cells)")
    (tmp_path / "x.ipynb").write_text("not json")
    assert otter_grade.assignment_of(tmp_path / "x.ipynb") == (None, "is not a notebook (not valid JSON)")
    (tmp_path / "y.ipynb").write_text(json.dumps({"cells": [], "metadata": {}}))
    assert "lost the metadata" in otter_grade.assignment_of(tmp_path / "y.ipynb")[1]
    assert not otter_grade._known("../../tmp", tmp_path) and not otter_grade._known("x/y", tmp_path)


def test_the_csv_is_safe_to_open_in_a_spreadsheet():
    row = otter_grade.Row('=HYPERLINK("http://x","click")', "ex1.1", 0.5, 1, "-1 is wrong", "+x")
    assert row.as_list() == ['\'=HYPERLINK("http://x","click")', "ex1.1", "0.5", "1", "'-1 is wrong", "'+x"]


def test_tampering_with_otter_or_the_library_is_flagged():
    honest = {"cells": [{"cell_type": "code", "source": "x = np.ones(3)\nW = sh.toeplitz_operator(K, 4)"}]}
    assert otter_grade.suspicious(honest) == []
    for code, what in [("import otter.execute", "mentions Otter"),
                       ("sh.LinearSSM.interaction = lambda self, X: 0", "assigns to an attribute"),
                       ("ssmheads.exercises.check_ema_operator = lambda f: True", "assigns to an attribute"),
                       ("open('../source/tests/ex1.1.py', 'w')", "grading folder"),
                       ("setattr(np, 'allclose', lambda *a, **k: True)", "rewires")]:
        found = otter_grade.suspicious({"cells": [{"cell_type": "code", "source": code}]})
        assert found and what in found[0], (code, found)


def test_a_failed_tests_message_keeps_the_error_not_the_tests_source():
    message = ("❌ Test case failed\nError at line 9 in test ex1.1:\n  assert np.allclose(got, secret_case)\n"
               "AssertionError: ema_operator(6, 3, 0.25): entry (0, 0, 0, 0) should be 0.75; got 1")
    assert otter_grade._error_part(message) == ("AssertionError: ema_operator(6, 3, 0.25): entry (0, 0, 0, 0) "
                                                "should be 0.75; got 1")
    assert otter_grade._one_line("a\n  b") == "a b" and len(otter_grade._one_line("x" * 5000)) == 600


def test_a_grading_command_without_submissions_says_what_is_wrong(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "otter_grade.py"), str(tmp_path / "nowhere")],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "SUBMISSIONS" in done.stderr and "is not a folder" in done.stderr
    (tmp_path / "grades.csv").write_text("student,question,score,max,message\nada,ex1.4,3,4,by hand\n")
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "otter_grade.py"), str(tmp_path),
                           "--out", str(tmp_path / "grades.csv")], capture_output=True, text=True)
    assert done.returncode == 2 and "exists (hand-graded scores may be in it)" in done.stderr


def test_the_master_solution_cell_holds_the_books_answer_inside_the_stub():
    stub = "from ssmheads.exercises import check_f\n\ndef f(x):\n    # return x + 1\n    ...\n\ncheck_f(f)"
    book = "import math\nfrom ssmheads.exercises import check_f\n\ndef f(x):\n    y = x + 1\n    return y\n\n" \
           "result = check_f(f)\nassert result\nprint(f(2))"
    cell = make_otter.master_solution_cell(stub, book, "test")
    assert cell.split("\n") == [
        "from ssmheads.exercises import check_f", "", "# BEGIN SOLUTION NO PROMPT", "import math",
        "# END SOLUTION", "def f(x):", "    # return x + 1", "    # BEGIN SOLUTION", "    y = x + 1",
        "    return y", "    # END SOLUTION", "", "check_f(f)"]
    with pytest.raises(make_otter.OtterError, match="never calls its check"):
        make_otter.master_solution_cell(stub, "def f(x):\n    return x", "test")
    with pytest.raises(make_otter.OtterError, match="end in '...'"):
        make_otter.master_solution_cell(stub.replace("    ...", "    pass"), book, "test")


def test_grading_skips_only_what_no_answer_can_need():
    cells = [nbformat.v4.new_code_cell(s) for s in (
        "import os\nif os.environ.get('X'):\n    pass",         # 0 the set-up cell: always kept
        "import numpy as np\n\ndef helper(x):\n    return x",   # 1 imports and tools: kept
        "scale = 3\nfig = draw()",                               # 2 binds scale, which an answer reads
        "scale = scale * 2\nnoise = np.ones(9)",                 # 3 rebinds it, reading it: kept, and 2 too
        "slow = expensive()\nplot(slow)",                        # 4 nothing later needs it: skipped
        "from ssmheads.widgets import explorer\nexplorer()",    # 5 imports a tool: kept
        "def gordan(K):\n    return linprog(K) + tol\nsweep = run(gordan)",  # 6 a tool: kept, with what it reads
        "tol = 1e-9\nbig = heavy()",                            # 7 binds tol, which gordan reads: kept
        "result = sweep * 2")]                                   # 8 reads a tool cell's computation: skipped
    cells.insert(6, cells.pop(7))                                # (7 must come before the tool that reads it)
    assert make_otter.cells_to_skip(cells, {"scale", "np"}) == {4, 8}
    assert make_otter._reads("def f(n):\n    a = n\n    a /= 2\n    return a * TOL\nk += 1\ny = f(2)") == {"TOL", "k"}


def test_a_stale_set_of_otter_notebooks_is_refused(tmp_path):
    stem = CHAPTERS[0].stem
    for path in CHAPTERS:
        folder = tmp_path / path.stem
        (folder / "student").mkdir(parents=True)
        (folder / "student" / path.name).write_text("{}")
        record = make_otter.source_record(path, ROOT / "instructors" / "hidden_tests.py", None)
        (folder / "source.json").write_text(json.dumps(record))
    assert make_assignments.otter_notebooks(ROOT / "chapters", tmp_path) == tmp_path
    with pytest.raises(make_assignments.StaleOtter, match="made for the site"):
        make_assignments.otter_notebooks(ROOT / "chapters", tmp_path, "https://course.example.edu/heads/")
    record = json.loads((tmp_path / stem / "source.json").read_text())
    (tmp_path / stem / "source.json").write_text(json.dumps({**record, "chapter_sha256": "0" * 64}))
    with pytest.raises(make_assignments.StaleOtter, match=f"{stem}: the chapter changed"):
        make_assignments.otter_notebooks(ROOT / "chapters", tmp_path)
    assert make_assignments.otter_notebooks(ROOT / "chapters", tmp_path / "none") is None


# --------------------------------------------------------------------------- made and graded

@pytest.fixture(scope="session")
def otter_dir() -> Path:
    """The assignments of `make otter` (test-otter runs it first), checked to be current."""
    if not REQUIRED:
        pytest.skip("run by `make test-otter`")
    assert OTTER_PYTHON.exists(), "no .venv-otter: run `make otter-env`"
    assert make_assignments.otter_notebooks(ROOT / "chapters", OTTER_DIR) == OTTER_DIR, \
        f"no current assignments in {OTTER_DIR}: run `make otter` (or `make test-otter`)"
    return OTTER_DIR


def _read(path: Path):
    return nbformat.read(path, as_version=4)


@pytest.fixture(scope="session")
def graded(otter_dir, tmp_path_factory):
    """One run of the grading command on the reference solutions, the untouched notebooks and a planted answer."""
    folder = tmp_path_factory.mktemp("submissions")
    for path in REFERENCES:
        stem = path.stem
        nbformat.write(_read(otter_dir / stem / "autograder" / path.name), folder / f"reference-{stem}.ipynb")
        if path != CHAPTERS[0] and path in UNTOUCHED:     # Chapter 1's untouched notebook is Blaise's, below
            nbformat.write(_read(otter_dir / stem / "student" / path.name), folder / f"untouched-{stem}.ipynb")
    # The guide's worked example (Ada, Blaise, Carl, Dora, Eve, Fay, Gus: see plant_the_guides_example).
    plant_the_guides_example(otter_dir, folder)
    stem = CHAPTERS[0].stem
    student = _read(otter_dir / stem / "student" / f"{stem}.ipynb")
    master = _read(otter_dir / stem / "master" / f"{stem}.ipynb")
    # Mallory makes the check and the hidden test's reference agree with zeros; Renata renames her function.
    nbformat.write(make_otter.answered(student, master, {"ex-ema": TAMPERED}), folder / "mallory.ipynb")
    nbformat.write(make_otter.answered(student, master, {"ex-ema": RENAMED}), folder / "renata.ipynb")
    out = folder / "grades.csv"
    done = subprocess.run([str(OTTER_PYTHON), str(ROOT / "tools" / "otter_grade.py"), str(folder),
                           "--out", str(out), "--otter-dir", str(otter_dir)],
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    # the CPU seconds of each submission's grading (the wall time grows with whatever else runs)
    seconds = {m.group(1): float(m.group(2))
               for m in re.finditer(r"^(\S+): .*?\[[\d.]+ s, ([\d.]+) s of CPU\]", done.stdout, re.M)}
    return rows, seconds, done.stdout, folder


def _questions(otter_dir: Path, stem: str) -> list[dict]:
    return json.loads((otter_dir / stem / "source.json").read_text())["questions"]


def test_every_exercise_is_a_question_worth_two_points_a_star(otter_dir):
    exercises = catalogue.read_exercises(ROOT / "chapters")
    for path in CHAPTERS:
        questions = _questions(otter_dir, path.stem)
        mine = [e for e in exercises if e.docname.endswith(path.stem)]
        assert [q["label"] for q in questions if not q["name"].endswith("-written")] == [e.label for e in mine]
        for e in mine:
            parts = [q for q in questions if q["label"] == e.label]
            assert sum(q["points"] for q in parts) == 2 * e.difficulty, e.label
            assert any(not q["manual"] for q in parts) == e.checked, e.label
            assert all(q["manual"] for q in parts if q["name"].endswith("-written")), e.label


def test_the_students_stubs_are_the_books_and_every_other_cell_is_the_student_versions(otter_dir, tmp_path):
    """The code students get is the `make assignments` notebook's (which test_assignments runs), answer cells aside."""
    make_assignments.make_student_notebooks(ROOT / "chapters", tmp_path, verbose=False)
    for path in CHAPTERS:
        otter = _read(otter_dir / path.stem / "student" / path.name)
        plain = _read(tmp_path / path.name)
        code = [c for c in otter.cells if c.cell_type == "code"]
        assert [c.source for c in code if c.metadata.get("exercise_stub")] == \
            [c.source for c in plain.cells if c.metadata.get("exercise_stub")]
        assert [c.source for c in code if not c.id.startswith("work-")] == \
            [c.source for c in plain.cells if c.cell_type == "code" and not c.id.startswith("work-")]
        assert all(c.source.strip().startswith("# Exercise") and "(read by hand)" in c.source
                   for c in code if c.id.startswith("work-"))
        answer_cells = [c for c in otter.cells if c.cell_type == "markdown"
                        and "otter_answer_cell" in c.metadata.get("tags", [])]
        manual = [q for q in _questions(otter_dir, path.stem) if q["manual"]]
        assert len(answer_cells) == len(manual) and all("Type your answer here" in c.source for c in answer_cells)
        assert not any(c.outputs for c in code if "source-listing" not in c.metadata.get("tags", []))


@pytest.mark.extended  # test_assignments runs the same code cells in make test; make test-extended runs it
def test_the_untouched_student_notebook_runs_top_to_bottom(otter_dir):
    from nbclient import NotebookClient

    path = CHAPTERS[0]
    nb = _read(otter_dir / path.stem / "student" / path.name)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "chapters")}},
                   allow_errors=False).execute()
    printed = "".join(o.get("text", "") + o.get("data", {}).get("text/plain", "")
                      for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert printed.count("NOT ATTEMPTED YET") >= 3


@pytest.mark.extended  # make test grades Chapters 1 and 3 through the same cells; make test-extended runs it
def test_what_grading_runs_runs_without_an_error(otter_dir):
    """The cells grading keeps (not tagged otter_ignore), with the book's answers, run cleanly on their own."""
    from nbclient import NotebookClient

    def run(path):
        nb = _read(otter_dir / path.stem / "autograder" / path.name)
        nb.cells = [c for c in nb.cells if "otter_ignore" not in c.metadata.get("tags", [])]
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False,
                       resources={"metadata": {"path": str(ROOT / "chapters")}}).execute()
        return len([c for c in nb.cells if c.cell_type == "code"])

    ran = [run(path) for path in CHAPTERS]     # one kernel at a time (nbclient's event loops are per thread)
    assert all(n >= 5 for n in ran), ran


def test_the_reference_solutions_score_full_marks(graded, otter_dir):
    rows, _, _, _ = graded
    for path in REFERENCES:
        mine = [r for r in rows if r["student"] == f"reference-{path.stem}"]
        auto = [q for q in _questions(otter_dir, path.stem) if not q["manual"]]
        assert [r["question"] for r in mine if r["score"] != ""] == [q["name"] for q in auto]
        for r in mine:
            if r["score"] != "":
                assert float(r["score"]) == float(r["max"]) > 0, r
                assert re.fullmatch(r"all \d+ tests passed \(1 visible, [1-9]\d* hidden\)", r["message"]), r
                assert r["flag"] == "", r
            else:
                assert r["message"] == "graded by hand"


def test_an_untouched_student_notebook_scores_zero(graded, otter_dir):
    rows, _, _, _ = graded
    for path in UNTOUCHED:
        mine = [r for r in rows if r["student"] == ("blaise" if path == CHAPTERS[0] else f"untouched-{path.stem}")]
        assert len(mine) == len(_questions(otter_dir, path.stem))
        auto = [r for r in mine if r["score"] != ""]
        assert auto and all(float(r["score"]) == 0 for r in auto), auto
        assert all("NOT ATTEMPTED YET" in r["message"] and "hidden:" in r["message"] for r in auto), auto
        assert not any("CHECK THE CODE" in r["message"] for r in mine)   # the chapter's own code is not flagged


def test_a_planted_wrong_answer_fails_its_question_with_a_helpful_message(graded):
    rows, _, _, _ = graded
    mine = {r["question"]: r for r in rows if r["student"] == "carl"}
    ema = mine["ex1.1"]
    # Points are split over the hidden cases: the missing factor 1 - gamma is right only at
    # gamma = 0, one case of six (the guide says so), and fails the visible check.
    assert float(ema["score"]) < 0.2 * float(ema["max"]) and "1 of 6 hidden cases passed" in ema["message"]
    assert "ema_operator(" in ema["message"] and "should be" in ema["message"], ema["message"]
    assert "hidden:" in ema["message"] and "NOT YET" in ema["message"]
    assert float(mine["ex1.2"]["score"]) == float(mine["ex1.2"]["max"])   # the other answers still count
    assert float(mine["ex1.3"]["score"]) == float(mine["ex1.3"]["max"])


def test_a_submission_that_tampers_with_grading_is_flagged_and_a_renamed_function_explained(graded):
    rows, _, printed, _ = graded
    mallory = {r["question"]: r for r in rows if r["student"] == "mallory"}
    assert mallory["ex1.1"]["message"].startswith("FLAGGED, scored 0") and float(mallory["ex1.1"]["score"]) == 0
    assert "CHECK THE CODE: cell " in mallory["ex1.1"]["message"] and mallory["ex1.1"]["flag"]
    assert "assigns to an attribute of a library module" in mallory["ex1.1"]["message"]
    assert re.search(r"^mallory: .* CHECK THE CODE$", printed, re.M)
    renata = {r["question"]: r for r in rows if r["student"] == "renata"}
    assert float(renata["ex1.1"]["score"]) == 0
    assert "ema_operator is not defined when your notebook runs" in renata["ex1.1"]["message"]
    assert float(renata["ex1.2"]["score"]) == float(renata["ex1.2"]["max"])


def test_grading_one_submission_takes_at_most_15_seconds(graded):
    """CPU seconds, the kernel's and its sandboxes' included: the budget is 30 s of a quiet machine's
    time, and on one the wall time is about the CPU time (measured: 7-9 s each, two at once)."""
    _, seconds, printed, _ = graded
    assert len(seconds) == len(REFERENCES) + len(UNTOUCHED) - 1 + len(GUIDE_STUDENTS) + 2, printed
    assert max(seconds.values()) < 15, seconds


def test_the_guides_worked_example_is_what_grading_writes(graded):
    """The guide's CSV is the grading command's, row for row and column for column.

    The only difference allowed: the guide cuts each message at its first failed hidden
    case (``| hidden: …``), whose text names the case. The guide's example of ``HIDE_HIDDEN=1``
    is Gus's message as ``--hide-hidden-cases`` writes it.
    """
    rows, _, _, _ = graded
    guide = (ROOT / "book" / "instructors.md").read_text()
    block = re.search(r"A worked example:.*?```text\n(.*?)```", guide, re.S).group(1)
    assert block.splitlines()[0] == ",".join(otter_grade.COLUMNS)
    shown = list(csv.DictReader(block.splitlines()))
    assert {r["student"] for r in shown} == set(GUIDE_STUDENTS)

    def cut(message: str) -> str:     # the guide cuts the failed hidden cases' text
        return re.sub(r" \| hidden: .*$", " | hidden: …", message)

    graded_rows = [{k: (cut(r[k]) if k == "message" else r[k]) for k in otter_grade.COLUMNS} for r in rows
                   if r["student"] in GUIDE_STUDENTS and r["score"] != ""]
    assert [dict(r) for r in shown] == graded_rows
    # What the guide says about these rows holds.
    by = {(r["student"], r["question"]): r for r in rows}
    assert 0 < float(by["gus", "ex1.1"]["score"]) < float(by["gus", "ex1.1"]["max"])      # partial credit
    assert by["eve", "ex1.1"]["flag"] and float(by["eve", "ex1.1"]["score"]) == 0         # flagged, 0
    assert not any(r["flag"] for r in rows if r["student"] == "fay")                    # honest, not flagged
    assert "No module named 'seaborn'" in by["dora", "ex1.1"]["message"]                 # the cause, named
    # HIDE_HIDDEN=1 (--hide-hidden-cases): each failed hidden case as question_message writes it then.
    hidden = re.search(r"Gus's message becomes\s*```text\n(.*?)\n```", guide, re.S).group(1)
    assert hidden == re.sub(r"hidden: (hidden case \d+ of \d+): (.*?)(?= \| hidden: |$)",
                            lambda m: f"{m.group(1)}: {otter_grade.hidden_summary(m.group(2))}",
                            by["gus", "ex1.1"]["message"])
    assert "0.0" not in hidden and "ema_operator(" not in hidden
    by_hand = [r for r in rows if r["student"] == "ada" and r["score"] == ""]
    assert by_hand and all(r["message"] == "graded by hand" for r in by_hand)


def test_the_answers_read_by_hand_are_gathered_by_question(graded, otter_dir, tmp_path):
    *_, folder = graded
    written = otter_grade.collect_answers(folder, tmp_path / "answers", otter_dir)
    stem = CHAPTERS[0].stem
    manual = [q["name"] for q in _questions(otter_dir, stem) if q["manual"]]
    assert sorted(p.stem for p in written if p.parent.name == stem) == sorted(manual)
    text = (tmp_path / "answers" / stem / f"{manual[0]}.md").read_text()
    assert "### ada\n\n(an answer in prose)" in text and "### blaise\n\n_Type your answer here" in text
    with pytest.raises(FileExistsError):
        otter_grade.collect_answers(folder, tmp_path / "answers", otter_dir)


def _hidden_lines() -> list[str]:
    """Distinctive lines of the hidden tests: a student file or a page that holds one leaks them.

    A line the book shows anyway (in a chapter or in the library, e.g. a common NumPy idiom)
    tells nothing about the hidden cases and is left out.
    """
    public = "\n".join(p.read_text() for p in [*CHAPTERS, *(ROOT / "lib" / "ssmheads").rglob("*.py")])
    lines = []
    for sources in make_otter.load_hidden(ROOT / "instructors" / "hidden_tests.py").values():
        for source in sources:
            for line in source.split("\n"):
                line = line.strip()
                if len(line) >= 30 and not line.startswith(("import ", "from ", "#", '"""')) \
                        and line not in public and json.dumps(line)[1:-1] not in public:
                    lines.append(line)
    return sorted(set(lines))


def _text_files(folder: Path):
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".ipynb", ".html", ".txt", ".js", ".json", ".md", ".py"):
            yield path


@pytest.mark.extended  # builds the students' site: about 30 s; make test-extended runs it
def test_no_hidden_test_text_in_a_student_file_or_on_a_site(otter_dir, tmp_path):
    hidden = _hidden_lines()
    assert len(hidden) > 100
    master = (otter_dir / CHAPTERS[0].stem / "master" / CHAPTERS[0].name).read_text()
    assert any(line in master for line in hidden)        # the search finds them where they are
    # The students' site as `make assignments` builds it with the Otter notebooks.
    assert make_assignments.main(["--out", str(tmp_path / "assignments"), "--otter", str(otter_dir)]) == 0
    places = [otter_dir / p.stem / "student" for p in CHAPTERS] + [tmp_path / "assignments"]
    if (ROOT / "_build" / "html" / "index.html").exists():
        places.append(ROOT / "_build" / "html")
    checked = 0
    for place in places:
        for path in _text_files(place):
            text = path.read_text(errors="replace")
            leaks = [line for line in hidden if line in text]
            assert not leaks, f"{path} holds hidden test text: {leaks[:3]}"
            checked += 1
    assert checked > 50
    # The students' site is sealed: no page, script or configuration leads to the repository
    # (its downloads do only through their set-up cell, and only without SITE_URL: test_assignments).
    marks = make_assignments.repository_marks(ROOT)
    html = tmp_path / "assignments" / "site" / "_build" / "html"
    pages = [p for p in _text_files(html) if p.suffix != ".ipynb"] + [tmp_path / "assignments" / "student_config.yml"]
    assert len(pages) > 20
    for path in pages:
        text = path.read_text(errors="replace")
        assert not [m for m in marks if m in text], f"{path} leads to the repository"
    # The students' site offers, for each chapter, exactly the notebook `make otter` wrote.
    sources = tmp_path / "assignments" / "site" / "_build" / "html" / "_sources" / "chapters"
    for path in CHAPTERS:
        offered = sources / path.name
        assert offered.read_bytes() == (otter_dir / path.stem / "student" / path.name).read_bytes(), path.name
        page = (tmp_path / "assignments" / "site" / "_build" / "html" / "chapters" / f"{path.stem}.html").read_text()
        assert f'href="../_sources/chapters/{path.name}"' in page
