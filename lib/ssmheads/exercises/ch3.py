"""Checks of the Chapter 3 exercises (the head count)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._common import CheckResult, _compare, _Fail, _numeric, _run


def _chapter3_targets():
    """(label, K) pairs: lag operators of small SSMs with known structure."""
    from ..models import lag_operators
    from ..systems import diagonal, random_with_lag_rank, rotation

    targets = []
    for label, s, n in (("rotation(1.0, rho=0.9), n=10", rotation(1.0, 0.9), 10),
                        ("diagonal([0.9, 0.5, -0.3]), n=8", diagonal([0.9, 0.5, -0.3]), 8),
                        ("random_with_lag_rank(4, 2, 3), n=12", random_with_lag_rank(4, 2, 3, seed=1), 12)):
        targets.append((label, lag_operators(s.A, s.B, s.C, n)))
    return targets


def check_exact_heads(exact_head_construction: Callable) -> CheckResult:
    """Chapter 3, exercise "build the heads": the construction of Theorem 5.

    The answer is a function ``exact_head_construction(K)`` taking lags ``K (n, p, d)``
    and returning ``(coefficients (H, n), values (H, p, d))`` with
    ``sum_h coefficients[h, l] * values[h] == K[l]`` and the fewest heads, ``H = k``.
    """
    from ..span import interaction_rank

    def expect(K):
        def test(out, label):
            try:
                c, V = out
            except (TypeError, ValueError):
                raise _Fail(f"{label}: expected a pair (coefficients, values); got {type(out).__name__}") from None
            k = interaction_rank(K)
            try:
                heads = np.shape(V)[0] if np.ndim(V) == 3 else k
            except (TypeError, ValueError):  # ragged nested lists
                heads = k
            V = _numeric(V, (heads,) + K.shape[1:], f"{label}: values")
            c = _numeric(c, (heads, K.shape[0]), f"{label}: coefficients")
            if V.shape[0] != k:
                raise _Fail(f"{label}: the lags span k = {k} dimensions, so use exactly {k} heads; you used {V.shape[0]}")
            _compare(np.einsum("hl,hpd->lpd", c, V), K, f"{label}: sum_h c_h(l) V_h against K_l")
        return test

    cases = [(f"exact_head_construction on {label}", (K,), expect(K)) for label, K in _chapter3_targets()]
    return _run("Chapter 3: build the heads", exact_head_construction, cases,
                f"k heads reproduce every lag exactly on {len(cases)} systems")


def check_optimal_error(optimal_error: Callable) -> CheckResult:
    """Chapter 3, exercise "the Eckart-Young tail".

    The answer is a function ``optimal_error(K, H, weights)`` returning the minimum of
    ``sum_l w_l ||K_l - sum_h c_h(l) V_h||_F^2`` over ``H`` heads (a float).
    """
    from ..heads import head_count_curve, white_noise_weights

    def expect(value):
        def test(out, label):
            try:
                got = float(out)
            except (TypeError, ValueError, OverflowError):
                raise _Fail(f"{label}: expected a number; got {type(out).__name__}") from None
            if not np.isfinite(got) or abs(got - value) > 1e-8 * max(1.0, abs(value)):
                raise _Fail(f"{label}: the minimum is {value:.6g}; got {got:.6g}")
        return test

    cases = []
    for label, K in _chapter3_targets():
        n = K.shape[0]
        for H, weights, wname in ((1, np.ones(n), "ones"), (2, white_noise_weights(n), "n - l")):
            value = float(head_count_curve(K, H, weights)[H])
            cases.append((f"optimal_error on {label}, H={H}, weights {wname}", (K, H, weights), expect(value)))
    return _run("Chapter 3: the Eckart-Young tail", optimal_error, cases,
                f"the optimal error is right on {len(cases)} cases (plain and white-noise weights)")


def check_nonnegative_head_count(nonnegative_head_count: Callable) -> CheckResult:
    """Chapter 3, exercise "count nonnegative heads": ``H+ = k`` if the cone is pointed, else ``k + 1``.

    The answer is a function ``nonnegative_head_count(K)`` returning an integer.
    """
    from ..heads import nonnegative_head_count as reference
    from ..models import lag_operators
    from ..systems import rotation

    def scalar(a, n):
        return lag_operators([[a]], [[1.0]], [[1.0]], n)

    targets = [("scalar a = 0.5, n=8", scalar(0.5, 8)), ("scalar a = -0.5, n=8", scalar(-0.5, 8)),
               ("rotation(0.5), n=6 ((n-1) theta < pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 6)),
               ("rotation(0.5), n=8 ((n-1) theta > pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 8))]

    def expect(value):
        def test(out, label):
            if isinstance(out, (bool, np.bool_)) or not isinstance(out, (int, np.integer)):
                raise _Fail(f"{label}: expected an integer; got {out!r}")
            if out != value:
                raise _Fail(f"{label}: H+ should be {value}; got {out}")
        return test

    cases = [(f"nonnegative_head_count on {label}", (K,), expect(reference(K))) for label, K in targets]
    return _run("Chapter 3: count nonnegative heads", nonnegative_head_count, cases,
                f"H+ is right on {len(cases)} systems (signs, rotations before and after half a turn)")


def _rot(ssm):
    return ssm.A, ssm.B, ssm.C


