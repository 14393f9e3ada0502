#!/usr/bin/env python3
"""Otter-Grader assignments from the chapters: a master notebook per chapter, then ``otter assign``.

Usage: python tools/make_otter.py [--out DIR] [--site-url URL] [--hidden FILE] [--otter PATH]
[--course FILE] (``make otter``; default DIR: _build/otter)

For each chapter notebook in chapters/ this writes

* ``DIR/<chapter>/master/<chapter>.ipynb``, an Otter master notebook (Otter's format with
  raw ``# BEGIN QUESTION`` cells), made from the chapter's student version (the notebook
  ``make assignments`` writes: portable Markdown, solutions removed) and from the chapter's
  exercise cells, solutions and metadata:

  - an **auto-checked** exercise (its stub calls a ``check_...`` of ``ssmheads.exercises``)
    becomes an auto-graded question: its solution cell is the stub with the book's answer
    inside Otter's ``# BEGIN SOLUTION`` markers, so the student version shows the stub
    exactly; its tests are one *visible* test, the chapter's check (the cases a student's
    own ``check_...`` call runs), and the *hidden* tests of ``instructors/hidden_tests.py``
    (new cases, in the master and the autograder only). If the exercise also asks questions
    in prose (a question mark, or "show", "explain", "prove"), a graded-by-hand question follows;
  - every other exercise becomes a **manually graded** question: a Markdown answer cell and
    a code cell for the student's work; the master holds the book's solution;
  - points from the difficulty (``"exercise"`` metadata): 2, 4 or 6 points for ★☆☆, ★★☆,
    ★★★, split evenly between code and prose when an auto-checked exercise has both;

* then ``otter assign`` (run from Otter's own environment, .venv-otter: see
  requirements-instructor.txt) writes ``DIR/<chapter>/student/<chapter>.ipynb``, the
  notebook to hand out, and ``DIR/<chapter>/autograder/``: the autograder notebook (with
  the solutions) and the zip for Gradescope or ``otter run``. Otter runs every test on the
  solutions as it does so, and fails if one does not pass;

* ``DIR/<chapter>/source.json``: what the notebooks were made from (hashes of the chapter
  and of the hidden tests, the site address), so that the students' site
  (tools/make_assignments.py) offers these notebooks for download only while they are
  current.

With ``--course FILE`` (``make otter COURSE=course.yml``; tools/course.py), only the
exercises or questions of the course's ``exercises`` become Otter questions (the others stay in
the notebook as ungraded *Practice*, which grading skips: see ``master_notebook``), with the
course's ``points``; ``show_hidden_after_due: true`` sets Otter's ``show_hidden``, so that
Gradescope shows the hidden tests' results once grades are published. A name that stands for
nothing is refused before ``otter assign`` runs. Without it, the assignments are the book's.

Grading: tools/otter_grade.py (``make grade``).
"""
from __future__ import annotations

import argparse
import ast
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "_build" / "otter"
DEFAULT_HIDDEN = ROOT / "instructors" / "hidden_tests.py"
OTTER_VENV = ROOT / ".venv-otter"
# What the grading environment installs beside Otter (on Gradescope): the chapters' runtime, pinned
# as in requirements.txt, and the book's library from its repository (as each set-up cell does).
RUNTIME = ("ipykernel", "ipywidgets", "matplotlib", "numpy", "scipy", "jax", "jaxlib")  # JAX: Chapter 6

sys.path.insert(0, str(Path(__file__).resolve().parent))
import course as courses  # noqa: E402  (the course file: which exercises, their points, show_hidden)
import exercise_catalogue as catalogue  # noqa: E402
import make_assignments as assignments  # noqa: E402
import portable  # noqa: E402
from bookkit import core  # noqa: E402
from bookkit.student import split_exercise_stubs, student_notebook  # noqa: E402

sys.path.pop(0)

POINTS_PER_STAR = 2
WRITTEN_SUFFIX = "-written"


class OtterError(ValueError):
    """A chapter, a solution or a hidden test that this script cannot turn into an Otter question."""


# --------------------------------------------------------------------------- the book's solutions

@dataclass
class Solution:
    """The book's solution of one exercise: its text (portable Markdown) and its code cells."""
    text: list[str] = field(default_factory=list)
    code: list[str] = field(default_factory=list)


def chapter_solutions(nb, docname: str, book) -> dict[str, Solution]:
    """``{label: Solution}`` for every exercise of chapter notebook ``nb`` (MyST), text rendered portable."""
    renderer = portable.Renderer(book, docname, "reader")
    solutions: dict[str, Solution] = {}
    for placed in core.gated_cells(nb.cells, docname, OtterError):
        cell = placed.cell
        if placed.role == "start":
            solutions[placed.label] = Solution()
            if placed.rest.strip():
                solutions[placed.label].text.append(renderer.render(placed.rest))
        elif placed.role == "inside":
            if cell.cell_type == "markdown":
                solutions[placed.label].text.append(renderer.render(cell.source))
            else:
                solutions[placed.label].code.append(cell.source)
        elif placed.role == "outside" and cell.cell_type == "markdown":
            lines = cell.source.split("\n")
            for first, last, _, arg in core.directive_blocks(lines, "solution"):
                label = arg.strip()
                body = [ln for ln in lines[first + 1:last] if not re.match(r"^:\w[\w-]*:", ln)]
                solutions[label] = Solution(text=[renderer.render("\n".join(body).strip("\n"))])
    return solutions


def _calls_check(node: ast.AST) -> bool:
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id.startswith("check_")
               for n in ast.walk(node))


def _before_check(code: str, where: str) -> list[ast.stmt]:
    """The top-level statements of a solution cell before the one that calls its ``check_...``."""
    tree = ast.parse(code)
    for k, node in enumerate(tree.body):
        if _calls_check(node):
            return tree.body[:k]
    raise OtterError(f"{where}: the solution cell never calls its check_... function")


def _stub_function(stub: str, where: str) -> ast.FunctionDef:
    functions = [n for n in ast.parse(stub).body if isinstance(n, ast.FunctionDef)]
    if len(functions) != 1:
        raise OtterError(f"{where}: the stub should define one function; it defines {len(functions)}")
    return functions[0]


