"""tools/gradebook.py: the long CSV of `make grade` turned into one row per student.

Everything is built in tmp_path: a fake `make otter` folder (source.json per chapter), two tiny
chapter notebooks (for the exercises' stars), grades, rosters and course files. No Otter.
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import gradebook as gb  # noqa: E402  (tools/ is not a package)

# chapter -> [(name, label, points, manual)]; stars: ex-a 1, ex-b 2, ex-c 3 (points = 2 x stars)
CHAPTERS = {
    "01_alpha": [("ex1.1", "ex-a", 1, False), ("ex1.1-written", "ex-a", 1, True),
                 ("ex1.2", "ex-b", 4, False), ("ex1.3", "ex-c", 6, True)],
    "02_beta": [("ex2.1", "ex-d", 2, False), ("ex2.2", "ex-e", 4, True)],
}
STARS = {"ex-a": 1, "ex-b": 2, "ex-c": 3, "ex-d": 1, "ex-e": 2}

GRADES_HEADER = "student,question,score,max,message,flag\n"
# ann: everything auto-graded scored, the written part of ex-a scored by hand (0.5), ex1.3 not yet
ANN = """ann,ex1.1,1,1,all tests passed,
ann,ex1.1-written,0.5,1,graded by hand,
ann,ex1.2,3,4,hidden case failed,
ann,ex1.3,,6,graded by hand,
"""
# cy: the three-star challenge scored by hand: 6 of 6 (extra credit: above the maximum's 5)
CY = """cy,ex1.1,1,1,all tests passed,
cy,ex1.1-written,1,1,graded by hand,
cy,ex1.2,4,4,all tests passed,
cy,ex1.3,6,6,graded by hand,
"""
BOB = "bob,,,,NOT GRADED: bob.txt is not a notebook (.ipynb),\n"


def _notebook(chapter: str) -> dict:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": f"# Chapter {chapter}\n"}]
    for label in dict.fromkeys(lab for _, lab, _, _ in CHAPTERS[chapter]):
        cells.append({"cell_type": "markdown",
                      "metadata": {"exercise": {"label": label, "topic": "t", "difficulty": STARS[label]}},
                      "source": f"```{{exercise}} Title {label}\n:label: {label}\n\nDo it.\n```\n"})
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


@pytest.fixture
def course_dir(tmp_path):
    """(otter_dir, chapters_dir) for the two fake chapters."""
    otter, chapters = tmp_path / "otter", tmp_path / "chapters"
    for chapter, qs in CHAPTERS.items():
        (otter / chapter).mkdir(parents=True)
        (otter / chapter / "source.json").write_text(json.dumps({
            "chapter": chapter + ".ipynb",
            "questions": [{"name": n, "label": lab, "points": p, "manual": m, "number": n[2:]}
                          for n, lab, p, m in qs]}))
    chapters.mkdir()
    for chapter in CHAPTERS:
        (chapters / f"{chapter}.ipynb").write_text(json.dumps(_notebook(chapter)))
    return otter, chapters


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _run(tmp_path, course_dir, grades: str, *args: str, course: str | None = None,
         roster: str | None = None) -> list[dict]:
    """Run the CLI; the gradebook's rows as dicts (header -> cell)."""
    otter, chapters = course_dir
    argv = [str(_write(tmp_path / "grades.csv", GRADES_HEADER + grades)), "--out", str(tmp_path / "out.csv"),
            "--otter-dir", str(otter), "--chapters", str(chapters), *args]
    if course is not None:
        argv += ["--course", str(_write(tmp_path / "course.yml", course))]
    if roster is not None:
        argv += ["--roster", str(_write(tmp_path / "roster.csv", roster))]
    assert gb.main(argv) == 0
    with open(tmp_path / "out.csv", newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _refused(tmp_path, course_dir, grades: str, *args, capsys, **kw) -> str:
    with pytest.raises(AssertionError):
        _run(tmp_path, course_dir, grades, *args, **kw)
    return capsys.readouterr().err


# --------------------------------------------------------------------------- totals and extra credit

def test_totals_with_three_stars_extra_credit_by_default(tmp_path, course_dir):
    rows = _run(tmp_path, course_dir, ANN + CY)
    ann, cy = rows
    assert [r["student"] for r in rows] == ["ann", "cy"]
    # one column per question, the score as graded, blank when not scored yet
    assert (ann["ex1.1"], ann["ex1.1-written"], ann["ex1.2"], ann["ex1.3 (extra credit)"]) == ("1", "0.5", "3", "")
    # only chapter 01 was graded: its maximum leaves out ex1.3 (three stars): 1 + 1 + 4
    assert ann["maximum"] == cy["maximum"] == "6"
    assert (ann["auto"], ann["by_hand"], ann["total"], ann["percent"]) == ("4", "0.5", "4.5", "75.00")
    assert ann["note"] == "1 question to grade by hand"
    # the challenge counts in the total, not in the maximum: more than 100 %
    assert (cy["auto"], cy["by_hand"], cy["total"], cy["percent"]) == ("5", "7", "12", "200.00")
    assert cy["note"] == ""


def test_extra_credit_from_the_course(tmp_path, course_dir):
    none = _run(tmp_path, course_dir, CY, course="extra_credit: []\n")[0]
    assert "ex1.3" in none and none["maximum"] == "12" and none["percent"] == "100.00"
    two = _run(tmp_path, course_dir, CY, course="extra_credit: {stars: 2}\n")[0]
    assert "ex1.2 (extra credit)" in two and two["maximum"] == "8"     # 1 + 1 + 6
    named = _run(tmp_path, course_dir, CY, course="extra_credit: [ex-a]\n")[0]   # a label: both parts
    assert "ex1.1 (extra credit)" in named and "ex1.1-written (extra credit)" in named
    assert named["maximum"] == "10" and named["total"] == "12"


def test_dropped_questions_leave_total_and_maximum(tmp_path, course_dir):
    row = _run(tmp_path, course_dir, ANN, course="dropped: [ex-a]\n")[0]    # a label drops both parts
    assert "ex1.1 (dropped)" in row and "ex1.1-written (dropped)" in row
    assert row["ex1.1 (dropped)"] == "1"          # still shown
    assert (row["auto"], row["by_hand"], row["total"], row["maximum"]) == ("3", "0", "3", "4")
    # dropping the three-star challenge wins over its default extra credit
    row = _run(tmp_path, course_dir, CY, course="dropped: [ex1.3]\n")[0]
    assert "ex1.3 (dropped)" in row and row["total"] == "6" and row["maximum"] == "6"


def test_weights_multiply_chapter_and_question(tmp_path, course_dir):
    both = ANN + "ann,ex2.1,2,2,ok,\nann,ex2.2,3,4,graded by hand,\n"
    plain = _run(tmp_path, course_dir, both)[0]
    assert (plain["total"], plain["maximum"]) == ("9.5", "12")        # 4.5 + 5 of 6 + 6
    row = _run(tmp_path, course_dir, both, course="weights: {02_beta: 2, ex2.2: 0.5, ex-b: 3}\n")[0]
    # 01: 1 + 0.5 + 3*3 = 10.5 of 1 + 1 + 4*3 = 14; 02: 2*2 + 3*2*0.5 = 7 of 4 + 4 = 8
    assert (row["total"], row["maximum"]) == ("17.5", "22")
    assert row["ex1.2"] == "3"                   # the question's cell stays its own score


# --------------------------------------------------------------------------- late policy

LATE = "due: 2026-12-01T17:00:00Z\nlate_policy: {per_day: 0.1, max_days: 5}\n"


@pytest.mark.parametrize("submitted, days, total", [
    ("2026-12-01T16:59:00Z", "0", "4.5"),          # on time
    ("2026-12-01T17:00:00+00:00", "0", "4.5"),     # at the due time
    ("2026-12-03T05:00:00Z", "2", "3.6"),          # 1.5 days: two started days, 20 % off
    ("2026-12-03T06:00:00+01:00", "2", "3.6"),     # the same instant in another zone
    ("2026-12-11T17:00:00Z", "10", "0"),           # after max_days: 0
])
def test_late_policy(tmp_path, course_dir, submitted, days, total):
    roster = f"submission,id,name,submitted\nann,101,Ann A,{submitted}\n"
    row = _run(tmp_path, course_dir, ANN, course=LATE, roster=roster)[0]
    assert (row["days_late"], row["total"], row["maximum"]) == (days, total, "6")
    assert ("late" in row["note"]) == (days != "0")


def test_days_late_counts_started_days():
    due = gb._when("2026-12-01T17:00:00Z", "due")
    assert gb.days_late(gb._when("2026-12-01T17:00:01Z", "x"), due) == 1
    assert gb.days_late(gb._when("2026-12-02T17:00:00Z", "x"), due) == 1
    assert gb.days_late(gb._when("2026-12-02T17:00:01Z", "x"), due) == 2
    course = gb.parse_course({"due": "2026-12-01T17:00:00Z", "late_policy": {"per_day": 0.25, "max_days": 5}})
    assert [gb.late_factor(d, course) for d in (0, 1, 4, 5, 6)] == [1, 0.75, 0, 0, 0]


def test_late_policy_needs_submitted_times(tmp_path, course_dir, capsys):
    err = _refused(tmp_path, course_dir, ANN, capsys=capsys, course=LATE,
                   roster="submission,id,name\nann,101,Ann A\n")
    assert "no submitted time for ann" in err
    err = _refused(tmp_path, course_dir, ANN, capsys=capsys, course=LATE)
    assert "due needs --roster" in err


# --------------------------------------------------------------------------- roster

ROSTER = "submission,id,name,email\ncy,103,Cy C,cy@x.edu\ndee,104,Dee D,dee@x.edu\nann,101,Ann A,ann@x.edu\n"


def test_roster_order_and_missing_submission(tmp_path, course_dir):
    rows = _run(tmp_path, course_dir, ANN + CY, roster=ROSTER)
    assert [(r["student"], r["id"], r["name"]) for r in rows] == [
        ("cy", "103", "Cy C"), ("dee", "104", "Dee D"), ("ann", "101", "Ann A")]
    dee = rows[1]
    assert dee["note"] == "no submission"
    assert (dee["ex1.1"], dee["total"], dee["maximum"], dee["percent"]) == ("", "0", "6", "0.00")


def test_submission_not_on_roster_is_refused(tmp_path, course_dir, capsys):
    err = _refused(tmp_path, course_dir, ANN + CY, capsys=capsys, roster="submission,id,name\nann,101,Ann A\n")
    assert "cy" in err and "not on the roster" in err


@pytest.mark.parametrize("roster, words", [
    ("student,id,name\nann,1,A\n", "lacks the column(s) submission"),
    ("submission,id,name\nann,1,A\nann,2,B\n", "submission 'ann' is also on line 2"),
    ("submission,id,name\nann,1,A\ncy,1,C\n", "id '1' is also on line 2"),
    ("submission,id,name,submitted\nann,1,A,yesterday\n", "'yesterday' is not an ISO date"),
])
def test_bad_roster_refused(tmp_path, course_dir, capsys, roster, words):
    assert words in _refused(tmp_path, course_dir, ANN, capsys=capsys, roster=roster)


def test_not_graded_submission_gets_its_message(tmp_path, course_dir):
    rows = _run(tmp_path, course_dir, ANN + BOB)
    bob = next(r for r in rows if r["student"] == "bob")
    assert bob["note"].startswith("NOT GRADED: bob.txt") and bob["total"] == "0" and bob["ex1.1"] == ""


def test_grades_against_other_assignments_refused(tmp_path, course_dir, capsys):
    assert "question 'ex9.1' is in no source.json" in _refused(
        tmp_path, course_dir, ANN + "ann,ex9.1,1,1,ok,\n", capsys=capsys)
    assert "out of 2 here but 1 in source.json" in _refused(
        tmp_path, course_dir, "ann,ex1.1,1,2,ok,\n", capsys=capsys)
    assert "graded twice" in _refused(tmp_path, course_dir, ANN + "ann,ex1.2,1,4,ok,\n", capsys=capsys)


# --------------------------------------------------------------------------- formats

def test_canvas_and_gradescope_columns(tmp_path, course_dir):
    both = ANN + "ann,ex2.1,2,2,ok,\nann,ex2.2,,4,graded by hand,\n"
    canvas = _run(tmp_path, course_dir, both, "--format", "canvas", roster=ROSTER)
    assert list(canvas[0]) == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                               "01_alpha total", "02_beta total"]
    ann = next(r for r in canvas if r["ID"] == "101")
    assert (ann["Student"], ann["01_alpha total"], ann["02_beta total"]) == ("Ann A", "4.5", "2")
    scope = _run(tmp_path, course_dir, both, "--format", "gradescope", roster=ROSTER)
    assert list(scope[0]) == ["Name", "SID", "Email", "Total Score"]
    assert scope[2] == {"Name": "Ann A", "SID": "101", "Email": "ann@x.edu", "Total Score": "6.5"}


