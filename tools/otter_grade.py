#!/usr/bin/env python3
"""Grade a folder of submitted notebooks with Otter-Grader, locally, into one CSV.

Usage (``make grade SUBMISSIONS=DIR``; runs in Otter's environment, .venv-otter):

    .venv-otter/bin/python tools/otter_grade.py DIR [--out grades.csv] [--otter-dir _build/otter]
        [--chapter NAME] [--workers 2] [--timeout 300] [--hide-hidden-cases | --show-hidden-cases]
        [--course course.yml] [--force]

DIR holds the submissions: ``DIR/<student>.ipynb``, or ``DIR/<student>/<anything>.ipynb``
(one notebook per student folder, as an LMS download often gives). Each notebook is graded
by ``otter run`` against the autograder zip that ``make otter`` wrote for its chapter
(``_build/otter/<chapter>/autograder/*.zip``); the chapter is read from the notebook's
metadata (``otter.assignment_name``, which the student notebook carries), or given with
``--chapter`` (for notebooks that lost it). No Docker: ``otter run`` executes the notebook
in this environment.

The CSV has one row per student and question, with the columns

    student, question, score, max, message

* an auto-graded question gets its score and, when a test failed, what it said (the
  visible test first, then the hidden ones, marked ``hidden:``; ``--hide-hidden-cases``
  shortens those to "a hidden case failed", for messages that go back to students);
* a question graded by hand (the pen-and-paper exercises and the prose parts of
  auto-checked ones) gets an empty score and the message ``graded by hand``;
* a submission that cannot be graded (not a notebook, an unknown chapter, two notebooks
  in one student folder) gets rows with an empty score and a message that starts with
  ``NOT GRADED``; one that still runs after ``--timeout`` seconds, also when graded again
  alone, gets 0 with a message saying so.

Grading runs the student's code in the same Python process as the tests (Otter's design,
also on Gradescope), so a submission can tamper with its own grading. The script catches
the common attempts: a question whose results do not hold its tests gets an empty score
("NOT GRADED: ... read its code"), scores are kept within 0 and the maximum, and a message
starts with ``CHECK THE CODE`` when the submitted code touches Otter, the grading folder or
the attributes of the library's modules. It cannot prove that a score is honest.

The course file (``--course``, tools/course.py; ``make grade COURSE=course.yml``) gives
``workers`` (``--workers`` wins), ``dropped`` (those questions are graded as the others, and
their message ends in ``DROPPED by the course: graded, not counted``: the gradebook leaves them
out of the totals, and the score stays in the CSV should the course take them back), and
``show_hidden_after_due`` with ``due``: false writes the failed hidden cases without their
values, as ``--hide-hidden-cases`` does; true writes them in full once ``due`` has passed and
without their values before. ``--hide-hidden-cases`` or ``--show-hidden-cases`` wins over the
course; a line says which applied, and why.

The CSV is not overwritten (hand-graded scores may have been entered in it) unless
``--force`` is given. Cells that a spreadsheet would read as a formula are prefixed with ``'``.

``--answers DIR`` grades nothing: it gathers the answers to each question graded by hand
into ``DIR/<chapter>/<question>.md``, student after student (``make answers``), to be read
one question at a time across the class, below the book's solution and the question's rubric
(instructors/rubrics.yml); beside each, ``<question>.scores.csv`` is a score sheet to fill in,
which tools/hand_scores.py merges into the CSV.
"""
from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course as courses  # noqa: E402  (the course file: workers, dropped, show_hidden_after_due, due)
import hand_scores  # noqa: E402  (the rubrics and score sheets of the answers graded by hand)
import idle_cells  # noqa: E402  (the cells of the chapter that grading need not run)

sys.path.pop(0)

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OTTER_DIR = ROOT / "_build" / "otter"
COLUMNS = ("student", "question", "score", "max", "message", "flag")
MESSAGE_LIMIT = 600
NOT_GRADED = "NOT GRADED"
HIDDEN_CUT = "hidden: a hidden case failed"
DROPPED = "DROPPED by the course: graded, not counted"   # the end of a dropped question's message
# What an honest answer has no reason to touch: Otter and its results, the grading folder,
# the library's or NumPy's module attributes (to change a check or a reference), code objects.
SUSPICIOUS = [
    (re.compile(r"\b(otter|Checker|GradingResults|test_files|run_autograder|results\.pkl)\b"), "mentions Otter"),
    (re.compile(r"autograder|/source/tests|\.\./source"), "reads or writes the grading folder"),
    (re.compile(r"^\s*(np|numpy|sh|ssmheads|systems|exercises|scipy)\.[\w.]+\s*=(?!=)", re.M),
     "assigns to an attribute of a library module"),
    (re.compile(r"\bsetattr\s*\(|__code__|sys\.modules|importlib\.reload"), "rewires modules or code objects"),
]


