"""``python -m bookcli COMMAND [ARGS]``: run one of the book's tools (``--help`` lists them)."""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent

#: command -> (module in tools/, what it does in one line). A module here has ``main``;
#: tests/test_bookcli.py checks that every tools/*.py with a ``main`` has a command.
COMMANDS: dict[str, tuple[str, str]] = {
    # the book's products
    "portable": ("portable", "the chapters as portable notebooks in notebooks/ (--all, --check)"),
    "make-assignments": ("make_assignments", "student notebooks without solutions, and the students' site"),
    "make-pdf": ("make_pdf", "the book as one PDF, the student edition, one PDF per chapter"),
    "make-otter": ("make_otter", "Otter-Grader assignments: a master notebook per chapter, then otter assign"),
    "otter-grade": ("otter_grade", "grade a folder of submissions with Otter into one CSV; gather hand-graded answers"),
    "hand-scores": ("hand_scores", "rubrics and score sheets of the answers graded by hand; merge their scores"),
    "gradebook": ("gradebook", "one row per student from make grade's CSV (plain, Canvas, Gradescope)"),
    "problem-set-length": ("problem_set_length", "how long each chapter's problem set takes (standard library only)"),
    "set-repository": ("set_repository", "set the repository's public address everywhere it is used"),
    "run-notebooks": ("run_notebooks", "run the chapters top to bottom and store their outputs"),
    # the checks
    "check-outputs": ("check_outputs", "the chapters' stored outputs under nbval, with two numerical set-ups"),
    "check-standalone": ("check_standalone", "each portable chapter alone in a fresh environment, as from Colab"),
    "site-check": ("site_check", "every page of the built site in headless Chromium"),
    "figure-alt": ("figure_alt", "the figures' alt text, caption and label from their 'What to notice'"),
    "assert-margins": ("assert_margins", "how far inside its threshold every assert of the chapters passes"),
    "import-graph": ("import_graph", "the tooling's files, lines and imports; --check fails on a cycle"),
    # running the tests
    "test-parts": ("test_parts", "the parts of make test in lanes, each lane in order, the lanes at once"),
    "fetch-axe": ("fetch_axe", "axe-core for the browser check, at the pinned version, without Node"),
}


def usage() -> str:
    width = max(map(len, COMMANDS))
    lines = ["usage: python -m bookcli COMMAND [ARGS]   (with tools/ on PYTHONPATH)",
             "",
             "The book's tools. 'python -m bookcli COMMAND --help' shows a command's own options.",
             "",
             "commands:"]
    lines += [f"  {name:<{width}}  {help}" for name, (_, help) in COMMANDS.items()]
    return "\n".join(lines)


def without_tools(pythonpath: str | None) -> str | None:
    """``PYTHONPATH`` without the tools/ folder (None when nothing is left)."""
    if not pythonpath:
        return pythonpath
    kept = [p for p in pythonpath.split(os.pathsep) if not p or Path(p).resolve() != TOOLS]
    return os.pathsep.join(kept) if any(kept) else None


def _as_a_script() -> None:
    """The path and environment ``python tools/NAME.py`` would have: tools/ first, no working folder.

    The programs a tool starts (make, nbval, otter, jupyter-book, ...) get the environment
    they get today: tools/ is taken out of ``PYTHONPATH`` again.
    """
    here = {str(TOOLS), os.getcwd(), ""}
    sys.path[:] = [str(TOOLS)] + [p for p in sys.path if p not in here]
    if "PYTHONPATH" in os.environ:
        rest = without_tools(os.environ["PYTHONPATH"])
        if rest is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = rest


def run(command: str, args: list[str]) -> int:
    """Run ``command``'s ``main`` with ``args``, as ``python tools/MODULE.py ARGS`` would."""
    name = command.replace("_", "-")
    if name not in COMMANDS:
        print(f"bookcli: unknown command {command!r}; expected one of: {', '.join(COMMANDS)}", file=sys.stderr)
        return 2
    _as_a_script()
    module = importlib.import_module(COMMANDS[name][0])
    sys.argv = [f"bookcli {name}", *args]       # what argparse names in its usage and errors
    main = module.main
    code = main(list(args)) if inspect.signature(main).parameters else main()
    return int(code or 0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(usage())
        return 0 if argv else 2
    return run(argv[0], argv[1:])


if __name__ == "__main__":
    sys.exit(main())
