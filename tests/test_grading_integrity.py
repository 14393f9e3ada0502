"""Grading an instructor can trust (issue 26), with planted submissions of Chapter 3 (and one of Chapter 5).

Quick tests (always run): the static scan flags each cheat of the instructor's report and
none of the book's own answer cells; the sandbox keeps references out of the answer's reach.
Graded tests (``make test-otter``, OTTER_REQUIRED=1): one run of the grading command on
honest answers (the book's and unusual ones), cheats, a hang, a failing import cell and a
partly right answer; each gets the score it deserves, every cheat 0 and a flag.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import grading_sandbox  # noqa: E402
import make_otter  # noqa: E402
import otter_grade  # noqa: E402

OTTER_PYTHON = ROOT / ".venv-otter" / "bin" / "python"
OTTER_DIR = ROOT / os.environ.get("OTTER_DIR", "_build/otter")
REQUIRED = os.environ.get("OTTER_REQUIRED") == "1"

CH3, CH5 = "03_head_count", "05_architectures"

# ---------------------------------------------------------------- answers (Chapter 3)

HONEST_UNUSUAL = {   # fay: right, but not the book's way
    "ex-build-heads": '''\
from ssmheads.exercises import check_exact_heads

def exact_head_construction(K):
    K = np.asarray(K, dtype=float)
    n, p, d = K.shape
    G = np.stack([k.reshape(-1, order="F") for k in K])      # column-major vec, both ways
    U, s, Vt = np.linalg.svd(G, full_matrices=False)
    k = int(np.sum(s > s[0] * max(n, p * d) * np.finfo(float).eps)) if s.size and s[0] > 0 else 0
    values = [Vt[h].reshape((p, d), order="F").tolist() for h in range(k)]   # lists
    coefficients = [(U[:, h] * s[h]).tolist() for h in range(k)]
    return coefficients, values

check_exact_heads(exact_head_construction)''',
    "ex-tail": '''\
from ssmheads.exercises import check_optimal_error

def optimal_error(K, H, weights):
    rows = np.asarray(K, dtype=float).reshape(len(K), -1) * np.sqrt(np.asarray(weights, dtype=float))[:, None]
    gram = rows @ rows.T                                       # the n x n Gram matrix, not an SVD
    eigenvalues = np.sort(np.clip(np.linalg.eigvalsh(gram), 0, None))[::-1]
    return float(eigenvalues[H:].sum())

check_optimal_error(optimal_error)''',
}

LOOSE_TOLERANCE = '''\
from ssmheads.exercises import check_exact_heads

def exact_head_construction(K):
    n, p, d = K.shape
    U, s, Vt = np.linalg.svd(K.reshape(n, -1), full_matrices=False)
    k = int(np.sum(s > 1e-6 * s[0]))          # too loose: drops a real direction
    return (U[:, :k] * s[:k]).T, Vt[:k].reshape(k, p, d)

check_exact_heads(exact_head_construction)'''

HANGS = '''\
from ssmheads.exercises import check_optimal_error

def optimal_error(K, H, weights):
    while True:
        pass

check_optimal_error(optimal_error)'''

CHEATS = {   # student: {label: code}; every one of them must score 0 and be flagged
    "eve": {   # private library routines, and exec of a switched-off routine's source
        "ex-tail": '''\
def optimal_error(K, H, weights):
    w = np.asarray(weights, dtype=float)
    return float(sh.heads._optimal_heads(K, H, w, "K and weights")[2])''',
        "ex-count-nonneg": '''\
import inspect
exec(inspect.getsource(sh.heads.nonnegative_head_count).replace("def nonnegative_head_count", "def _mine"))

def nonnegative_head_count(K):
    return _mine(K)''',
        "ex-build-heads": '''\
def exact_head_construction(K):
    k = sh.heads._rank(K, None)
    return sh.optimal_heads(K, k)[:2]''',
    },
    "mallory": {   # the expected value read from the test's frames
        "ex-tail": '''\
import sys

def optimal_error(K, H, weights):
    frame = sys._getframe(1)
    while frame is not None:
        if "value" in frame.f_locals:
            return frame.f_locals["value"]
        frame = frame.f_back
    return 0.0''',
        "ex-count-nonneg": '''\
def nonnegative_head_count(K):
    s = __import__("s" + "ys")                 # obfuscated: no name of the frame API appears
    frame = getattr(s, "_get" + "frame")(1)
    while frame is not None:
        if "value" in getattr(frame, "f_" + "locals"):
            return getattr(frame, "f_" + "locals")["value"]
        frame = getattr(frame, "f_" + "back")
    return 1''',
        "ex-quaternion-heads": '''\
import otter.test_files.abstract_test as grading
grading.TestCaseResult.passed = property(lambda self: True)

def quaternion_heads(K, X):
    return None''',
    },
}

EQUALS_EVERYTHING = '''\
class Always(int):                      # no frame, no private name: only a value that lies
    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    __hash__ = int.__hash__

def nonnegative_head_count(K):
    return Always(0)'''

IVAN_CH5 = '''\
from ssmheads.exercises.ch5 import _retention_parallel
from ssmheads.exercises import check_retention_recurrent

def retention_recurrent(Q, Kk, V, gamma):
    return _retention_parallel(Q, Kk, V, gamma)

check_retention_recurrent(retention_recurrent)'''


# ---------------------------------------------------------------- always

def test_the_scan_flags_every_cheat_of_the_report_and_two_more():
    for student, answers in CHEATS.items():
        for label, code in answers.items():
            assert otter_grade.scan_code(code), (student, label)
    assert otter_grade.scan_code(IVAN_CH5)
    assert any("exercises" in why for why in otter_grade.scan_code(IVAN_CH5))
    assert otter_grade.scan_code("from ssmheads.heads import _rank as r")
    assert otter_grade.scan_code("import gc\nx = gc.get_objects()")
    assert otter_grade.scan_code("sh.heads.optimal_heads.__code__ = None")
    assert not otter_grade.scan_code(EQUALS_EVERYTHING)     # caught by the sandbox instead, below


def test_the_scan_never_flags_an_honest_answer():
    """The book's own answer cells, the stubs and the unusual honest answers are not flagged."""
    honest = list(HONEST_UNUSUAL.values()) + [LOOSE_TOLERANCE, HANGS]
    for path in sorted((ROOT / "chapters").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for cell in nb.cells:
            if cell.cell_type == "code" and "from ssmheads.exercises import check_" in cell.source:
                honest.append(cell.source)
    assert len(honest) > 20
    flagged = {code[:80]: otter_grade.scan_code(code) for code in honest if otter_grade.scan_code(code)}
    assert not flagged, flagged


def test_the_sandbox_keeps_the_expected_value_and_the_references_out_of_reach():
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch3 import REFERENCE_ROUTINES

    def reads_frames(x):
        frame = sys._getframe(1)
        while frame is not None:
            if "expected" in frame.f_locals:
                return frame.f_locals["expected"]
            frame = frame.f_back
        return "nothing found"

    def test(answer, *args):
        answer = grading_sandbox.sandboxed(answer, 5)
        expected = np.arange(3.0)     # noqa: F841 (what a cheat looks for)
        with reference_routines_off(REFERENCE_ROUTINES):
            try:
                return answer(*args)
            except Exception as error:
                return f"{type(error).__name__}: {error}"

    assert test(reads_frames, 1) == "nothing found"
    K = np.ones((2, 2, 2))
    assert "switched off" in test(lambda K: __import__("ssmheads").heads._rank(K, None), K)
    assert "switched off" in test(lambda K: __import__("ssmheads").heads._optimal_heads(K, 1, np.ones(2), "K"), K)

    def checks_reference(K):
        from ssmheads.exercises.ch5 import _retention_parallel
        return _retention_parallel(K, K, K, 0.5)

    assert "switched off" in test(checks_reference, K)
    exec(EQUALS_EVERYTHING, globals())
    out = test(globals()["nonnegative_head_count"], K)
    assert type(out) is int and not (out == 3)           # the lying int comes back a plain int
    start = time.monotonic()
    assert test(lambda K: [0 for _ in iter(int, 1)], K).startswith("TimeoutError: did not return within")
    assert time.monotonic() - start < 15
    assert test(lambda K: os._exit(3), K).startswith("RuntimeError: ended the Python process")
    assert test(lambda K: (np.ones(2), [1, 2.0], {"a": np.float64(3)}), K)[1] == [1, 2.0]


def test_a_hidden_test_becomes_one_test_a_case_worth_its_share():
    source = make_otter.load_hidden(ROOT / "instructors" / "hidden_tests.py")["ex-tail"][0]
    cells = make_otter.hidden_case_tests(source, 2)
    assert len(cells) == make_otter.count_cases(source) == 6
    namespace: dict = {}
    for cell in cells:
        exec(cell, namespace)
    tests = [namespace[f"test_hidden_tail_case_{k + 1}"] for k in range(6)]

    def run(answer):
        env = {"optimal_error": answer}
        outcome = []
        for test in tests:
            try:
                test(env)
                outcome.append(None)
            except AssertionError as error:
                outcome.append(str(error))
        return outcome

    assert run(make_otter.reference_answer("ex-tail")) == [None] * 6

    def ignores_weights(K, H, weights):
        s = np.linalg.svd(np.asarray(K).reshape(len(K), -1), compute_uv=False)
        return float(np.sum(s[H:] ** 2))

    outcome = run(ignores_weights)
    assert 0 < outcome.count(None) < 6, outcome    # partial credit: the cases with unit weights pass
    assert any("the weights ignored" in m for m in outcome if m)
    hidden = otter_grade.hidden_summary(next(m for m in outcome if m))
    assert hidden.startswith("a wrong value") and "the weights ignored" in hidden
    assert not any(ch.isdigit() and "." in hidden for ch in hidden.split()) or "…" in hidden


# ---------------------------------------------------------------- made and graded

@pytest.fixture(scope="session")
def graded(tmp_path_factory):
    if not REQUIRED:
        pytest.skip("makes and grades the Otter assignments: run by `make test-otter` (OTTER_REQUIRED=1)")
    folder = tmp_path_factory.mktemp("integrity")
    student = nbformat.read(OTTER_DIR / CH3 / "student" / f"{CH3}.ipynb", as_version=4)
    master = nbformat.read(OTTER_DIR / CH3 / "master" / f"{CH3}.ipynb", as_version=4)

    def write(name, answers, nb_student=student, nb_master=master):
        nbformat.write(make_otter.answered(nb_student, nb_master, answers), folder / f"{name}.ipynb")

    write("ada", {})
    write("fay", HONEST_UNUSUAL)
    write("carl", {"ex-build-heads": LOOSE_TOLERANCE})
    write("gus", {"ex-tail": HANGS})
    write("ola", {"ex-count-nonneg": EQUALS_EVERYTHING})
    for name, answers in CHEATS.items():
        write(name, answers)
    dora = make_otter.answered(student, master)
    setup = next(c for c in dora.cells if c.cell_type == "code" and "import ssmheads as sh" in c.source)
    setup.source = "import seaborn as sns\n" + setup.source
    nbformat.write(dora, folder / "dora.ipynb")
    student5 = nbformat.read(OTTER_DIR / CH5 / "student" / f"{CH5}.ipynb", as_version=4)
    master5 = nbformat.read(OTTER_DIR / CH5 / "master" / f"{CH5}.ipynb", as_version=4)
    write("ivan", {"ex-retention-recurrent": IVAN_CH5}, student5, master5)
    out = folder / "grades.csv"
    start = time.monotonic()
    done = subprocess.run([str(OTTER_PYTHON), str(ROOT / "tools" / "otter_grade.py"), str(folder), "--out", str(out),
                           "--otter-dir", str(OTTER_DIR)], capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout + done.stderr
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return {(r["student"], r["question"]): r for r in rows}, done.stdout, time.monotonic() - start


def _auto(rows, student):
    return {q: r for (s, q), r in rows.items() if s == student and r["score"] != ""}


def test_honest_answers_get_full_marks_and_no_flag(graded):
    rows, printed, _ = graded
    for student in ("ada", "fay"):
        auto = _auto(rows, student)
        assert len(auto) == 4, auto
        for q, r in auto.items():
            assert float(r["score"]) == float(r["max"]) and r["flag"] == "", (student, r)


def test_every_cheat_gets_zero_and_a_flag(graded):
    rows, _, _ = graded
    numbers = {"ex-build-heads": "ex3.1", "ex-tail": "ex3.2", "ex-count-nonneg": "ex3.3", "ex-quaternion-heads": "ex3.6"}
    for student, answers in CHEATS.items():
        auto = _auto(rows, student)
        for label in answers:
            r = auto[numbers[label]]
            assert float(r["score"]) == 0 and r["flag"], (student, r)
            assert r["message"].startswith("FLAGGED, scored 0"), r
    ivan = _auto(rows, "ivan")["ex5.1"]
    assert float(ivan["score"]) == 0 and "exercises" in ivan["flag"], ivan
    # The answer that lies only through its value is not flagged, and gets no points: it came back a plain int.
    ola = _auto(rows, "ola")["ex3.3"]
    assert float(ola["score"]) == 0 and ola["flag"] == "", ola
    assert float(_auto(rows, "ola")["ex3.1"]["score"]) == 2


def test_a_hang_costs_its_own_question_and_says_so(graded):
    rows, _, _ = graded
    gus = _auto(rows, "gus")
    assert float(gus["ex3.2"]["score"]) == 0 and gus["ex3.2"]["message"].startswith("TIMED OUT"), gus["ex3.2"]
    for q in ("ex3.1", "ex3.3", "ex3.6"):
        assert float(gus[q]["score"]) == float(gus[q]["max"]), gus[q]


def test_a_failing_import_cell_is_reported_by_its_cause(graded):
    rows, _, _ = graded
    for r in _auto(rows, "dora").values():
        assert float(r["score"]) == 0
        assert "No module named 'seaborn'" in r["message"], r


def test_points_are_split_over_the_hidden_cases(graded):
    rows, _, _ = graded
    carl = _auto(rows, "carl")["ex3.1"]
    assert 0 < float(carl["score"]) < float(carl["max"]), carl
    assert "of 6 hidden cases passed" in carl["message"] and "hidden case" in carl["message"], carl


def test_grading_these_notebooks_stays_fast(graded):
    rows, printed, seconds = graded
    import re

    took = {m.group(1): float(m.group(2)) for m in re.finditer(r"^(\S+): .*?\[([\d.]+) s[,\]]", printed, re.M)}
    # gus's hang costs at most its question's three time limits (answer cell, visible check, hidden cases)
    limit = json.loads((OTTER_DIR / CH3 / "source.json").read_text())["question_seconds"]
    assert took["gus"] < max(took["ada"], took["fay"]) + 3 * limit + 10, took
