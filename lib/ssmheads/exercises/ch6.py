"""Checks of the Chapter 6 exercises (the trade-off, measured)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._common import CheckResult, _Fail, _numeric, _on_its_own, _run

#: The library routines that compute a floor; switched off while a student's ``delay_floor`` runs.
FLOOR_ROUTINES = (("heads", "head_count_curve"), ("heads", "_head_count_curve"), ("heads", "optimal_heads"),
                  ("heads", "_optimal_heads"), ("bench", "task_floor"))


def _delay_floor_reference(n: int, L: int, H: int) -> float:
    """The Eckart-Young tail of the delay task's weighted lags, from the singular values directly.

    The taps ``E_s`` (``s = 0..3``, at lags ``L + s``) are orthogonal with ``||E_s||_F^2 = 2``,
    so the columns ``sqrt(n - L - s) vec E_s`` of ``G_w`` are orthogonal and its squared
    singular values are ``2 (n - L - s)``; ``H`` heads keep the ``H`` largest.
    """
    energies = np.sort(2.0 * (n - L - np.arange(4)))[::-1]
    return float(np.sum(energies[H:]) / np.sum(energies))


def check_delay_floor(delay_floor: Callable) -> CheckResult:
    """Chapter 6, exercise "the floor of the delay task".

    Used in Chapter 6, Exercise 6.1.

    The answer is a function ``delay_floor(n, L, H)`` returning the smallest expected loss
    (normalised so that the zero output scores 1) of ``H`` positional heads on the delay task
    with ``n`` tokens and taps at lags ``L, ..., L + 3`` (a float). The library's head-count
    routines are switched off while the answer runs.
    """
    from ..heads import head_count_curve, white_noise_weights
    from ..bench import delay_taps

    def expected(n, L, H):
        K = np.zeros((n, 2, 2))
        K[L:L + 4] = delay_taps()
        curve = head_count_curve(K, max(H, 1), white_noise_weights(n))
        value = float(curve[H] / curve[0])
        assert abs(value - _delay_floor_reference(n, L, H)) < 1e-12
        return value

    def test(value, n, L, H):
        equal = float(max(4 - H, 0)) / 4.0

        def check(out, label):
            got = float(_numeric(out, (), label))
            if abs(got - value) <= 1e-9:
                return
            hint = ""
            if abs(got - equal) <= 1e-9 and abs(equal - value) > 1e-9:
                hint = ("; that is (4 - H)/4, the floor with every tap weighted alike: lag l is seen by "
                        "n - l positions, so the taps' weights differ and the heads keep the heaviest")
            raise _Fail(f"{label}: should be {value:.9g}; got {got:.9g}{hint}")
        return check

    cases = []
    for n, L, H in ((64, 8, 1), (64, 48, 2), (20, 3, 3), (64, 60, 0), (16, 5, 4), (64, 30, 6)):
        value = expected(n, L, H)
        cases.append((f"delay_floor({n}, {L}, {H})", (n, L, H), test(value, n, L, H)))
    return _run("Chapter 6: the floor of the delay task", _on_its_own(delay_floor, FLOOR_ROUTINES), cases,
                "right on 6 cases, including H = 0, H = k = 4 (floor 0) and H above k")


def check_jacobian_norm(jacobian_norm: Callable) -> CheckResult:
    """Chapter 6, exercise "the bench's Jacobian by finite differences".

    Used in Chapter 6, Exercise 6.2.

    The answer is a function ``jacobian_norm(forward, X, i, j)`` returning the spectral norm
    of ``d y_i / d x_j`` (a float), where ``forward`` maps an input ``X (n, d)`` to ``Y (n, p)``.
    It is checked on an LTI SSM (where the answer is ``||K_{i-j}||``), on softmax heads and on
    a Mamba layer (against their exact Jacobians), and on a pair ``j > i`` (zero: causality),
    to a relative ``1e-5``.
    """
    from .. import architectures as arch
    from ..gradients import jacobian
    from ..models import LinearSSM, lag_operators
    from ..systems import random_attention, rotation

    rng = np.random.default_rng(61)
    cases = []
    s = rotation(0.7, 0.8)
    ssm = LinearSSM(s.A, s.B, s.C)
    X = rng.standard_normal((12, 2))
    K = lag_operators(s.A, s.B, s.C, 12)
    cases.append(("the rotation SSM 0.8 R(0.7), i = 11, j = 4", (ssm.forward, X, 11, 4), float(np.linalg.norm(K[7], 2))))
    cases.append(("the rotation SSM, i = 3, j = 7 (j > i)", (ssm.forward, X, 3, 7), 0.0))
    mha = random_attention(2, 3, seed=4)
    X = rng.standard_normal((10, 3))
    cases.append(("two softmax heads, i = 9, j = 2", (mha.forward, X, 9, 2), float(np.linalg.norm(jacobian(mha, X)[9, 2], 2))))
    cases.append(("two softmax heads, i = 5, j = 5 (the query path too)", (mha.forward, X, 5, 5),
                  float(np.linalg.norm(jacobian(mha, X)[5, 5], 2))))
    g = rng.standard_normal
    mamba = arch.Mamba(g((3, 2)), 0.5 * g((3, 3)), g((4, 3)), g((4, 3)), g((3, 4)) * 0.3, g(3))
    X = rng.standard_normal((8, 2))
    cases.append(("a Mamba layer, i = 7, j = 1", (mamba.forward, X, 7, 1),
                  float(np.linalg.norm(mamba.jacobian(X)[7, 1], 2))))

    def test(value):
        def check(out, label):
            got = float(_numeric(out, (), label))
            if abs(got - value) <= 1e-5 * max(abs(value), 1e-3):
                return
            hint = ""
            if value == 0.0:
                hint = "; the layers are causal: y_i does not depend on x_j for j > i"
            raise _Fail(f"{label}: ||dy_i/dx_j|| should be {value:.6g}; got {got:.6g}{hint}")
        return check

    return _run("Chapter 6: the bench's Jacobian by finite differences", jacobian_norm,
                [(label, args, test(value)) for label, args, value in cases],
                "right to 1e-5 on an LTI SSM, softmax heads and Mamba; zero for j > i")