def test_never_overwrites_the_grades(tmp_path, course_dir, capsys):
    grades = _write(tmp_path / "grades.csv", GRADES_HEADER + ANN)
    otter, chapters = course_dir
    assert gb.main([str(grades), "--out", str(grades), "--otter-dir", str(otter), "--chapters", str(chapters)]) == 2
    assert "is a grades CSV given to read" in capsys.readouterr().err
    assert grades.read_text() == GRADES_HEADER + ANN


def test_lms_formats_need_a_roster(tmp_path, course_dir, capsys):
    assert "--format canvas needs --roster" in _refused(tmp_path, course_dir, ANN, "--format", "canvas",
                                                        capsys=capsys)
    assert "--format: 'moodle'" in _refused(tmp_path, course_dir, ANN, "--format", "moodle", capsys=capsys)


# --------------------------------------------------------------------------- course configuration

@pytest.mark.parametrize("text, key", [
    ("extra_credits: []\n", "extra_credits"),
    ("extra_credit: 3\n", "extra_credit"),
    ("extra_credit: {stars: 4}\n", "extra_credit: stars"),
    ("extra_credit: {level: 3}\n", "extra_credit"),
    ("dropped: ex1.1\n", "dropped"),
    ("weights: [2]\n", "weights"),
    ("weights: {01_alpha: two}\n", "weights: 01_alpha"),
    ("due: tomorrow\n", "due"),
    ("due: 2026-12-01\n", "due"),
    ("late_policy: {per_day: 0.1}\n", "late_policy needs due"),
    ("due: 2026-12-01T17:00:00Z\nlate_policy: {per_day: 10%}\n", "late_policy: per_day"),
    ("due: 2026-12-01T17:00:00Z\nlate_policy: {per_day: 0.1, max_days: 1.5}\n", "late_policy: max_days"),
    ("due: 2026-12-01T17:00:00Z\nlate_policy: {per_day: 0.1, grace: 1}\n", "late_policy"),
    ("show_hidden_after_due: maybe\n", "show_hidden_after_due"),
    ("- dropped\n", "expected a mapping"),
])
def test_bad_course_refused_by_key(tmp_path, course_dir, capsys, text, key):
    err = _refused(tmp_path, course_dir, ANN, capsys=capsys, course=text)
    assert "course.yml" in err and key in err


