"""Checks of the Chapter 2 exercises (the rank gap)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._common import FAILED, NOT_ATTEMPTED, PASSED, CheckResult, _call, _Fail, _is_stub, _run


def _lag_span_cases():
    """(label, (A, B, C, n), expected k) for the lag-span exercise; answers are exact integers."""
    from ..systems import diagonal, plateau, random_stable, random_with_lag_rank, rotation

    cases = []
    for theta, n, k in ((1.0, 1, 1), (1.0, 5, 2), (np.pi, 5, 1)):
        s = rotation(theta, rho=0.9)
        cases.append((f"rotation(theta={theta:.4g}), n={n}", (s.A, s.B, s.C, n), k))
    s = diagonal([0.9, 0.5, 0.5, -0.3])
    cases.append(("diagonal([0.9, 0.5, 0.5, -0.3]), n=6", (s.A, s.B, s.C, 6), 3))
    s = plateau()
    for n, k in ((2, 1), (3, 2)):
        cases.append((f"plateau(), n={n}", (s.A, s.B, s.C, n), k))
    s = random_stable(5, 1, 1, seed=1)
    cases.append(("a random SISO system, n=8", (s.A, s.B, s.C, 8), 1))
    cases.append(("B = 0, n=4", (s.A, np.zeros((5, 2)), np.ones((3, 5)), 4), 0))
    s = random_with_lag_rank(5, 3, 2, seed=2)
    cases.append(("random_with_lag_rank(5, 3, 2), n=9", (s.A, s.B, s.C, 9), 5))
    return cases


def check_lag_span_dimension(lag_span_dimension: Callable) -> CheckResult:
    """Chapter 2, exercise "lag span by hand": compute ``k(n)`` yourself.

    The answer is a function ``lag_span_dimension(A, B, C, n)`` returning the
    integer ``dim span{C A^l B : l < n}``.
    """
    def expect(k):
        def test(out, label):
            try:
                value = int(out)
            except (TypeError, ValueError, OverflowError):
                raise _Fail(f"{label}: expected an integer; got {type(out).__name__}") from None
            if value != out or value != k:
                raise _Fail(f"{label}: k(n) should be {k}; got {out!r}")
        return test

    cases = [(f"lag_span_dimension on {label}", args, expect(k)) for label, args, k in _lag_span_cases()]
    return _run("Chapter 2: lag span by hand", lag_span_dimension, cases,
                f"correct k(n) on {len(cases)} systems (rotations, repeats, plateau, SISO, B = 0)")


def _system_profile(make_system: Callable, label: str, p: int | None, d: int | None, n: int):
    """Call the student's system factory and return its k(1..n), checking shapes and stability."""
    from ..models import LinearSSM
    from ..span import lag_span_profile

    out = _call(make_system, label)
    if out is NOT_ATTEMPTED:
        return NOT_ATTEMPTED
    try:
        A, B, C = out
        ssm = LinearSSM(A, B, C)
    except (TypeError, ValueError) as exc:
        raise _Fail(f"{label}: expected a tuple (A, B, C) of compatible real matrices ({exc})") from None
    if p is not None and (ssm.p, ssm.d) != (p, d):
        raise _Fail(f"{label}: expected p = {p} output and d = {d} input channels; got p = {ssm.p}, d = {ssm.d}")
    if not ssm.spectral_radius < 1:
        raise _Fail(f"{label}: the system must be stable (spectral radius < 1); got {ssm.spectral_radius:.3g}")
    return lag_span_profile(ssm.A, ssm.B, ssm.C, n).tolist()


def _check_design(exercise: str, make_system: Any, p, d, target: list[int], summary: str) -> CheckResult:
    if _is_stub(make_system):
        return CheckResult(exercise, NOT_ATTEMPTED, "replace the stub with your answer, then run this cell again")
    if not callable(make_system):
        return CheckResult(exercise, FAILED, f"expected a function; got {type(make_system).__name__}")
    label = f"{getattr(make_system, '__name__', 'your function')}()"
    try:
        profile = _system_profile(make_system, label, p, d, len(target))
    except _Fail as failure:
        return CheckResult(exercise, FAILED, str(failure))
    if profile is NOT_ATTEMPTED:
        return CheckResult(exercise, NOT_ATTEMPTED, "your function returns nothing yet; fill in its body")
    if profile != target:
        return CheckResult(exercise, FAILED, f"k(1..{len(target)}) should be {target}; yours is {profile}")
    return CheckResult(exercise, PASSED, summary)


def check_rank_three_system(make_system: Callable) -> CheckResult:
    """Chapter 2, exercise "three dimensions from two channels".

    The answer is a function of no arguments returning ``(A, B, C)``: a stable SSM
    with ``p = d = 2`` whose lag-span dimension is ``k(n) = min(n, 3)``.
    """
    target = [1, 2, 3, 3, 3, 3]
    return _check_design("Chapter 2: three dimensions from two channels", make_system, 2, 2, target,
                         f"stable, p = d = 2, and k(1..6) = {target}")


def check_long_plateau(make_system: Callable) -> CheckResult:
    """Chapter 2, exercise "a longer plateau".

    The answer is a function of no arguments returning ``(A, B, C)``: a stable SSM
    (any widths) whose ``k(n)`` is 1 for ``n = 1, 2, 3`` and 2 from ``n = 4`` on.
    """
    target = [1, 1, 1, 2, 2, 2, 2]
    return _check_design("Chapter 2: a longer plateau", make_system, None, None, target,
                         f"stable, and k(1..7) = {target}")


