"""Checks of the Chapter 6 exercises (the trade-off, measured)."""

from __future__ import annotations

import copy
from typing import Callable

import numpy as np

from ._common import CheckResult, _Fail, _numeric, _on_its_own, _run

#: The library routines that compute a floor; switched off while a student's ``delay_floor`` runs.
FLOOR_ROUTINES = (("heads", "head_count_curve"), ("heads", "_head_count_curve"), ("heads", "optimal_heads"),
                  ("heads", "_optimal_heads"), ("bench", "task_floor"), ("exercises.ch6", "_delay_floor_reference"))


def _how_far(got: float, value: float) -> str:
    """``"too high by about 3e-04 relative"``: direction and order of magnitude, not the expected value."""
    if value == 0.0:
        return f"should be 0; got {got:.3g}"
    rel = got / value - 1.0
    return f"{'too high' if rel > 0 else 'too low'} by about {abs(rel):.0e} relative (got {got:.6g})"


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

    def tail(energies, H, keep_largest=True):
        e = np.sort(energies)[::-1] if keep_largest else np.sort(energies)
        return float(np.sum(e[H:]) / np.sum(e))

    def test(value, n, L, H):
        s = np.arange(4)
        mistakes = (  # (a wrong answer, its hint)
            (max(4 - H, 0) / 4.0, "that is (4 - H)/4, the floor with every tap weighted alike: lag l is seen by "
                                  "n - l positions, so the taps' weights differ and the heads keep the heaviest"),
            (tail(2.0 * (n - L - s + 1), H), "lag l is seen by the positions i = l + 1, ..., n: n - l of them, "
                                             "not n - l + 1"),
            (tail(2.0 * (n - L - s - 1), H), "lag l is seen by the positions i = l + 1, ..., n: n - l of them, "
                                             "not n - l - 1"),
            (tail(np.sqrt(n - L - s), H), "Eckart-Young sums the squared singular values: sigma_s^2 = "
                                          "2 (n - L - s), not its square root"),
            (1.0 - value, "you returned the share the heads keep; the floor is the share they miss"),
            (tail(n - L - s, H, keep_largest=False), "H heads keep the H largest singular values (the heaviest "
                                                     "taps, the nearest lags); the floor is the rest"),
        )

        def check(out, label):
            got = float(_numeric(out, (), label))
            if abs(got - value) <= 1e-9:
                return
            hint = next((h for wrong, h in mistakes if abs(got - wrong) <= 1e-9 and abs(wrong - value) > 1e-9),
                        None)
            if hint is None and abs(got) > 1.0 + 1e-9:
                hint = "a floor is a share of the zero output's loss, between 0 and 1: divide by the total"
            raise _Fail(f"{label}: {_how_far(got, value)}" + (f"; {hint}" if hint else ""))
        return check

    cases = []
    for n, L, H in ((64, 8, 1), (64, 48, 2), (20, 3, 3), (64, 60, 0), (16, 5, 4), (64, 30, 6)):
        value = expected(n, L, H)
        cases.append((f"delay_floor({n}, {L}, {H})", (n, L, H), test(value, n, L, H)))
    rng = np.random.default_rng()  # one case new at every call (no value to copy from a message)
    n = int(rng.integers(12, 129))
    n, L, H = n, int(rng.integers(1, n - 3)), int(rng.integers(1, 4))
    cases.append((f"delay_floor({n}, {L}, {H})", (n, L, H), test(expected(n, L, H), n, L, H)))
    return _run("Chapter 6: the floor of the delay task", _on_its_own(delay_floor, FLOOR_ROUTINES), cases,
                "right on 7 cases: H = 0, H = k = 4, H > k, one drawn anew")


#: The forward passes handed to students' functions, and their call counts, keyed by ``id``
#: of the :class:`_CountedForward` that stands for them (removed when it is collected).
_FORWARDS: dict[int, list] = {}


class _CountedForward:
    """A layer's forward pass for a student's function: it counts its calls.

    It holds no attribute at all (empty ``__slots__``): the forward pass, of a deep copy
    of the layer, and the call count live in the module's private registry ``_FORWARDS``,
    so neither ``forward.__closure__``, ``forward.__self__`` nor ``forward._f`` exists, and
    ``calls`` is read-only. The check requires at least ``2 d`` calls (central differences
    perturb each of the ``d`` coordinates of token ``j`` twice), so reading a layer's exact
    Jacobian instead of differencing needs the checker's private registry (or the garbage
    collector); keeping a student out of those is a sandbox's job.
    """

    __slots__ = ()

    def __init__(self, f: Callable):
        _FORWARDS[id(self)] = [copy.deepcopy(f), 0]

    def __call__(self, Z):
        entry = _FORWARDS[id(self)]
        entry[1] += 1
        return entry[0](np.array(Z, dtype=float))

    @property
    def calls(self) -> int:
        """How many times the forward pass was called (read-only)."""
        return _FORWARDS[id(self)][1]

    def __reduce__(self):
        # Grading runs a student's function in a forked process and sends it its arguments
        # pickled (tools/grading_sandbox.py): there this forward is made anew, with a count
        # of its own, from a copy of the layer's forward pass. Reaching the layer through
        # this method is a dunder access, which grading's scan of the answer flags.
        return (_CountedForward, (_FORWARDS[id(self)][0],))

    def __del__(self):
        _FORWARDS.pop(id(self), None)


