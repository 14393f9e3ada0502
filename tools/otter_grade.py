#!/usr/bin/env python3
"""Grade a folder of submitted notebooks with Otter-Grader, locally, into one CSV.

Usage (``make grade SUBMISSIONS=DIR``; runs in Otter's environment, .venv-otter):

    .venv-otter/bin/python tools/otter_grade.py DIR [--out grades.csv] [--otter-dir _build/otter]

DIR holds the submissions: ``DIR/<student>.ipynb``, or ``DIR/<student>/<anything>.ipynb``
(one notebook per student folder, as an LMS download often gives). Each notebook is graded
by ``otter run`` against the autograder zip that ``make otter`` wrote for its chapter
(``_build/otter/<chapter>/autograder/*.zip``); the chapter is read from the notebook's
metadata (``otter.assignment_name``, which the student notebook carries), or given with
``--chapter``. No Docker: ``otter run`` executes the notebook in this environment.

The CSV has one row per student and question, with the columns

    student, question, score, max, message

Auto-graded questions get their score and, when a test failed, what it said (visible
tests first, then the hidden ones, marked ``hidden:``). Questions graded by hand (the
pen-and-paper exercises and the prose parts of auto-checked ones) get an empty score and
the message ``graded by hand``. A submission that cannot be read or graded gets a score
of 0 on every auto-graded question, with the reason.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OTTER_DIR = ROOT / "_build" / "otter"
COLUMNS = ("student", "question", "score", "max", "message")
MESSAGE_LIMIT = 600


@dataclass
class Row:
    student: str
    question: str
    score: float | str
    max: float
    message: str

    def as_list(self) -> list:
        score = self.score if isinstance(self.score, str) else f"{self.score:g}"
        return [self.student, self.question, score, f"{self.max:g}", self.message]


def submissions(folder: Path) -> list[tuple[str, Path]]:
    """``(student, notebook)`` for every submission in ``folder``, sorted by student."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS: {folder} is not a folder")
    found = [(p.stem, p) for p in folder.glob("*.ipynb")]
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebooks = sorted(q for q in sub.glob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        if len(notebooks) > 1:
            raise ValueError(f"SUBMISSIONS: {sub} holds {len(notebooks)} notebooks; one per student folder")
        found += [(sub.name, q) for q in notebooks]
    names = [s for s, _ in found]
    twice = sorted({s for s in names if names.count(s) > 1})
    if twice:
        raise ValueError(f"SUBMISSIONS: students with two submissions: {', '.join(twice)}")
    return sorted(found)


def assignment_of(notebook: Path) -> str | None:
    """The assignment name recorded in a notebook's metadata, if any."""
    try:
        meta = json.loads(Path(notebook).read_text(encoding="utf-8")).get("metadata", {})
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    name = (meta.get("otter") or {}).get("assignment_name")
    return name if isinstance(name, str) else None


def _error_part(message: str) -> str:
    """The exception a failed test raised, without the test's source line that Otter quotes."""
    lines = message.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("Error at line"):
            tail = lines[k + 1:]
            i = next((i for i, ln in enumerate(tail) if ln and not ln[0].isspace()), None)
            return "\n".join(tail[i:]).strip() if i is not None else ""
    return message.replace("❌ Test case failed", "").strip()


def _one_line(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 1] + "…"


def question_message(test_file) -> str:
    """What a question's failed test cases said (visible first), or that all passed."""
    results = list(test_file.test_case_results)
    failed = [r for r in results if not r.passed]
    if not failed:
        hidden = sum(r.test_case.hidden for r in results)
        return f"all {len(results)} tests passed ({len(results) - hidden} visible, {hidden} hidden)"
    failed.sort(key=lambda r: r.test_case.hidden)
    return " | ".join(("hidden: " if r.test_case.hidden else "") + _one_line(_error_part(r.message)) for r in failed)


def _otter() -> Path:
    here = Path(sys.executable).parent / "otter"
    if here.exists():
        return here
    found = shutil.which("otter")
    if not found:
        raise FileNotFoundError("otter not found: run this with .venv-otter/bin/python (make otter-env)")
    return Path(found)


def grade_one(student: str, notebook: Path, chapter: str | None, otter_dir: Path,
              timeout: float) -> tuple[list[Row], float]:
    """The rows of one submission, and the seconds its grading took."""
    start = time.perf_counter()
    chapter = chapter or assignment_of(notebook)
    if chapter is None:
        return [Row(student, "", 0, 0, f"{notebook.name}: not a notebook of this book's assignments "
                    "(no otter.assignment_name in its metadata; give --chapter)")], 0.0
    source = Path(otter_dir) / chapter / "source.json"
    zips = sorted((Path(otter_dir) / chapter / "autograder").glob("*.zip"))
    if not source.exists() or len(zips) != 1:
        raise FileNotFoundError(f"no autograder for {chapter} in {otter_dir}: run `make otter` first")
    questions = json.loads(source.read_text())["questions"]
    manual = [Row(student, q["name"], "", q["points"], "graded by hand") for q in questions if q["manual"]]
    auto = [q for q in questions if not q["manual"]]

    def failed_all(reason: str) -> list[Row]:
        rows = [Row(student, q["name"], 0, q["points"], reason) for q in auto] + manual
        return sorted(rows, key=lambda r: [q["name"] for q in questions].index(r.question))

    with tempfile.TemporaryDirectory(prefix="otter-grade-") as tmp:
        tmp = Path(tmp)
        copy = tmp / "submission" / notebook.name
        copy.parent.mkdir()
        shutil.copy(notebook, copy)
        out = tmp / "results"
        out.mkdir()
        try:
            done = subprocess.run([str(_otter()), "run", "--no-logo", "-p", "-a", str(zips[0]), "-o", str(out),
                                   str(copy)], cwd=copy.parent, capture_output=True, text=True, timeout=timeout,
                                  env={**os.environ, "MPLBACKEND": "Agg"})
        except subprocess.TimeoutExpired:
            return failed_all(f"grading stopped after {timeout:g} s (an answer that never finishes?)"), timeout
        pickled = copy.parent / "results.pkl"     # otter run -p writes it to its working folder
        if done.returncode != 0 or not pickled.exists():
            tail = _one_line((done.stderr or done.stdout)[-400:])
            return failed_all(f"could not be graded (otter run exit {done.returncode}): {tail}"), \
                time.perf_counter() - start
        import dill   # Otter pickles its results with dill (installed with otter-grader)

        with open(pickled, "rb") as f:
            results = dill.load(f)
    rows = []
    for q in questions:
        if q["manual"]:
            rows.append(Row(student, q["name"], "", q["points"], "graded by hand"))
            continue
        test_file = results.results.get(q["name"])
        if test_file is None:
            rows.append(Row(student, q["name"], 0, q["points"], "not graded: its tests did not run"))
            continue
        rows.append(Row(student, q["name"], round(float(test_file.score), 6), q["points"], question_message(test_file)))
    return rows, time.perf_counter() - start


def grade_folder(folder: Path, out: Path, otter_dir: Path = DEFAULT_OTTER_DIR, chapter: str | None = None,
                 workers: int = 2, timeout: float = 300, verbose: bool = True) -> list[Row]:
    """Grade every submission in ``folder`` and write the CSV ``out``; return its rows."""
    found = submissions(folder)
    if not found:
        raise FileNotFoundError(f"SUBMISSIONS: no .ipynb files in {folder} or its subfolders")
    with ThreadPoolExecutor(max_workers=workers) as pool:
        graded = list(pool.map(lambda s: grade_one(s[0], s[1], chapter, otter_dir, timeout), found))
    rows = [row for rs, _ in graded for row in rs]
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows(r.as_list() for r in rows)
    if verbose:
        for (student, _), (rs, seconds) in zip(found, graded):
            auto = [r for r in rs if not isinstance(r.score, str)]
            by_hand = sum(r.max for r in rs if isinstance(r.score, str))
            print(f"{student}: {sum(r.score for r in auto):g} of {sum(r.max for r in auto):g} auto-graded "
                  f"points, {by_hand:g} more to grade by hand [{seconds:.1f} s]")
        print(f"{len(found)} submissions, {len(rows)} rows -> {out}")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="the folder of submitted notebooks")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="the CSV (default: grades.csv)")
    parser.add_argument("--otter-dir", type=Path, default=DEFAULT_OTTER_DIR,
                        help="what `make otter` wrote (default: _build/otter)")
    parser.add_argument("--chapter", help="the chapter of every submission, e.g. 01_unified_operator "
                                          "(default: read from each notebook)")
    parser.add_argument("--workers", type=int, default=2, help="submissions graded at once (default 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per submission (default 300)")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, not {args.workers}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")
    try:
        grade_folder(args.submissions, args.out, args.otter_dir, args.chapter, args.workers, args.timeout)
    except (FileNotFoundError, ValueError) as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
