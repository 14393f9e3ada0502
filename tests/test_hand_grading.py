"""Grading by hand: the rubrics (instructors/rubrics.yml), the answers files and score sheets
that `make answers` writes, and merging the filled sheets into grades.csv (tools/hand_scores.py).

No Otter run: the answers are gathered from a small notebook made here, and the grades CSV
is a small one written here, in the layout `make grade` writes.
"""
from __future__ import annotations

import csv
import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import hand_scores  # noqa: E402  (tools/ is not a package)
import make_otter  # noqa: E402
import otter_grade  # noqa: E402
from bookkit import core  # noqa: E402

sys.path.pop(0)

COLUMNS = ["student", "question", "score", "max", "message", "flag"]


@pytest.fixture(scope="module")
def questions():
    return hand_scores.hand_graded_questions()


# --------------------------------------------------------------------------- the rubrics

def test_every_hand_graded_question_has_a_rubric_whose_points_add_up(questions):
    rubrics = hand_scores.load_rubrics()
    assert hand_scores.rubric_problems(rubrics, questions) == []
    # the six chapters all have questions graded by hand, and each has its rubric
    assert len(questions) == 6 and all(questions.values())
    assert {(c, q) for c, qs in rubrics.items() for q in qs} == {(c, q) for c, qs in questions.items() for q in qs}


def test_the_hand_graded_questions_are_those_of_the_built_assignments(questions):
    """The quick reading of the chapters gives the questions make_otter made (source.json), where built."""
    compared = 0
    for otter_dir in (ROOT / "_build" / "otter-test", ROOT / "_build" / "otter"):
        for record in sorted(otter_dir.glob("*/source.json")):
            data = json.loads(record.read_text())
            chapter = ROOT / "chapters" / data["chapter"]
            if not chapter.exists() or data["chapter_sha256"] != core.file_hash(chapter):
                continue   # made from another version of the chapter
            built = {q["name"]: q["points"] for q in data["questions"] if q["manual"]}
            assert questions[chapter.stem] == built, record
            compared += 1
    if not compared:
        pytest.skip("no assignments built from the current chapters (make otter or make test-otter builds them)")


def test_the_rubric_check_finds_a_missing_rubric_a_wrong_sum_and_an_unknown_question():
    questions = {"01_x": {"ex1.1": 2, "ex1.2-written": 1}}
    item = {"points": 1, "criterion": "says so"}
    assert hand_scores.rubric_problems({"01_x": {"ex1.1": [item, item], "ex1.2-written": [item]}}, questions) == []
    problems = hand_scores.rubric_problems(
        {"01_x": {"ex1.1": [item], "ex1.9": [item]}, "07_y": {"ex7.1": [item]}}, questions, "r.yml")
    assert sorted(problems) == sorted(["r.yml: no rubric for 01_x ex1.2-written (1 points)",
                        "r.yml: 01_x ex1.1: the items add up to 1 points, the question has 2",
                        "r.yml: 01_x ex1.9: no such question graded by hand",
                        "r.yml: 07_y ex7.1: no such question graded by hand"])


@pytest.mark.parametrize("text, expected", [
    ("- a list\n", "expected a mapping of chapters"),
    ("01_x:\n  ex1.1: []\n", "01_x: ex1.1: expected a non-empty list"),
    ("01_x:\n  ex1.1:\n    - points: 1\n", "01_x: ex1.1, item 1: expected exactly the keys points and criterion"),
    ("01_x:\n  ex1.1:\n    - {points: two, criterion: c}\n", "item 1: points must be a positive number, not 'two'"),
    ("01_x:\n  ex1.1:\n    - {points: 1, criterion: ''}\n", "item 1: the criterion is empty"),
    ("01_x: [\n", "not valid YAML"),
])
def test_a_malformed_rubrics_file_is_refused_naming_the_entry(tmp_path, text, expected):
    path = tmp_path / "rubrics.yml"
    path.write_text(text)
    with pytest.raises(ValueError, match=str(path)) as error:
        hand_scores.load_rubrics(path)
    assert expected in str(error.value)


def test_the_rubrics_check_command_passes_on_the_books_rubrics(capsys):
    assert hand_scores.main(["check-rubrics"]) == 0
    assert "a rubric for each of the" in capsys.readouterr().out


# --------------------------------------------------------------------------- make answers

def _submission(folder: Path, student: str, chapter: str, label: str, prose: str) -> None:
    """A submitted notebook holding the answer cells of one hand-graded question."""
    nb = nbformat.v4.new_notebook()
    nb.metadata["otter"] = {"assignment_name": chapter}
    ask = nbformat.v4.new_markdown_cell(prose)
    work = nbformat.v4.new_code_cell("# Exercise 1.5: your work (read by hand)\nprint(3, 9)")
    work.id = f"work-{label}"
    work.outputs = [nbformat.v4.new_output("stream", text="3 9\n")]
    nb.cells = [ask, work]
    folder.mkdir(exist_ok=True)
    nbformat.write(nb, folder / f"{student}.ipynb")


