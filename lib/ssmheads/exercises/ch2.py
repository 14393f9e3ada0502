"""Checks of the Chapter 2 exercises (the rank gap)."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ._common import FAILED, NOT_ATTEMPTED, PASSED, CheckResult, _call, _Fail, _is_stub, _on_its_own, _run

# The library routines that compute k(n): switched off while the student's own version runs.
SPAN_ROUTINES = (("span", "lag_span_dimension"), ("span", "lag_span_profile"), ("span", "interaction_rank"),
                 ("span", "singular_values"), ("span", "span_basis"), ("span", "lag_span_bound"),
                 ("span", "minimal_polynomial_degree"))


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
    # lags of very different sizes: a tolerance must be relative to the largest singular value
    s = rotation(1.0, rho=0.9)
    cases.append(("rotation(theta=1) with B = 1e-10 I (tiny lags), n=5", (s.A, 1e-10 * s.B, s.C, 5), 2))
    s = rotation(np.pi, rho=0.9)
    cases.append(("rotation(theta=pi) with C = 1e8 I (huge lags, rounding errors near 1e-8), n=5",
                  (s.A, s.B, 1e8 * s.C, 5), 1))
    return cases


def check_lag_span_dimension(lag_span_dimension: Callable) -> CheckResult:
    """Chapter 2, exercise "lag span by hand": compute ``k(n)`` yourself.

    The answer is a function ``lag_span_dimension(A, B, C, n)`` returning the
    integer ``dim span{C A^l B : l < n}``. It must not use ``ssmheads.span``:
    the library's span routines are switched off while it runs. The reference
    values are computed by the library before, outside that block.

    Used in Chapter 2, Exercise 2.1 (the lag span by hand).
    """
    from ..span import _lag_span_dimension

    def reference(A, B, C, n):
        return _lag_span_dimension(A, B, C, n, None)  # the cases are checked float arrays

    def expect(k, hint=""):
        def test(out, label):
            if isinstance(out, (str, bytes, bool, np.bool_)):
                raise _Fail(f"{label}: expected an integer; got {type(out).__name__} {out!r}: "
                            "return an int, such as int(np.sum(s > tol * s[0]))")
            try:
                value = int(out)
            except (TypeError, ValueError, OverflowError):
                raise _Fail(f"{label}: expected an integer; got {type(out).__name__}") from None
            if value != out or value != k:
                raise _Fail(f"{label}: k(n) should be {k}; got {out!r}{hint}")
        return test

    relative = ("; count the singular values above a tolerance RELATIVE to the largest one, "
                "not above a fixed number")
    cases = [(f"lag_span_dimension on {label}", args,
              expect(reference(*args), relative if "lags" in label else ""))
             for label, args, _ in _lag_span_cases()]
    return _run("Chapter 2: lag span by hand", _on_its_own(lag_span_dimension, SPAN_ROUTINES), cases,
                f"correct k(n) on {len(cases)} systems, without ssmheads.span:\n  rotations, "
                "repeats, plateau, SISO, B = 0, lags of size 1e-10 and 1e8")


def _system_profile(make_system: Callable, label: str, p: int | None, d: int | None, n_min: int):
    """Call the student's system factory; return its k(1..n) for ``n = max(N, n_min)`` and (A, B, C).

    The profile is checked up to at least the state size ``N``: ``k`` can grow at
    any ``n <= m <= N`` (Chapter 2's plateau), so a shorter check would accept a
    system whose profile grows again later.
    """
    from ..models import LinearSSM
    from ..span import _lag_span_profile

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
    profile = _lag_span_profile(ssm.A, ssm.B, ssm.C, max(ssm.N, n_min), None).tolist()
    return profile, (ssm.A, ssm.B, ssm.C)


def _rank(M: np.ndarray) -> int:
    return int(np.linalg.matrix_rank(M))


def _degree(A: np.ndarray) -> int:
    from ..span import _minimal_polynomial_degree

    return _minimal_polynomial_degree(A, None)


def _check_design(exercise: str, make_system: Any, p, d, target: Callable[[int], int], n_min: int,
                  summary: str, hint: Callable[..., str] | None = None) -> CheckResult:
    """``target(n)`` is the required k(n); the profile is checked for n = 1..max(N, n_min).

    ``hint(profile, A, B, C)`` (the checked arrays) says what is wrong when the profile is.
    """
    if _is_stub(make_system):
        return CheckResult(exercise, NOT_ATTEMPTED, "replace the stub with your answer, then run this cell again")
    if not callable(make_system):
        return CheckResult(exercise, FAILED, f"expected a function; got {type(make_system).__name__}")
    label = f"{getattr(make_system, '__name__', 'your function')}()"
    try:
        found = _system_profile(make_system, label, p, d, n_min)
    except _Fail as failure:
        return CheckResult(exercise, FAILED, str(failure))
    if found is NOT_ATTEMPTED:
        return CheckResult(exercise, NOT_ATTEMPTED, "your function returns nothing yet; fill in its body")
    profile, system = found
    want = [target(n) for n in range(1, len(profile) + 1)]
    if profile != want:
        said = hint(profile, *system) if hint is not None else ""
        return CheckResult(exercise, FAILED,
                           f"k(1..{len(want)}) should be {want}; yours is {profile}.{' ' + said if said else ''}")
    return CheckResult(exercise, PASSED, summary.format(n=len(want), profile=want))


def check_rank_three_system(make_system: Callable) -> CheckResult:
    """Chapter 2, exercise "three dimensions from two channels".

    The answer is a function of no arguments returning ``(A, B, C)``: a stable SSM
    with ``p = d = 2`` whose lag-span dimension is ``k(n) = min(n, 3)``, checked
    for ``n`` up to ``max(N, 7)``.

    Used in Chapter 2, Exercise 2.2.
    """
    def hint(profile, A, B, C):
        bound = min(_rank(B) * _rank(C), _degree(A))
        if profile[0] == 0:
            return "K_0 = C B is zero, so k(1) = 0: K_0 must be nonzero"
        if max(profile) > 3:
            return ("k exceeds 3: something must cap k at 3, for instance m = 3 (Proposition 2.1 (c)), or "
                    "lags that stay in a 3-dimensional space of 2 x 2 matrices (symmetric ones: A symmetric "
                    "and C = B^T)")
        if max(profile) < 3 and bound < 3:
            return (f"k stays below 3: the bound min(rank B rank C, m) = {bound} binds "
                    f"(rank B = {_rank(B)}, rank C = {_rank(C)}, m = {_degree(A)})")
        if max(profile) < 3:
            return (f"k stays below 3 although min(rank B rank C, m) = {bound} allows 3: your lags are dependent. "
                    "For a diagonal A, K_l = sum_s lambda_s^l c_s b_s^T (c_s column s of C, b_s^T row s of B): "
                    "are the rank-one terms c_s b_s^T of distinct eigenvalues linearly independent?")
        if 3 in profile:
            return (f"k reaches 3 only at n = {profile.index(3) + 1}, too late: K_0, K_1 and K_2 must be "
                    "linearly independent (k(2) = 2 and k(3) = 3)")
        return ""

    return _check_design("Chapter 2: three dimensions from two channels", make_system, 2, 2,
                         lambda n: min(n, 3), 7, "stable, p = d = 2, and k(1..{n}) = {profile}", hint)


def check_long_plateau(make_system: Callable) -> CheckResult:
    """Chapter 2, exercise "a longer plateau".

    The answer is a function of no arguments returning ``(A, B, C)``: a stable SSM
    (any widths) whose ``k(n)`` is 1 for ``n = 1, 2, 3`` and 2 from ``n = 4`` on,
    checked for ``n`` up to ``max(N, 7)``.

    Used in Chapter 2, Exercise 2.3.
    """
    def hint(profile, A, B, C):
        if profile[0] == 0:
            return "K_0 = C B is zero, so k(1) = 0: K_0 must be nonzero"
        if max(profile[:3]) > 1:
            grows = 1 + next(i for i, k in enumerate(profile) if k > 1)
            return (f"k grows at n = {grows}, too early: K_1 and K_2 must be multiples of K_0, and K_3 must "
                    "not be (k can grow only at some n <= m <= N, so this needs m >= 4)")
        if max(profile) < 2:
            if C.shape[0] == B.shape[1] == 1:
                return ("k never reaches 2: with p = d = 1 every lag is a number, so k <= 1 (Proposition 2.2 "
                        "(c)); use two output (or two input) channels")
            if _rank(B) * _rank(C) < 2:
                return (f"k never reaches 2: rank B rank C = {_rank(B) * _rank(C)} bounds k "
                        "(Proposition 2.1 (b)); B and C need rank B rank C >= 2")
            m = _degree(A)
            extra = (f"; here m = {m} (N = {A.shape[0]}), and k can grow only at some n <= m <= N"
                     if m < 4 else "")
            return f"k never reaches 2: K_3 must leave the line of K_0{extra}"
        if profile[3] < 2:
            grows = 1 + next(i for i, k in enumerate(profile) if k > 1)
            return (f"k grows at n = {grows}, too late: K_3 must leave the line of K_0 "
                    "(K_1 and K_2 stay on it)")
        if max(profile) > 2:
            return "k exceeds 2: every later lag must stay in span{K_0, K_3}"
        return ""

    return _check_design("Chapter 2: a longer plateau", make_system, None, None,
                         lambda n: 1 if n <= 3 else 2, 7, "stable, and k(1..{n}) = {profile}", hint)