def solution_parts(code: str, name: str, where: str) -> tuple[str, str]:
    """``(preamble, body)`` of the book's solution cell for the stub function ``name``.

    ``body`` is the source of the function's body (dedented); ``preamble`` the other
    statements before the cell's ``check_...`` call (helpers, imports, constants),
    without the import of the check itself.
    """
    lines = code.split("\n")
    before = _before_check(code, where)
    functions = [n for n in before if isinstance(n, ast.FunctionDef) and n.name == name]
    if not functions:
        raise OtterError(f"{where}: the solution cell does not define {name}() before its check")
    func = functions[-1]
    first = func.body[0].lineno - 1
    if lines[func.lineno - 1].rstrip().endswith(":") and func.lineno == func.body[0].lineno - 1:
        first = func.lineno          # keep comment lines between the signature and the first statement
    body = textwrap.dedent("\n".join(lines[first:func.end_lineno]))
    preamble = []
    for node in before:
        if node is func:
            continue
        if isinstance(node, ast.ImportFrom) and node.module == "ssmheads.exercises":
            continue
        preamble.append(ast.get_source_segment(code, node, padded=False))
    return "\n".join(preamble), body


def master_solution_cell(stub: str, code: str, where: str) -> str:
    """The stub with the book's answer in Otter's solution markers.

    ``otter assign`` turns it back into ``stub``: the preamble (between ``# BEGIN SOLUTION NO
    PROMPT`` and ``# END SOLUTION``) is dropped, the body (between ``# BEGIN SOLUTION`` and
    ``# END SOLUTION``) becomes the stub's ``...``.
    """
    func = _stub_function(stub, where)
    last = func.body[-1]
    if not (isinstance(last, ast.Expr) and isinstance(last.value, ast.Constant) and last.value.value is Ellipsis):
        raise OtterError(f"{where}: the stub's function {func.name}() should end in '...'")
    preamble, body = solution_parts(code, func.name, where)
    # A parameter with a default that the book's solution adds to the stub's signature
    # (``eps=1e-6``) becomes a local of the body, so that the stub's signature can stay.
    solved = next(n for n in _before_check(code, where) if isinstance(n, ast.FunctionDef) and n.name == func.name)
    given = {a.arg for a in func.args.args + func.args.kwonlyargs}
    params = solved.args.args[len(solved.args.args) - len(solved.args.defaults):]
    extra = [f"{a.arg} = {ast.unparse(d)}" for a, d in zip(params, solved.args.defaults) if a.arg not in given]
    extra += [f"{a.arg} = {ast.unparse(d)}" for a, d in zip(solved.args.kwonlyargs, solved.args.kw_defaults)
              if d is not None and a.arg not in given]
    if extra:
        body = "\n".join(extra) + "\n" + body
    lines = stub.split("\n")
    dots = lines[last.lineno - 1]
    if dots.strip() != "...":
        raise OtterError(f"{where}: the stub's '...' should be alone on its line")
    indent = dots[:len(dots) - len(dots.lstrip())]
    lines[last.lineno - 1:last.lineno] = ([f"{indent}# BEGIN SOLUTION"] + textwrap.indent(body, indent).split("\n")
                                          + [f"{indent}# END SOLUTION"])
    if preamble:
        lines[func.lineno - 1:func.lineno - 1] = (["# BEGIN SOLUTION NO PROMPT"] + preamble.split("\n")
                                                  + ["# END SOLUTION"])
    return "\n".join(lines)


def reference_answer(label: str, chapters: Path = ROOT / "chapters", namespace: dict | None = None):
    """The book's answer to auto-checked exercise ``label``: the function its solution cell defines.

    The definitions before the cell's check call (imports, helpers, constants, the
    function) are run in ``namespace`` (default: ``np``, ``sh`` and ``systems`` imported as
    the chapters import them); asserts and printing are skipped.
    """
    for path in sorted(Path(chapters).glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        stubs = {lab: code for c in nb.cells if c.cell_type == "markdown"
                 for lab, code in split_exercise_stubs(c.source)[1]}
        if label not in stubs:
            continue
        name = _stub_function(stubs[label], label).name
        keep = [node for node in _before_check(_gated_code(nb, label), label)
                if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.Assign))]
        if namespace is None:
            import numpy as np

            import ssmheads as sh
            from ssmheads import systems
            namespace = {"np": np, "sh": sh, "systems": systems}
        exec(compile(ast.Module(body=keep, type_ignores=[]), f"<solution of {label}>", "exec"), namespace)
        return namespace[name]
    raise OtterError(f"no auto-checked exercise {label!r} in {chapters}")


def _gated_code(nb, label: str) -> str:
    """The code of the solution cell of ``label`` that calls the check."""
    for placed in core.gated_cells(nb.cells, label, OtterError):
        if placed.role == "inside" and placed.label == label and placed.cell.cell_type == "code" \
                and _calls_check(ast.parse(placed.cell.source)):
            return placed.cell.source
    raise OtterError(f"{label}: no solution cell calls its check_... function")


# --------------------------------------------------------------------------- hidden tests

def load_hidden(path: Path) -> dict[str, list[str]]:
    """``{label: [source of each hidden test function]}`` from the instructors' file ``path``.

    The file defines ``HIDDEN_TESTS = {label: [function, ...]}``; each function takes the
    student's function by the stub's name and asserts with a message. Its source is copied
    into the master alone, so it must import what it uses inside its body.
    """
    spec = importlib.util.spec_from_file_location("_otter_hidden_tests", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    tests = getattr(module, "HIDDEN_TESTS", None)
    if not isinstance(tests, dict):
        raise OtterError(f"{path}: defines no HIDDEN_TESTS = {{label: [function, ...]}}")
    return {label: [textwrap.dedent(inspect.getsource(f)) for f in functions] for label, functions in tests.items()}


# --------------------------------------------------------------------------- graded in parts, sandboxed

QUESTION_SECONDS = 20.0   # what the hidden cases of one question may take together (all calls)
SANDBOX = Path(__file__).resolve().parent / "grading_sandbox.py"


def _sandbox_source() -> str:
    """The source of ``grading_sandbox.sandboxed`` (copied into each test cell, which must be self-contained)."""
    tree = ast.parse(SANDBOX.read_text())
    func = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "sandboxed")
    return ast.get_source_segment(SANDBOX.read_text(), func)


