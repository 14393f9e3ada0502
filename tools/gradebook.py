#!/usr/bin/env python3
"""Turn the long CSV of ``make grade`` into a gradebook: one row per student.

Usage (``make gradebook GRADES=grades.csv``; standard library and PyYAML only, so it runs
in the readers' environment, .venv, and in the instructors', .venv-otter):

    python tools/gradebook.py grades.csv [more.csv ...] --out gradebook.csv [--roster roster.csv]
        [--course course.yml] [--format plain|canvas|gradescope] [--otter-dir _build/otter]
        [--chapters chapters]

``grades.csv`` is what ``tools/otter_grade.py`` writes (student, question, score, max, message,
flag: one row per submission and question). Several of them (one per chapter) may be given;
a student and question found twice is refused. The questions, their points and which are
graded by hand are read from ``<otter-dir>/<chapter>/source.json`` (``make otter``); the
difficulty of each exercise (its stars) from the chapter notebooks
(``tools/exercise_catalogue.py``).

The plain gradebook has the columns

    student, id, name, <one per question: its score>, auto, by_hand, days_late, total, maximum,
    percent, note

* a question's cell is its score as graded, blank when it is not scored (graded by hand and not
  entered yet, or the submission was not graded);
* ``auto`` and ``by_hand`` add the scores (times their weights) of the questions graded
  automatically and by hand; a blank counts 0;
* ``total`` is ``auto + by_hand``, reduced by the late policy; ``maximum`` leaves out the
  extra-credit and dropped questions (by default the three-star exercises are extra credit:
  their points count in the total, not in the maximum); ``percent`` is 100 total / maximum;
* ``note`` says "no submission", "NOT GRADED: ...", how many questions are still to be graded
  by hand, and the days late.

The roster (``--roster``) is a CSV with the columns ``submission`` (the name grading uses: the
notebook's file name without .ipynb, or the student's folder), ``id`` (the LMS's student id),
``name``, and optionally ``email``, ``submitted`` (an ISO time, for the late policy) and
``section``; other columns are ignored. Students then come in roster order, a student on the
roster with no submission gets zeros and the note "no submission", and a submission whose name
is not on the roster is refused (fix the roster or rename the submission: a grade must never
go to nobody).

The course configuration (``--course``; see instructors/course.example.yml, read by
tools/course.py) gives the gradebook ``extra_credit``, ``dropped``, ``weights``, ``due`` and
``late_policy``; its other keys (``exercises``, ``points``, ``workers``,
``show_hidden_after_due``) are for ``make otter`` and ``make grade`` (the questions and points
they chose are in the source.json files). Any other key, or a value of the wrong type, is refused.

``--format canvas`` and ``--format gradescope`` write the columns those systems import (see
CANVAS_COLUMNS and GRADESCOPE_COLUMNS below); both need a roster.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

# The course file's model and parser live in tools/course.py (make otter and make grade read it too);
# parse_course and read_course keep their names here.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from course import Course, CourseError, parse_course, read_course, when  # noqa: E402,F401  (tools/: no package)

sys.path.pop(0)
_when = when   # an aware datetime from an ISO string (the roster's submitted times)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OTTER_DIR = ROOT / "_build" / "otter"
DEFAULT_CHAPTERS = ROOT / "chapters"
GRADE_COLUMNS = ("student", "question", "score", "max", "message")
NOT_GRADED = "NOT GRADED"
BY_HAND = "graded by hand"
FORMATS = ("plain", "canvas", "gradescope")

# Canvas's gradebook import: the columns of its own gradebook export, in this order, then one
# column per assignment; a column whose name is not an existing assignment creates one. Only
# one of Student / ID / SIS User ID is needed to match a student. Documented in "Import a CSV
# file to Carmen Grades" (Ohio State's guide to Canvas,
# https://teaching.resources.osu.edu/toolsets/carmencanvas/guides/calculating-final-grades/import-csv-file-carmen-grades:
# "Student Name ... OR Student ID OR Student SIS User ID ..., SIS Login ID, Section,
# Assignment Name") and in Canvas's export notes (https://ts.vcu.edu/askit/teaching-and-learning/
# canvas/faculty/grading-faculty/gradebook-action-menu-faculty/).
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
# Gradescope: a roster has Name, Email (unique, required) and SID columns (Gradescope's guide
# "Adding Students and Staff", https://help.gradescope.com/article/w59nl02vyt-instructor-course-add-members);
# "Total Score" is the column name of Gradescope's own score export, which grade-upload tools
# read (e.g. https://npmjs.com/package/canvas-grade-uploader: 'must include a "SID" column and
# a "Total Score" column'). Gradescope matches a student by Email or SID.
GRADESCOPE_COLUMNS = ("Name", "SID", "Email", "Total Score")


class GradebookError(ValueError):
    """Input that cannot make a gradebook; the message names the file and what was expected."""


# --------------------------------------------------------------------------- questions

@dataclass(frozen=True)
class Question:
    name: str       # "ex3.2", "ex3.2-written"
    label: str      # the exercise's label, "ex-tail"
    points: float
    manual: bool    # graded by hand
    chapter: str    # "03_head_count"


def load_questions(otter_dir: Path) -> dict[str, Question]:
    """Every question of every chapter in ``otter_dir``, in chapter order then the notebook's."""
    otter_dir = Path(otter_dir)
    sources = sorted(otter_dir.glob("*/source.json"))
    if not sources:
        raise GradebookError(f"--otter-dir: no <chapter>/source.json in {otter_dir} (run `make otter`)")
    questions: dict[str, Question] = {}
    for path in sources:
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            chapter = Path(record.get("chapter") or path.parent.name).stem
            for q in record["questions"]:
                if q["name"] in questions:
                    raise GradebookError(f"{path}: question {q['name']} is also in {questions[q['name']].chapter}")
                questions[q["name"]] = Question(q["name"], q["label"], float(q["points"]), bool(q["manual"]),
                                                chapter)
        except (ValueError, KeyError, TypeError) as error:
            if isinstance(error, GradebookError):
                raise
            raise GradebookError(f"{path}: not a source.json of `make otter` ({type(error).__name__}: {error}); "
                                 "expected questions with name, label, points, manual") from None
    return questions