def _otter_dir(tmp_path: Path, chapter: str, question: dict) -> Path:
    otter_dir = tmp_path / "otter"
    (otter_dir / chapter).mkdir(parents=True)
    (otter_dir / chapter / "source.json").write_text(json.dumps({"questions": [question]}))
    return otter_dir


def test_make_answers_puts_the_books_solution_and_the_rubric_above_the_answers_and_writes_a_score_sheet(tmp_path):
    chapter, label = "01_unified_operator", "ex-two-forms"
    question = {"name": "ex1.5", "label": label, "number": "1.5", "points": 4, "manual": True}
    otter_dir = _otter_dir(tmp_path, chapter, question)
    _submission(tmp_path / "subs", "ada", chapter, label, "Both spans are d.")
    _submission(tmp_path / "subs", "=bob", chapter, label, "I do not know.")
    written = otter_grade.collect_answers(tmp_path / "subs", tmp_path / "answers", otter_dir)
    assert written == [tmp_path / "answers" / chapter / "ex1.5.md"]   # the Markdown files, as before
    text = written[0].read_text()

    book = hand_scores._book()
    path = ROOT / "chapters" / f"{chapter}.ipynb"
    solution = make_otter.chapter_solutions(nbformat.read(path, as_version=4), book.docname_of(path), book)[label]
    rubric = hand_scores.load_rubrics()[chapter]["ex1.5"]
    solution_at, rubric_at, answers_at = (text.index(h) for h in (
        "## Model solution (from the book)", "## Rubric", "## Answers"))
    assert solution_at < rubric_at < answers_at < text.index("### ada\n\nBoth spans are d.")
    assert solution.text[0].strip() in text[solution_at:rubric_at]
    assert solution.code[0].strip() in text[solution_at:rubric_at]          # a pen-and-paper question: its code too
    for item in rubric:
        assert f"- **{item['points']:g}**: {item['criterion']}" in text[rubric_at:answers_at]
    assert "Output:\n\n```text\n3 9\n```" in text

    with open(tmp_path / "answers" / chapter / "ex1.5.scores.csv", newline="") as f:
        sheet = list(csv.reader(f))
    assert sheet == [["student", "score", "comment"], ["'=bob", "", ""], ["ada", "", ""]]   # spelled as in grades.csv


def test_the_prose_part_of_an_auto_checked_exercise_shows_the_solutions_text_not_its_code():
    question = {"name": "ex1.1-written", "label": "ex-ema", "number": "1.1", "points": 1, "manual": True}
    text = hand_scores.answers_preamble("01_unified_operator", question)
    assert "$A=\\gamma I_d$" in text and "```python" not in text and "check_ema_operator" not in text
    assert "(0 to 1)" in text and "`ex1.1-written.scores.csv`" in text


def test_a_question_without_a_rubric_or_a_chapter_says_so(tmp_path):
    question = {"name": "ex9.1", "label": "ex-nothing", "number": "9.1", "points": 2, "manual": True}
    text = hand_scores.answers_preamble("09_nothing", question, rubrics=hand_scores.RUBRICS)
    assert "*(no solution of ex-nothing in chapters/09_nothing.ipynb)*" in text
    assert "*(no rubric for this question in rubrics.yml)*" in text


# --------------------------------------------------------------------------- merging the score sheets

def _grades(path: Path) -> Path:
    rows = [
        ["ada", "ex1.1", "1", "1", "", ""],
        ["ada", "ex1.1-written", "", "1", "graded by hand", ""],
        ["ada", "ex1.5", "", "4", "graded by hand", ""],
        ["'=bob", "ex1.1", "0", "1", "1 of 2 hidden cases passed", ""],
        ["'=bob", "ex1.1-written", "", "1", "graded by hand", ""],
        ["'=bob", "ex1.5", "", "4", "graded by hand", ""],
        ["cy", "", "", "", "NOT GRADED: cy.txt is not a notebook (.ipynb)", ""],
    ]
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([COLUMNS, *rows])
    return path


def _sheet(answers: Path, question: str, rows: list[list[str]], header=("student", "score", "comment")) -> Path:
    path = answers / "01_unified_operator" / f"{question}.scores.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        csv.writer(f).writerows([list(header), *rows])
    return path


def _read(path: Path) -> dict[tuple[str, str], dict]:
    with open(path, newline="") as f:
        return {(r["student"], r["question"]): r for r in csv.DictReader(f)}