def _case_function(source: str) -> tuple[str, str, str] | None:
    """``(name, parameter, source)`` of the hidden test turned into a function that runs every case.

    The hidden test's last statement must be its loop over the cases; the loop's body is
    wrapped so that a failing case records its message (``None`` when it passed) and the
    loop goes on; the function returns the list. None when the test has no such loop.
    """
    tree = ast.parse(textwrap.dedent(source))
    func = tree.body[0]
    if not (isinstance(func, ast.FunctionDef) and len(func.args.args) == 1 and func.body
            and isinstance(func.body[-1], ast.For)):
        return None
    loop = func.body[-1]
    record = ast.parse(
        "__cases.append(None)\n"
        "try:\n    pass\n"
        "except AssertionError as __error:\n    __cases[-1] = str(__error) or 'a hidden case failed'\n"
        "except Exception as __error:\n    __cases[-1] = f'the test stopped on {type(__error).__name__}: {__error}'\n"
    ).body
    record[1].body = loop.body
    loop.body = record
    func.body[-1:] = [ast.parse("__cases = []").body[0], loop, ast.parse("return __cases").body[0]]
    func.name = f"_cases_{func.name}"
    ast.fix_missing_locations(tree)
    return func.name, func.args.args[0].arg, ast.unparse(tree)


def count_cases(source: str) -> int:
    """How many cases the hidden test ``source`` runs (1 when it cannot be split into cases).

    Counted by running it on an answer that raises: every case fails and is recorded.
    """
    made = _case_function(source)
    if made is None:
        return 1
    name, _, code = made
    namespace: dict = {}
    exec(compile(code, f"<cases of {name}>", "exec"), namespace)

    def refuses(*args, **kwargs):
        raise NotImplementedError("counting the cases")

    try:
        return max(1, len(namespace[name](refuses)))
    except Exception:
        return 1


def hidden_case_tests(source: str, points: float, seconds: float = QUESTION_SECONDS) -> list[str]:
    """The test cells of one hidden test, one per case, worth ``points`` together.

    The first cell forks the student's function into a sandbox (tools/grading_sandbox.py)
    before the test computes anything, runs every case once and keeps each case's outcome
    in the notebook's environment; each cell then passes or fails with its own case, so a
    question's points are split over its cases. A test without a loop over cases is one cell.
    """
    made = _case_function(source)
    n = count_cases(source) if made else 1
    if n == 1:        # no loop over cases, or one that cannot be counted: the test as one case
        tree = ast.parse(textwrap.dedent(source))
        func = tree.body[0]
        made = (func.name, func.args.args[0].arg, textwrap.dedent(source).rstrip() +
                f"\n\n\ndef _cases_{func.name}({func.args.args[0].arg}):\n"
                f"    {func.name}({func.args.args[0].arg})\n    return [None]\n")
        made = (f"_cases_{func.name}", made[1], made[2])
    name, parameter, code = made
    key = f"__hidden_cases_{name}"
    first = (f"def test_{name.removeprefix('_cases_')}_case_1(env):\n"
             + textwrap.indent(_sandbox_source(), "    ") + "\n\n"
             + textwrap.indent(code, "    ") + "\n\n"
             f"    try:\n"
             f"        cases = {name}(sandboxed(env.get({parameter!r}), {float(seconds)!r}))\n"
             f"    except AssertionError as error:\n"
             f"        cases = [str(error)] * {n}\n"
             f"    except Exception as error:\n"
             f"        cases = [f'the test stopped on {{type(error).__name__}}: {{error}}'] * {n}\n"
             f"    if len(cases) != {n}:\n"
             f"        cases = ['the hidden test ran ' + str(len(cases)) + ' cases, not {n}'] * {n}\n"
             f"    env[{key!r}] = cases\n"
             f"    assert cases[0] is None, cases[0]\n")
    rest = [f"def test_{name.removeprefix('_cases_')}_case_{j + 1}(env):\n"
            f"    cases = env.get({key!r})\n"
            f"    assert isinstance(cases, list) and len(cases) == {n}, 'the hidden cases did not run'\n"
            f"    assert cases[{j}] is None, cases[{j}]\n" for j in range(1, n)]
    return [first, *rest]


def _test_cell(source: str, hidden: bool, points: float | None = None) -> nbformat.NotebookNode:
    config = [f"hidden: {'true' if hidden else 'false'}"]
    if points is not None:
        config.append(f"points: {points}")
    return nbformat.v4.new_code_cell('""" # BEGIN TEST CONFIG\n' + "\n".join(config)
                                     + '\n""" # END TEST CONFIG\n' + source.rstrip("\n"))


def visible_test(stub: str, where: str, seconds: float = QUESTION_SECONDS) -> str:
    """The visible test of an auto-checked exercise: the check a student runs, as an Otter test.

    It stops the check after ``seconds`` (a timer signal), so that an answer that never
    returns costs its own question only.
    """
    func = _stub_function(stub, where)
    calls = [n for n in ast.walk(ast.parse(stub)) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
             and n.func.id.startswith("check_")]
    if len(calls) != 1:
        raise OtterError(f"{where}: the stub should call one check_... function")
    check = calls[0].func.id
    return (f"def test_{check.removeprefix('check_')}({func.name}):\n"
            f"    from ssmheads.exercises import {check}\n"
            f"    assert {func.name} is not None, \"{func.name} is not defined when your notebook runs: \" \\\n"
            f"        \"did its cell raise an error, or was the function renamed?\"\n"
            f"    import signal\n\n"
            f"    def late(*_):\n"
            f"        raise TimeoutError('did not return within the {seconds:g} s this question allows (an endless '\n"
            f"                           'loop, or a computation far too slow?); grading stopped it')\n\n"
            f"    before = signal.signal(signal.SIGALRM, late)\n"
            f"    signal.setitimer(signal.ITIMER_REAL, {seconds!r}, 1.0)\n"
            f"    try:\n"
            f"        result = {check}({func.name})\n"
            f"    finally:\n"
            f"        signal.setitimer(signal.ITIMER_REAL, 0)\n"
            f"        signal.signal(signal.SIGALRM, before)\n"
            f"    assert result, str(result)\n")


# --------------------------------------------------------------------------- what grading runs

