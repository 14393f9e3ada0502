#!/usr/bin/env python3
"""Check that each chapter notebook runs on its own, the way a reader runs it from
Colab or a downloaded .ipynb: no repository, no requirements.txt, only the
package's own declared dependencies.

Usage: python tools/check_standalone.py [NOTEBOOK ...]   (default: notebooks/*.ipynb)

By default it runs the portable notebooks in notebooks/ (``make portable`` writes
them from chapters/ with tools/portable.py; tests/test_portable.py fails when they
are stale): they are what Colab opens and what the download button gives, and they
have the chapters' code cells unchanged. Any notebook can be named instead.

What it does:

1. Makes a fresh virtual environment in a temporary directory with the machine's
   ``python3`` and installs into it only what a Jupyter front end provides
   (ipykernel, nbclient, nbformat); not requirements.txt, not ssmheads. It
   registers that environment's ipykernel under its own kernel name.
2. Copies the package source (the repository root, without .git, .venv, build
   output) into a snapshot directory and sets ``SSMHEADS_SOURCE`` to it. pip
   builds a local directory in place (it writes ``build/`` and
   ``lib/ssmheads.egg-info`` there), so building from the snapshot keeps the
   working tree untouched and keeps stale ``build/lib`` files out of the wheel.
3. For each notebook: uninstalls ssmheads from the environment, copies the
   notebook alone into an empty folder and executes it top to bottom with
   nbclient there, with that environment's kernel. The notebook's hidden set-up
   cell must install ssmheads (and, through pip, its declared dependencies from
   the package registry). Two probe cells, run in the same kernel before and
   after the notebook and removed before judging, check that the kernel is the
   fresh environment's interpreter, that ssmheads was not importable before the
   set-up cell, and that afterwards it is imported from the environment's
   site-packages and was installed from ``SSMHEADS_SOURCE``.

A notebook FAILS if a cell raises, if a cell other than the set-up cell writes
to stderr (a warning shows up that way), if a cell was not executed, or if the
ssmheads it ran with did not come from the set-up cell, or if that cell, having
installed it, did not print its advice to reload the browser tab. One line per notebook
gives its time and the numpy/scipy/matplotlib/ipywidgets versions pip resolved
(marked where they differ from requirements.txt); the last line reads
``standalone: N passed, M failed``. Exit status 1 if any notebook failed.

Network: pip uses its configured index (and its default cache, so a second run
is fast); nothing else is downloaded.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from queue import Empty, Queue

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from check_outputs import CELL_TIMEOUT, NBCLIENT_WAKEUP_FIX  # noqa: E402  (shared by the tools that run chapters)

KERNEL_NAME = "ssmheads-standalone"
# ipykernel below 7, as requirements.txt pins it and as Colab runs it (6.x); the readers' front
# ends are not what this tests
FRONT_END = ["ipykernel<7", "nbclient", "nbformat"]
REPORTED = ["numpy", "scipy", "matplotlib", "ipywidgets"]
PROBE_KEY = "check_standalone_probe"  # cell metadata key marking an injected probe cell
PROBE_PREFIX = "CHECK_STANDALONE_PROBE "  # the probe prints one line: this prefix, then JSON
# Left out of the source snapshot: VCS data, environments, build output, caches.
SNAPSHOT_IGNORE = (".git", ".venv", "venv", "_build", "build", "dist", "*.egg-info",
                   "__pycache__", ".pytest_cache", ".ipynb_checkpoints", "*.pyc")

# Run in the kernel before the notebook's first cell: which interpreter is this,
# and is ssmheads importable already? Defines no names in the notebook's namespace.
PROBE_BEFORE = f"""\
def _check_standalone_probe():
    import importlib.util, json, os, sys
    print({PROBE_PREFIX!r} + json.dumps({{
        "prefix": sys.prefix, "executable": sys.executable, "cwd": os.getcwd(),
        "ssmheads_importable": importlib.util.find_spec("ssmheads") is not None}}))
_check_standalone_probe()
del _check_standalone_probe
"""

# Run in the kernel after the notebook's last cell: where does ssmheads come from?
PROBE_AFTER = f"""\
def _check_standalone_probe():
    import importlib.metadata, json, sys
    out = {{"prefix": sys.prefix}}
    try:
        import ssmheads
        out["ssmheads_file"] = ssmheads.__file__
    except Exception as exc:
        out["ssmheads_error"] = repr(exc)
    try:
        dist = importlib.metadata.distribution("ssmheads")
        out["dist_location"] = str(dist.locate_file(""))
        out["direct_url"] = dist.read_text("direct_url.json")
    except Exception as exc:
        out["dist_error"] = repr(exc)
    print({PROBE_PREFIX!r} + json.dumps(out))