def load_stars(chapters: Path) -> dict[str, int]:
    """The difficulty (1 to 3 stars) of each exercise label, from the chapter notebooks."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from exercise_catalogue import CatalogueError, read_exercises
    try:
        return {e.label: e.difficulty for e in read_exercises(Path(chapters))}
    except CatalogueError as error:
        raise GradebookError(f"--chapters: {error}") from None


# --------------------------------------------------------------------------- grades

@dataclass
class Submission:
    scores: dict[str, float | None] = field(default_factory=dict)   # question -> score (None: not scored)
    chapters: set[str] = field(default_factory=set)
    not_graded: str = ""


def _unsafe(cell: str) -> str:
    """Undo otter_grade's spreadsheet guard (a leading ' before =, +, -, @)."""
    return cell[1:] if cell[:1] == "'" and cell[1:2] in ("=", "+", "-", "@", "\t", "\r") else cell


def read_grades(paths: list[Path], questions: dict[str, Question]) -> dict[str, Submission]:
    """The submissions in the grades CSVs, by student."""
    out: dict[str, Submission] = {}
    seen: dict[tuple[str, str], str] = {}
    for path in paths:
        path = Path(path)
        try:
            f = open(path, newline="", encoding="utf-8")
        except OSError as error:
            raise GradebookError(f"{path}: cannot be read ({error.strerror})") from None
        with f:
            reader = csv.DictReader(f)
            missing = [c for c in GRADE_COLUMNS if c not in (reader.fieldnames or [])]
            if missing:
                raise GradebookError(f"{path}: lacks the column(s) {', '.join(missing)}; expected the CSV of "
                                     f"`make grade` ({', '.join(GRADE_COLUMNS)}, flag)")
            for line, row in enumerate(reader, start=2):
                student = _unsafe(row["student"] or "").strip()
                name, message = row["question"] or "", _unsafe(row["message"] or "")
                if not student:
                    raise GradebookError(f"{path}, line {line}: no student")
                sub = out.setdefault(student, Submission())
                if message.startswith(NOT_GRADED):
                    sub.not_graded = sub.not_graded or message
                if not name:
                    continue        # a submission that could not be graded at all: one row, no question
                q = questions.get(name)
                if q is None:
                    raise GradebookError(f"{path}, line {line}: question {name!r} is in no source.json of "
                                         "--otter-dir (graded against other assignments? run `make otter`)")
                if (student, name) in seen:
                    raise GradebookError(f"{path}, line {line}: {student}'s {name} is graded twice "
                                         f"(also in {seen[student, name]})")
                seen[student, name] = f"{path}, line {line}"
                raw = (row["score"] or "").strip()
                try:
                    score = float(raw) if raw else None
                    top = float(row["max"]) if (row["max"] or "").strip() else q.points
                except ValueError:
                    raise GradebookError(f"{path}, line {line}: score {raw!r} / max {row['max']!r} of {name} "
                                         "is not a number") from None
                if top != q.points:
                    raise GradebookError(f"{path}, line {line}: {name} is out of {top:g} here but "
                                         f"{q.points:g} in source.json (graded against other assignments?)")
                if score is not None and not 0 <= score <= q.points:
                    raise GradebookError(f"{path}, line {line}: {student}'s {name} scores {score:g}, outside "
                                         f"0 to {q.points:g}")
                sub.scores[name] = score
                sub.chapters.add(q.chapter)
    return out


# --------------------------------------------------------------------------- roster

@dataclass(frozen=True)
class Student:
    submission: str
    id: str = ""
    name: str = ""
    email: str = ""
    submitted: dt.datetime | None = None
    section: str = ""


def read_roster(path: Path) -> list[Student]:
    path = Path(path)
    try:
        f = open(path, newline="", encoding="utf-8-sig")
    except OSError as error:
        raise GradebookError(f"--roster: {path} cannot be read ({error.strerror})") from None
    with f:
        reader = csv.DictReader(f)
        missing = [c for c in ("submission", "id", "name") if c not in (reader.fieldnames or [])]
        if missing:
            raise GradebookError(f"--roster {path}: lacks the column(s) {', '.join(missing)}; expected "
                                 "submission, id, name and optionally email, submitted, section")
        students, where = [], {}
        for line, row in enumerate(reader, start=2):
            sub = (row["submission"] or "").strip()
            if not sub:
                raise GradebookError(f"--roster {path}, line {line}: empty submission name")
            for key, value in (("submission", sub), ("id", (row["id"] or "").strip())):
                if value and (key, value) in where:
                    raise GradebookError(f"--roster {path}, line {line}: {key} {value!r} is also on line "
                                         f"{where[key, value]}")
                where[key, value] = line
            submitted = (row.get("submitted") or "").strip()
            students.append(Student(
                sub, (row["id"] or "").strip(), (row["name"] or "").strip(), (row.get("email") or "").strip(),
                _when(submitted, f"--roster {path}, line {line}, submitted") if submitted else None,
                (row.get("section") or "").strip()))
    return students


# --------------------------------------------------------------------------- course configuration

def days_late(submitted: dt.datetime | None, due: dt.datetime | None) -> int:
    """Days started after ``due`` (0 when on time): 1.5 days late is 2."""
    if submitted is None or due is None or submitted <= due:
        return 0
    return math.ceil((submitted - due) / dt.timedelta(days=1))


def late_factor(days: int, course: Course) -> float:
    """What the total is multiplied by, ``days`` days late."""
    if course.max_days is not None and days > course.max_days:
        return 0.0
    return max(0.0, 1.0 - course.per_day * days)


# --------------------------------------------------------------------------- the gradebook

@dataclass
class Row:
    student: Student
    scores: dict[str, float | None]
    chapter_totals: dict[str, float]
    auto: float
    by_hand: float
    days_late: int | str
    total: float
    maximum: float
    note: str

    @property
    def percent(self) -> float | None:
        return 100 * self.total / self.maximum if self.maximum else None


@dataclass
class Gradebook:
    questions: list[Question]      # the columns, in order
    chapters: list[str]
    rows: list[Row]
    extra: set[str]                # question names that are extra credit
    dropped: set[str]
    notes: list[str]               # said once, for the whole gradebook


def _resolve(refs: list[str], questions: dict[str, Question], key: str) -> set[str]:
    """The question names that names or labels stand for; an unknown one is refused."""
    out = set()
    for ref in refs:
        hit = {q.name for q in questions.values() if ref in (q.name, q.label)}
        if not hit:
            raise GradebookError(f"course: {key}: {ref!r} is neither a question name (ex3.4) nor an exercise "
                                 "label (ex-tail) of the assignments in --otter-dir")
        out |= hit
    return out


def build(submissions: dict[str, Submission], questions: dict[str, Question], course: Course | None = None,
          roster: list[Student] | None = None, stars: dict[str, int] | None = None) -> Gradebook:
    """The gradebook of ``submissions``; ``stars`` (label -> difficulty) is needed when extra credit is by stars."""
    course = course or Course()
    chapters = [c for c in dict.fromkeys(q.chapter for q in questions.values())
                if any(c in s.chapters for s in submissions.values())]
    if not chapters:
        raise GradebookError("the grades hold no graded question: nothing to put in a gradebook")
    columns = [q for q in questions.values() if q.chapter in chapters]
    known = {q.chapter for q in questions.values()} | set(questions) | {q.label for q in questions.values()}
    for key in course.weights:
        if key not in known:
            raise GradebookError(f"course: weights: {key!r} is neither a chapter (03_head_count), a question "
                                 "(ex3.4) nor an exercise label (ex-tail) of the assignments in --otter-dir")
    dropped = _resolve(course.dropped, questions, "dropped")
    if course.extra_credit is not None:
        extra = _resolve(course.extra_credit, questions, "extra_credit")
    else:
        if stars is None:
            raise GradebookError("extra credit by stars needs the exercises' difficulties (--chapters)")
        unknown = sorted({q.label for q in columns if q.label not in stars})
        if unknown:
            raise GradebookError(f"--chapters: no difficulty for the exercise(s) {', '.join(unknown)} "
                                 "(another version of the chapters than `make otter` used?)")
        extra = {q.name for q in columns if stars[q.label] in course.extra_stars} - dropped
    both = sorted(extra & dropped)
    if both:
        raise GradebookError(f"course: {', '.join(both)} both dropped and extra credit: choose one")

    def weight(q: Question) -> float:
        w = course.weights
        return w.get(q.chapter, 1.0) * w.get(q.label, 1.0) * w.get(q.name, 1.0)

    counted = [q for q in columns if q.name not in dropped]
    maximum = sum(q.points * weight(q) for q in counted if q.name not in extra)

    if roster is not None:
        listed = {s.submission for s in roster}
        strangers = sorted(set(submissions) - listed)
        if strangers:
            raise GradebookError(f"--roster: the submission(s) {', '.join(strangers)} are not on the roster "
                                 "(add them, with their id, or rename the notebooks to their roster name)")
        students = roster
    else:
        students = [Student(name) for name in sorted(submissions)]
    if course.due is not None:
        if roster is None:
            raise GradebookError("course: due needs --roster with a 'submitted' column (when each student "
                                 "submitted)")
        undated = [s.submission for s in roster if s.submission in submissions and s.submitted is None]
        if undated:
            raise GradebookError(f"--roster: no submitted time for {', '.join(undated)}, and the course has a "
                                 "due date")

    rows = []
    for student in students:
        sub = submissions.get(student.submission)
        notes: list[str] = []
        scores = dict(sub.scores) if sub else {}
        totals = dict.fromkeys(chapters, 0.0)
        auto = by_hand = 0.0
        pending = 0
        for q in counted:
            score = scores.get(q.name)
            if score is None:
                pending += bool(sub and q.manual and q.chapter in sub.chapters and not sub.not_graded)
                continue
            points = score * weight(q)
            totals[q.chapter] += points
            if q.manual:
                by_hand += points
            else:
                auto += points
        if sub is None:
            notes.append("no submission")
        else:
            if sub.not_graded:
                notes.append(sub.not_graded)
            notes += [f"no submission for {c}" for c in chapters if c not in sub.chapters and not sub.not_graded]
            if pending:
                notes.append(f"{pending} question{'s' * (pending > 1)} to grade by hand")
        late: int | str = ""
        factor = 1.0
        if course.due is not None and sub is not None:
            late = days_late(student.submitted, course.due)
            factor = late_factor(late, course)
            if late:
                notes.append(f"{late} day{'s' * (late > 1)} late: total x {factor:g}")
        rows.append(Row(student, scores, {c: t * factor for c, t in totals.items()}, auto, by_hand, late,
                        (auto + by_hand) * factor, maximum, "; ".join(notes)))
    notes = []
    if course.show_hidden_after_due is not None:
        notes.append(f"show_hidden_after_due: {str(course.show_hidden_after_due).lower()} (applied by `make otter "
                     "COURSE=...` and `make grade COURSE=...`, not by the gradebook)")
    return Gradebook(columns, chapters, rows, extra, dropped, notes)


# --------------------------------------------------------------------------- writing

def _num(x: float | None) -> str:
    return "" if x is None else f"{round(x, 6):g}"


def _cell(text: str) -> str:
    """A cell a spreadsheet will not run as a formula (as tools/otter_grade.py writes them)."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def table(book: Gradebook, fmt: str = "plain") -> list[list[str]]:
    """The header and rows of the gradebook in ``fmt``."""
    if fmt == "plain":
        def mark(q: Question) -> str:
            return q.name + (" (extra credit)" if q.name in book.extra else " (dropped)" if q.name in book.dropped
                             else "")
        header = ["student", "id", "name", *map(mark, book.questions), "auto", "by_hand", "days_late", "total",
                  "maximum", "percent", "note"]
        body = [[r.student.submission, r.student.id, r.student.name,
                 *(_num(r.scores.get(q.name)) for q in book.questions),
                 _num(r.auto), _num(r.by_hand), str(r.days_late), _num(r.total), _num(r.maximum),
                 "" if r.percent is None else f"{r.percent:.2f}", r.note] for r in book.rows]
    elif fmt == "canvas":
        header = [*CANVAS_COLUMNS, *(f"{c} total" for c in book.chapters)]
        body = [[r.student.name, r.student.id, "", "", r.student.section,
                 *(_num(r.chapter_totals[c]) for c in book.chapters)] for r in book.rows]
    elif fmt == "gradescope":
        header = list(GRADESCOPE_COLUMNS)
        body = [[r.student.name, r.student.id, r.student.email, _num(r.total)] for r in book.rows]
    else:
        raise GradebookError(f"--format: {fmt!r}; expected one of {', '.join(FORMATS)}")
    return [header] + [[_cell(str(v)) for v in row] for row in body]


