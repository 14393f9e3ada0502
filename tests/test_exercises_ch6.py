"""Tests of the Chapter 6 exercise checks in ``ssmheads.exercises``.

For each check: a reference solution written here (the delay floor from an SVD of the
weighted lags, the Jacobian norm by forward differences of second order from the layer's
``forward``) passes; stubs are "not attempted yet" without a traceback; wrong answers fail,
never raise, and say what was expected; the library's head-count routines are switched off
while a ``delay_floor`` runs.
"""

import numpy as np
import pytest

from ssmheads.exercises import CheckResult, check_delay_floor, check_jacobian_norm
from helpers import STUB_IDS, STUBS

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"

TAPS = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, -1.0], [1.0, 0.0]],
                 [[1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])


def delay_floor(n, L, H):
    """Corollary 3.1 by an SVD of G_w = [sqrt(n - l) vec K_l]."""
    K = np.zeros((n, 2, 2))
    K[L:L + 4] = TAPS
    G = (K.reshape(n, 4) * np.sqrt(n - np.arange(n))[:, None]).T
    s2 = np.linalg.svd(G, compute_uv=False) ** 2
    return float(s2[H:].sum() / s2.sum())


def jacobian_norm(forward, X, i, j, eps=1e-5):
    """Five-point differences, a different stencil from the book's answer."""
    cols = []
    for c in range(X.shape[1]):
        def at(t):
            Z = np.array(X, dtype=float)
            Z[j, c] += t
            return forward(Z)[i]
        cols.append((-at(2 * eps) + 8 * at(eps) - 8 * at(-eps) + at(-2 * eps)) / (12 * eps))
    return float(np.linalg.norm(np.stack(cols, axis=1), 2))


def test_reference_solutions_pass():
    for check, answer in ((check_delay_floor, delay_floor), (check_jacobian_norm, jacobian_norm)):
        result = check(answer)
        assert isinstance(result, CheckResult) and result.status == PASSED, str(result)


@pytest.mark.parametrize("stub", STUBS, ids=STUB_IDS)
def test_stubs_are_not_attempted(stub):
    for check in (check_delay_floor, check_jacobian_norm):
        assert check(stub).status == NOT_ATTEMPTED


def test_equal_weights_fail_with_a_hint():
    result = check_delay_floor(lambda n, L, H: max(4 - H, 0) / 4)
    assert result.status == FAILED and "n - l positions" in result.message


def test_the_complement_fails():
    result = check_delay_floor(lambda n, L, H: 1 - delay_floor(n, L, H))
    assert result.status == FAILED and "too low" in result.message


def test_the_library_is_switched_off_for_the_floor():
    from ssmheads import bench

    result = check_delay_floor(lambda n, L, H: bench.task_floor("delay", L, H))
    assert result.status == FAILED and "RuntimeError" in result.message


def test_frobenius_and_non_causal_answers_fail():
    def frobenius(forward, X, i, j, eps=1e-6):
        cols = []
        for c in range(X.shape[1]):
            step = np.zeros_like(X)
            step[j, c] = eps
            cols.append((forward(X + step)[i] - forward(X - step)[i]) / (2 * eps))
        return float(np.linalg.norm(np.stack(cols, axis=1)))

    result = check_jacobian_norm(frobenius)
    assert result.status == FAILED and "Frobenius" in result.message
    result = check_jacobian_norm(lambda forward, X, i, j: 1.0)
    assert result.status == FAILED


def test_an_answer_that_raises_is_reported():
    def broken(*args):
        raise ValueError("boom")

    for check in (check_delay_floor, check_jacobian_norm):
        result = check(broken)
        assert result.status == FAILED and "raised ValueError: boom" in result.message


def test_a_wrong_type_is_reported():
    result = check_delay_floor(lambda n, L, H: "0.5")
    assert result.status == FAILED
    result = check_jacobian_norm(lambda forward, X, i, j: np.ones(3))
    assert result.status == FAILED and "shape" in result.message


