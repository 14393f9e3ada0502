"""A process that imports Otter once and forks an ``otter`` command per submission.

``otter run`` spends about 2 s of CPU importing Otter, nbconvert and Jupyter's client before it
grades anything; for 100 submissions that is a quarter of ``make grade``'s time. This process
(run in Otter's environment, ``.venv-otter``, by ``tools/otter_grade.py``) imports them once,
then reads one job per line on its standard input, a JSON object

    {"argv": [...], "cwd": "...", "env": {...}, "timeout": seconds, "stdout": path, "stderr": path}

forks a child that runs ``otter <argv>`` in ``cwd`` with the environment ``env`` and its output
in the two files, waits for it (killing it after ``timeout`` seconds), and answers with one line

    {"returncode": int, "cpu": seconds, "timeout": bool}

where ``cpu`` is the child's user and system time and that of the processes it waited for (its
kernel), as ``os.wait4`` reports. The child starts with what a fresh ``otter run`` would have
(the zygote has run no grading and holds no state of an earlier submission: each child is forked
from the same imported, untouched parent). An empty line or the end of the input ends it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time

import otter.cli  # noqa: F401  (the imports every child would otherwise repeat)
import otter.execute  # noqa: F401
import otter.run.run_autograder  # noqa: F401
import otter.run.run_autograder.runners.python_runner  # noqa: F401
import nbconvert.preprocessors  # noqa: F401
import nbclient  # noqa: F401
import jupyter_client  # noqa: F401
import dill  # noqa: F401


def _child(job: dict) -> None:
    """Run ``otter <argv>`` in this (forked) process; never returns."""
    code = 1
    try:
        os.setsid()
        os.chdir(job["cwd"])
        os.environ.clear()
        os.environ.update(job["env"])
        for fd, path in ((1, job["stdout"]), (2, job["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        sys.stdin = open(0, closefd=False)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        sys.argv = ["otter", *job["argv"]]
        try:
            otter.cli.cli.main(args=job["argv"], prog_name="otter", standalone_mode=True)
            code = 0
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    except BaseException as error:     # noqa: BLE001 (reported as the command's error, as a crash would be)
        try:
            print(f"{type(error).__name__}: {error}", file=sys.stderr)
        except Exception:
            pass
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def run(job: dict) -> dict:
    """Fork a child for ``job``, wait for it, and say how it ended (see the module's docstring)."""
    pid = os.fork()
    if pid == 0:
        _child(job)
    deadline = time.monotonic() + float(job["timeout"])
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            return {"returncode": os.waitstatus_to_exitcode(status), "timeout": False,
                    "cpu": usage.ru_utime + usage.ru_stime}
        if time.monotonic() > deadline:
            try:
                os.killpg(pid, signal.SIGKILL)      # the child and its kernel (same session)
            except ProcessLookupError:
                pass
            _, status, usage = os.wait4(pid, 0)
            return {"returncode": -9, "timeout": True, "cpu": usage.ru_utime + usage.ru_stime}
        time.sleep(0.05)


def serve() -> int:
    """Answer jobs until the input ends (a helper process of tools/otter_grade.py, not a command)."""
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        if not line.strip():
            break
        print(json.dumps(run(json.loads(line))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(serve())
