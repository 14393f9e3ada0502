"""Unit tests of tools/check_standalone.py's helpers (no virtual environment is made here).

The full check (a fresh venv per run, every chapter executed alone) is slow and
needs the package registry; it runs as its own Makefile target.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_standalone", ROOT / "tools" / "check_standalone.py")
cs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(cs)

_spec_sr = importlib.util.spec_from_file_location("set_repository", ROOT / "tools" / "set_repository.py")
sr = importlib.util.module_from_spec(_spec_sr)
_spec_sr.loader.exec_module(sr)

# The chapters' set-up cell, as tools/set_repository.py writes it.
SETUP_SOURCE = "import importlib.util, os, subprocess, sys\n" + sr.setup_block("https://github.com/org/repo")


# ------------------------------------------------------------ notebook builders


def code(source, outputs=(), count=1, **metadata):
    return {"cell_type": "code", "source": source, "outputs": list(outputs),
            "execution_count": count, "metadata": dict(metadata)}


def markdown(source):
    return {"cell_type": "markdown", "source": source, "metadata": {}}


def stream(name, text):
    return {"output_type": "stream", "name": name, "text": text}


def error(ename="ValueError", evalue="bad"):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


def notebook(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def clean_notebook():
    return notebook(
        code(SETUP_SOURCE, [stream("stderr", "WARNING: pip says something\n")], count=1),
        markdown("# Title"),
        code("import ssmheads\nprint(1)", [stream("stdout", "1\n")], count=2),
        code("x = 2", count=3),
    )


# ------------------------------------------------------------ the set-up cell


def test_setup_cell_is_the_first_code_cell_reading_the_variable():
    nb = notebook(markdown("intro"), code(SETUP_SOURCE), code("import ssmheads"))
    assert cs.find_setup_cell(nb) == 1


def test_setup_cell_source_may_be_a_list_of_lines():
    nb = notebook(code(SETUP_SOURCE.splitlines(keepends=True)))
    assert cs.find_setup_cell(nb) == 0


def test_the_setup_cell_must_say_to_reload_the_tab_after_installing():
    installed = notebook(code(SETUP_SOURCE, [stream("stderr", "pip notice\n"), stream("stdout", sr.RELOAD + "\n")]))
    assert cs.RELOAD_ADVICE in sr.RELOAD
    assert cs.setup_advice_problems(installed, 0) == []
    silent = notebook(code(SETUP_SOURCE, [stream("stderr", "pip notice\n")]))
    (problem,) = cs.setup_advice_problems(silent, 0)
    assert "reload" in problem
    assert cs.setup_advice_problems(silent, None) == []       # no set-up cell: reported elsewhere


def test_no_setup_cell_when_the_first_code_cell_does_not_read_the_variable():
    nb = notebook(code("import ssmheads"), code(SETUP_SOURCE))
    assert cs.find_setup_cell(nb) is None
    assert cs.find_setup_cell(notebook(markdown("only prose"))) is None


# ------------------------------------------------------------ success or failure


def test_clean_notebook_has_no_problems():
    nb = clean_notebook()
    assert cs.notebook_problems(nb, cs.find_setup_cell(nb)) == []


def test_setup_cell_stderr_is_tolerated_and_returned_without_colour_codes():
    nb = notebook(code(SETUP_SOURCE, [stream("stderr", "\x1b[33mWARNING: notice\x1b[0m\n")]))
    assert cs.notebook_problems(nb, 0) == []
    assert cs.setup_stderr(nb, 0) == "WARNING: notice\n"
    assert cs.setup_stderr(nb, None) == ""


def test_stderr_outside_the_setup_cell_is_a_failure_that_shows_the_warning():
    nb = clean_notebook()
    nb["cells"][3]["outputs"] = [stream("stderr", ["/tmp/x.py:1: UserWarning: demo\n", "  warn()\n"])]
    problems = cs.notebook_problems(nb, 0)
    assert len(problems) == 1
    assert "cell 4" in problems[0] and "'x = 2'" in problems[0]
    assert "stderr" in problems[0] and "UserWarning: demo" in problems[0]


def test_stdout_is_not_a_failure():
    nb = clean_notebook()
    nb["cells"][3]["outputs"] = [stream("stdout", "anything\n")]
    assert cs.notebook_problems(nb, 0) == []


def test_an_error_is_a_failure_and_later_unexecuted_cells_are_not_reported_again():
    nb = clean_notebook()
    nb["cells"][2]["outputs"] = [error("ModuleNotFoundError", "No module named 'pandas'")]
    nb["cells"][3]["execution_count"] = None
    problems = cs.notebook_problems(nb, 0)
    assert problems == ["cell 3 ('import ssmheads') raised ModuleNotFoundError: No module named 'pandas'"]


def test_an_error_in_the_setup_cell_is_a_failure():
    nb = clean_notebook()
    nb["cells"][0]["outputs"].append(error("CalledProcessError", "pip exited 1"))
    problems = cs.notebook_problems(nb, 0)
    assert len(problems) == 1 and "CalledProcessError" in problems[0]


def test_an_unexecuted_cell_without_an_error_is_a_failure():
    nb = clean_notebook()  # e.g. execution stopped by a timeout or a dead kernel
    nb["cells"][2]["execution_count"] = None
    nb["cells"][2]["outputs"] = []
    nb["cells"][3]["execution_count"] = None
    problems = cs.notebook_problems(nb, 0)
    assert len(problems) == 1 and "cell 3" in problems[0] and "not executed" in problems[0]


def test_an_empty_unexecuted_cell_is_fine():
    nb = clean_notebook()
    nb["cells"].append(code("  \n", count=None))
    assert cs.notebook_problems(nb, 0) == []


def test_a_missing_setup_cell_is_a_failure():
    nb = notebook(code("import ssmheads", count=1))
    assert any("no set-up cell" in p for p in cs.notebook_problems(nb, None))


def test_cell_seconds_from_nbclient_timestamps():
    cell = code("x", execution={"iopub.execute_input": "2025-01-01T00:00:01.000000Z",
                                "shell.execute_reply": "2025-01-01T00:00:03.500000Z"})
    assert cs.cell_seconds(cell) == pytest.approx(2.5)
    assert cs.cell_seconds(code("x")) is None


# ------------------------------------------------------------ probe cells


def run_probe(source: str) -> tuple[str, dict]:
    namespace: dict = {}
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(source, namespace)
    namespace.pop("__builtins__", None)
    return out.getvalue(), namespace


@pytest.mark.parametrize("which", ["before", "after"])
def test_probes_print_json_that_split_probes_reads_and_leave_no_names(which):
    text, namespace = run_probe(cs.PROBE_BEFORE if which == "before" else cs.PROBE_AFTER)
    assert namespace == {}, "a probe must not change the notebook's namespace"
    nb = notebook(code("probe", [stream("stdout", text)], **{cs.PROBE_KEY: which}), code("x = 1"))
    rest, found = cs.split_probes(nb)
    assert rest["cells"] == [nb["cells"][1]]
    assert found[which]["prefix"]
    other = "after" if which == "before" else "before"
    assert found[other] is None


def test_split_probes_without_output_gives_none_and_keeps_the_notebook_order():
    cells = [code("a"), code("p", **{cs.PROBE_KEY: "before"}), code("b"), code("q", [], **{cs.PROBE_KEY: "after"})]
    rest, found = cs.split_probes(notebook(*cells))
    assert [c["source"] for c in rest["cells"]] == ["a", "b"]
    assert found == {"before": None, "after": None}


def test_the_driver_script_compiles():
    compile(cs.DRIVER, "driver.py", "exec")


# ------------------------------------------------------------ where ssmheads came from


@pytest.fixture
def venv(tmp_path):
    v = tmp_path / "venv"
    (v / "bin").mkdir(parents=True)
    (v / "bin" / "python").symlink_to(os.path.realpath(sys.executable))
    return v


def before_probe(venv, importable=False):
    return {"prefix": str(venv), "executable": str(venv / "bin" / "python"),
            "cwd": "/tmp/nb", "ssmheads_importable": importable}


def after_probe(venv, source, **changes):
    site = venv / "lib" / "python3.11" / "site-packages"
    data = {"prefix": str(venv), "ssmheads_file": str(site / "ssmheads" / "__init__.py"),
            "dist_location": str(site), "direct_url": json.dumps({"url": Path(source).as_uri(), "dir_info": {}})}
    data.update(changes)
    return data


def test_kernel_in_the_fresh_environment_is_accepted_although_its_python_is_a_symlink(venv):
    assert cs.kernel_problems(before_probe(venv), str(venv)) == []


def test_kernel_of_another_environment_is_a_failure(venv, tmp_path):
    other = tmp_path / "repo" / ".venv"
    probe = {"prefix": str(other), "executable": str(other / "bin" / "python"),
             "cwd": "/tmp/nb", "ssmheads_importable": False}
    problems = cs.kernel_problems(probe, str(venv))
    assert len(problems) == 1 and str(other) in problems[0]


def test_ssmheads_importable_before_the_setup_cell_is_a_failure(venv):
    problems = cs.kernel_problems(before_probe(venv, importable=True), str(venv))
    assert problems == ["ssmheads was importable before the set-up cell ran"]


def test_missing_before_probe_is_a_failure(venv):
    assert "did not run" in cs.kernel_problems(None, str(venv))[0]


def test_ssmheads_installed_from_the_source_is_accepted(venv, tmp_path):
    source = tmp_path / "source dir"  # a space: the URL is percent-encoded
    assert cs.origin_problems(after_probe(venv, source), str(venv), str(source)) == []


def test_ssmheads_imported_from_the_repository_is_a_failure(venv, tmp_path):
    source = tmp_path / "source"
    probe = after_probe(venv, source, ssmheads_file="/work/main/lib/ssmheads/__init__.py")
    problems = cs.origin_problems(probe, str(venv), str(source))
    assert len(problems) == 1 and "/work/main/lib/ssmheads" in problems[0]


def test_ssmheads_installed_from_elsewhere_or_editable_is_a_failure(venv, tmp_path):
    source = tmp_path / "source"
    elsewhere = after_probe(venv, source, direct_url=json.dumps({"url": "git+https://example.org/repo"}))
    assert "not from" in cs.origin_problems(elsewhere, str(venv), str(source))[0]
    editable = after_probe(venv, source, direct_url=json.dumps(
        {"url": source.as_uri(), "dir_info": {"editable": True}}))
    assert "editable" in cs.origin_problems(editable, str(venv), str(source))[0]
    registry = after_probe(venv, source, direct_url=None)
    assert "direct_url.json" in cs.origin_problems(registry, str(venv), str(source))[0]


def test_ssmheads_not_installed_after_the_notebook_is_a_failure(venv, tmp_path):
    probe = {"prefix": str(venv), "ssmheads_error": "ModuleNotFoundError('ssmheads')",
             "dist_error": "PackageNotFoundError('ssmheads')"}
    problems = cs.origin_problems(probe, str(venv), str(tmp_path))
    assert len(problems) == 2
    assert "did not run" in cs.origin_problems(None, str(venv), str(tmp_path))[0]


def test_file_url_path():
    assert cs.file_url_path("file:///tmp/a%20b/src") == "/tmp/a b/src"
    assert cs.file_url_path("https://example.org/x") == ""


# ------------------------------------------------------------ report lines


def test_read_pins_normalizes_names_and_skips_other_lines():
    text = "# comment\n-e .\nnumpy==2.4.6\nPyYAML==6.0.3  # yaml\njupyter_core==5.9.1\nscipy>=1.10\n"
    assert cs.read_pins(text) == {"numpy": "2.4.6", "pyyaml": "6.0.3", "jupyter-core": "5.9.1"}


def test_format_versions_marks_only_differences_from_the_pins():
    pins = {"numpy": "2.4.6", "scipy": "1.17.1"}
    text = cs.format_versions({"numpy": "2.4.6", "scipy": "1.16.0", "matplotlib": None}, pins)
    assert text == "numpy 2.4.6, scipy 1.16.0 (requirements.txt pins 1.17.1), matplotlib not installed"


def test_result_and_summary_lines():
    line = cs.result_line("01_x.ipynb", True, 12.34, 3.0, "numpy 2.4.6")
    assert line.split()[:3] == ["01_x.ipynb", "OK", "12.3"]
    assert "(set-up   3.0 s)" in line and line.endswith("numpy 2.4.6")
    assert " FAILED " in cs.result_line("01_x.ipynb", False, 1.0, None, "")
    assert cs.summary_line(4, 0) == "standalone: 4 passed, 0 failed"


# ------------------------------------------------------------ environment and source


def test_clean_env_drops_the_repository_environment_and_sets_the_source(monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", "/work/main/lib")
    monkeypatch.setenv("VIRTUAL_ENV", "/work/main/.venv")
    monkeypatch.setenv("PIP_INDEX_URL", "https://registry.example/simple")
    env = cs.clean_env(tmp_path / "venv", tmp_path, tmp_path / "source")
    assert "PYTHONPATH" not in env
    assert env["VIRTUAL_ENV"] == str(tmp_path / "venv")
    assert env["PATH"].split(os.pathsep)[0] == str(tmp_path / "venv" / "bin")
    assert env["SSMHEADS_SOURCE"] == str(tmp_path / "source")
    assert env["PIP_INDEX_URL"] == "https://registry.example/simple", "pip's configured index is kept"
    assert env["IPYTHONDIR"].startswith(str(tmp_path))


def test_snapshot_copies_the_package_source_without_build_output_or_environments(tmp_path):
    root = tmp_path / "repo"
    for name in ["pyproject.toml", "README.md", "lib/pkg/__init__.py", "lib/pkg.egg-info/PKG-INFO",
                 "lib/pkg/__pycache__/x.pyc", "build/lib/pkg/stale.py", ".venv/bin/python", ".git/HEAD",
                 "_build/html/index.html"]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("x")
    work = tmp_path / "work"
    work.mkdir()
    dest = cs.snapshot_source(root, work)
    copied = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert copied == ["README.md", "lib/pkg/__init__.py", "pyproject.toml"]


# ------------------------------------------------------------ which notebooks


def test_default_notebooks_are_the_portable_chapters(tmp_path):
    found = cs.default_notebooks(ROOT)
    assert [p.name for p in found] == sorted(p.name for p in (ROOT / "chapters").glob("*.ipynb"))
    for path in found:
        assert path.parent == ROOT / "notebooks"
        assert json.loads(path.read_text())["metadata"]["portable"]["kind"] == "reader", path.name
    assert cs.default_notebooks(tmp_path) == []