def test_merge_fills_the_hand_graded_rows_with_scores_and_comments_into_a_new_file(tmp_path):
    grades = _grades(tmp_path / "grades.csv")
    before = grades.read_text()
    answers = tmp_path / "answers"
    _sheet(answers, "ex1.5", [["ada", "3.5", "misses the conclusion"], ["'=bob", "0", "=SUM(A1)"]])
    _sheet(answers, "ex1.1-written", [["ada", "1", ""], ["'=bob", "", ""]])
    done = hand_scores.merge(answers, grades)
    assert done == {"merged": 3, "blank": 1, "sheets": 2, "out": tmp_path / "grades-hand.csv"}
    assert grades.read_text() == before                       # the grades CSV is left as it was
    merged = _read(tmp_path / "grades-hand.csv")
    assert merged[("ada", "ex1.5")]["score"] == "3.5"
    assert merged[("ada", "ex1.5")]["message"] == "graded by hand: misses the conclusion"
    assert merged[("'=bob", "ex1.5")]["message"] == "graded by hand: =SUM(A1)"   # so never read as a formula
    assert merged[("ada", "ex1.1-written")]["message"] == "graded by hand"
    assert merged[("'=bob", "ex1.1-written")]["score"] == ""  # blank in the sheet: still to grade
    assert merged[("'=bob", "ex1.1")] == _read(grades)[("'=bob", "ex1.1")]   # auto-graded rows untouched
    assert list(_read(tmp_path / "grades-hand.csv")) == list(_read(grades))  # same rows, same order


def test_merge_never_overwrites_without_force_and_merges_a_corrected_sheet_again(tmp_path):
    grades = _grades(tmp_path / "grades.csv")
    answers = tmp_path / "answers"
    sheet = _sheet(answers, "ex1.5", [["ada", "2", "first reading"]])
    hand_scores.merge(answers, grades)
    with pytest.raises(FileExistsError, match="grades-hand.csv exists"):
        hand_scores.merge(answers, grades)
    with pytest.raises(FileExistsError, match="grades.csv exists"):
        hand_scores.merge(answers, grades, out=grades)
    sheet.write_text("student,score,comment\nada,4,regraded\n")
    hand_scores.merge(answers, tmp_path / "grades-hand.csv", out=tmp_path / "grades-hand.csv", force=True)
    row = _read(tmp_path / "grades-hand.csv")[("ada", "ex1.5")]
    assert (row["score"], row["message"]) == ("4", "graded by hand: regraded")


@pytest.mark.parametrize("rows, expected", [
    ([["ada", "5", ""]], "line 2: score 5 of ada is outside 0 to 4, the points of ex1.5"),
    ([["ada", "1", ""], ["'=bob", "-1", ""]], "line 3: score -1 of '=bob is outside 0 to 4"),
    ([["ada", "three", ""]], "line 2: score 'three' of ada is not a number"),
    ([["ada", "nan", ""]], "line 2: score 'nan' of ada is not a number"),
    ([["dan", "1", ""]], "line 2: unknown student 'dan' (no hand-graded row of ex1.5 for them in"),
    ([["ada", "1", ""], ["ada", "2", ""]], "line 3: ada again (first on line 2)"),
    ([["ada", "1", "good", "extra"]], "line 2: 4 cells, expected student,score,comment"),
])
def test_merge_refuses_a_wrong_row_naming_the_file_and_line_and_writes_nothing(tmp_path, rows, expected):
    grades = _grades(tmp_path / "grades.csv")
    sheet = _sheet(tmp_path / "answers", "ex1.5", rows)
    with pytest.raises(ValueError) as error:
        hand_scores.merge(tmp_path / "answers", grades)
    assert f"{sheet}, {expected}" in str(error.value)
    assert not (tmp_path / "grades-hand.csv").exists()


@pytest.mark.parametrize("question, header, expected", [
    ("ex1.7", ("student", "score", "comment"), "ex1.7 is not a question graded by hand in"),
    ("ex1.1", ("student", "score", "comment"), "ex1.1 is not a question graded by hand in"),   # auto-graded
    ("ex1.5", ("student", "points", "comment"), "line 1: expected the header student,score,comment"),
])
def test_merge_refuses_an_unknown_question_or_a_sheet_without_its_columns(tmp_path, question, header, expected):
    grades = _grades(tmp_path / "grades.csv")
    sheet = _sheet(tmp_path / "answers", question, [["ada", "1", ""]], header)
    with pytest.raises(ValueError) as error:
        hand_scores.merge(tmp_path / "answers", grades)
    assert f"{sheet}: {expected}" in str(error.value) or f"{sheet}, {expected}" in str(error.value)


