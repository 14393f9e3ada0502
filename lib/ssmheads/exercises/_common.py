"""What every exercise check shares: the result type and the calling discipline.

Each ``check_*`` function takes the student's answer (usually a function they
wrote), tests it on several cases against a reference, and returns a
:class:`CheckResult`. A result is truthy only when the answer passed, so a
solution cell can end in ``assert result``. An untouched stub (a function whose
body is ``...``, or ``None``) is reported as "not attempted yet", never as a
traceback.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numpy as np



PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"


@dataclass(frozen=True)
class CheckResult:
    """Outcome of an exercise check.

    Used in Chapter 1, Section 1.10 (and in the exercises of every chapter).

    Attributes
    ----------
    exercise : str
        Which exercise was checked.
    status : str
        ``"passed"``, ``"failed"`` or ``"not attempted yet"``.
    message : str
        What was tested, or what was expected and what the answer gave.
    """

    exercise: str
    status: str
    message: str

    def __bool__(self) -> bool:
        return self.status == PASSED

    def __str__(self) -> str:
        mark = {PASSED: "PASSED", FAILED: "NOT YET", NOT_ATTEMPTED: "NOT ATTEMPTED YET"}[self.status]
        return f"[{self.exercise}] {mark}\n  {self.message}"

    __repr__ = __str__


class _Fail(Exception):
    """Raised inside a check to stop at the first failed case."""


def _is_stub(value: Any) -> bool:
    return value is None or value is Ellipsis


def _call(answer: Callable, label: str, *args):
    """Call the student's function; stubs and student errors become results, not tracebacks."""
    try:
        out = answer(*args)
    except NotImplementedError:
        return NOT_ATTEMPTED
    except Exception as exc:  # the student's code failed: report it as feedback
        raise _Fail(f"{label} raised {type(exc).__name__}: {exc}") from None
    return NOT_ATTEMPTED if _is_stub(out) else out


def _numeric(got, shape: tuple, what: str) -> np.ndarray:
    """The answer as a finite float array of the expected shape, or a failure saying what was expected."""
    try:
        raw = np.asarray(got)
        if np.iscomplexobj(raw):
            raise _Fail(f"{what}: expected a real array of shape {shape}; got a complex array")
        got = raw.astype(float)
    except (TypeError, ValueError):
        raise _Fail(f"{what}: expected a numeric array of shape {shape}; got {type(got).__name__}") from None
    if got.shape != shape:
        raise _Fail(f"{what}: expected shape {shape}; got shape {got.shape}")
    if not np.all(np.isfinite(got)):
        raise _Fail(f"{what}: expected finite numbers; your array contains NaN or infinity")
    return got


def _compare(got, expected: np.ndarray, what: str, rtol: float = 1e-9) -> None:
    got = _numeric(got, expected.shape, what)
    scale = max(1.0, float(np.abs(expected).max()))
    bad = np.abs(got - expected) > rtol * scale
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise _Fail(f"{what}: entry {where} should be {expected[where]:.6g}; got {got[where]:.6g}")


def _run(exercise: str, answer: Any, cases: Iterable[tuple[str, tuple, Callable[[Any, str], None]]],
         summary: str) -> CheckResult:
    """Run ``answer(*args)`` on each ``(label, args, test)`` case and apply ``test(output, label)``."""
    if _is_stub(answer):
        return CheckResult(exercise, NOT_ATTEMPTED, "replace the stub with your answer, then run this cell again")
    if not callable(answer):
        return CheckResult(exercise, FAILED, f"expected a function; got {type(answer).__name__}")
    try:
        for label, args, test in cases:
            out = _call(answer, label, *args)
            if out is NOT_ATTEMPTED:
                return CheckResult(exercise, NOT_ATTEMPTED, "your function returns nothing yet; fill in its body")
            test(out, label)
    except _Fail as failure:
        return CheckResult(exercise, FAILED, str(failure))
    return CheckResult(exercise, PASSED, summary)




def _write_it_yourself(*args, **kwargs):
    # Only builtins here: this code object runs with the globals of the routine it replaces.
    raise RuntimeError("this check asks you to write it yourself: the library routine that computes "
                       "the answer is switched off while your answer runs")


@contextlib.contextmanager
def reference_routines_off(routines: Iterable[tuple[str, str]]) -> Iterator[None]:
    """Within the block, each library routine ``ssmheads.<module>.<name>`` raises ``RuntimeError``.

    ``routines`` is a sequence of ``(module, name)`` pairs; ``name`` may be dotted
    (``"Retention.forward"``) to name a method or a private helper. The function objects keep
    their identity; only their code is swapped for the block's duration, so the
    routine is switched off under every name it is reachable by (``ssmheads.f``,
    ``ssmheads.module.f``, a name bound earlier by ``from ssmheads import f``), and
    it works again after the block, also when the block raises.
    """
    import importlib

    functions = [functools.reduce(getattr, name.split("."), importlib.import_module(f"ssmheads.{module}"))
                 for module, name in routines]
    saved = [f.__code__ for f in functions]
    try:
        for f in functions:
            f.__code__ = _write_it_yourself.__code__
        yield
    finally:
        for f, code in zip(functions, saved):
            f.__code__ = code


def _on_its_own(answer, routines: Iterable[tuple[str, str]]):
    """``answer`` wrapped so that each call runs inside :func:`reference_routines_off`."""
    if _is_stub(answer) or not callable(answer):
        return answer
    routines = tuple(routines)

    @functools.wraps(answer)
    def guarded(*args):
        with reference_routines_off(routines):
            return answer(*args)

    return guarded