def test_the_reference_is_switched_off_and_no_value_is_printed():
    from ssmheads.exercises.ch6 import _delay_floor_reference

    result = check_delay_floor(_delay_floor_reference)
    assert result.status == FAILED and "RuntimeError" in result.message
    result = check_delay_floor(lambda n, L, H: 0.5 * delay_floor(n, L, H) + 0.01)
    assert result.status == FAILED and "relative" in result.message and "should be" not in result.message


def test_targeted_hints_for_the_floor():
    def weights(shift):
        def floor(n, L, H):
            e = 2.0 * (n - L - np.arange(4) + shift)
            return float(e[H:].sum() / e.sum())
        return floor

    assert "n - l of them" in check_delay_floor(weights(1)).message
    assert "n - l of them" in check_delay_floor(weights(-1)).message
    root = lambda n, L, H: float(np.sqrt(n - L - np.arange(4))[H:].sum() / np.sqrt(n - L - np.arange(4)).sum())
    assert "squared singular values" in check_delay_floor(root).message
    assert "share the heads keep" in check_delay_floor(lambda n, L, H: 1 - delay_floor(n, L, H)).message


def test_the_forward_holds_nothing_and_its_count_is_read_only():
    from ssmheads.exercises.ch6 import _FORWARDS, _CountedForward
    from ssmheads.models import LinearSSM

    ssm = LinearSSM(0.5 * np.eye(2), np.eye(2), np.eye(2))
    forward = _CountedForward(ssm.forward)
    X = np.ones((4, 2))
    assert np.array_equal(forward(X), ssm.forward(X)) and forward.calls == 1
    for name in ("_f", "__self__", "__closure__", "__dict__", "__wrapped__", "__func__"):
        assert not hasattr(forward, name)
    with pytest.raises(AttributeError):
        forward.calls = 0
    key = id(forward)
    del forward
    assert key not in _FORWARDS


def test_the_layer_is_not_reachable_and_hints_for_the_jacobian():
    def via_self(forward, X, i, j):
        return float(np.linalg.norm(forward.__self__.jacobian(X)[i, j], 2))

    assert check_jacobian_norm(via_self).status == FAILED

    def via_closure(forward, X, i, j):  # the cheat of the second review
        layer = forward.__closure__[0].cell_contents
        return float(np.linalg.norm(layer.jacobian(X)[i, j], 2))

    assert check_jacobian_norm(via_closure).status == FAILED

    def one_sided(forward, X, i, j, eps=1e-7):  # d + 1 calls, not central differences
        y = forward(X)[i]
        cols = []
        for c in range(X.shape[1]):
            step = np.zeros_like(X)
            step[j, c] = eps
            cols.append((forward(X + step)[i] - y) / eps)
        return float(np.linalg.norm(np.stack(cols, axis=1), 2))

    message = check_jacobian_norm(one_sided).message
    assert "central differences need 2d = 4 calls" in message and "from the layer" not in message

    def overwrite_count(forward, X, i, j):  # the cheat of the third review
        forward.calls = 10 ** 6
        return 0.0

    assert check_jacobian_norm(overwrite_count).status == FAILED

    def via_private(forward, X, i, j):
        layer = forward._f.__self__
        return float(np.linalg.norm(layer.jacobian(X)[i, j], 2))

    assert check_jacobian_norm(via_private).status == FAILED

    def padded(forward, X, i, j):  # enough calls, but the layer is not reachable
        for _ in range(2 * X.shape[1]):
            forward(X)
        return float(np.linalg.norm(forward.__self__.jacobian(X)[i, j], 2))

    assert "AttributeError" in check_jacobian_norm(padded).message

    def swapped(forward, X, i, j):
        return jacobian_norm(forward, X, j, i)

    def half(forward, X, i, j):
        return 2 * jacobian_norm(forward, X, i, j)

    assert "swapped" in check_jacobian_norm(swapped).message
    assert "2 eps" in check_jacobian_norm(half).message