def check_jacobian_norm(jacobian_norm: Callable) -> CheckResult:
    """Chapter 6, exercise "the bench's Jacobian by finite differences".

    Used in Chapter 6, Exercise 6.2.

    The answer is a function ``jacobian_norm(forward, X, i, j)`` returning the spectral norm
    of ``d y_i / d x_j`` (a float), where ``forward`` maps an input ``X (n, d)`` to ``Y (n, p)``.
    It is checked on an LTI SSM (where the answer is ``||K_{i-j}||``), on softmax heads and on
    a Mamba layer (against their exact Jacobians), and on a pair ``j > i`` (zero: causality),
    to a relative ``1e-5``; ``forward`` must be called at least ``2 d`` times per case.
    """
    from .. import architectures as arch
    from ..gradients import jacobian
    from ..models import LinearSSM, lag_operators
    from ..systems import random_attention, rotation

    rng = np.random.default_rng(61)
    fresh = np.random.default_rng()  # the inputs of the nonlinear layers are new at every call
    cases = []  # (label, args, the block dy_i/dx_j, the block dy_j/dx_i)
    s = rotation(0.7, 0.8)
    ssm = LinearSSM(s.A, s.B, s.C)
    X = rng.standard_normal((12, 2))
    K = lag_operators(s.A, s.B, s.C, 12)
    cases.append(("the rotation SSM 0.8 R(0.7), i = 11, j = 4", (_CountedForward(ssm.forward), X, 11, 4), K[7], K[0] * 0))
    cases.append(("the rotation SSM, i = 3, j = 7 (j > i)", (_CountedForward(ssm.forward), X, 3, 7), K[0] * 0, K[4]))
    mha = random_attention(2, 3, seed=4)
    X = fresh.standard_normal((10, 3))
    J = jacobian(mha, X)
    cases.append(("two softmax heads, i = 9, j = 2", (_CountedForward(mha.forward), X, 9, 2), J[9, 2], J[2, 9]))
    cases.append(("two softmax heads, i = 5, j = 5 (the query path too)", (_CountedForward(mha.forward), X, 5, 5),
                  J[5, 5], J[5, 5]))
    g = rng.standard_normal
    mamba = arch.Mamba(g((3, 2)), 0.5 * g((3, 3)), g((4, 3)), g((4, 3)), g((3, 4)) * 0.3, g(3))
    X = fresh.standard_normal((8, 2))
    J = mamba.jacobian(X)
    cases.append(("a Mamba layer, i = 7, j = 1", (_CountedForward(mamba.forward), X, 7, 1), J[7, 1], J[1, 7]))

    def test(block, swapped, forward, d):
        value = float(np.linalg.norm(block, 2))

        def check(out, label):
            calls = forward.calls
            got = float(_numeric(out, (), label))
            if calls < 2 * d:
                raise _Fail(f"{label}: forward was called {calls} times; central differences need 2d = "
                            f"{2 * d} calls, at +eps and -eps for each of the {d} coordinates of token j "
                            "(their error is of order eps^2, a one-sided difference's of order eps)")
            if abs(got - value) <= 1e-5 * max(abs(value), 1e-3):
                return
            near = lambda x, rtol=1e-4: abs(got - x) <= rtol * max(abs(x), 1e-3)
            if near(float(np.linalg.norm(swapped, 2))):
                hint = "that is ||dy_j/dx_i||: i and j are swapped"
            elif value == 0.0:
                hint = "the layers are causal: y_i does not depend on x_j for j > i"
            elif near(float(np.linalg.norm(block))) and not near(value):
                hint = "that is the Frobenius norm of the block; use the spectral norm, np.linalg.norm(J, 2)"
            elif near(2 * value) or near(value / 2):
                hint = "off by a factor 2: a central difference divides by 2 eps"
            elif abs(got / value - 1) < 1e-2:
                hint = "close but not within 1e-5: try a smaller eps, or central differences"
            else:
                hint = "perturb one coordinate of token j at a time and read row i of the output"
            raise _Fail(f"{label}: ||dy_i/dx_j|| {_how_far(got, value)}; {hint}")
        return check

    return _run("Chapter 6: the bench's Jacobian by finite differences", jacobian_norm,
                [(label, args, test(block, swapped, args[0], args[1].shape[1]))
                 for label, args, block, swapped in cases],
                "right to 1e-5 on an LTI SSM, softmax heads and Mamba; zero for j > i")