# What an answer has no reason to use. tools/otter_grade.py scans each answer cell, and each cell a
# student added or changed, with Python's tokenizer and parser: names, imports, the text of
# strings, never comments.
FLAGGED_NAMES = {   # a name (also as an attribute: sys._getframe, frame.f_back)
    "inspect": "reads source code or frames (inspect)", "getsource": "reads source code (getsource)",
    "show_source": "reads the library's source (show_source)",
    "_getframe": "reads the caller's frames (sys._getframe)", "f_back": "reads the caller's frames (f_back)",
    "f_locals": "reads a frame's variables (f_locals)", "f_globals": "reads a frame's variables (f_globals)",
    "tb_frame": "reads frames (tb_frame)", "gi_frame": "reads frames (gi_frame)",
    "_current_frames": "reads other threads' frames", "settrace": "traces the grader's code (settrace)",
    "setprofile": "traces the grader's code (setprofile)", "get_objects": "searches the interpreter's objects",
    "get_referrers": "searches the interpreter's objects", "__globals__": "reads a function's globals",
    "__closure__": "reads a function's closure", "__defaults__": "reads a function's defaults",
    "__kwdefaults__": "reads a function's defaults", "__code__": "rewires code objects (__code__)",
    "__builtins__": "rewires builtins", "__subclasses__": "walks the class tree", "__import__": "imports by a computed name",
    "otter": "mentions Otter", "Checker": "mentions Otter", "GradingResults": "mentions Otter",
    "TestCaseResult": "mentions Otter",
}
FLAGGED_CALLS = {   # a builtin used by its own name
    "exec": "runs code from a string (exec)", "eval": "runs code from a string (eval)",
    "compile": "compiles code (compile)", "globals": "reads the grader's globals (globals())",
    "locals": "reads a namespace (locals())", "vars": "reads a namespace (vars())",
    "getattr": "reads an attribute by a name (getattr)", "setattr": "rewires an attribute (setattr)",
    "delattr": "rewires an attribute (delattr)", "breakpoint": "stops in the debugger",
}
FLAGGED_MODULES = {  # imported
    "inspect": "reads source code or frames", "gc": "searches the interpreter's objects (gc)",
    "importlib": "imports by a computed name", "ctypes": "writes the interpreter's memory",
    "builtins": "rewires builtins", "threading": "starts threads", "_thread": "starts threads",
    "multiprocessing": "starts processes", "subprocess": "starts processes", "signal": "handles signals",
    "pickle": "unpickles objects", "dill": "unpickles objects", "marshal": "loads code objects",
    "types": "builds code objects", "dis": "reads code objects", "otter": "mentions Otter",
}
FLAGGED_TEXT = re.compile(r"_getframe|f_back|f_locals|f_globals|__globals__|__closure__|__code__|__builtins__|"
                          r"__subclasses__|__defaults__|settrace|setprofile|_current_frames|getsource|"
                          r"ssmheads\.exercises\.|\botter\b|autograder|/source/tests|\.\./source")
LIBRARY = {"sh", "ssmheads", "systems"}


def scan_code(source: str) -> list[str]:
    """What a cell of submitted code does that no honest answer needs (see FLAGGED_NAMES).

    Besides those names: a private name of the library (``sh.heads._rank``, ``from
    ssmheads.heads import _rank``), an import from ``ssmheads.exercises`` other than its
    ``check_...`` functions, and the text of a string that names a frame, a code object
    or the grader (``getattr(sys, "_getframe")``). Comments are not read.
    """
    import ast
    import io
    import tokenize

    found: list[str] = []
    try:
        parsed = ast.parse(source)
    except SyntaxError:
        parsed = None

    def tree_free(name: str) -> bool:
        """Whether ``name`` is read as the builtin (not an attribute, not a name the cell defines)."""
        if parsed is None:
            return True
        defined = {n.id for n in ast.walk(parsed) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} | \
            {n.name for n in ast.walk(parsed) if isinstance(n, (ast.FunctionDef, ast.ClassDef))} | \
            {a.arg for n in ast.walk(parsed) if isinstance(n, ast.arguments) for a in n.args + n.kwonlyargs}
        return name not in defined and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(parsed))

    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        tokens = []
    for token in tokens:
        if token.type == tokenize.NAME and token.string in FLAGGED_NAMES:
            found.append(FLAGGED_NAMES[token.string])
        elif token.type == tokenize.NAME and token.string in FLAGGED_CALLS and tree_free(token.string):
            found.append(FLAGGED_CALLS[token.string])
        elif token.type == tokenize.STRING and FLAGGED_TEXT.search(token.string):
            found.append(f"names a frame, a code object or the grader in a string ({FLAGGED_TEXT.search(token.string).group(0)})")
    tree = parsed
    library = set(LIBRARY)
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for module in modules:
                if module.split(".")[0] in FLAGGED_MODULES:
                    found.append(f"imports {module}: {FLAGGED_MODULES[module.split('.')[0]]}")
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "ssmheads":
                    library.add((alias.asname or alias.name).split(".")[0])
                    if alias.name.startswith("ssmheads.exercises"):
                        found.append(f"imports {alias.name}, the checks and their references")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "ssmheads":
            names = [a.name for a in node.names]
            library.update(a.asname or a.name for a in node.names)
            if node.module.startswith("ssmheads.exercises") and (
                    node.module != "ssmheads.exercises" or not all(n.startswith("check_") for n in names)):
                found.append(f"imports {', '.join(names)} from {node.module}, the checks and their references")
            private = [n for n in names if n.startswith("_") or n == "exercises"]
            if private:
                found.append(f"imports the library's private {', '.join(private)}")
    for node in ast.walk(tree) if tree is not None else ():
        if isinstance(node, ast.Attribute):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in library:
                if node.attr.startswith("_") and not node.attr.startswith("__"):
                    found.append(f"uses the library's private {ast.unparse(node)}")
                elif node.attr == "exercises":
                    found.append("reaches into ssmheads.exercises, the checks and their references")
                if isinstance(getattr(node, "ctx", None), ast.Store):
                    found.append(f"assigns to the library's {ast.unparse(node)}")
    return list(dict.fromkeys(found))


@dataclass
class Row:
    student: str
    question: str
    score: float | str
    max: float | str
    message: str
    flag: str = ""

    def as_list(self) -> list[str]:
        score = self.score if isinstance(self.score, str) else f"{self.score:g}"
        top = self.max if isinstance(self.max, str) else f"{self.max:g}"
        return [_safe(str(v)) for v in (self.student, self.question, score, top, self.message, self.flag)]


def _safe(cell: str) -> str:
    """A cell a spreadsheet will not run as a formula (it starts with ' if it could)."""
    return "'" + cell if cell[:1] in ("=", "+", "-", "@", "\t", "\r") else cell


# --------------------------------------------------------------------------- reading submissions