@pytest.mark.parametrize("text, key", [
    ("dropped: [ex9.9]\n", "dropped: 'ex9.9'"),
    ("extra_credit: [ex-z]\n", "extra_credit: 'ex-z'"),
    ("weights: {09_gamma: 2}\n", "weights: '09_gamma'"),
])
def test_unknown_question_in_course_refused(tmp_path, course_dir, capsys, text, key):
    assert key in _refused(tmp_path, course_dir, ANN, capsys=capsys, course=text)


def test_show_hidden_after_due_is_echoed(tmp_path, course_dir, capsys):
    _run(tmp_path, course_dir, ANN, course="show_hidden_after_due: true\n")
    assert "note: show_hidden_after_due: true" in capsys.readouterr().out


def test_example_course_file_is_valid():
    course = gb.read_course(ROOT / "instructors" / "course.example.yml")
    assert course.due is not None and course.per_day > 0


def test_real_questions_have_stars():
    """Every question `make otter` wrote (the test copy) has a difficulty in the chapters."""
    otter = ROOT / "_build" / "otter-test"
    if not (otter / "01_unified_operator" / "source.json").exists():
        pytest.skip("no _build/otter-test (make test-otter makes it)")
    questions = gb.load_questions(otter)
    stars = gb.load_stars(ROOT / "chapters")
    assert {q.label for q in questions.values()} <= set(stars)
    # the book's rule, points = 2 x stars, over the parts of each exercise
    points: dict[str, float] = {}
    for q in questions.values():
        points[q.label] = points.get(q.label, 0) + q.points
    assert all(points[label] == 2 * stars[label] for label in points)
