"""tools/check_outputs.py: nbval under two numerical set-ups, a timed-out notebook checked once more."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("check_outputs", ROOT / "tools" / "check_outputs.py")
check_outputs = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_outputs)


def _notebook(path: Path, sources_and_outputs) -> Path:
    cells = [nbformat.v4.new_code_cell(src, execution_count=i + 1,
                                       outputs=[nbformat.v4.new_output("stream", name="stdout", text=out)])
             for i, (src, out) in enumerate(sources_and_outputs)]
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(ROOT / "tools" / "check_outputs.py"), *args],
                          capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_the_two_setups_differ_in_blas_kernel_and_numpy_simd():
    portable = check_outputs.SETUPS["portable"]
    assert check_outputs.SETUPS["native"] == {}
    assert portable["OPENBLAS_CORETYPE"] == "Sandybridge" and portable["OPENBLAS_NUM_THREADS"] == "1"
    assert "X86_V3" in portable["NPY_DISABLE_CPU_FEATURES"].split()


def test_make_test_checks_the_outputs_under_both_setups_and_the_readme_says_which():
    makefile = (ROOT / "Makefile").read_text()
    nbval = makefile.split("NBVAL :=")[1].splitlines()[0]
    assert "check-outputs" in nbval or "tools/check_outputs.py" in nbval
    assert "--setup" not in nbval  # both set-ups
    readme = (ROOT / "README.md").read_text()
    assert "Sandybridge" in readme and "Haswell" in readme and "SkylakeX" in readme


@pytest.mark.extended  # runs nbval on planted notebooks: make test-extended
def test_a_kernel_dependent_output_fails_in_the_portable_setup(tmp_path):
    """A cell printing the last bits of a matrix product (the BLAS kernel) fails where they differ."""
    code = ("import numpy as np\na = np.random.default_rng(0).standard_normal((200, 200))\n"
            "print((a @ a)[3].sum().hex())")
    native = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    import os
    env = dict(os.environ, **check_outputs.SETUPS["portable"])
    portable = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env).stdout
    if native == portable:
        pytest.skip("this machine's BLAS kernel sums like OpenBLAS's Sandybridge kernel")
    nb = _notebook(tmp_path / "bits.ipynb", [(code, native)])
    done = _run("--setup", "native", "--setup", "portable", str(nb))
    assert done.returncode == 1
    assert "native: passed" in done.stdout and "portable: FAILED" in done.stdout


@pytest.mark.extended  # waits out a cell timeout: make test-extended
def test_a_notebook_whose_cell_timed_out_is_checked_once_more(tmp_path):
    flag = tmp_path / "slept"
    slow = _notebook(tmp_path / "slow.ipynb", [
        (f"import os, time\nif not os.path.exists({str(flag)!r}):\n"
         f"    open({str(flag)!r}, 'w').close(); time.sleep(60)\nprint('ok')", "ok\n"),
        ("print(1)", "1\n")])
    fast = _notebook(tmp_path / "fast.ipynb", [("print(2)", "2\n")])
    done = _run("--setup", "native", "--cell-timeout", "4", str(slow), str(fast))
    assert "a cell timed out in slow.ipynb; checking it once more" in done.stdout, done.stdout[-2000:]
    assert done.returncode == 0 and "native: passed" in done.stdout


@pytest.mark.extended  # runs nbval on planted notebooks: make test-extended
def test_a_wrong_output_is_not_run_again(tmp_path):
    wrong = _notebook(tmp_path / "wrong.ipynb", [("print(3)", "4\n")])
    done = _run("--setup", "native", str(wrong))
    assert done.returncode == 1 and "once more" not in done.stdout and "native: FAILED" in done.stdout