def submissions(folder: Path) -> list[tuple[str, Path | None, str]]:
    """``(student, notebook, problem)`` for every submission in ``folder``, sorted by student.

    ``notebook`` is None and ``problem`` says why when a student's submission cannot be
    graded as it is (two notebooks in one folder, two submissions under one name).
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"SUBMISSIONS: {folder} is not a folder")
    found: list[tuple[str, Path | None, str]] = [(p.stem, p, "") for p in folder.glob("*.ipynb")]
    found += [(p.stem, None, f"{NOT_GRADED}: {p.name} is not a notebook (.ipynb)") for p in folder.iterdir()
              if p.is_file() and p.suffix != ".ipynb" and not p.name.startswith(".")
              and p.stem not in {q.stem for q in folder.glob("*.ipynb")}]
    for sub in sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")):
        notebooks = sorted(q for q in sub.glob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
        if len(notebooks) == 1:
            found.append((sub.name, notebooks[0], ""))
        elif notebooks:
            found.append((sub.name, None, f"{NOT_GRADED}: {len(notebooks)} notebooks in {sub.name}/ "
                                          f"({', '.join(q.name for q in notebooks)}); keep the one to grade"))
        else:
            others = sorted(q.name for q in sub.iterdir() if not q.name.startswith("."))
            found.append((sub.name, None, f"{NOT_GRADED}: no notebook (.ipynb) in {sub.name}/"
                                          + (f" (found {', '.join(others[:3])})" if others else "")))
    names = [s for s, _, _ in found]
    twice = {s for s in names if names.count(s) > 1}
    found = [f for f in found if f[0] not in twice] + \
        [(s, None, f"{NOT_GRADED}: two submissions named {s} ({s}.ipynb and {s}/); keep one") for s in sorted(twice)]
    return sorted(found, key=lambda f: f[0])


def assignment_of(notebook: Path) -> tuple[str | None, str]:
    """The assignment name in a notebook's metadata, or None and the reason."""
    try:
        data = json.loads(Path(notebook).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        return None, f"cannot be read ({type(error).__name__})"
    except ValueError:
        return None, "is not a notebook (not valid JSON)"
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        return None, "is not a notebook (no cells)"
    name = ((data.get("metadata") or {}).get("otter") or {}).get("assignment_name")
    if not isinstance(name, str):
        return None, "has lost the metadata that names its chapter (give CHAPTER=... / --chapter)"
    return name, ""


def _known(name: str, otter_dir: Path) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", name)) and ".." not in name \
        and (Path(otter_dir) / name / "source.json").exists()


# --------------------------------------------------------------------------- messages

def _error_part(message: str) -> str:
    """The exception a failed test raised, without the test's source line that Otter quotes."""
    lines = message.split("\n")
    for k, line in enumerate(lines):
        if line.startswith("Error at line"):
            tail = lines[k + 1:]
            i = next((i for i, ln in enumerate(tail) if ln and not ln[0].isspace()), None)
            return "\n".join(tail[i:]).strip() if i is not None else ""
    return message.replace("❌ Test case failed", "").strip()


def _last_error(output: str) -> str:
    """The last exception line of a traceback (``NotJSONError: ...``), or the last line."""
    lines = [ln.strip() for ln in output.strip().split("\n") if ln.strip()]
    errors = [ln for ln in lines if re.match(r"^[A-Za-z_][\w.]*(Error|Exception|Exit|Interrupt)\b.*", ln)]
    return (errors or lines or ["(no output)"])[-1]


def _one_line(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    return text if len(text) <= MESSAGE_LIMIT else text[:MESSAGE_LIMIT - 1] + "…"


def question_message(test_file, hide_hidden: bool = False) -> str:
    """What a question's failed test cases said (visible first, then each hidden case), or that all passed.

    A hidden case says which case of how many it is; with ``hide_hidden`` it says only
    which property failed (:func:`hidden_summary`), never the case's values.
    """
    results = list(test_file.test_case_results)
    failed = [r for r in results if not r.passed]
    hidden = [r for r in results if r.test_case.hidden]
    if not failed:
        return f"all {len(results)} tests passed ({len(results) - len(hidden)} visible, {len(hidden)} hidden)"
    parts = []
    for r in failed:
        if not r.test_case.hidden:
            parts.append(_one_line(_error_part(r.message)))
    lost = [r for r in hidden if not r.passed]
    if lost:
        parts.append(f"{len(hidden) - len(lost)} of {len(hidden)} hidden cases passed")
    for r in lost:
        case = f"hidden case {hidden.index(r) + 1} of {len(hidden)}"
        text = _error_part(r.message)
        parts.append(f"{case}: {hidden_summary(text)}" if hide_hidden else f"hidden: {case}: {_one_line(text)}")
    return " | ".join(dict.fromkeys(parts))


NUMBER = re.compile(r"(?<![\w.])[-+]?(\d+\.\d*|\.\d+|\d+(?=e)|\d{2,})(e[-+]?\d+)?(?![\w])")


def hidden_summary(message: str) -> str:
    """Which property a hidden case's failure shows, without the case's values (for students).

    The kind of failure (an exception and its type, nothing returned, a type, a shape, NaN,
    a time limit, a wrong value) and the test's hints (the clauses after the first ';'),
    with their numbers replaced by '…'.
    """
    head, _, hints = message.partition("; ")
    head = head.lower()
    if "did not return within" in message or "did not finish within" in message:
        kind = "your function did not return within the time allowed"
    elif re.search(r"\braised (\w+)", message):
        kind = "your function raised " + re.search(r"\braised (\w+)", message).group(1)
    elif "returned none" in head or "returns nothing" in head:
        kind = "your function returned None"
    elif "expected shape" in head or "should have shape" in head or "got shape" in head:
        kind = "the result has the wrong shape"
    elif "nan or infinity" in head or "finite" in head:
        kind = "the result has NaN or infinity"
    elif re.search(r"expected (a|an) ", head):
        kind = "the result has the wrong type"
    else:
        kind = "a wrong value"
    hints = [NUMBER.sub("…", h).strip() for h in hints.split("; ") if h.strip()] if hints else []
    return _one_line("; ".join([kind, *hints]))


def suspicious(nb: dict) -> list[str]:
    """What the submitted code does that an honest answer has no reason to (see SUSPICIOUS)."""
    found = []
    for k, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else source
        for pattern, what in SUSPICIOUS:
            if pattern.search(source):
                found.append(f"cell {k} {what}")
    return list(dict.fromkeys(found))


# --------------------------------------------------------------------------- grading

def _otter() -> Path:
    here = Path(sys.executable).parent / "otter"
    if here.exists():
        return here
    found = shutil.which("otter")
    if not found:
        raise FileNotFoundError("otter not found: run this with .venv-otter/bin/python (make otter-env)")
    return Path(found)


def _answer_cell(cells: list, label: str, key: str, cell_id: str) -> dict | None:
    """The answer cell of exercise ``label``: by its id, or by its metadata (``key``) if a front end renumbered ids."""
    for cell in cells:
        if cell.get("id") == cell_id:
            return cell
    return next((c for c in cells if (c.get("metadata") or {}).get(key) == label), None)


ERROR_HOOK = """\
def _grading_hook(path={path!r}):
    import json

    def after(result):
        error = result.error_in_exec or result.error_before_exec
        if error is not None:
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps({{"cell": getattr(result.info, "raw_cell", "") or "",
                                    "error": f"{{type(error).__name__}}: {{error}}"}}) + "\\n")

    get_ipython().events.register("post_run_cell", after)


_grading_hook()
del _grading_hook
"""
TIMER_ON = """\
import signal as _grading_signal


def _grading_late(*_):
    raise TimeoutError("the answer cell of Exercise {number} did not finish within {seconds:g} s; grading stopped it")


_grading_signal.signal(_grading_signal.SIGALRM, _grading_late)
_grading_signal.setitimer(_grading_signal.ITIMER_REAL, {seconds!r}, 1.0)
"""
TIMER_OFF = "_grading_signal.setitimer(_grading_signal.ITIMER_REAL, 0)\n"


def _code_cell(source: str, cell_id: str) -> dict:
    return {"cell_type": "code", "id": cell_id, "metadata": {}, "execution_count": None, "outputs": [],
            "source": source}


def _handed_out(otter_dir: Path, chapter: str) -> set[str]:
    """The code cells of the notebook handed out (their sources), to tell what a student added or changed."""
    path = Path(otter_dir) / chapter / "student" / f"{chapter}.ipynb"
    if not path.exists():
        return set()
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return {_text(c).strip() for c in cells if c.get("cell_type") == "code"}


def _test_words(otter_dir: Path, chapter: str) -> set[str] | None:
    """The notebook names the tests of the chapter's autograder zip read (None if there is no zip)."""
    import zipfile

    zips = sorted((Path(otter_dir) / chapter / "autograder").glob("*.zip"))
    if len(zips) != 1:
        return None
    with zipfile.ZipFile(zips[0]) as archive:
        return {word for name in archive.namelist() if name.startswith("tests/") and name.endswith(".py")
                for word in idle_cells.test_names(archive.read(name).decode("utf-8", "replace"))}


def _prepared(notebook: Path, chapter: str, questions: list[dict], otter_dir: Path = DEFAULT_OTTER_DIR,
              seconds: float = 20.0, errors: Path | None = None,
              practice: frozenset[str] | set[str] = frozenset(),
              every_cell: bool = False) -> tuple[dict, dict[str, str], dict[str, list[str]]]:
    """The notebook to grade, notes per question, and flags per question.

    The notebook to grade: the chapter named in its metadata; answer cells not skipped;
    cells read by hand skipped (also when a student removed their tag); each answer cell
    between two cells that stop it after ``seconds`` (a timer signal); and, first, a cell
    that records each cell's error in ``errors``. Flags (:func:`scan_code`): an answer
    cell's own, and those of every cell a student added or changed outside the answers
    (for every question). The stubs of the exercises a course file left as practice
    (``practice``, their labels) are skipped, and not scanned, like the cells read by hand.
    Unless ``every_cell``, the chapter's cells that no answer or test can depend on (its
    figures, explorer and timings, unchanged: :mod:`idle_cells`) are skipped too.
    """
    nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
    nb.setdefault("metadata", {}).setdefault("otter", {})["assignment_name"] = chapter
    notes: dict[str, str] = {}
    flags: dict[str, list[str]] = {q["name"]: [] for q in questions if not q["manual"]}
    stubs: dict[int, dict] = {}
    for q in questions:
        if q["manual"]:
            continue
        cell = _answer_cell(nb["cells"], q["label"], "exercise_stub", f"stub-{q['label']}")
        if cell is None:
            notes[q["name"]] = f"the answer cell of Exercise {q['number']} was deleted or replaced"
            continue
        stubs[id(cell)] = q
        tags = (cell.get("metadata") or {}).get("tags") or []
        if "otter_ignore" in tags:     # a skipped answer cannot be graded: run it anyway
            cell["metadata"]["tags"] = [t for t in tags if t != "otter_ignore"]
        flags[q["name"]] += [f"its answer cell {why}" for why in scan_code(_text(cell))]
    handed_out = _handed_out(otter_dir, chapter)
    everywhere: list[str] = []
    for k, cell in enumerate(nb["cells"]):
        if cell.get("cell_type") != "code" or id(cell) in stubs:
            continue
        metadata = cell.setdefault("metadata", {})
        stub = metadata.get("exercise_stub")
        if str(cell.get("id", "")).startswith("work-") or metadata.get("exercise_work") or \
                (practice and (isinstance(stub, str) and stub in practice
                               or str(cell.get("id", "")) in {f"stub-{label}" for label in practice})):
            tags = metadata.get("tags") or []     # read by hand, never run by grading
            metadata["tags"] = tags if "otter_ignore" in tags else [*tags, "otter_ignore"]
            continue
        if handed_out and _text(cell).strip() not in handed_out:
            everywhere += [f"cell {k} {why}" for why in scan_code(_text(cell))]
    test_words = None if every_cell or not handed_out else _test_words(otter_dir, chapter)
    if test_words is not None:
        # Which cells of the chapter run: decided here for this submission (idle_cells), not by the
        # tags the handed-out notebook carries (make_otter's, from the reference answers): a cell
        # that this student's answers read runs, and one that nothing that runs reads is skipped.
        code = [c for c in nb["cells"] if c.get("cell_type") == "code"]
        sources = [_text(c) for c in code]

        def tagged(c):
            return "otter_ignore" in ((c.get("metadata") or {}).get("tags") or [])

        chapter_cells = {j for j, source in enumerate(sources) if source.strip() in handed_out and id(code[j]) not in stubs
                         and not (str(code[j].get("id", "")).startswith("work-") or (code[j].get("metadata") or {}).get("exercise_work"))}
        silent = {j for j, c in enumerate(code) if tagged(c) and j not in chapter_cells}   # read by hand, practice
        first = min(chapter_cells, default=None)     # the set-up cell always runs
        idle = idle_cells.idle(sources, handed_out, test_words, silent=silent,
                               keep={j for j, c in enumerate(code) if id(c) in stubs} | {first} - {None})
        for k in chapter_cells:
            metadata = code[k].setdefault("metadata", {})
            tags = [t for t in (metadata.get("tags") or []) if t != "otter_ignore"]
            metadata["tags"] = [*tags, "otter_ignore"] if k in idle else tags
    warning = suspicious(nb)
    if warning:
        for q in questions:
            if not q["manual"]:
                notes[q["name"]] = "CHECK THE CODE: " + "; ".join(warning) + \
                    (f"; {notes[q['name']]}" if q["name"] in notes else "")
    for name in flags:
        flags[name] = list(dict.fromkeys(flags[name] + everywhere))
    cells = []
    if errors is not None:
        cells.append(_code_cell(ERROR_HOOK.format(path=str(errors)), "grading-errors"))
    for cell in nb["cells"]:
        q = stubs.get(id(cell))
        if q is None:
            cells.append(cell)
            continue
        cells += [_code_cell(TIMER_ON.format(number=q["number"], seconds=float(seconds)), f"grading-on-{q['label']}"[:64]),
                  cell, _code_cell(TIMER_OFF, f"grading-off-{q['label']}"[:64])]
    nb["cells"] = cells
    return nb, notes, flags


def first_error(errors: Path, nb: dict) -> str:
    """The first error a cell before the answers raised (a set-up or import cell), as 'cell K raised ...'."""
    try:
        lines = Path(errors).read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    sources = [(k, _text(c).strip()) for k, c in enumerate(nb["cells"]) if c.get("cell_type") == "code"]
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        raw = record.get("cell", "").strip()
        where = next((k for k, source in sources if source and source == raw), None)
        if where is None:
            continue     # a cell grading added (its tests), not the student's notebook
        cell = nb["cells"][where]
        if str(cell.get("id", "")).startswith(("stub-", "grading-")) or \
                (cell.get("metadata") or {}).get("exercise_stub"):
            continue     # an answer's own error is its question's message
        return f"cell {where} raised {_one_line(record.get('error', ''))}"
    return ""


class _Done:
    """What :func:`_run_measured` returns: as ``subprocess.CompletedProcess``, with ``cpu`` seconds."""

    def __init__(self, returncode: int, stdout: str, stderr: str, cpu: float):
        self.returncode, self.stdout, self.stderr, self.cpu = returncode, stdout, stderr, cpu


class _Zygotes:
    """One ``tools/otter_zygote.py`` process per grading thread: ``otter`` commands forked, not started.

    Each submission's ``otter run`` is forked from a process that imported Otter once (about 2 s of
    CPU per submission saved); if that process cannot start, the command starts as usual.
    """

    def __init__(self):
        self.local = threading.local()
        self.started: list[subprocess.Popen] = []
        self.lock = threading.Lock()

    def get(self) -> subprocess.Popen | None:
        proc = getattr(self.local, "proc", None)
        if proc is not None and proc.poll() is None:
            return proc
        self.local.proc = None
        if os.environ.get("OTTER_GRADE_NO_ZYGOTE") or not hasattr(os, "fork"):
            return None
        try:
            proc = subprocess.Popen([sys.executable, str(Path(__file__).with_name("otter_zygote.py"))],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    env={**os.environ, "PYTHONPATH": ""})
            ready = proc.stdout.readline()
            if not ready.strip().startswith('{"ready"'):
                proc.kill()
                proc.wait()
                return None
        except OSError:
            return None
        with self.lock:
            self.started.append(proc)
        self.local.proc = proc
        return proc

    def close(self) -> None:
        with self.lock:
            for proc in self.started:
                try:
                    proc.stdin.close()
                    proc.wait(timeout=10)
                except (OSError, subprocess.TimeoutExpired):
                    proc.kill()
            self.started.clear()
        self.local = threading.local()


_ZYGOTES = _Zygotes()


def _run_measured(cmd: list[str], cwd: Path, timeout: float, env: dict) -> _Done:
    """``subprocess.run(cmd, capture_output=True, timeout=...)``, and the CPU seconds it used.

    The CPU time (user and system) is the command's and its descendants' that it waited for
    (``os.wait4``: ``otter run`` and the kernel it starts and shuts down, and the kernel's
    sandboxes), so it does not grow when other work shares the machine, as the wall time
    does. Raises ``subprocess.TimeoutExpired`` after killing the command, as ``run`` does.
    An ``otter`` command is forked from this thread's zygote (:class:`_Zygotes`) when it runs.
    """
    zygote = _ZYGOTES.get() if Path(cmd[0]).name == "otter" else None
    if zygote is not None:
        with tempfile.TemporaryDirectory(prefix="otter-out-") as tmp:
            job = {"argv": cmd[1:], "cwd": str(cwd), "env": dict(env), "timeout": timeout,
                   "stdout": str(Path(tmp) / "out"), "stderr": str(Path(tmp) / "err")}
            try:
                zygote.stdin.write(json.dumps(job) + "\n")
                zygote.stdin.flush()
                answer = zygote.stdout.readline()
                result = json.loads(answer)
            except (OSError, ValueError):
                result = None
            if result is not None:
                if result["timeout"]:
                    raise subprocess.TimeoutExpired(cmd, timeout)
                read = (lambda name: (Path(tmp) / name).read_text(encoding="utf-8", errors="replace")
                        if (Path(tmp) / name).exists() else "")
                return _Done(result["returncode"], read("out"), read("err"), result["cpu"])
    with tempfile.TemporaryFile("w+", encoding="utf-8") as out, tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        child = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, env=env, text=True)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                child.kill()
                os.wait4(child.pid, 0)
                child.returncode = -9
                raise subprocess.TimeoutExpired(cmd, timeout)
            time.sleep(0.05)
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return _Done(child.returncode, out.read(), err.read(), usage.ru_utime + usage.ru_stime)


#: CPU seconds of each graded notebook's ``otter run`` (by its path), for the summary lines.
CPU_SECONDS: dict[str, float] = {}


def grade_one(student: str, notebook: Path | None, problem: str, chapter: str | None, otter_dir: Path,
              timeout: float, hide_hidden: bool = False) -> tuple[list[Row], float, str]:
    """The rows of one submission, the seconds its grading took, and its outcome.

    The outcome is ``"graded"``, ``"not graded"`` or ``"timeout"``. The CPU seconds that
    ``otter run`` used are in ``CPU_SECONDS[notebook]`` (printed beside the time).
    """
    start = time.perf_counter()
    if notebook is None:
        return [Row(student, "", "", "", problem)], 0.0, "not graded"
    named, reason = assignment_of(notebook)
    if reason and not (chapter and "metadata" in reason):
        return [Row(student, "", "", "", f"{NOT_GRADED}: {notebook.name} {reason}")], 0.0, "not graded"
    name = chapter or named
    if not _known(name, otter_dir):
        return [Row(student, "", "", "", f"{NOT_GRADED}: {notebook.name} is for the assignment {name!r}, which "
                    f"has no autograder in {otter_dir} (another course's notebook, or run `make otter`)")], \
            0.0, "not graded"
    record = json.loads((Path(otter_dir) / name / "source.json").read_text())
    questions = record["questions"]
    zips = sorted((Path(otter_dir) / name / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise FileNotFoundError(f"expected one autograder zip for {name} in {otter_dir}: run `make otter`")

    def every(score, reason: str) -> list[Row]:
        return [Row(student, q["name"], "" if q["manual"] else score, q["points"],
                    "graded by hand" if q["manual"] else reason) for q in questions]

    seconds = float(record.get("question_seconds", 20.0))
    with tempfile.TemporaryDirectory(prefix="otter-grade-") as tmp:
        errors = Path(tmp) / "cell-errors.jsonl"
        practice = set((record.get("course") or {}).get("practice") or [])   # made with a course file
        nb, notes, flags = _prepared(notebook, name, questions, otter_dir, seconds, errors, practice)
        copy = Path(tmp) / "submission" / f"{name}.ipynb"
        copy.parent.mkdir()
        copy.write_text(json.dumps(nb), encoding="utf-8")
        out = Path(tmp) / "results"
        out.mkdir()
        try:
            done = _run_measured([str(_otter()), "run", "--no-logo", "-p", "-a", str(zips[0]), "-o", str(out),
                                  str(copy)], cwd=copy.parent, timeout=timeout, env={**os.environ, "MPLBACKEND": "Agg"})
            CPU_SECONDS[str(notebook)] = done.cpu
        except subprocess.TimeoutExpired:
            return every(0, f"grading stopped after {timeout:g} s: the notebook did not finish (an answer "
                            "that never returns?)"), timeout, "timeout"
        pickled = copy.parent / "results.pkl"     # otter run -p writes it to its working folder
        if "DeadKernelError" in done.stderr + done.stdout:
            return every(0, "the kernel died while the notebook ran (an answer that exits, or runs out of "
                            f"memory): {_one_line(_last_error(done.stderr or done.stdout))}"), \
                time.perf_counter() - start, "timeout"
        if "Kernel died before replying to kernel_info" in done.stderr + done.stdout:
            # the kernel did not start (before any of the submission's code ran): the machine's load,
            # not the student; graded again alone, as a timeout is
            return every(0, "the kernel did not start (the machine was busy?): grade this notebook again"), \
                time.perf_counter() - start, "timeout"
        if done.returncode != 0 or not pickled.exists():
            return every("", f"{NOT_GRADED}: otter run failed: {_one_line(_last_error(done.stderr or done.stdout))}"), \
                time.perf_counter() - start, "not graded"
        import dill   # Otter pickles its results with dill (installed with otter-grader)

        with open(pickled, "rb") as f:
            results = dill.load(f)
        cause = first_error(errors, json.loads(Path(notebook).read_text(encoding="utf-8")))
    rows = []
    for q in questions:
        if q["manual"]:
            rows.append(Row(student, q["name"], "", q["points"], "graded by hand"))
            continue
        test_file = results.results.get(q["name"])
        cases = len(test_file.test_case_results) if test_file is not None else 0
        flagged = "; ".join(flags.get(q["name"], []))
        if (cases != q.get("tests", cases) or test_file is None) and flagged:
            rows.append(Row(student, q["name"], 0.0, q["points"], f"FLAGGED, scored 0: read its code "
                            f"({_one_line(flagged)}) | {cases} test results where the question has {q.get('tests')}",
                            _one_line(flagged)))
            continue
        if cases != q.get("tests", cases) or test_file is None:
            rows.append(Row(student, q["name"], "", q["points"],
                            f"{NOT_GRADED}: {cases} test results where the question has {q.get('tests')}; the "
                            "submission may have tampered with grading: read its code"))
            continue
        score = min(max(float(test_file.score), 0.0), float(q["points"]))
        message = question_message(test_file, hide_hidden)
        if "did not return within" in message or "did not finish within" in message:
            message = f"TIMED OUT: {message}"
        if cause and score < float(q["points"]):
            message = f"the notebook failed before this answer: {cause} | {message}"
        if q["name"] in notes:
            message = f"{notes[q['name']]} | {message}"
        flag = "; ".join(flags.get(q["name"], []))
        if flag or q["name"] in notes and notes[q["name"]].startswith("CHECK THE CODE"):
            flag = flag or notes[q["name"]].removeprefix("CHECK THE CODE: ")
            message = f"FLAGGED, scored 0: read its code ({_one_line(flag)}) | {message}"
            score = 0.0
        rows.append(Row(student, q["name"], round(score, 6), q["points"], message, _one_line(flag)))
    return rows, time.perf_counter() - start, "graded"


def grade_folder(folder: Path, out: Path, otter_dir: Path = DEFAULT_OTTER_DIR, chapter: str | None = None,
                 workers: int = 2, timeout: float = 300, verbose: bool = True, hide_hidden: bool = False,
                 force: bool = False, dropped: set[str] | frozenset[str] = frozenset()) -> list[Row]:
    """Grade every submission in ``folder`` and write the CSV ``out``; return its rows.

    ``dropped`` (question names, :func:`dropped_questions`) are graded as the others; their
    message ends in :data:`DROPPED`, and the summary lines leave them out of the points.
    """
    out = Path(out)
    if out.exists() and not force:
        raise FileExistsError(f"{out} exists (hand-graded scores may be in it): give another name, or --force")
    if chapter is not None and not _known(chapter, otter_dir):
        raise ValueError(f"--chapter: no autograder for {chapter!r} in {otter_dir} (run `make otter`)")
    found = submissions(folder)
    if not found:
        raise FileNotFoundError(f"SUBMISSIONS: no .ipynb files in {folder} or its subfolders")

    def grade(item):
        return grade_one(*item, chapter, otter_dir, timeout, hide_hidden)

    try:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            graded = list(pool.map(grade, found))
        # A timeout or a dead kernel with another notebook running beside it may be the machine's load
        # (time, memory): grade it again, alone.
        for k, (item, result) in enumerate(zip(found, graded)):
            if result[2] == "timeout" and workers > 1:
                graded[k] = grade(item)
    finally:
        _ZYGOTES.close()
    for rs, _, _ in graded:
        for row in rs:
            if row.question in dropped:
                row.message = f"{row.message} | {DROPPED}"
    rows = [row for rs, _, _ in graded for row in rs]
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(COLUMNS)
        writer.writerows(r.as_list() for r in rows)
    if verbose:
        for (student, notebook, _), (rs, seconds, outcome) in zip(found, graded):
            auto = [r for r in rs if not isinstance(r.score, str) and r.question not in dropped]
            by_hand = sum(r.max for r in rs if r.message.startswith("graded by hand") and r.question not in dropped)
            left_out = len({r.question for r in rs if r.question in dropped})
            if outcome == "not graded":
                print(f"{student}: {NOT_GRADED} ({rs[0].message.removeprefix(NOT_GRADED + ': ')[:120]})")
                continue
            flag = " TIMEOUT" if outcome == "timeout" else ""
            flag += " CHECK THE CODE" if any(r.message.startswith(("CHECK THE CODE", "FLAGGED")) or r.flag
                                             for r in rs) else ""
            cpu = CPU_SECONDS.get(str(notebook))
            cpu = f", {cpu:.1f} s of CPU" if cpu is not None else ""
            print(f"{student}: {sum(r.score for r in auto):g} of {sum(r.max for r in auto):g} auto-graded "
                  f"points, {by_hand:g} more to grade by hand"
                  + (f" ({left_out} dropped question{'s' * (left_out > 1)} graded, not counted)" if left_out else "")
                  + f" [{seconds:.1f} s{cpu}]{flag}")
        missed = sum(o != "graded" for _, _, o in graded)
        print(f"{len(found)} submissions, {len(rows)} rows -> {out}" +
              (f"; {missed} not graded or timed out: see above" if missed else ""))
    return rows


# --------------------------------------------------------------------------- the course file

def _now() -> dt.datetime:
    """The time now, aware (UTC); the tests replace it."""
    return dt.datetime.now(dt.timezone.utc)


def hidden_policy(course: courses.Course | None, flag: bool | None = None, now: dt.datetime | None = None,
                  where: str = "the course file") -> tuple[bool, str]:
    """``(hide, why)``: whether the hidden cases' messages are written without their values, and why.

    ``flag`` is the instructor's: True for ``--hide-hidden-cases`` (``HIDE_HIDDEN=1``), False for
    ``--show-hidden-cases`` (``HIDE_HIDDEN=0``), None when neither was given; it always wins.
    Otherwise the course's ``show_hidden_after_due``: false hides them; true shows them once
    ``due`` has passed (``now > due``) and hides them before, or when the course sets no due
    date. Without either, they are shown in full (messages for the instructor).
    """
    if flag is not None:
        over = "" if course is None or course.show_hidden_after_due is None else \
            f", over {where}'s show_hidden_after_due: {str(course.show_hidden_after_due).lower()}"
        return (True, f"without their values (--hide-hidden-cases{over})") if flag else \
            (False, f"in full (--show-hidden-cases{over})")
    if course is None or course.show_hidden_after_due is None:
        return False, "in full (the default: messages for you; HIDE_HIDDEN=1 writes them for students)"
    if course.show_hidden_after_due is False:
        return True, f"without their values ({where} has show_hidden_after_due: false)"
    if course.due is None:
        return True, (f"without their values ({where} has show_hidden_after_due: true but no due date, "
                      "so grading cannot tell whether it has passed)")
    now = now or _now()
    due = course.due.isoformat()
    if now > course.due:
        return False, f"in full ({where} has show_hidden_after_due: true, and its due date {due} has passed)"
    return True, (f"without their values ({where} has show_hidden_after_due: true, and its due date {due} has "
                  "not passed)")


def dropped_questions(course: courses.Course, otter_dir: Path, where: str = "the course file") -> set[str]:
    """The question names that the course's ``dropped`` stands for (names or labels), in ``otter_dir``.

    A name that no assignment there has is refused (a typo would otherwise drop nothing).
    """
    if not course.dropped:
        return set()
    questions = []
    for record in sorted(Path(otter_dir).glob("*/source.json")):
        questions += json.loads(record.read_text(encoding="utf-8")).get("questions", [])
    out = set()
    for ref in course.dropped:
        hit = {q["name"] for q in questions if ref in (q["name"], q["label"])}
        if not hit:
            raise courses.CourseError(f"{where}: dropped: {ref!r} is neither a question (ex3.4) nor an exercise "
                                      f"label (ex-tail) of the assignments in {otter_dir}")
        out |= hit
    return out


# --------------------------------------------------------------------------- answers read by hand

def collect_answers(folder: Path, out: Path, otter_dir: Path = DEFAULT_OTTER_DIR, chapter: str | None = None,
                    force: bool = False) -> list[Path]:
    """Write, for each question graded by hand, one Markdown file with every student's answer to it.

    ``out/<chapter>/<question>.md`` holds the book's solution and the question's rubric
    (instructors/rubrics.yml), then, student by student, the *Type your answer here*
    cell and the code of the *read by hand* cell (with its printed output), so that a
    grader reads one question across the class instead of one notebook at a time.
    Beside it, ``<question>.scores.csv`` is the score sheet to fill in (student, score,
    comment), merged into the grades CSV by tools/hand_scores.py.
    Returns the Markdown files written.
    """
    out = Path(out)
    if out.exists() and any(out.iterdir()) and not force:
        raise FileExistsError(f"{out} is not empty: give another folder, or --force")
    sections: dict[tuple[str, str], list[str]] = {}
    students: dict[tuple[str, str], list[str]] = {}
    for student, notebook, problem in submissions(folder):
        if notebook is None:
            print(f"{student}: {problem}")
            continue
        named, reason = assignment_of(notebook)
        name = chapter or named
        if (reason and not (chapter and "metadata" in reason)) or not _known(name, otter_dir):
            print(f"{student}: {NOT_GRADED}: {notebook.name} {reason or f'is for the unknown assignment {name!r}'}")
            continue
        cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
        for q in json.loads((Path(otter_dir) / name / "source.json").read_text())["questions"]:
            if not q["manual"]:
                continue
            work = f"work-prose-{q['label']}" if q["name"].endswith("-written") else f"work-{q['label']}"
            text = f"### {student}\n\n"
            found = [k for k, c in enumerate(cells) if c.get("id") == work] or \
                [k for k, c in enumerate(cells) if c.get("cell_type") == "code"
                 and (c.get("metadata") or {}).get("exercise_work") == q["label"]
                 and ("prose" in _text(c)) == q["name"].endswith("-written")]
            if found:
                k = found[0]
                prose = cells[k - 1] if k and cells[k - 1].get("cell_type") == "markdown" else None
                text += (_text(prose) if prose else "*(no answer cell)*") + "\n\n"
                code = _text(cells[k]).strip()
                printed = "".join(_shown_output(o) for o in cells[k].get("outputs", []))
                if "\n" in code or not code.startswith("# Exercise"):
                    text += f"```python\n{code}\n```\n\n"
                if printed.strip():
                    text += f"Output:\n\n```text\n{printed.strip()}\n```\n\n"
            else:
                text += "*(the answer cells of this question were deleted)*\n\n"
            sections.setdefault((name, q["name"]), [f"# {q['name']} (Exercise {q['number']}), {q['points']} points, "
                                                    "read by hand\n\n" + hand_scores.answers_preamble(name, q)]
                                ).append(text)
            students.setdefault((name, q["name"]), []).append(student)
    written = []
    for (name, question), parts in sections.items():
        path = out / name / f"{question}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(parts), encoding="utf-8")
        written.append(path)
        # The score sheet to fill in, merged into grades.csv by tools/hand_scores.py.
        hand_scores.write_score_sheet(out / name / f"{question}{hand_scores.SHEET_SUFFIX}", students[(name, question)])
    print(f"{len(written)} questions read by hand -> {out}/")
    return written


def _shown_output(output: dict) -> str:
    """What a cell's output shows, as text: printed text, a result's text, or a marker for a figure."""
    if output.get("output_type") == "stream":
        return _text(output)
    data = output.get("data") or {}
    if any(key.startswith("image/") for key in data):
        return "[a figure: see the notebook]\n"
    if output.get("output_type") == "error":
        return f"{output.get('ename', 'Error')}: {output.get('evalue', '')}\n"
    plain = data.get("text/plain", "")
    return ("".join(plain) if isinstance(plain, list) else plain) + "\n"


def _text(cell_or_output: dict) -> str:
    text = cell_or_output.get("source", cell_or_output.get("text", ""))
    return "".join(text) if isinstance(text, list) else text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submissions", type=Path, help="the folder of submitted notebooks")
    parser.add_argument("--out", type=Path, default=Path("grades.csv"), help="the CSV (default: grades.csv)")
    parser.add_argument("--otter-dir", type=Path, default=DEFAULT_OTTER_DIR,
                        help="what `make otter` wrote (default: _build/otter)")
    parser.add_argument("--chapter", help="grade every submission as this chapter's, e.g. 01_unified_operator "
                                          "(default: the chapter named in each notebook)")
    parser.add_argument("--workers", type=int, help="submissions graded at once (default: the course file's "
                                                   "workers, else 2)")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per submission (default 300)")
    hidden = parser.add_mutually_exclusive_group()
    hidden.add_argument("--hide-hidden-cases", action="store_const", const=True, dest="hide_hidden",
                        help="write the failed hidden cases without their values (for messages that go to "
                             "students); wins over the course file")
    hidden.add_argument("--show-hidden-cases", action="store_const", const=False, dest="hide_hidden",
                        help="write the failed hidden cases in full (for you); wins over the course file")
    parser.add_argument("--course", type=Path, metavar="FILE",
                        help="the course file (instructors/course.example.yml): workers, dropped questions "
                             "(graded, marked), show_hidden_after_due with due")
    parser.add_argument("--force", action="store_true", help="overwrite the CSV (or the --answers folder)")
    parser.add_argument("--answers", type=Path, metavar="DIR",
                        help="instead of grading, write each hand-graded question's answers, student by "
                             "student, to DIR/<chapter>/<question>.md")
    args = parser.parse_args(argv)
    args.otter_dir = args.otter_dir.resolve()      # otter run works in another folder
    if args.workers is not None and args.workers < 1:
        parser.error(f"--workers must be at least 1, not {args.workers}")
    if not args.timeout > 0:
        parser.error(f"--timeout must be positive, not {args.timeout}")
    try:
        if args.answers:
            collect_answers(args.submissions, args.answers, args.otter_dir, args.chapter, args.force)
            return 0
        course = courses.read_course(args.course) if args.course else None
        where = str(args.course) if args.course else "the course file"
        workers = args.workers or (course and course.workers) or 2     # WORKERS= wins over the course's
        dropped = dropped_questions(course, args.otter_dir, where) if course else set()
        hide, why = hidden_policy(course, args.hide_hidden, _now(), where)
        print(f"hidden cases: {why}")
        grade_folder(args.submissions, args.out, args.otter_dir, args.chapter, workers, args.timeout,
                     hide_hidden=hide, force=args.force, dropped=dropped)
    except (FileNotFoundError, FileExistsError, ValueError) as error:
        parser.error(str(error))
    return 0


if __name__ == "__main__":
    sys.exit(main())
