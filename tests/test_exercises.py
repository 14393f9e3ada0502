"""Tests of ``ssmheads.exercises``: the checks students run on their answers.

For each check: a reference solution written here passes; stubs are reported as
"not attempted yet" without a traceback; wrong answers fail with a message that
says what was expected. A result is truthy only when it passed.
"""

import numpy as np
import pytest

from ssmheads import apply_interaction, trivial_interaction_form
from ssmheads.exercises import CheckResult, check_ema_operator, check_mlp_operator, check_residual_operator
from helpers import STUB_IDS, STUBS
from helpers import assert_printed as _assert_printed
from helpers import raises_type_error as _raises_type_error

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"

# ------------------------------------------------------------ reference solutions, written from the exercise text


def ema_operator(n, d, gamma):
    """``y_i = (1 - gamma) sum_{j <= i} gamma^(i-j) x_j``, so ``W_ij = (1 - gamma) gamma^(i-j) I`` for ``j <= i``."""
    W = np.zeros((n, n, d, d))
    for i in range(n):
        for j in range(i + 1):
            W[i, j] = (1 - gamma) * gamma ** (i - j) * np.eye(d)
    return W


def mlp_operator(W1, W2, X):
    """``W_ii = W2 diag(1[W1 x_i > 0]) W1`` and zero off the diagonal."""
    n, d = X.shape
    W = np.zeros((n, n, W2.shape[0], d))
    for i in range(n):
        W[i, i] = W2 @ np.diag((W1 @ X[i] > 0).astype(float)) @ W1
    return W


def residual_operator(mha, X):
    """``sum_h alpha^h_ij V_h + delta_ij I``: attention's operator plus the identity on the diagonal."""
    n = X.shape[0]
    W = mha.interaction(X).copy()
    for i in range(n):
        W[i, i] += np.eye(mha.d)
    return W


CHECKS = {
    "ema": (check_ema_operator, ema_operator),
    "mlp": (check_mlp_operator, mlp_operator),
    "residual": (check_residual_operator, residual_operator),
}
CHECK_IDS = list(CHECKS)


def _check(key):
    return CHECKS[key][0]


# ------------------------------------------------------------ passing


@pytest.mark.parametrize("key", CHECK_IDS)
def test_reference_solution_passes(key):
    check, solution = CHECKS[key]
    result = check(solution)
    assert isinstance(result, CheckResult)
    assert result.status == PASSED, result.message
    assert result
    _assert_printed(result, "PASSED")
    assert result.exercise.startswith("Chapter 1")


