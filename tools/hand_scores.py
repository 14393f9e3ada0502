#!/usr/bin/env python3
"""Grading by hand: the rubrics, the score sheets, and merging their scores into grades.csv.

Usage (``make answers`` writes the sheets; this script merges them):

    python tools/hand_scores.py merge ANSWERS --into grades.csv [--out FILE] [--force]
    python tools/hand_scores.py check-rubrics [--rubrics instructors/rubrics.yml]

``make answers SUBMISSIONS=...`` (tools/otter_grade.py, ``collect_answers``) writes, for each
question graded by hand, ``ANSWERS/<chapter>/<question>.md`` (the book's solution, the
question's rubric from ``instructors/rubrics.yml``, then every student's answer) and beside it
``ANSWERS/<chapter>/<question>.scores.csv``, a score sheet with the columns ``student, score,
comment``: one row per student, scores blank. The grader fills in the scores (and comments).

``merge`` reads every ``*.scores.csv`` under ANSWERS and fills the matching rows of the
grades CSV that ``make grade`` wrote (the rows with an empty score and the message
``graded by hand``): the score, and the message ``graded by hand: <comment>``. It refuses,
naming the file and line, a score that is not a number, below 0 or above the question's
maximum, a student or a question that has no hand-graded row in the CSV, a student twice in
one sheet, and a sheet without the three columns; then it writes nothing. A blank score
leaves its row as it was (counted as still to grade). Rows merged before are merged again
(their message still starts with ``graded by hand``), so a corrected sheet can be merged
again into the merged file.

The merged CSV goes to ``--out``, by default beside the input with ``-hand`` added
(``grades.csv`` -> ``grades-hand.csv``): the grades CSV itself is never overwritten, and
neither is an existing ``--out``, unless ``--force`` is given (``--out grades.csv --force``
updates it in place).

``check-rubrics`` checks that every hand-graded question of the chapters has a rubric whose
points add up to the question's, and that no rubric names an unknown question.
"""
from __future__ import annotations

import argparse
import csv
import functools
import json
import math
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUBRICS = ROOT / "instructors" / "rubrics.yml"
CHAPTERS = ROOT / "chapters"
SHEET_COLUMNS = ("student", "score", "comment")
SHEET_SUFFIX = ".scores.csv"
BY_HAND = "graded by hand"


# --------------------------------------------------------------------------- questions and rubrics

def hand_graded_questions(chapters: Path = CHAPTERS) -> dict[str, dict[str, float]]:
    """``{chapter: {question: points}}`` of the questions graded by hand, from the chapters.

    The same rule as ``make_otter.master_notebook`` (without rendering the notebooks): an
    exercise without a check is one hand-graded question ``ex<number>`` worth 2 points a
    star; an auto-checked one whose text asks in prose (a question mark, "show", "explain",
    "prove") has a hand-graded part ``ex<number>-written`` worth the points the code does
    not take. tests/test_hand_grading.py compares this with the ``source.json`` of the
    built assignments when there are some.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import exercise_catalogue as catalogue
        import make_otter
        from bookkit import core
        from bookkit.student import split_exercise_stubs
    finally:
        sys.path.pop(0)
    numbers = core.exercise_numbers(core.Book(ROOT))
    found: dict[str, dict[str, float]] = {}
    for path in sorted(Path(chapters).glob("*.ipynb")):
        questions = found.setdefault(path.stem, {})
        exercises = {e.label: e for e in catalogue.read_chapter(path)}
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        for cell in cells:
            if cell.get("cell_type") != "markdown":
                continue
            prompt = split_exercise_stubs(core.cell_source(cell))[0]
            for block in core.exercise_blocks(prompt):
                exercise, body = exercises[block.label], block.body
                points = make_otter.POINTS_PER_STAR * exercise.difficulty
                number = numbers[exercise.label]
                if not exercise.checked:
                    questions[make_otter.question_name(number)] = points
                elif make_otter.asks_in_prose(body):
                    questions[make_otter.question_name(number, True)] = points - points // 2
    return found


def load_rubrics(path: Path = RUBRICS) -> dict[str, dict[str, list[dict]]]:
    """``{chapter: {question: [{"points": p, "criterion": text}, ...]}}`` from the rubrics file.

    Raises ValueError naming the file and the entry when the layout is not that.
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"{path}: cannot be read ({error.strerror})") from None
    except yaml.YAMLError as error:
        raise ValueError(f"{path}: not valid YAML ({error})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of chapters to questions to lists of items")
    for chapter, questions in data.items():
        if not isinstance(questions, dict):
            raise ValueError(f"{path}: {chapter}: expected a mapping of question names to lists of items")
        for question, items in questions.items():
            where = f"{path}: {chapter}: {question}"
            if not isinstance(items, list) or not items:
                raise ValueError(f"{where}: expected a non-empty list of items (points, criterion)")
            for k, item in enumerate(items, 1):
                if not isinstance(item, dict) or set(item) != {"points", "criterion"}:
                    raise ValueError(f"{where}, item {k}: expected exactly the keys points and criterion")
                if isinstance(item["points"], bool) or not isinstance(item["points"], (int, float)) \
                        or not item["points"] > 0:
                    raise ValueError(f"{where}, item {k}: points must be a positive number, not {item['points']!r}")
                if not isinstance(item["criterion"], str) or not item["criterion"].strip():
                    raise ValueError(f"{where}, item {k}: the criterion is empty")
    return data