def test_the_merge_command_says_what_is_wrong_and_what_it_did(tmp_path, capsys):
    grades = _grades(tmp_path / "grades.csv")
    _sheet(tmp_path / "answers", "ex1.5", [["ada", "9", ""]])
    assert hand_scores.main(["merge", str(tmp_path / "answers"), "--into", str(grades)]) == 2
    assert "nothing merged; 1 problem(s)" in capsys.readouterr().err
    _sheet(tmp_path / "answers", "ex1.5", [["ada", "4", "all there"]])
    assert hand_scores.main(["merge", str(tmp_path / "answers"), "--into", str(grades)]) == 0
    assert "1 score from 1 score sheet merged" in capsys.readouterr().out
    assert hand_scores.main(["merge", str(tmp_path / "nowhere"), "--into", str(grades), "--out",
                             str(tmp_path / "x.csv")]) == 2
    assert "is not a folder (run `make answers` first)" in capsys.readouterr().err


def test_answers_then_merge_end_to_end(tmp_path):
    """The sheet `make answers` writes, filled in, merges into the CSV `make grade` writes."""
    chapter, label = "01_unified_operator", "ex-two-forms"
    question = {"name": "ex1.5", "label": label, "number": "1.5", "points": 4, "manual": True}
    _submission(tmp_path / "subs", "ada", chapter, label, "Both spans are d.")
    otter_grade.collect_answers(tmp_path / "subs", tmp_path / "answers", _otter_dir(tmp_path, chapter, question))
    sheet = tmp_path / "answers" / chapter / "ex1.5.scores.csv"
    sheet.write_text(sheet.read_text().replace("ada,,", "ada,2,\"spans right, no conclusion\""))
    grades = _grades(tmp_path / "grades.csv")
    assert hand_scores.merge(tmp_path / "answers", grades)["merged"] == 1
    row = _read(tmp_path / "grades-hand.csv")[("ada", "ex1.5")]
    assert (row["score"], row["message"]) == ("2", "graded by hand: spans right, no conclusion")


def _guide_blocks() -> list[str]:
    """The ```text blocks of the guide's section "Grading by hand", in order."""
    text = (ROOT / "book" / "instructors.md").read_text()
    section = text.split("\n### Grading by hand\n", 1)[1].split("\n### ", 1)[0]
    return [block.split("\n", 1)[1] for block in section.split("```text")[1:]
            for block in [block.split("```", 1)[0]]]


def test_the_guides_worked_example_is_what_the_merge_does(tmp_path, monkeypatch, capsys, questions):
    sheet, printed, rows, refused = _guide_blocks()
    monkeypatch.chdir(tmp_path)
    chapter = "01_unified_operator"
    with open("grades.csv", "w", newline="") as f:
        csv.writer(f).writerows([COLUMNS] + [[s, q, "", f"{p:g}", "graded by hand", ""]
                                             for s in ("ada", "blaise") for q, p in questions[chapter].items()])
    (tmp_path / "answers" / chapter).mkdir(parents=True)
    for question in questions[chapter]:
        hand_scores.write_score_sheet(Path("answers", chapter, f"{question}.scores.csv"), ["ada", "blaise"])
    Path("answers", chapter, "ex1.5.scores.csv").write_text(sheet)
    assert hand_scores.main(["merge", "answers/", "--into", "grades.csv"]) == 0
    assert capsys.readouterr().out == printed
    merged = [line for line in Path("grades-hand.csv").read_text().splitlines() if ",ex1.5," in line]
    assert "\n".join(merged) + "\n" == rows

    Path("grades-hand.csv").unlink()
    Path("answers", chapter, "ex1.5.scores.csv").write_text(sheet.replace("ada,3.5,", "ada,5,"))
    assert hand_scores.main(["merge", "answers/", "--into", "grades.csv"]) == 2
    assert capsys.readouterr().err == refused
    assert not Path("grades-hand.csv").exists()


def test_a_rubric_is_scaled_to_the_points_a_course_gives_its_question():
    items = hand_scores.load_rubrics()["01_unified_operator"]["ex1.5"]
    book = {"name": "ex1.5", "label": "ex-two-forms", "number": "1.5", "manual": True,
            "points": sum(i["points"] for i in items)}
    text = hand_scores.answers_preamble("01_unified_operator", book)
    assert "scaled by" not in text
    course = {**book, "points": 4 * sum(i["points"] for i in items)}
    text = hand_scores.answers_preamble("01_unified_operator", course)
    assert "so each item is scaled by 4." in text and "(0 to " in text
    assert all(f"- **{4 * item['points']:g}**: " in text for item in items), text