_check_standalone_probe()
del _check_standalone_probe
"""

# Runs with the fresh environment's python, cwd = the notebook's folder.
DRIVER = r'''
import json, os, sys, time
import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

nb_in, nb_out, meta_out, kernel_name, timeout, probe_key = sys.argv[1:7]
probes = json.loads(sys.argv[7])
exec(sys.argv[8], {})  # check_outputs.NBCLIENT_WAKEUP_FIX: nbclient#312's lost wake-up
spec = KernelSpecManager().get_kernel_spec(kernel_name)
# The kernel must run this environment's interpreter (compare the unresolved
# paths: every venv's python is a symlink to the same base interpreter).
assert spec.argv[0] == sys.executable, (spec.argv, sys.executable)
nb = nbformat.read(nb_in, as_version=4)
nb.cells.insert(0, nbformat.v4.new_code_cell(probes["before"], metadata={probe_key: "before"}))
nb.cells.append(nbformat.v4.new_code_cell(probes["after"], metadata={probe_key: "after"}))
client = NotebookClient(nb, kernel_name=kernel_name, timeout=int(timeout),
                        resources={"metadata": {"path": os.getcwd()}})
meta = {"exception": None, "kernel_argv": spec.argv}
start = time.perf_counter()
try:
    client.execute()
except Exception as exc:  # CellExecutionError, CellTimeoutError, DeadKernelError
    meta["exception"] = f"{type(exc).__name__}: {str(exc)[-2000:]}"
meta["seconds"] = time.perf_counter() - start
nbformat.write(nb, nb_out)
with open(meta_out, "w") as f:
    json.dump(meta, f)
'''

VERSIONS_SCRIPT = (
    "import importlib.metadata as m, json, sys\n"
    "def v(n):\n"
    "    try:\n        return m.version(n)\n"
    "    except m.PackageNotFoundError:\n        return None\n"
    "print(json.dumps({n: v(n) for n in sys.argv[1:]}))\n"
)


# ---------------------------------------------------------------- pure helpers


def default_notebooks(root: Path) -> list[Path]:
    """The portable chapter notebooks, ``root/notebooks/*.ipynb``, in order."""
    return sorted((root / "notebooks").glob("*.ipynb"))


def cell_source(cell: dict) -> str:
    """A cell's source as one string (nbformat JSON allows a string or a list of lines)."""
    src = cell.get("source", "")
    return src if isinstance(src, str) else "".join(src)


def output_text(output: dict) -> str:
    """The text of a stream output (a string or a list of strings in the JSON)."""
    text = output.get("text", "")
    return text if isinstance(text, str) else "".join(text)


#: What the set-up cell prints after installing ssmheads (tools/set_repository.py's RELOAD):
#: JupyterLab loads the widget front end pip has just installed only after a reload.
RELOAD_ADVICE = "reload this browser tab once"


def find_setup_cell(nb: dict) -> int | None:
    """Index of the set-up cell: the first code cell, if it reads SSMHEADS_SOURCE; else None.

    (Its text is written by tools/set_repository.py: ``SETUP_BLOCK``.)
    """
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") == "code":
            return i if "SSMHEADS_SOURCE" in cell_source(cell) else None
    return None


def setup_advice_problems(nb: dict, setup_index: int | None) -> list[str]:
    """The set-up cell installed ssmheads (as here, in a fresh environment): did it say to reload the tab?"""
    if setup_index is None:
        return []
    cell = nb["cells"][setup_index]
    printed = "".join(output_text(o) for o in cell.get("outputs", [])
                      if o.get("output_type") == "stream" and o.get("name") == "stdout")
    if RELOAD_ADVICE not in printed:
        return ["the set-up cell installed ssmheads but did not print the advice to reload the browser "
                f"tab ({RELOAD_ADVICE!r}) for the explorers' sliders"]
    return []


def split_probes(nb: dict) -> tuple[dict, dict[str, dict | None]]:
    """Remove the injected probe cells from an executed notebook.

    Returns the notebook without them (a shallow copy; cell indices are the
    original notebook's again) and ``{"before": data, "after": data}``, where data
    is the JSON a probe printed, or None if it did not run or printed nothing.
    """
    cells, found = [], {"before": None, "after": None}
    for cell in nb.get("cells", []):
        which = cell.get("metadata", {}).get(PROBE_KEY)
        if which is None:
            cells.append(cell)
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and out.get("name") == "stdout":
                for line in output_text(out).splitlines():
                    if line.startswith(PROBE_PREFIX):
                        found[which] = json.loads(line[len(PROBE_PREFIX):])
    return {**nb, "cells": cells}, found


def _label(i: int, cell: dict) -> str:
    first = next((ln.strip() for ln in cell_source(cell).splitlines() if ln.strip()), "")
    return f"cell {i + 1} ({first[:50]!r})"


def _excerpt(text: str, lines: int = 4) -> str:
    kept = [ln for ln in text.strip().splitlines() if ln.strip()]
    more = f" [... {len(kept) - lines} more lines]" if len(kept) > lines else ""
    return " | ".join(kept[:lines]) + more


def notebook_problems(nb: dict, setup_index: int | None) -> list[str]:
    """What is wrong with an executed notebook's outputs (probes removed); empty if nothing.

    * an ``error`` output in any cell (the set-up cell included);
    * a ``stderr`` stream in any code cell except the set-up cell (pip's notices
      there are tolerated; a warning anywhere else is a failure);
    * a non-empty code cell that was not executed (execution stopped before it).
    """
    problems = []
    if setup_index is None:
        problems.append("no set-up cell: the first code cell does not read SSMHEADS_SOURCE")
    stopped = False
    for i, cell in enumerate(nb.get("cells", [])):
        if cell.get("cell_type") != "code":
            continue
        for out in cell.get("outputs", []):
            kind = out.get("output_type")
            if kind == "error":
                stopped = True
                problems.append(f"{_label(i, cell)} raised {out.get('ename')}: {out.get('evalue')}")
            elif kind == "stream" and out.get("name") == "stderr" and i != setup_index:
                problems.append(f"{_label(i, cell)} wrote to stderr: {_excerpt(output_text(out))}")
        if cell.get("execution_count") is None and cell_source(cell).strip() and not stopped:
            stopped = True
            problems.append(f"{_label(i, cell)} was not executed (execution stopped before it)")
    return problems


def setup_stderr(nb: dict, setup_index: int | None) -> str:
    """What the set-up cell wrote to stderr, colour codes removed (tolerated; shown with --verbose)."""
    if setup_index is None:
        return ""
    cell = nb["cells"][setup_index]
    text = "".join(output_text(o) for o in cell.get("outputs", [])
                   if o.get("output_type") == "stream" and o.get("name") == "stderr")
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def cell_seconds(cell: dict) -> float | None:
    """How long a cell ran, from the timestamps nbclient records in its metadata (None if absent)."""
    from datetime import datetime
    timing = cell.get("metadata", {}).get("execution", {})
    try:
        start, end = (datetime.fromisoformat(timing[k].replace("Z", "+00:00"))
                      for k in ("iopub.execute_input", "shell.execute_reply"))
    except (KeyError, ValueError):
        return None
    return (end - start).total_seconds()


def _inside(path: str, directory: str) -> bool:
    """Is ``path`` under ``directory``? Symlinks are not resolved: a venv's bin/python is
    a symlink to the base interpreter, and resolving it would hide which environment it is."""
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return os.path.commonpath([path, directory]) == directory


def file_url_path(url: str) -> str:
    """``file:///a/b`` -> ``/a/b`` (what pip writes to direct_url.json for a local directory)."""
    from urllib.parse import unquote, urlparse
    parsed = urlparse(url)
    return unquote(parsed.path) if parsed.scheme == "file" else ""


def kernel_problems(before: dict | None, venv: str) -> list[str]:
    """Was the kernel the fresh environment's interpreter, without ssmheads, before the set-up cell?

    ``before`` is the JSON the first probe printed (None if it did not run);
    ``venv`` is the environment's directory.
    """
    if before is None:
        return ["the probe before the notebook did not run: the kernel was not checked"]
    problems = []
    if not _inside(before["prefix"], venv) or not _inside(before["executable"], venv):
        problems.append(f"the kernel runs {before['executable']} (prefix {before['prefix']}), "
                        f"not the fresh environment {venv}")
    if before["ssmheads_importable"]:
        problems.append("ssmheads was importable before the set-up cell ran")
    return problems


def origin_problems(after: dict | None, venv: str, source: str) -> list[str]:
    """Did the ssmheads the notebook ran with come from the set-up cell's install?

    ``after`` is the JSON the last probe printed (None if it did not run);
    ``source`` is the SSMHEADS_SOURCE path. Together with :func:`kernel_problems`
    (ssmheads absent before the set-up cell) this says the set-up cell installed it.
    """
    if after is None:
        return ["the probe after the notebook did not run: where ssmheads came from is unknown"]
    problems = []
    if "ssmheads_error" in after:
        problems.append(f"after the notebook, import ssmheads fails: {after['ssmheads_error']}")
    elif not _inside(after["ssmheads_file"], venv):
        problems.append(f"the kernel imported ssmheads from {after['ssmheads_file']}, "
                        f"not from the fresh environment {venv}")
    if "dist_error" in after:
        return problems + [f"no installed ssmheads distribution: {after['dist_error']}"]
    if not _inside(after["dist_location"], venv):
        problems.append(f"the ssmheads distribution is in {after['dist_location']}, not in {venv}")
    raw = after.get("direct_url")
    if not raw:
        return problems + ["the installed ssmheads has no direct_url.json: not installed from SSMHEADS_SOURCE"]
    direct = json.loads(raw)
    origin = file_url_path(direct.get("url", ""))
    if not origin or os.path.realpath(origin) != os.path.realpath(source):
        problems.append(f"ssmheads was installed from {direct.get('url')}, not from {source}")
    if direct.get("dir_info", {}).get("editable"):
        problems.append("ssmheads was installed editable; the set-up cell installs a regular copy")
    return problems


def read_pins(requirements: str) -> dict[str, str]:
    """``name==version`` pins of a requirements file, keyed by normalized name."""
    pins = {}
    for line in requirements.splitlines():
        m = re.match(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s;#]+)", line)
        if m:
            pins[normalize(m.group(1))] = m.group(2)
    return pins


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def format_versions(versions: dict[str, str | None], pins: dict[str, str]) -> str:
    """``numpy 2.4.6, scipy 1.17.1 (pin 1.16.0), ...``: what pip resolved, pin shown where it differs."""
    parts = []
    for name, version in versions.items():
        pin = pins.get(normalize(name))
        text = f"{name} {version or 'not installed'}"
        if pin and version != pin:
            text += f" (requirements.txt pins {pin})"
        parts.append(text)
    return ", ".join(parts)


def result_line(name: str, ok: bool, seconds: float, setup_seconds: float | None, versions: str) -> str:
    """One notebook's line: name, OK/FAILED, time in all (and in the set-up cell), versions."""
    setup = f"(set-up {setup_seconds:5.1f} s)" if setup_seconds is not None else "(set-up     - s)"
    return f"{name:<28} {'OK' if ok else 'FAILED':<6} {seconds:6.1f} s {setup}   {versions}"


def summary_line(passed: int, failed: int) -> str:
    return f"standalone: {passed} passed, {failed} failed"


# ------------------------------------------------------------- the real run


class SetupError(RuntimeError):
    pass


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    proc = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if proc.returncode != 0:
        raise SetupError(f"{' '.join(map(str, cmd))} exited {proc.returncode}:\n{proc.stdout}{proc.stderr}")
    return proc


def clean_env(venv: Path, work: Path, source: Path) -> dict[str, str]:
    """The driver's (and so the kernel's) environment: the fresh venv first on PATH,
    nothing from the repository's environment, no user Jupyter/IPython configuration.
    pip's own configuration (PIP_* variables, pip.conf) is kept: it names the registry."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV", "CONDA_PREFIX",
                        "JUPYTER_PATH", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "IPYTHONDIR",
                        "MPLBACKEND", "PYTHONWARNINGS")}
    env.update({
        "VIRTUAL_ENV": str(venv),
        "PATH": f"{venv / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONNOUSERSITE": "1",
        "JUPYTER_PREFER_ENV_PATH": "1",
        "JUPYTER_PLATFORM_DIRS": "1",
        "JUPYTER_CONFIG_DIR": str(work / "jupyter-config"),
        "JUPYTER_RUNTIME_DIR": str(work / "jupyter-runtime"),
        "IPYTHONDIR": str(work / "ipython"),
        "SSMHEADS_SOURCE": str(source),
    })
    return env


def make_venv(python: str, work: Path, env: dict[str, str]) -> Path:
    venv = work / "venv"
    run([python, "-m", "venv", str(venv)], env=env)
    py = str(venv / "bin" / "python")
    run([py, "-m", "pip", "install", "--quiet", *FRONT_END], env=env)
    run([py, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL_NAME,
         "--display-name", "Python 3 (standalone check)"], env=env)
    return venv


def snapshot_source(root: Path, work: Path) -> Path:
    dest = work / "source"
    shutil.copytree(root, dest, ignore=shutil.ignore_patterns(*SNAPSHOT_IGNORE), symlinks=True)
    return dest


def installed_versions(py: str, names: list[str], env: dict[str, str]) -> dict[str, str | None]:
    return json.loads(run([py, "-c", VERSIONS_SCRIPT, *names], env=env).stdout)


def check_notebook(path: Path, venv: Path, work: Path, source: Path, env: dict[str, str],
                   timeout: int) -> tuple[list[str], float, float | None, str]:
    """Execute one notebook alone in the fresh environment.

    Returns (problems, seconds in all, seconds in the set-up cell, set-up cell's stderr)."""
    py = str(venv / "bin" / "python")
    run([py, "-m", "pip", "uninstall", "--quiet", "--yes", "ssmheads"], env=env)
    absent = subprocess.run([py, "-c", "import importlib.util as u, sys; "
                             "sys.exit(u.find_spec('ssmheads') is not None)"], env=env)
    if absent.returncode != 0:
        return ["ssmheads is still importable in the fresh environment after pip uninstall"], 0.0, None, ""
    folder = Path(tempfile.mkdtemp(prefix=f"{path.stem}-", dir=work))
    shutil.copy2(path, folder / path.name)  # the notebook alone, unchanged
    driver = work / "driver.py"
    nb_out, meta_out = work / f"{path.stem}.executed.ipynb", work / f"{path.stem}.meta.json"
    probes = json.dumps({"before": PROBE_BEFORE, "after": PROBE_AFTER})
    proc = subprocess.run([py, str(driver), str(folder / path.name), str(nb_out), str(meta_out),
                           KERNEL_NAME, str(timeout), PROBE_KEY, probes, NBCLIENT_WAKEUP_FIX],
                          cwd=folder, env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not meta_out.exists():
        return [f"the driver failed (exit {proc.returncode}): {_excerpt(proc.stderr, 12)}"], 0.0, None, ""
    meta = json.loads(meta_out.read_text())
    executed = json.loads(nb_out.read_text())
    nb, probe = split_probes(executed)
    setup = find_setup_cell(nb)
    problems = notebook_problems(nb, setup)
    if meta["exception"] and (meta["exception"].startswith("CellTimeoutError")
                              or not any(" raised " in p for p in problems)):
        # a cell that timed out shows as one that raised KeyboardInterrupt (nbclient interrupts it)
        problems.append(f"execution stopped: {_excerpt(meta['exception'], 6)}")
    problems += kernel_problems(probe["before"], str(venv))
    if not problems:
        problems += setup_advice_problems(nb, setup)
    if not problems or probe["after"] is not None:  # after an error, a missing probe says nothing new
        problems += origin_problems(probe["after"], str(venv), str(source))
    setup_time = cell_seconds(nb["cells"][setup]) if setup is not None else None
    return problems, meta["seconds"], setup_time, setup_stderr(nb, setup)


def make_slot(python: str, wdir: Path) -> tuple[Path, dict[str, str], Path, Path]:
    """A worker's folder, environment variables, fresh venv (with the driver script) and its own
    copy of the source: pip builds in the source folder (lib/ssmheads.egg-info, build/), so two
    workers installing from one folder at once can break each other's build."""
    wdir.mkdir(parents=True)
    source = snapshot_source(ROOT, wdir)
    env = clean_env(wdir / "venv", wdir, source)
    (wdir / "driver.py").write_text(DRIVER)
    return wdir, env, make_venv(python, wdir, env), source


def check_with_rerun(path: Path, venv: Path, work: Path, source: Path, env: dict[str, str], timeout: int,
                     pins: dict[str, str]) -> tuple[list[str], float, float | None, str, str]:
    """:func:`check_notebook`, once more if a cell timed out; also the versions pip resolved."""
    for attempt in (1, 2):
        try:
            problems, seconds, setup_time, pip_err = check_notebook(path, venv, work, source, env, timeout)
        except SetupError as exc:
            problems, seconds, setup_time, pip_err = [str(exc)], 0.0, None, ""
        # nbclient sometimes waits for the reply to a cell that has finished, the kernel idle
        # (nbclient#312; seen in Chapter 1 and 3, under ipykernel 6 and 7): run it once more.
        if attempt == 1 and any("CellTimeoutError" in p or "TimeoutError" in p for p in problems):
            print(f"{path.name}: a cell timed out after {timeout} s; running the notebook once more", flush=True)
            continue
        break
    versions = format_versions(installed_versions(str(venv / "bin" / "python"), REPORTED, env), pins)
    return problems, seconds, setup_time, pip_err, versions


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path,
                        help="notebooks to check (default: notebooks/*.ipynb, the portable chapters)")
    parser.add_argument("--python", default=shutil.which("python3") or "python3",
                        help="interpreter for the fresh environment (default: python3 on PATH)")
    parser.add_argument("--timeout", type=int, default=CELL_TIMEOUT,
                        help=f"seconds allowed per cell (default {CELL_TIMEOUT}, as for every tool that runs the "
                             "chapters; the slowest cell, the set-up cell's pip install, takes about 15 s); a "
                             "notebook with a cell that times out is run once more")
    parser.add_argument("--workers", type=int, default=2,
                        help="notebooks run at a time, each in its own fresh environment (default 2)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory and say where")
    parser.add_argument("-v", "--verbose", action="store_true", help="also show the set-up cell's stderr")
    args = parser.parse_args(argv)
    notebooks = [p.resolve() for p in args.notebooks] or default_notebooks(ROOT)
    if not notebooks:
        print("standalone: no notebooks found (notebooks/ is empty: run make portable)")
        return 1
    pins_file = ROOT / "requirements.txt"
    pins = read_pins(pins_file.read_text()) if pins_file.exists() else {}

    start = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="check_standalone-"))
    workers = max(1, min(args.workers, len(notebooks)))
    results: dict[Path, tuple[list[str], float, float | None, str, str]] = {}
    try:
        try:
            # one fresh environment per worker: each notebook uninstalls ssmheads from its
            # environment and its set-up cell installs it again, so workers cannot share one
            with ThreadPoolExecutor(workers) as pool:
                slots = list(pool.map(lambda i: make_slot(args.python, work / f"w{i}"), range(workers)))
        except SetupError as exc:
            print(f"standalone: could not set up the fresh environment\n{exc}")
            print(summary_line(0, len(notebooks)))
            return 1
        py = str(slots[0][2] / "bin" / "python")
        tools = installed_versions(py, ["pip", *(re.split(r"[<>=!]", f)[0] for f in FRONT_END)], slots[0][1])
        pyver = run([py, "-c", "import platform; print(platform.python_version())"], env=slots[0][1]).stdout.strip()
        print(f"fresh environment ({workers} of them, one per notebook run at a time): Python {pyver} "
              f"({args.python}), " + ", ".join(f"{k} {v}" for k, v in tools.items())
              + f"; ready in {time.perf_counter() - start:.1f} s")
        print(f"SSMHEADS_SOURCE = snapshot of {ROOT}", flush=True)
        queue: Queue = Queue()
        for path in notebooks:
            queue.put(path)

        def work_through(slot) -> None:
            wdir, env, venv, source = slot
            while True:
                try:
                    path = queue.get_nowait()
                except Empty:
                    return
                results[path] = check_with_rerun(path, venv, wdir, source, env, args.timeout, pins)
                problems, seconds, setup_time, _, versions = results[path]
                print(result_line(path.name, not problems, seconds, setup_time, versions), flush=True)

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(work_through, slots))
        passed = failed = 0
        print("in the notebooks' order:")
        for path in notebooks:
            problems, seconds, setup_time, pip_err, versions = results[path]
            print(result_line(path.name, not problems, seconds, setup_time, versions))
            for problem in problems:
                print(f"    {problem}")
            if args.verbose and pip_err.strip():
                print("    set-up cell stderr (tolerated):")
                for line in pip_err.strip().splitlines():
                    print(f"      {line}")
            passed, failed = passed + (not problems), failed + bool(problems)
    finally:
        if args.keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print(f"total {time.perf_counter() - start:.1f} s")
    print(summary_line(passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