def rubric_problems(rubrics: dict, questions: dict[str, dict[str, float]], where: str = "rubrics") -> list[str]:
    """What is wrong with ``rubrics`` for the hand-graded ``questions`` (an empty list if nothing)."""
    problems = []
    for chapter, points in questions.items():
        for question, total in points.items():
            items = (rubrics.get(chapter) or {}).get(question)
            if items is None:
                problems.append(f"{where}: no rubric for {chapter} {question} ({total:g} points)")
            elif not math.isclose(sum(i["points"] for i in items), total):
                problems.append(f"{where}: {chapter} {question}: the items add up to "
                                f"{sum(i['points'] for i in items):g} points, the question has {total:g}")
    for chapter, entries in rubrics.items():
        for question in entries:
            if question not in questions.get(chapter, {}):
                problems.append(f"{where}: {chapter} {question}: no such question graded by hand")
    return problems


# --------------------------------------------------------------------------- the top of an answers file

@functools.lru_cache(maxsize=None)
def _solutions(chapter: str, chapters: Path = CHAPTERS) -> dict:
    """The book's solutions of a chapter (``make_otter.chapter_solutions``), by label."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import make_otter
        import nbformat
    finally:
        sys.path.pop(0)
    path = Path(chapters) / f"{chapter}.ipynb"
    if not path.exists():
        return {}
    book = _book()
    return make_otter.chapter_solutions(nbformat.read(path, as_version=4), book.docname_of(path), book)


@functools.lru_cache(maxsize=None)
def _book():
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    try:
        import portable
    finally:
        sys.path.pop(0)
    return portable.Book(ROOT)


@functools.lru_cache(maxsize=None)
def _rubrics(path: Path) -> dict:
    return load_rubrics(path)


def answers_preamble(chapter: str, question: dict, rubrics: Path = RUBRICS, chapters: Path = CHAPTERS) -> str:
    """Markdown for the top of ``answers/<chapter>/<question>.md``: the book's solution and the rubric.

    ``question`` is an entry of the chapter's ``source.json`` (name, label, points). The
    solution is what the master notebook holds: its text, and for a question that is not
    the prose part of an auto-checked exercise, its code.
    """
    solution = _solutions(chapter, Path(chapters)).get(question["label"])
    text = "## Model solution (from the book)\n\n"
    if solution is None:
        text += f"*(no solution of {question['label']} in {Path(chapters).name}/{chapter}.ipynb)*\n\n"
    else:
        text += "".join(t.strip() + "\n\n" for t in solution.text if t.strip())
        if not question["name"].endswith("-written"):
            text += "".join(f"```python\n{c.strip()}\n```\n\n" for c in solution.code if c.strip())
    text += "## Rubric\n\n"
    try:
        items = (_rubrics(Path(rubrics)).get(chapter) or {}).get(question["name"])
    except ValueError as error:
        items, text = None, text + f"*({error})*\n\n"
    if items:
        book = sum(i["points"] for i in items)
        scale = float(question["points"]) / book if book else 1.0
        if not math.isclose(scale, 1.0):     # a course file gave the question other points
            text += (f"*(The book's rubric is worth {book:g} points; this course gives the question "
                     f"{float(question['points']):g}, so each item is scaled by {scale:.3g}.)*\n\n")
        text += "".join(f"- **{round(i['points'] * scale, 2):g}**: {i['criterion'].strip()}\n" for i in items)
        text += (f"\nEnter each student's score (0 to {question['points']:g}) and a comment in "
                 f"`{question['name']}{SHEET_SUFFIX}`, beside this file.\n\n")
    elif items is None:
        text += f"*(no rubric for this question in {Path(rubrics).name})*\n\n"
    return text + "## Answers\n\n"


def write_score_sheet(path: Path, students: list[str]) -> Path:
    """A blank score sheet: the header ``student, score, comment`` and one row per student."""
    path = Path(path)
    with open(path, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(SHEET_COLUMNS)
        writer.writerows([_safe(student), "", ""] for student in students)   # as grades.csv spells them
    return path


# --------------------------------------------------------------------------- merging the sheets

def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def default_out(grades: Path) -> Path:
    """Where ``merge`` writes by default: ``grades.csv`` -> ``grades-hand.csv``."""
    grades = Path(grades)
    return grades.with_name(f"{grades.stem}-hand{grades.suffix or '.csv'}")


def merge(answers: Path, grades: Path, out: Path | None = None, force: bool = False) -> dict:
    """Fill the hand-graded rows of ``grades`` from the score sheets under ``answers``; write ``out``.

    Returns counts: ``{"merged": ..., "blank": ..., "sheets": ..., "out": path}``. Raises
    ValueError listing every problem (file and line) when a sheet is wrong; nothing is
    written then. Raises FileExistsError when ``out`` exists (or is ``grades``) without ``force``.
    """
    answers, grades = Path(answers), Path(grades)
    out = Path(out) if out is not None else default_out(grades)
    if not answers.is_dir():
        raise FileNotFoundError(f"ANSWERS: {answers} is not a folder (run `make answers` first)")
    if not grades.is_file():
        raise FileNotFoundError(f"GRADES: {grades} does not exist (run `make grade` first)")
    if out.exists() and not force:
        raise FileExistsError(f"{out} exists: give another --out, or --force to overwrite it")
    with open(grades, newline="", encoding="utf-8") as f:
        table = list(csv.reader(f))
    if not table or table[0][:5] != ["student", "question", "score", "max", "message"]:
        raise ValueError(f"{grades}: expected the header student,question,score,max,message,... of `make grade`")
    header, rows = table[0], table[1:]
    column = {name: k for k, name in enumerate(header)}
    by_hand = {}   # (student, question) -> the row's index
    for k, row in enumerate(rows):
        if len(row) == len(header) and row[column["message"]].startswith(BY_HAND):
            by_hand[(row[column["student"]], row[column["question"]])] = k
    questions = {q for _, q in by_hand}
    sheets = sorted(answers.rglob(f"*{SHEET_SUFFIX}"))
    if not sheets:
        raise FileNotFoundError(f"ANSWERS: no *{SHEET_SUFFIX} score sheets in {answers}")
    problems, updates = [], {}
    for sheet in sheets:
        question = sheet.name[:-len(SHEET_SUFFIX)]
        if question not in questions:
            problems.append(f"{sheet}: {question} is not a question graded by hand in {grades}")
            continue
        with open(sheet, newline="", encoding="utf-8") as f:
            lines = list(csv.reader(f))
        if not lines or [c.strip() for c in lines[0]] != list(SHEET_COLUMNS):
            problems.append(f"{sheet}, line 1: expected the header {','.join(SHEET_COLUMNS)}")
            continue
        seen = {}
        for number, line in enumerate(lines[1:], 2):
            if not any(c.strip() for c in line):
                continue
            if len(line) > 3:
                problems.append(f"{sheet}, line {number}: {len(line)} cells, expected student,score,comment "
                                "(put a comment with a comma in double quotes)")
                continue
            student, score, comment = (line + ["", ""])[:3]
            student, score = student.strip(), score.strip()
            if student in seen:
                problems.append(f"{sheet}, line {number}: {student} again (first on line {seen[student]})")
                continue
            seen[student] = number
            if (student, question) not in by_hand:
                problems.append(f"{sheet}, line {number}: unknown student {student!r} "
                                f"(no hand-graded row of {question} for them in {grades})")
                continue
            if not score:
                continue     # not graded yet: the row stays as it is
            value = _number(score)
            top = _number(rows[by_hand[(student, question)]][column["max"]])
            if value is None:
                problems.append(f"{sheet}, line {number}: score {score!r} of {student} is not a number")
            elif value < 0 or (top is not None and value > top):
                problems.append(f"{sheet}, line {number}: score {score} of {student} is outside 0 to {top:g}, "
                                f"the points of {question}")
            else:
                updates[by_hand[(student, question)]] = (value, comment.strip())
    if problems:
        raise ValueError(f"nothing merged; {len(problems)} problem(s) in the score sheets:\n  " + "\n  ".join(problems))
    for k, (value, comment) in updates.items():
        rows[k][column["score"]] = f"{value:g}"
        rows[k][column["message"]] = _safe(f"{BY_HAND}: {comment}" if comment else BY_HAND)
    left = sum(1 for k in by_hand.values() if not rows[k][column["score"]])
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(rows)
    return {"merged": len(updates), "blank": left, "sheets": len(sheets), "out": out}


def _safe(cell: str) -> str:
    """A cell a spreadsheet will not run as a formula (as tools/otter_grade.py writes them)."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    merging = commands.add_parser("merge", help="merge the filled score sheets into the grades CSV")
    merging.add_argument("answers", type=Path, help="the folder `make answers` wrote (ANSWERS)")
    merging.add_argument("--into", type=Path, required=True, metavar="GRADES",
                         help="the CSV `make grade` wrote, e.g. grades.csv")
    merging.add_argument("--out", type=Path, help="the merged CSV (default: GRADES with -hand: grades-hand.csv)")
    merging.add_argument("--force", action="store_true", help="overwrite --out if it exists (also GRADES itself)")
    checking = commands.add_parser("check-rubrics", help="check the rubrics against the chapters' questions")
    checking.add_argument("--rubrics", type=Path, default=RUBRICS, help="default: instructors/rubrics.yml")
    args = parser.parse_args(argv)
    try:
        if args.command == "check-rubrics":
            problems = rubric_problems(load_rubrics(args.rubrics), hand_graded_questions(), str(args.rubrics))
            if problems:
                print("\n".join(problems), file=sys.stderr)
                return 1
            count = sum(len(q) for q in load_rubrics(args.rubrics).values())
            print(f"{args.rubrics}: a rubric for each of the {count} questions graded by hand, points adding up")
            return 0
        done = merge(args.answers, args.into, args.out, args.force)
    except (FileNotFoundError, FileExistsError, ValueError) as error:
        print(f"hand_scores.py: {error}", file=sys.stderr)
        return 2
    print(f"{_count(done['merged'], 'score')} from {_count(done['sheets'], 'score sheet')} merged -> "
          f"{done['out']}; {_count(done['blank'], 'hand-graded row')} still without a score")
    return 0


if __name__ == "__main__":
    sys.exit(main())