IGNORE_TAG = "otter_ignore"   # Otter skips a cell with this tag when it grades (otter.execute)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_LOCAL = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _top_level_nodes(tree: ast.AST):
    """The nodes of ``tree`` at module level: function and class definitions themselves, not their
    bodies; nothing inside lambdas and comprehensions (their names are their own)."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, _LOCAL):
            continue
        yield child
        if not isinstance(child, _SCOPES):
            yield from _top_level_nodes(child)


def _top_level_stores(tree: ast.AST) -> set[str]:
    """Names bound at module level by ``tree`` (not inside functions, classes or comprehensions)."""
    found: set[str] = set()
    for node in _top_level_nodes(tree):
        if isinstance(node, _SCOPES):
            found.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            found.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
            found.add(node.id)
    return found


def _reads(code: str) -> set[str]:
    """The global names that ``code`` reads and does not bind itself (its free names).

    Inside functions, Python's own symbol tables tell (``symtable``); at the top level, a
    name that the cell reads counts unless the cell binds it (a cell that reads a name
    before binding it again, or augments it, still counts it).
    """
    import symtable

    table = symtable.symtable(code, "<cell>", "exec")
    free = _nested_globals(table)
    tree = ast.parse(code)
    top = {s.get_name() for s in table.get_symbols() if s.is_referenced()}
    augmented = {n.target.id for n in _top_level_nodes(tree)
                 if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Name)}
    return (free | top | augmented) - (_top_level_stores(tree) - augmented)


def _nested_globals(table) -> set[str]:
    """The global names read inside the functions, classes, lambdas and comprehensions of a symbol table."""
    free: set[str] = set()
    for child in table.get_children():
        free.update(s.get_name() for s in child.get_symbols() if s.is_referenced() and s.is_global())
        free |= _nested_globals(child)
    return free


def cells_to_skip(cells: list, needed: set[str]) -> set[int]:
    """Indices of the code cells that grading can skip, among ``cells`` outside the questions.

    Grading must run what an answer can use. It keeps the first code cell (the set-up cell,
    which installs ``ssmheads`` where it is missing); every cell that imports something or
    defines a function or class (the chapter's tools, which an answer may call: an answer
    that uses ``linprog`` because a chapter cell imported it must still work); and every
    cell that binds a name that an answer or a kept cell reads (``needed``), closed
    backwards through the chapter, so that every kept cell runs without a NameError. The
    rest (the cells that only compute or draw for the text, and listings) is skipped; the
    students' notebook says so.
    """
    needed = set(needed)
    skip = set()
    code = [i for i, c in enumerate(cells) if c.cell_type == "code"]
    for index in reversed(code):
        cell = cells[index]
        if index == code[0]:
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:      # an IPython magic: keep it, it may set something up
            continue
        if _top_level_stores(tree) & needed or \
                any(isinstance(n, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.ClassDef)) for n in tree.body):
            needed |= _reads(cell.source)
        else:
            skip.add(index)
    return skip


# --------------------------------------------------------------------------- the master notebook

def _raw(text: str) -> nbformat.NotebookNode:
    return nbformat.v4.new_raw_cell(text)


def question_name(number: str, written: bool = False) -> str:
    """Otter's name for the question of Exercise ``number`` ("1.5" -> "ex1.5")."""
    return f"ex{number}" + (WRITTEN_SUFFIX if written else "")


def asks_in_prose(prompt: str) -> bool:
    """Whether an exercise's text asks for more than code: a question mark, or "show", "explain", "prove"."""
    prose = re.sub(r"\$\$.*?\$\$|\$[^$]*\$|`[^`]*`", "", prompt, flags=re.S)
    return "?" in prose or bool(re.search(r"\b(show|explain|prove)\b", prose, re.I))


@dataclass
class Question:
    name: str
    label: str
    number: str
    points: int
    manual: bool
    function: str = ""   # an auto-graded question: the stub's function, which the tests call
    tests: int = 0       # an auto-graded question: its test cases (one visible, the rest hidden)
    cases: int = 0       # an auto-graded question: its hidden cases, each worth points / cases


def _tidy(points):
    """``points`` as an int when it is whole (4, not 4.0: Otter's config and source.json keep the book's form)."""
    return int(points) if float(points).is_integer() else float(points)


class Selection:
    """What a course file (tools/course.py) makes of the chapters' questions: which are graded, their points.

    ``graded(chapter, name, label)`` says whether a question is in the course's ``exercises``
    (all are without that key); ``points(name, label, default)`` its points: the course's for
    its name, else its share of the course's for its exercise's label, else ``default``.
    Each call records what it was asked about, so that :meth:`check`, once every chapter has
    been seen, refuses a name in ``exercises`` or ``points`` that stands for nothing, and a
    ``points`` entry for a question that is not graded.
    """

    def __init__(self, course: courses.Course | None = None, where: str = "course"):
        self.course = course or courses.Course()
        self.where = where
        self.known: set[str] = set()     # every chapter, question name and label seen
        self.graded_refs: set[str] = set()   # the names and labels of the graded questions
        self.practice: dict[str, list[str]] = {}   # chapter -> labels whose code is not graded

    @property
    def everything(self) -> bool:
        """Whether the course grades every question with the book's points (nothing to choose)."""
        return self.course.exercises is None and not self.course.points

    def graded(self, chapter: str, name: str, label: str) -> bool:
        self.known |= {chapter, name, label}
        refs = self.course.exercises
        chosen = refs is None or bool({chapter, name, label} & set(refs))
        if chosen:
            self.graded_refs |= {name, label}
        return chosen

    def points(self, name: str, label: str, default, share: float = 1.0):
        """The points of question ``name``: the course's, or ``share`` of its exercise's, or ``default``."""
        given = self.course.points
        if name in given:
            return _tidy(given[name])
        if label in given:
            return _tidy(given[label] * share)
        return default

    def check(self) -> None:
        """Refuse a name of ``exercises`` or ``points`` that no chapter has, or points for an ungraded question."""
        for key, refs in (("exercises", self.course.exercises or []), ("points", list(self.course.points))):
            unknown = [r for r in refs if r not in self.known]
            if unknown:
                raise OtterError(f"{self.where}: {key}: {', '.join(map(repr, unknown))}: neither a chapter "
                                 "(03_head_count), an exercise label (ex-tail) nor a question (ex3.4, "
                                 "ex3.2-written) of the chapters" + (" (points take no chapter)"
                                                                     if key == "points" else ""))
        chapters = {r for r in self.known if re.fullmatch(r"\d\d_\w+", r)}
        wrong = [r for r in self.course.points if r in chapters]
        if wrong:
            raise OtterError(f"{self.where}: points: {', '.join(map(repr, wrong))}: a chapter; give points to a "
                             "question (ex3.4) or an exercise label (ex-tail)")
        idle = [r for r in self.course.points if r not in self.graded_refs]
        if idle:
            raise OtterError(f"{self.where}: points: {', '.join(map(repr, idle))}: not graded (the course's "
                             "exercises leave it out)")


