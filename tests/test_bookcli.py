"""One command line for the book's tools (tools/bookcli): ``python -m bookcli COMMAND [ARGS]``.

The Makefile runs every tool through it; each command runs one module's ``main`` as
``python tools/NAME.py`` does. These tests run it as the Makefile does (a subprocess with
tools/ on PYTHONPATH), read the Makefile's recipes, and check what the test-otter-extended
recipe rebuilds by running it with stand-ins for the tools.
"""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"
sys.path.insert(0, str(TOOLS))
from bookcli import __main__ as cli  # noqa: E402  (tools/ is not a package)

MAKEFILE = (ROOT / "Makefile").read_text(encoding="utf-8")


def bookcli(*args: str, pythonpath: str = "tools", **kwargs) -> subprocess.CompletedProcess:
    """``python -m bookcli ARGS`` from the repository's root, as a Makefile recipe runs it."""
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run([sys.executable, "-m", "bookcli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=60, **kwargs)


def has_main(path: Path) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in tree.body)


def test_help_lists_every_command_on_one_line():
    done = bookcli("--help")
    assert done.returncode == 0, done.stderr
    listed = [line.split()[0] for line in done.stdout.splitlines() if line.startswith("  ")]
    assert listed == list(cli.COMMANDS)
    for name, (_, help) in cli.COMMANDS.items():
        assert f"  {name} " in done.stdout and help in done.stdout and "\n" not in help


def test_every_tool_with_a_main_has_a_command_and_every_command_a_tool():
    modules = {module for module, _ in cli.COMMANDS.values()}
    tools = {p.stem for p in TOOLS.glob("*.py") if has_main(p)}
    assert tools == modules, (f"tools without a command: {sorted(tools - modules)}; "
                              f"commands without a tool: {sorted(modules - tools)}")


def test_a_command_runs_the_tools_main_with_its_arguments(tmp_path):
    """Same output and exit status as ``python tools/import_graph.py``, on a planted cycle."""
    for folder in ("tools", "book/_ext", "instructors"):
        (tmp_path / folder).mkdir(parents=True)
    (tmp_path / "tools" / "a.py").write_text("import b\n")
    (tmp_path / "tools" / "b.py").write_text("import a\n")
    via_cli = bookcli("import-graph", "--root", str(tmp_path), "--check")
    by_path = subprocess.run([sys.executable, "tools/import_graph.py", "--root", str(tmp_path), "--check"],
                             cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert via_cli.returncode == by_path.returncode == 1
    assert via_cli.stdout == by_path.stdout and "cycles: tools/a <-> tools/b" in via_cli.stdout
    # underscores as in the file's name work too; argparse's errors name the command
    wrong = bookcli("import_graph", "--no-such-option")
    assert wrong.returncode == 2 and "usage: bookcli import-graph" in wrong.stderr


def test_an_unknown_command_is_refused_by_name():
    done = bookcli("portables")
    assert done.returncode == 2
    assert "unknown command 'portables'" in done.stderr and "portable" in done.stderr
    assert bookcli().returncode == 2       # no command: the list, and a failure


def test_the_tool_gets_the_path_and_environment_of_a_script(monkeypatch):
    """tools/ first on sys.path, the working folder not on it, and tools/ off PYTHONPATH again."""
    monkeypatch.setattr(sys, "path", [os.getcwd(), "/somewhere/else"])
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TOOLS), "/mine"]))
    cli._as_a_script()
    assert sys.path == [str(TOOLS), "/somewhere/else"]
    assert os.environ["PYTHONPATH"] == "/mine"
    monkeypatch.setenv("PYTHONPATH", "tools")
    monkeypatch.chdir(ROOT)
    cli._as_a_script()
    assert "PYTHONPATH" not in os.environ
    assert cli.without_tools(None) is None and cli.without_tools("/a:/b") == "/a:/b"


def test_the_standard_library_tools_run_without_the_readers_environment():
    """--help and problem-set-length import nothing outside the standard library (make lengths: $(PYTHON))."""
    code = ("import sys, runpy; sys.argv = ['bookcli', '--help']; "
            "sys.modules['nbformat'] = None; sys.modules['yaml'] = None; "
            "runpy.run_module('bookcli', run_name='__main__')")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": "tools"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "problem-set-length" in done.stdout, done.stderr


# --------------------------------------------------------------------------- the Makefile


def recipe_lines() -> list[str]:
    """The Makefile's recipe lines, with their continuation lines."""
    return [line for line in MAKEFILE.splitlines() if line.startswith("\t") or line.startswith("  ")]


def test_every_recipe_runs_its_tools_through_the_command_line():
    commands = recipe_lines() + [line for line in MAKEFILE.splitlines() if re.match(r"^\w+\s*[:?]?=", line)]
    direct = [line.strip() for line in commands if re.search(r"(python3?|\$\(PYTHON\))\s+tools/\w+\.py", line)]
    assert not direct, f"recipes that run a tool by its path (use $(CLI) NAME): {direct}"
    used = [name for line in commands for name in re.findall(r"\$\(CLI(?:_SYS|_OTTER)?\)\s+([\w-]+)", line)]
    assert set(used) <= set(cli.COMMANDS), sorted(set(used) - set(cli.COMMANDS))
    for name in ("test-parts", "check-outputs", "portable", "make-otter", "make-pdf", "site-check"):
        assert name in used, name


@pytest.fixture
def stand_ins(tmp_path):
    """A fake readers' stamp, instructors' stamp, pytest and make_otter, and one source of the assignments."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "pytest").write_text("#!/bin/sh\necho PYTEST\n")
    (bin_ / "pytest").chmod(0o755)
    for name in ("stamp", "otter-stamp", "source.py"):
        (tmp_path / name).write_text("")
    return tmp_path


def run_otter_extended(d: Path, made: Path) -> str:
    done = subprocess.run(
        ["make", "--no-print-directory", "-s", "test-otter-extended", f"STAMP={d / 'stamp'}",
         f"OTTER_STAMP={d / 'otter-stamp'}", f"BIN={d / 'bin'}", "CLI=echo REBUILT",
         f"OTTER_SOURCES={d / 'source.py'}", f"OTTER_MADE={made}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_otter_extended_rebuilds_assignments_older_than_their_sources(stand_ins):
    made = stand_ins / "source.json"
    assert "REBUILT" in run_otter_extended(stand_ins, made)                 # none made yet
    made.write_text("{}")
    os.utime(stand_ins / "source.py", (time.time() - 100, time.time() - 100))
    out = run_otter_extended(stand_ins, made)
    assert "REBUILT" not in out and "PYTEST" in out                         # up to date: reused
    os.utime(stand_ins / "source.py", (time.time() + 100, time.time() + 100))
    assert "REBUILT" in run_otter_extended(stand_ins, made)                 # a source changed since


def test_otter_extended_watches_what_the_assignments_are_made_from():
    sources = re.search(r"^OTTER_SOURCES := ((?:.*\\\n)*.*)$", MAKEFILE, re.M).group(1).replace("\\\n", " ").split()
    for path in ("tools/make_otter.py", "tools/bookkit", "instructors/hidden_tests.py",
                 "tools/grading_sandbox.py", "tools/course.py", "chapters"):
        assert path in sources, path
    tree = ast.parse((TOOLS / "make_otter.py").read_text(encoding="utf-8"))
    imported = {alias.name.split(".")[0] for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    for name in imported:
        if (TOOLS / f"{name}.py").exists():
            assert f"tools/{name}.py" in sources, f"make_otter imports tools/{name}.py"
