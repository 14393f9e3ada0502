"""What every exercise check shares: the result type and the calling discipline.

Each ``check_*`` function takes the student's answer (usually a function they
wrote), tests it on several cases against a reference, and returns a
:class:`CheckResult`. A result is truthy only when the answer passed, so a
solution cell can end in ``assert result``. An untouched stub (a function whose
body is ``...``, or ``None``) is reported as "not attempted yet", never as a
traceback.

Calling the answer, reading its result and comparing it are the public helpers of
``ssmheads.exercises.checking`` (which the hidden tests use too); ``_call``,
``_numeric`` and ``_compare`` are those helpers worded as the visible checks word them.
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator

import numpy as np

from .checking import call, compare, is_stub, real_array

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


#: How the visible checks word two of :func:`~ssmheads.exercises.checking.real_array`'s messages.
_VISIBLE_WORDING = {"type": "{what}: expected a numeric array of shape {shape}; got {kind}",
                    "nonfinite": "{what}: expected finite numbers; your array contains NaN or infinity"}

_is_stub = is_stub


def _call(answer: Callable, label: str, *args):
    """Call the student's function; stubs and student errors become results, not tracebacks."""
    return call(answer, label, *args, not_attempted=NOT_ATTEMPTED, error=_Fail)


def _numeric(got, shape: tuple, what: str, messages: dict | None = None, **options) -> np.ndarray:
    """The answer as a finite float array of the expected shape, or a failure saying what was expected."""
    return real_array(got, shape, what, messages={**_VISIBLE_WORDING, **(messages or {})}, error=_Fail, **options)


def _compare(got, expected: np.ndarray, what: str, rtol: float = 1e-9, **options) -> None:
    """:func:`~ssmheads.exercises.checking.compare` after :func:`_numeric`, worded as the visible checks word it."""
    options = {"digits": 6, "note": "", **options}
    compare(_numeric(got, expected.shape, what), expected, what, rtol=rtol, error=_Fail, **options)


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