INTRO = (
    "**This notebook is an assignment.** Answer each exercise in the cells right below it. An "
    "auto-checked exercise (✓) has a code cell with a stub: replace its `...` with your code and "
    "run the cell; the check prints whether your function passes its visible cases. The "
    "questions asked in prose, and every other exercise, are answered in the Markdown cell that "
    "says *Type your answer here*, with any computation in the code cell after it. Each question "
    "shows its points. Then submit this `.ipynb` file.\n\n"
    "How it is graded: each function is run again, on hidden cases; passing the visible ones is "
    "not enough. Your prose answers, and the code cells marked *read by hand*, are read by a "
    "person. To grade quickly, the grader runs the set-up cell, your stubs, and the chapter's "
    "cells that import or define what they use (and the cells those need); it may skip every "
    "other cell, as it skips the cells that only compute or draw for the text. So write each function to use its arguments and what the chapter imported or "
    "defined (`np`, `sh`, `systems`, a function defined in a cell above), not a result the "
    "chapter computed, and import anything else in your answer cell. Keep the stubs' function "
    "names, do not delete cells, and make sure the notebook runs from top to bottom: a stub that "
    "runs too long is stopped and loses its question's points, and one that stops the kernel "
    "stops the grading of the whole notebook. Write your own code: an answer that uses the checks' "
    "references, the library's private routines or the grader's code scores 0.")


STUDENT_LINE = re.compile(r"Student version: the solutions are removed, .*?checks it\)\. ")


PRACTICE = ("The exercises (or parts) marked *Practice* are not graded in this course: grading does not run "
            "their cells.")


def _with_note(title: str, practice: bool = False) -> str:
    """The title cell with the assignment's note right under the line that says where it comes from."""
    lines = title.split("\n")
    k = next((i for i, ln in enumerate(lines) if ln.startswith("*Chapter")), 0)
    lines[k] = STUDENT_LINE.sub("Assignment version: the solutions are removed. ", lines[k])
    return "\n".join(lines[:k + 1] + ["", INTRO + (" " + PRACTICE if practice else "")] + lines[k + 1:])