def test_reference_solutions_agree_with_the_layers():
    """The solutions in this file are right on their own terms (so the checks' PASSED means something)."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((6, 2))
    gamma = 0.7
    y = np.zeros_like(X)
    for i in range(6):  # the EMA recurrence y_i = gamma y_{i-1} + (1 - gamma) x_i
        y[i] = (gamma * y[i - 1] if i else 0.0) + (1 - gamma) * X[i]
    np.testing.assert_allclose(apply_interaction(ema_operator(6, 2, gamma), X), y, rtol=1e-13)
    W1, W2 = rng.standard_normal((5, 2)), rng.standard_normal((3, 5))
    np.testing.assert_allclose(apply_interaction(mlp_operator(W1, W2, X), X), np.maximum(X @ W1.T, 0) @ W2.T, rtol=1e-13)


# ------------------------------------------------------------ stubs


@pytest.mark.parametrize("stub", STUBS, ids=STUB_IDS)
@pytest.mark.parametrize("key", CHECK_IDS)
def test_stubs_are_not_attempted(key, stub):
    result = _check(key)(stub)
    assert result.status == NOT_ATTEMPTED
    assert not result
    _assert_printed(result, "NOT ATTEMPTED YET")


def test_partial_answer_returning_none_later_is_not_attempted():
    """An answer that only handles the first case and falls through to None is not a failure yet."""
    result = check_ema_operator(lambda n, d, g: ema_operator(n, d, g) if n == 1 else None)
    assert result.status == NOT_ATTEMPTED and not result
    assert "returns nothing yet" in result.message


# ------------------------------------------------------------ wrong answers


WRONG = {
    "ema": {
        "wrong shape": (lambda n, d, g: ema_operator(n, d, g)[:, :, 0, 0], "expected shape (1, 1, 1, 1); got shape (1, 1)"),
        "anticausal": (lambda n, d, g: ema_operator(n, d, g).transpose(1, 0, 2, 3), "should be"),
        "missing 1-gamma": (lambda n, d, g: ema_operator(n, d, g) / (1 - g), "ema_operator(1, 1, 0.5): entry (0, 0, 0, 0) should be 0.5; got 1"),
        "not numeric": (lambda n, d, g: "W", "expected a numeric array of shape (1, 1, 1, 1); got str"),
    },
    "mlp": {
        "wrong shape": (lambda W1, W2, X: mlp_operator(W1, W2, X)[0], "expected shape (3, 3, 2, 2); got shape (3, 2, 2)"),
        # Remark 1: a valid interaction form of the same output, but not the one the exercise asks for.
        "trivial form": (lambda W1, W2, X: trivial_interaction_form(np.maximum(X @ W1.T, 0) @ W2.T, X),
                         "reproduces the MLP's output on X, but it is not the token-local form W_ii = W2 D(x_i) W1"),
        "no gate": (lambda W1, W2, X: mlp_operator(np.abs(W1), W2, X),
                    "applying your operator to X does not give the MLP's output W2 relu(W1 x_i)"),
    },
    "residual": {
        "wrong shape": (lambda mha, X: residual_operator(mha, X)[..., 0], "expected shape (3, 3, 2, 2); got shape (3, 3, 2)"),
        "no residual": (lambda mha, X: mha.interaction(X), "off by delta_ij I"),
        "residual everywhere": (lambda mha, X: mha.interaction(X) + np.eye(mha.d), "added to every block"),
        "residual in the lower triangle": (
            lambda mha, X: mha.interaction(X) + np.tril(np.ones((len(X),) * 2))[:, :, None, None] * np.eye(mha.d),
            "every block W_ij with j <= i"),
    },
}
WRONG_CASES = [(key, case, *WRONG[key][case]) for key in WRONG for case in WRONG[key]]


@pytest.mark.parametrize("key, answer, expected_in_message", [c[:1] + c[2:] for c in WRONG_CASES],
                         ids=[f"{c[0]}-{c[1]}" for c in WRONG_CASES])
def test_wrong_answers_fail_with_what_was_expected(key, answer, expected_in_message):
    result = _check(key)(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


@pytest.mark.parametrize("key", CHECK_IDS)
def test_answer_that_raises_is_reported_not_raised(key):
    result = _check(key)(_raises_type_error)
    assert result.status == FAILED and not result
    assert result.message.endswith(" raised TypeError: unsupported operand")
    assert result.message.startswith(f"{key}_operator(")  # names the call that raised


@pytest.mark.parametrize("not_a_function", [3, np.zeros((2, 2)), "ema"])
@pytest.mark.parametrize("key", CHECK_IDS)
def test_non_callable_answer_fails(key, not_a_function):
    result = _check(key)(not_a_function)
    assert result.status == FAILED and not result
    assert result.message == f"expected a function; got {type(not_a_function).__name__}"


def test_check_result_is_immutable():
    result = CheckResult("x", PASSED, "ok")
    with pytest.raises(AttributeError):
        result.status = FAILED


# ------------------------------------------------------------ answers that once slipped through


@pytest.mark.parametrize("key", ["ema", "residual"])
def test_nan_answer_fails(key):
    def nan_answer(*args):
        return np.full_like(CHECKS[key][1](*args), np.nan)

    result = _check(key)(nan_answer)
    assert result.status == FAILED and not result


def test_nan_answer_fails_mlp():
    """The MLP check first applies the operator to X, which catches NaN (unlike the other two checks)."""
    result = check_mlp_operator(lambda W1, W2, X: np.full_like(mlp_operator(W1, W2, X), np.nan))
    assert result.status == FAILED and not result


def test_mlp_check_reports_non_numeric_answer():
    result = check_mlp_operator(lambda W1, W2, X: "W")
    assert result.status == FAILED and not result
    assert "expected a numeric array" in result.message


def test_raising_answer_message_names_the_failing_call():
    def fails_for_wide_tokens(n, d, gamma):
        if d == 3:
            raise TypeError("cannot handle d = 3")
        return ema_operator(n, d, gamma)

    result = check_ema_operator(fails_for_wide_tokens)
    assert result.status == FAILED
    assert "ema_operator(7, 3, 0.9)" in result.message


def test_ema_check_names_the_index_order_and_causality():
    # An anti-causal answer (the transpose) is told that the operator must be causal.
    result = check_ema_operator(lambda n, d, g: ema_operator(n, d, g).transpose(1, 0, 2, 3))
    assert result.status == FAILED
    assert "entry (0, 1, 0, 0)" in result.message
    assert "(i, j, row, col), 0-based" in result.message
    assert "must be causal" in result.message
    # A wrong entry on or below the diagonal gives the index order but no causality remark.
    result = check_ema_operator(lambda n, d, g: ema_operator(n, d, g) * 2)
    assert "(i, j, row, col), 0-based" in result.message and "causal" not in result.message


def test_mlp_check_says_when_an_output_reproducing_form_is_not_token_local():
    def shifted(W1, W2, X):
        # Move part of y_i onto a neighbouring token: same output, nonzero off-diagonal block.
        W = mlp_operator(W1, W2, X)
        n = X.shape[0]
        extra = np.zeros_like(W)
        extra[1, 0] = np.outer(np.ones(W.shape[2]), X[0]) / (X[0] @ X[0])   # adds (1, ..., 1) to y_1
        extra[1, 1] = -np.outer(np.ones(W.shape[2]), X[1]) / (X[1] @ X[1])  # and takes it away again
        return W + extra
    result = check_mlp_operator(shifted)
    assert result.status == FAILED
    assert "reproduces the MLP's output on X" in result.message
    assert "block (1, 0) (0-based, i != j)" in result.message


# ------------------------------------------------------------ hints the reviews asked for (issue 23)


def test_ema_check_names_float32_and_shows_a_difference_hidden_by_six_digits():
    """A right answer in float32 is told why it fails; a tiny error is printed with enough digits to see it."""
    result = check_ema_operator(lambda n, d, g: ema_operator(n, d, g).astype(np.float32))
    assert result.status == FAILED and "float32" in result.message and "float64" in result.message
    result = check_ema_operator(lambda n, d, g: ema_operator(n, d, g) * (1 + 1e-7))
    assert result.status == FAILED and "a difference of" in result.message
    assert "got 0.5000000" in result.message   # not "should be 0.5; got 0.5"


def test_ema_check_says_gamma_may_be_negative_when_the_answer_gives_nan():
    def through_log(n, d, g):   # right for 0 < gamma < 1 only
        lag = np.arange(n)[:, None] - np.arange(n)[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            w = np.tril((1 - g) * np.exp(lag * np.log(g)))
        return w[:, :, None, None] * np.eye(d)

    result = check_ema_operator(through_log)
    assert result.status == FAILED
    assert "ema_operator(5, 2, -0.3)" in result.message and "is negative here" in result.message


def test_mlp_check_says_when_a_token_local_form_is_not_the_gate_form():
    def plus_null(W1, W2, X):   # W_ii + N_i with N_i x_i = 0: same output, still token-local
        W = mlp_operator(W1, W2, X)
        J = np.zeros((X.shape[1], X.shape[1]))
        J[0, 1], J[1, 0] = -1.0, 1.0
        for i in range(X.shape[0]):
            W[i, i] += np.outer(np.ones(W.shape[2]), J @ X[i])
        return W

    result = check_mlp_operator(plus_null)
    assert result.status == FAILED
    assert "reproduces the MLP's output on X and is token-local" in result.message
    assert "N_i x_i = 0" in result.message and "(i, j, row, col), 0-based" in result.message


@pytest.mark.parametrize("answer, words", [
    (lambda mha, X: trivial_interaction_form(mha.forward(X) + X, X), "another interaction form of that map"),
    (lambda mha, X: residual_operator(mha, X) * 2, "does not give MHA(X) + X"),
], ids=["trivial form", "doubled"])
def test_residual_check_tells_another_form_from_a_wrong_operator(answer, words):
    """(A missing or misplaced identity: see WRONG above.)"""
    result = check_residual_operator(answer)
    assert result.status == FAILED and words in result.message