def write(book: Gradebook, out: Path, fmt: str = "plain") -> None:
    rows = table(book, fmt)
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grades", type=Path, nargs="+", help="the CSV(s) of `make grade`")
    parser.add_argument("--out", type=Path, default=Path("gradebook.csv"), help="default: gradebook.csv")
    parser.add_argument("--roster", type=Path, help="CSV: submission, id, name[, email, submitted, section]")
    parser.add_argument("--course", type=Path, help="course configuration (see instructors/course.example.yml)")
    parser.add_argument("--format", default="plain", help="plain (default), canvas or gradescope")
    parser.add_argument("--otter-dir", type=Path, default=DEFAULT_OTTER_DIR, help="default: _build/otter")
    parser.add_argument("--chapters", type=Path, default=DEFAULT_CHAPTERS,
                        help="the chapter notebooks, for the exercises' stars (default: chapters/)")
    args = parser.parse_args(argv)
    try:
        if args.format not in FORMATS:
            raise GradebookError(f"--format: {args.format!r}; expected one of {', '.join(FORMATS)}")
        if any(args.out.resolve() == Path(g).resolve() for g in args.grades):
            raise GradebookError(f"--out {args.out} is a grades CSV given to read (hand-graded scores may be "
                                 "in it): write the gradebook to another file")
        if args.format != "plain" and args.roster is None:
            raise GradebookError(f"--format {args.format} needs --roster (the students' ids and names)")
        course = read_course(args.course) if args.course else Course()
        roster = read_roster(args.roster) if args.roster else None
        questions = load_questions(args.otter_dir)
        stars = load_stars(args.chapters) if course.extra_credit is None else None
        book = build(read_grades(args.grades, questions), questions, course, roster, stars)
        write(book, args.out, args.format)
    except (GradebookError, CourseError) as error:
        print(f"gradebook: {error}", file=sys.stderr)
        return 2
    for note in book.notes:
        print(f"note: {note}")
    extra = sorted(book.extra, key=[q.name for q in book.questions].index) if book.extra else []
    print(f"{len(book.rows)} students, {len(book.questions)} questions of {', '.join(book.chapters)}; "
          f"maximum {_num(book.rows[0].maximum) if book.rows else 0}"
          + (f"; extra credit: {', '.join(extra)}" if extra else "")
          + (f"; dropped: {', '.join(sorted(book.dropped))}" if book.dropped else "")
          + f" -> {args.out} ({args.format})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