def master_notebook(path: Path, book, hidden: dict[str, list[str]], name: str | None = None,
                    seconds: float = QUESTION_SECONDS, site_url: str | None = None,
                    selection: Selection | None = None):
    """The Otter master notebook of chapter ``path`` and its list of :class:`Question`.

    With ``site_url`` (the students' site) the set-up cell installs the library from that
    site, not from the repository (tools/make_assignments.py, ``seal_setup_cell``).

    With ``selection`` (a course file's, :class:`Selection`) only the questions it grades
    become Otter questions, with its points. An exercise it leaves out stays in the notebook,
    marked *Practice*: its text, and its stub (with the check students run themselves) or its
    work cell, which grading skips (tagged ``otter_ignore``). It is kept, not removed, so
    that the chapter reads as the book does: its text and the other exercises refer to it
    by its number, and the numbers stay the book's. ``show_hidden_after_due: true`` sets
    Otter's ``show_hidden``. Without a selection, or with one that chooses nothing, the
    master is the book's: every exercise graded, with its points.
    """
    selection = selection or Selection()
    stem = Path(path).stem
    path = Path(path)
    docname = book.docname_of(path)
    chapter = nbformat.read(path, as_version=4)
    numbers = core.exercise_numbers(book)
    exercises = {e.label: e for e in catalogue.read_chapter(path)}
    solutions = chapter_solutions(chapter, docname, book)
    student = portable.render_notebook(
        student_notebook(chapter, where=path.name, numbers=numbers)[0], docname, book, kind="student")[0]
    if site_url:
        assignments.seal_setup_cell(student, site_url, where=path.name)
    stubs = {label: code for c in chapter.cells if c.cell_type == "markdown"
             for label, code in split_exercise_stubs(c.source)[1]}
    config = {
        "name": name or path.stem,
        "init_cell": False, "check_all_cell": False, "export_cell": False,
        "run_tests": True, "solutions_pdf": False, "template_pdf": False,
        "python_version": "3.11",
        "requirements": "requirements.txt",
        "show_question_points": True,
        "tests": {"files": False, "ok_format": False},
        "generate": {"pdf": False, "show_stdout": False, "show_hidden": False},
    }
    if selection.course.show_hidden_after_due:
        # Otter's `show_hidden` (its autograder configuration, under `generate` in Otter Assign's):
        # Gradescope then shows the hidden tests' results to students once grades are published
        # ("Showing Autograder Results": "the stdout will be made available to students only after
        # grades are published on Gradescope. The same can be done for hidden test outputs using the
        # show_hidden key", https://otter-grader.readthedocs.io/en/latest/workflow/otter_generate/index.html;
        # in Otter 7.0.0, otter/test_files/__init__.py gives hidden results the visibility
        # "after_published" when show_hidden is true, "hidden" when it is false).
        config["generate"]["show_hidden"] = True
    answers = [c for c in student.cells if c.metadata.get("exercise_stub") or c.metadata.get("exercise_work")]
    first_answer = student.cells.index(answers[0]) if answers else len(student.cells)
    # Which questions the course grades: the stub's (ex3.2), the prose part's (ex3.2-written), the
    # work cell's (ex3.4), by label; asked once per question, in the notebook's order.
    graded: dict[tuple[str, str], bool] = {}
    for k, cell in enumerate(student.cells):
        label = cell.metadata.get("exercise_stub") or cell.metadata.get("exercise_work")
        if label is None:
            continue
        number = numbers[label]
        graded[label, "code" if cell.metadata.get("exercise_stub") else "work"] = \
            selection.graded(stem, question_name(number), label)
        if cell.metadata.get("exercise_stub") and k and asks_in_prose(student.cells[k - 1].source):
            graded[label, "prose"] = selection.graded(stem, question_name(number, True), label)
    practice = list(dict.fromkeys(label for (label, part), chosen in graded.items() if not chosen))
    if practice:
        selection.practice[stem] = practice
    needed = set().union(*(_reads(master_solution_cell(stubs[label], _gated_code(chapter, label), label))
                           for label in stubs if graded.get((label, "code"), True)))
    skipped = cells_to_skip(student.cells[:first_answer], needed)
    for index in skipped:
        student.cells[index].metadata.setdefault("tags", []).append(IGNORE_TAG)
    cells = [_raw("# ASSIGNMENT CONFIG\n" + _yaml(config))]
    questions: list[Question] = []
    titled = False
    for cell in student.cells:
        label = cell.metadata.get("exercise_stub") or cell.metadata.get("exercise_work")
        if label is None:
            if not titled and cell.cell_type == "markdown" and cell.source.startswith("# "):
                cell.source = _with_note(cell.source, practice=bool(practice))
                titled = True
            cells.append(cell)
            continue
        prompt = cells.pop()
        if prompt.cell_type != "markdown":
            raise OtterError(f"{path.name}: the cell before the answer cell of {label} is not its text")
        exercise, solution = exercises[label], solutions.get(label)
        if solution is None:
            raise OtterError(f"{path.name}: {label} has no solution")
        number, where = numbers[label], f"{path.name}, {label}"
        points = POINTS_PER_STAR * exercise.difficulty
        if cell.metadata.get("exercise_stub"):
            stub = stubs[label]
            code = _gated_code(chapter, label)
            written = asks_in_prose(prompt.source)
            if label not in hidden or not hidden[label]:
                raise OtterError(f"{where}: no hidden test for this auto-checked exercise in the hidden tests")
            half = points // 2 if written else points
            if not graded[label, "code"]:
                # Practice: the stub as students know it, with its check, which grading skips.
                prompt.source += ("\n\n*Practice: the code of this exercise is not graded (grading does not run "
                                  "its cell); its questions in prose are, below.*" if written and graded[label, "prose"]
                                  else "\n\n*Practice: this exercise is not graded (grading does not run its cell).*")
                cell.metadata["tags"] = [*cell.metadata.get("tags", []), IGNORE_TAG]
                cells += [prompt, cell]
            else:
                auto = Question(question_name(number), label, number,
                                selection.points(question_name(number), label, half, 0.5 if written else 1.0),
                                False, function=_stub_function(stub, where).name)
                parts = [source for test in hidden[label] for source in hidden_case_tests(test, 0, seconds)]
                auto.tests = 1 + len(parts)
                auto.cases = len(parts)
                answer = nbformat.v4.new_code_cell(master_solution_cell(stub, code, where),
                                                   metadata=dict(cell.metadata))
                answer.id = cell.id
                cells += [_raw(f"# BEGIN QUESTION\nname: {auto.name}\npoints: {auto.points}\ncheck_cell: false"),
                          prompt, _raw("# BEGIN SOLUTION"), answer, _raw("# END SOLUTION"), _raw("# BEGIN TESTS"),
                          # The visible test is feedback (students run it themselves); the points
                          # are on the hidden tests, so passing only the visible cases earns none.
                          _test_cell(visible_test(stub, where, seconds), hidden=False, points=0)]
                if label not in hidden or not hidden[label]:
                    raise OtterError(f"{where}: no hidden test for this auto-checked exercise in the hidden tests")
                # The points are split over the hidden cases; rounded so that they add up to the question's.
                shares = [round(auto.points * (k + 1) / len(parts), 6) - round(auto.points * k / len(parts), 6)
                          for k in range(len(parts))]
                cells += [_test_cell(source, hidden=True, points=round(share, 6))
                          for source, share in zip(parts, shares)]
                cells += [_raw("# END TESTS"), _raw("# END QUESTION")]
                questions.append(auto)
            if written and not graded[label, "prose"]:
                if graded[label, "code"]:
                    prompt.source += "\n\n*Practice: the questions of this exercise in prose are not graded.*"
            elif written:
                prose = Question(question_name(number, True), label, number,
                                 selection.points(question_name(number, True), label, points - half, 0.5), True)
                ask = nbformat.v4.new_markdown_cell(
                    f"**Exercise {number}, in prose.** Answer here the questions of Exercise {number} "
                    "that the check does not test.")
                ask.id = f"ask-{label}"[:64]
                work = nbformat.v4.new_code_cell(f"# Exercise {number}, in prose: your work (read by hand)\n",
                                                 metadata={"exercise_work": label, "tags": [IGNORE_TAG]})
                work.id = f"work-prose-{label}"[:64]
                cells += [_raw(f"# BEGIN QUESTION\nname: {prose.name}\nmanual: true\npoints: {prose.points}"),
                          ask, _raw("# BEGIN SOLUTION"),
                          *[nbformat.v4.new_markdown_cell(t) for t in solution.text if t.strip()],
                          work, _raw("# END SOLUTION"), _raw("# END QUESTION")]
                questions.append(prose)
            continue
        if not graded[label, "work"]:
            # Practice: the exercise and its work cell, which grading skips.
            prompt.source += "\n\n*Practice: this exercise is not graded.*"
            work = nbformat.v4.new_code_cell(
                cell.source.replace("(not auto-checked)", "(practice: not graded)"), metadata=dict(cell.metadata))
            work.id = cell.id
            work.metadata["tags"] = [*work.metadata.get("tags", []), IGNORE_TAG]
            cells += [prompt, work]
            continue
        manual = Question(question_name(number), label, number,
                          selection.points(question_name(number), label, points), True)
        work = nbformat.v4.new_code_cell(
            cell.source.rstrip("\n").replace("(not auto-checked)", "(read by hand)") + "\n"
            + ("# BEGIN SOLUTION NO PROMPT\n" + "\n\n".join(solution.code) + "\n# END SOLUTION"
               if solution.code else ""), metadata=dict(cell.metadata))
        work.id = cell.id
        # Read by hand, from the submitted notebook's own outputs: grading does not run it
        # (a slow computation there would hold up the grading of the whole notebook).
        work.metadata["tags"] = [*work.metadata.get("tags", []), IGNORE_TAG]
        texts = [t for t in solution.text if t.strip()] or ["(The solution is in the code cell.)"]
        cells += [_raw(f"# BEGIN QUESTION\nname: {manual.name}\nmanual: true\npoints: {manual.points}"),
                  prompt, _raw("# BEGIN SOLUTION"), *[nbformat.v4.new_markdown_cell(t) for t in texts],
                  work, _raw("# END SOLUTION"), _raw("# END QUESTION")]
        questions.append(manual)
    missing = set(exercises) - {q.label for q in questions} - set(practice)
    if missing:
        raise OtterError(f"{path.name}: exercises without a question: {sorted(missing)}")
    master = nbformat.from_dict(student)
    master.cells = cells
    for k, c in enumerate(master.cells):
        if c.cell_type == "raw" and "id" in c:
            c.id = f"otter-raw-{k}"
    return master, questions


def _commit(root: Path) -> str | None:
    """The commit checked out in ``root``, if it is a git checkout."""
    try:
        done = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and re.fullmatch(r"[0-9a-f]{40}", commit) else None


def grading_requirements(root: Path = ROOT) -> str:
    """requirements.txt of the autograder: the runtime pins of requirements.txt and the library."""
    import yaml

    pins = dict(re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (root / "requirements.txt").read_text(), re.M))
    missing = [name for name in RUNTIME if name not in pins]
    if missing:
        raise OtterError(f"requirements.txt pins no {', '.join(missing)}")
    url = (yaml.safe_load((root / "_config.yml").read_text()).get("repository") or {}).get("url")
    if not url:
        raise OtterError("_config.yml has no repository.url: the autograder installs ssmheads from it")
    # From GitHub, the library comes as the repository's archive over HTTPS (no git needed in
    # the grading image); from elsewhere, with git, as each chapter's set-up cell installs it.
    github = re.match(r"^https://github\.com/[^/\s]+/[^/\s]+?/?$", url)
    commit = _commit(root)
    ref = commit or "HEAD"     # the library at the commit make otter ran from (push it first)
    source = f"{url.rstrip('/')}/archive/{ref}.zip" if github else f"git+{url}" + (f"@{commit}" if commit else "")
    return ("# The grading environment beside Otter (written by tools/make_otter.py): the chapters'\n"
            "# runtime, pinned as in the book's requirements.txt, and the book's library.\n"
            + "".join(f"{name}=={pins[name]}\n" for name in RUNTIME)
            + f"ssmheads @ {source}\n")


def _yaml(data) -> str:
    import yaml
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


# --------------------------------------------------------------------------- otter assign

def otter_command(otter: Path | None = None) -> Path:
    """The ``otter`` executable: ``otter`` if given, else .venv-otter's (``make otter-env``)."""
    path = Path(otter) if otter else OTTER_VENV / "bin" / "otter"
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: run `make otter-env` (it installs "
                                "requirements-instructor.txt into .venv-otter), or give --otter")
    return path


file_hash = core.file_hash   # the SHA-256 of a file (what the notebooks were made from)


def source_record(chapter: Path, hidden: Path, site_url: str | None) -> dict:
    """What a chapter's Otter notebooks are made from; the students' site compares it (make_assignments)."""
    return {"chapter": Path(chapter).name, "chapter_sha256": file_hash(chapter),
            "hidden_tests_sha256": file_hash(hidden), "site_url": site_url or None,
            "generator_sha256": file_hash(Path(__file__))}


def assign(master: Path, result: Path, otter: Path, timeout: float = 300) -> float:
    """``otter assign master result`` (tests run on the solutions); returns the seconds it took."""
    if result.exists():
        for sub in ("student", "autograder"):
            shutil.rmtree(result / sub, ignore_errors=True)
    start = time.perf_counter()
    done = subprocess.run([str(otter), "assign", "--no-pdfs", str(master), str(result)], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1"})
    seconds = time.perf_counter() - start
    (result / "assign.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"otter assign failed for {master.name} (exit {done.returncode}); "
                           f"log: {result / 'assign.log'}\n" + (done.stdout + done.stderr)[-3000:])
    return seconds


def student_notebook_path(out: Path, stem: str) -> Path:
    return Path(out) / stem / "student" / f"{stem}.ipynb"


def autograder_zip(out: Path, stem: str) -> Path:
    zips = sorted((Path(out) / stem / "autograder").glob("*.zip"))
    if len(zips) != 1:
        raise FileNotFoundError(f"expected one autograder zip in {Path(out) / stem / 'autograder'}; "
                                f"found {len(zips)}: run `make otter`")
    return zips[0]


def finish_student_notebook(path: Path, reference) -> None:
    """Give the listings of the library's source back their output, and keep answer cells from deletion.

    Otter clears every output; the student notebook of ``make assignments`` keeps the
    listings' (they are text of the chapter). An answer cell that a student deletes is
    an answer that grading cannot find.
    """
    nb = nbformat.read(path, as_version=4)
    listings = {c.id: c.outputs for c in reference.cells
                if c.cell_type == "code" and "source-listing" in c.metadata.get("tags", [])}
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("id") in listings:
            cell.outputs = listings[cell.id]
        if "otter_answer_cell" in cell.metadata.get("tags", []):
            cell.metadata["deletable"] = False     # grading looks for it; its text stays editable
    nbformat.validate(nb)
    nbformat.write(nb, path)


def make_chapter(path: Path, out: Path, book, hidden_path: Path, hidden: dict, otter: Path,
                 site_url: str | None, seconds: float = QUESTION_SECONDS, made=None,
                 course: dict | None = None) -> tuple[list[Question], float]:
    """Master, student notebook, autograder and source.json of one chapter.

    ``made``: its ``(master, questions)`` when already made (with a course's selection);
    ``course``: what source.json records of the course file (:func:`course_record`), with the
    labels of the exercises left as practice.
    """
    stem = Path(path).stem
    master, questions = made or master_notebook(path, book, hidden, seconds=seconds, site_url=site_url)
    folder = Path(out) / stem
    (folder / "master").mkdir(parents=True, exist_ok=True)
    master_path = folder / "master" / f"{stem}.ipynb"
    nbformat.write(master, master_path)
    (folder / "master" / "requirements.txt").write_text(grading_requirements())
    seconds = assign(master_path, folder, otter)
    finish_student_notebook(student_notebook_path(out, stem), master)
    record = source_record(path, hidden_path, site_url)
    record["questions"] = [q.__dict__ for q in questions]
    record["question_seconds"] = seconds
    if course is not None:
        # otter_grade skips the cells of these exercises (their stubs and work cells are practice)
        record["course"] = course
    (folder / "source.json").write_text(json.dumps(record, indent=1) + "\n")
    return questions, seconds


def course_record(path: Path, selection: Selection, stem: str) -> dict:
    """What a chapter's source.json records of the course file it was made with."""
    return {"file": Path(path).name, "sha256": file_hash(Path(path)),
            "show_hidden": bool(selection.course.show_hidden_after_due),
            "practice": selection.practice.get(stem, [])}


def make_all(chapters: Path = ROOT / "chapters", out: Path = DEFAULT_OUT, hidden_path: Path = DEFAULT_HIDDEN,
             otter: Path | None = None, site_url: str | None = None, workers: int = 2,
             verbose: bool = True, seconds: float = QUESTION_SECONDS,
             course: Path | None = None) -> dict[str, list[Question]]:
    """Master, student notebook and autograder for every chapter in ``chapters``.

    With ``course`` (a course file, tools/course.py) every chapter's master is made first with
    its selection (:class:`Selection`), the selection is checked against all of them, and only
    then does ``otter assign`` run. Every chapter gets its assignment, also one of whose
    exercises the course grades none (all practice), so that the students' site
    (``make assignments``) offers a notebook for each chapter.
    """
    otter = otter_command(otter)
    hidden = load_hidden(hidden_path)
    book = portable.Book(ROOT, base_url=site_url)
    paths = sorted(Path(chapters).glob("*.ipynb"))
    if not paths:
        raise FileNotFoundError(f"no chapter notebooks in {chapters}")
    unknown = set(hidden) - {e.label for e in catalogue.read_exercises(chapters) if e.checked}
    if unknown:
        raise OtterError(f"{hidden_path}: hidden tests for labels that are not auto-checked exercises: "
                         f"{sorted(unknown)}")
    made: dict[Path, tuple] = {}
    records: dict[Path, dict | None] = dict.fromkeys(paths)
    if course is not None:
        selection = Selection(courses.read_course(course), str(course))
        made = {p: master_notebook(p, book, hidden, seconds=seconds, site_url=site_url, selection=selection)
                for p in paths}
        selection.check()
        records = {p: course_record(course, selection, p.stem) for p in paths}
    out.mkdir(parents=True, exist_ok=True)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {p: pool.submit(make_chapter, p, out, book, hidden_path, hidden, otter, site_url, seconds,
                                  made.get(p), records[p]) for p in paths}
        results = {}
        for p, future in futures.items():
            questions, seconds = future.result()
            results[p.stem] = questions
            if verbose:
                auto = [q for q in questions if not q.manual]
                practice = (records[p] or {}).get("practice")
                print(f"{p.stem}: {len(questions)} questions ({len(auto)} auto-graded, "
                      f"{_tidy(sum(q.points for q in auto))} of {_tidy(sum(q.points for q in questions))} points)"
                      + (f", practice: {', '.join(practice)}" if practice else "")
                      + f", otter assign {seconds:.1f} s -> {_shown(out / p.stem)}/")
    return results


_shown = assignments._shown   # a path relative to the working folder when it lies inside it


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: _build/otter)")
    parser.add_argument("--site-url", metavar="URL",
                        help="the students' site: the notebooks link there, as with make assignments")
    parser.add_argument("--hidden", type=Path, default=DEFAULT_HIDDEN, metavar="FILE",
                        help="the hidden tests (default: instructors/hidden_tests.py); keep your own "
                             "outside the public repository")
    parser.add_argument("--otter", type=Path, help="the otter executable (default: .venv-otter/bin/otter)")
    parser.add_argument("--workers", type=int, default=2, help="chapters assigned at once (default 2)")
    parser.add_argument("--course", type=Path, metavar="FILE",
                        help="the course file (instructors/course.example.yml): which exercises are graded, "
                             "their points, show_hidden_after_due")
    parser.add_argument("--question-timeout", type=float, default=QUESTION_SECONDS, metavar="SECONDS",
                        help="what an answer may take, per question, when graded: its cell, its visible check, "
                             f"its hidden cases (default {QUESTION_SECONDS:g})")
    args = parser.parse_args(argv)
    if not args.question_timeout > 0:
        parser.error(f"--question-timeout must be positive, not {args.question_timeout}")
    if args.site_url and not re.match(r"^https?://[^\s/]+", args.site_url):
        parser.error(f"--site-url must be an http(s) address, not {args.site_url!r}")
    if args.workers < 1:
        parser.error(f"--workers must be at least 1, not {args.workers}")
    if not args.hidden.exists():
        parser.error(f"--hidden: {args.hidden} does not exist")
    if args.course is not None:
        try:
            courses.read_course(args.course)       # refused here, before anything is made
        except courses.CourseError as error:
            parser.error(str(error))
    if not args.site_url:
        print("note: without --site-url (make otter SITE_URL=...) the notebooks link to the full site, where "
              "every solution is a click away; give the address of the students' site")
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "lib", "pyproject.toml"],
                           capture_output=True, text=True).stdout.strip()
    if dirty:
        print("note: lib/ or pyproject.toml has uncommitted changes; the autograder installs the library at "
              "the last commit (commit and push them first)")
    if "example-org" in grading_requirements():
        print("note: the repository address is still the placeholder of _config.yml; the autograder "
              "installs ssmheads from it (on Gradescope). Set it first: make repository URL=https://github.com/ORG/REPO")
    start = time.perf_counter()
    try:
        results = make_all(ROOT / "chapters", args.out.resolve(), args.hidden.resolve(), args.otter,
                           args.site_url, args.workers, seconds=args.question_timeout,
                           course=args.course.resolve() if args.course else None)
    except (OtterError, courses.CourseError) as error:
        if args.course is None:
            raise
        parser.error(str(error))
    total = sum(len(q) for q in results.values())
    print(f"{len(results)} assignments, {total} questions, in {_shown(args.out.resolve())}/ "
          f"[{time.perf_counter() - start:.1f} s]")
    return 0


if __name__ == "__main__":
    sys.exit(main())


# --------------------------------------------------------------------------- planted submissions (tests)

_MARKER = re.compile(r"^\s*# (BEGIN SOLUTION( NO PROMPT)?|END SOLUTION)\s*$")


def answered(student, master, answers: dict[str, str] | None = None, prose: str | None = None):
    """A copy of student notebook ``student`` with answers filled in, as a student would submit it.

    Each auto-graded answer cell (the stub, matched to ``master`` by cell id) gets the
    master's solution without Otter's markers, or ``answers[label]``'s code where given
    (a label mapped to ``None`` keeps the untouched stub); ``prose`` fills every
    *Type your answer here* cell.
    """
    answers = answers or {}
    solutions = {c.id: "\n".join(ln for ln in c.source.split("\n") if not _MARKER.match(ln))
                 for c in master.cells if c.cell_type == "code" and "# BEGIN SOLUTION" in c.source}
    nb = nbformat.from_dict(json.loads(json.dumps(student)))
    for cell in nb.cells:
        if cell.cell_type == "code" and cell.get("id") in solutions:
            label = cell.id.removeprefix("stub-")
            if label in answers:
                if answers[label] is not None:
                    cell.source = answers[label]
            else:
                cell.source = solutions[cell.id]
        elif prose is not None and cell.cell_type == "markdown" and "otter_answer_cell" in cell.metadata.get("tags", []):
            cell.source = prose
    return nb
