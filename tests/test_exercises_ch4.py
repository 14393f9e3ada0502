"""Tests of the Chapter 4 exercise checks in ``ssmheads.exercises``.

For each check: a reference solution written here (independently of
``ssmheads.gradients``: Proposition 4.1 as a plain loop, Theorem 4.1's input from a random
query direction instead of the top singular vector, lag norms by repeated multiplication
and numpy's SVD) passes; stubs are "not attempted yet" without a traceback; wrong answers
fail, never raise, and say what was expected.
"""

import warnings

import numpy as np
import pytest

from ssmheads.exercises import CheckResult, check_head_jacobian, check_highway_input, check_ssm_gradient_profile
from ssmheads.systems import random_attention
from helpers import STUB_IDS, STUBS
from helpers import assert_printed as _assert_printed
from helpers import raises_type_error as _raises_type_error

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"

# ------------------------------------------------------------ reference solutions, written from the exercise text


def _softmax(s):
    e = np.exp(s - s.max())
    return e / e.sum()


def head_jacobian(W_Q, W_K, V, X, paths=("value", "key", "query")):
    """Proposition 4.1 for one causal softmax head, J[i, j] = d y_i / d x_j, by loops over i and j."""
    X = np.asarray(X, dtype=float)
    n = X.shape[0]
    root = np.sqrt(W_Q.shape[0])
    J = np.zeros((n, n, V.shape[0], X.shape[1]))
    for i in range(n):
        q = W_Q @ X[i]
        a = _softmax(np.array([q @ (W_K @ X[m]) / root for m in range(i + 1)]))
        v = [V @ X[m] for m in range(i + 1)]
        y = sum(a[m] * v[m] for m in range(i + 1))
        for j in range(i + 1):
            if "value" in paths:
                J[i, j] += a[j] * V
            if "key" in paths:
                J[i, j] += a[j] * np.outer(v[j] - y, W_K.T @ q) / root
        if "query" in paths:
            J[i, i] += sum(a[m] * np.outer(v[m] - y, W_Q.T @ (W_K @ X[m])) for m in range(i + 1)) / root
    return J


def make_input(W_Q, W_K, n, a, key, forget_self_score=False, unscaled=False):
    """Theorem 4.1's input, from a random query direction u (not the top singular vector).

    With w = W_K^T W_Q u, the key token x_key = t sqrt(d_k) w / ||w||^2 scores exactly t; zero
    tokens score 0 and the query scores s on itself, so t = log(a / (1 - a)) + log(n - 2 + e^s).
    """
    d_k, d = W_Q.shape
    u = np.random.default_rng(0).standard_normal(d)
    u /= np.linalg.norm(u)
    w = W_K.T @ W_Q @ u
    s = (W_Q @ u) @ (W_K @ u) / np.sqrt(d_k)
    rest = n - 1 if forget_self_score else n - 2 + np.exp(s)
    t = np.log(a / (1 - a)) + np.log(rest)
    X = np.zeros((n, d))
    X[n - 1] = u
    X[key] = t * (1 if unscaled else np.sqrt(d_k)) * w / (w @ w)
    return X


def ssm_profile(A, B, C, n, norm="spectral"):
    """||C A^l B|| for l = 0..n-1 by repeated multiplication; the spectral norm from numpy's SVD."""
    out, P = [], np.asarray(B, dtype=float)
    for _ in range(n):
        K = C @ P
        out.append(np.linalg.svd(K, compute_uv=False)[0] if norm == "spectral" else np.linalg.norm(K))
        P = A @ P
    return np.array(out)


CHECKS = {
    "head jacobian": (check_head_jacobian, head_jacobian, "Chapter 4: the Jacobian of a head"),
    "highway input": (check_highway_input, make_input, "Chapter 4: build the highway"),
    "ssm profile": (check_ssm_gradient_profile, ssm_profile, "Chapter 4: an SSM's gradient profile"),
}
KEYS = list(CHECKS)


def _check(key):
    return CHECKS[key][0]


# ------------------------------------------------------------ passing


@pytest.mark.parametrize("key", KEYS)
def test_reference_solution_passes(key):
    check, solution, exercise = CHECKS[key]
    result = check(solution)
    assert isinstance(result, CheckResult)
    assert result.status == PASSED, result.message
    assert result
    assert result.exercise == exercise
    _assert_printed(result, "PASSED")


def test_reference_solutions_are_right_on_their_own_terms():
    """Against finite differences, the softmax weight recomputed here, and a rotation's rho^l."""
    g = np.random.default_rng(1)
    W_Q, W_K, V = g.standard_normal((3, 2)), g.standard_normal((3, 2)), g.standard_normal((2, 2))
    X = g.standard_normal((5, 2))

    def forward(X):
        return np.array([sum(w * (V @ X[m]) for m, w in enumerate(
            _softmax(np.array([(W_Q @ X[i]) @ (W_K @ X[m]) / np.sqrt(3) for m in range(i + 1)]))))
            for i in range(len(X))])

    eps, fd = 1e-6, np.zeros((5, 5, 2, 2))
    for j in range(5):
        for c in range(2):
            E = np.zeros_like(X)
            E[j, c] = eps
            fd[:, j, :, c] = (forward(X + E) - forward(X - E)) / (2 * eps)
    assert np.max(np.abs(head_jacobian(W_Q, W_K, V, X) - fd)) < 1e-8
    for n, a, key in ((2, 0.3, 0), (50, 0.8, 17)):
        X = make_input(W_Q, W_K, n, a, key)
        weights = _softmax(np.array([(W_Q @ X[-1]) @ (W_K @ x) / np.sqrt(3) for x in X]))
        assert abs(weights[key] - a) < 1e-12
    rot = 0.9 * np.array([[np.cos(1.0), -np.sin(1.0)], [np.sin(1.0), np.cos(1.0)]])
    np.testing.assert_allclose(ssm_profile(rot, np.eye(2), np.eye(2), 10), 0.9 ** np.arange(10), rtol=1e-12)


def test_answers_as_lists_pass():
    assert check_head_jacobian(lambda *args: head_jacobian(*args).tolist()).status == PASSED
    assert check_highway_input(lambda *args: make_input(*args).tolist()).status == PASSED
    assert check_ssm_gradient_profile(lambda *args: list(ssm_profile(*args))).status == PASSED


def test_checks_tolerate_rounding_but_not_real_errors():
    assert check_head_jacobian(lambda *args: head_jacobian(*args) * (1 + 1e-12)).status == PASSED
    assert check_head_jacobian(lambda *args: head_jacobian(*args) * (1 + 1e-5)).status == FAILED
    assert check_ssm_gradient_profile(lambda *args: ssm_profile(*args) * (1 + 1e-12)).status == PASSED
    assert check_ssm_gradient_profile(lambda *args: ssm_profile(*args) * (1 + 1e-7)).status == FAILED

    def nudged(W_Q, W_K, n, a, key):  # the key's score off by 1e-5: the weight misses by ~a(1-a)1e-5
        X = make_input(W_Q, W_K, n, a, key)
        X[key] *= 1 + 1e-5
        return X

    assert check_highway_input(nudged).status == FAILED


# ------------------------------------------------------------ stubs


@pytest.mark.parametrize("stub", STUBS, ids=STUB_IDS)
@pytest.mark.parametrize("key", KEYS)
def test_stubs_are_not_attempted(key, stub):
    result = _check(key)(stub)
    assert result.status == NOT_ATTEMPTED
    assert not result
    _assert_printed(result, "NOT ATTEMPTED YET")


@pytest.mark.parametrize("key", KEYS)
def test_answer_returning_none_later_is_not_attempted(key):
    solution = CHECKS[key][1]
    calls = []

    def first_only(*args):
        calls.append(1)
        return solution(*args) if len(calls) == 1 else None

    result = _check(key)(first_only)
    assert result.status == NOT_ATTEMPTED and not result
    assert "returns nothing yet" in result.message
    assert len(calls) == 2  # it stopped at the first case that returned nothing


# ------------------------------------------------------------ wrong answers


def _only(*paths):
    return lambda W_Q, W_K, V, X: head_jacobian(W_Q, W_K, V, X, paths=paths)


WRONG_JACOBIAN = {
    "missing key path": (_only("value", "query"), "head_jacobian on a head with n=4: entry"),
    "missing query path": (_only("value", "key"), "head_jacobian on a head with n=4: entry"),
    "value path only (the operator)": (_only("value"), "head_jacobian on a head with n=4: entry"),
    "i and j swapped": (lambda *args: head_jacobian(*args).transpose(1, 0, 2, 3),
                        "head_jacobian on a head with n=4: entry"),
    "blocks transposed": (lambda *args: head_jacobian(*args).transpose(0, 1, 3, 2),
                          "head_jacobian on a head with n=1: entry"),
    "wrong shape": (lambda *args: head_jacobian(*args).reshape(len(args[3]), len(args[3]), -1),
                    "head_jacobian on a head with n=1: expected shape (1, 1, 2, 2); got shape (1, 1, 4)"),
    "one row only": (lambda *args: head_jacobian(*args)[-1],
                     "head_jacobian on a head with n=1: expected shape (1, 1, 2, 2); got shape (1, 2, 2)"),
    "string": (lambda *args: "J", "expected a numeric array of shape (1, 1, 2, 2); got str"),
    "dict": (lambda *args: {"J": 1}, "expected a numeric array of shape (1, 1, 2, 2); got dict"),
    "complex": (lambda *args: head_jacobian(*args) + 0j, "expected a real array of shape (1, 1, 2, 2)"),
    "NaN": (lambda *args: np.full((len(args[3]), len(args[3]), 2, 2), np.nan),
            "expected finite numbers; your array contains NaN or infinity"),
    "ragged": (lambda *args: [[1.0, 2.0], [3.0]], "expected a numeric array of shape (1, 1, 2, 2)"),
    "raises": (_raises_type_error, "head_jacobian on a head with n=1 raised TypeError: unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_JACOBIAN.values()), ids=list(WRONG_JACOBIAN))
def test_wrong_head_jacobians_fail_with_what_was_expected(answer, expected_in_message):
    result = check_head_jacobian(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def test_missing_key_path_message_states_the_right_entry():
    """The message quotes the exact Jacobian's entry, and the student's value, at the first mismatch."""
    result = check_head_jacobian(_only("value", "query"))
    text = result.message
    assert " should be " in text and "; got " in text
    where = tuple(int(k) for k in text.split("entry (")[1].split(")")[0].split(", "))
    should = float(text.split(" should be ")[1].split(";")[0])
    got = float(text.split("; got ")[1].split(";")[0])
    head = random_attention(1, 2, d_k=3, seed=1, scale=1.5)
    X = np.random.default_rng(21).standard_normal((4, 2))
    args = (head.W_Q[0], head.W_K[0], head.value_maps()[0], X)
    assert should == pytest.approx(head_jacobian(*args)[where], rel=1e-5)
    assert got == pytest.approx(_only("value", "query")(*args)[where], rel=1e-5)


def _always_first(W_Q, W_K, n, a, key):
    return make_input(W_Q, W_K, n, a, 0)


WRONG_INPUT = {
    "forgets the query's own score": (lambda *args: make_input(*args, forget_self_score=True),
                                      "make_input(n=2, a=0.3, key=0): the weight of the last position on position 0 "
                                      "should be 0.3; on your input it is"),
    "score not scaled by sqrt(d_k)": (lambda *args: make_input(*args, unscaled=True),
                                      "make_input(n=2, a=0.3, key=0): the weight of the last position on position 0 "
                                      "should be 0.3; on your input it is"),
    "key always at position 0": (_always_first, "make_input(n=64, a=0.5, key=40): the weight of the last position "
                                                "on position 40 should be 0.5; on your input it is"),
    "all zeros (uniform weights)": (lambda W_Q, W_K, n, a, key: np.zeros((n, W_Q.shape[1])),
                                    "should be 0.3; on your input it is 0.5"),
    "one token short": (lambda *args: make_input(*args)[:-1], "make_input(n=2, a=0.3, key=0): expected shape (2, 2); "
                                                              "got shape (1, 2)"),
    "tokens as columns": (lambda W_Q, W_K, n, a, key: make_input(W_Q, W_K, n + 1, a, key).T,
                          "make_input(n=2, a=0.3, key=0): expected shape (2, 2); got shape (2, 3)"),
    "string": (lambda *args: "X", "expected a numeric array of shape (2, 2); got str"),
    "NaN": (lambda W_Q, W_K, n, a, key: np.full((n, 2), np.nan), "expected finite numbers"),
    "complex": (lambda *args: make_input(*args) + 0j, "expected a real array of shape (2, 2)"),
    "raises": (_raises_type_error, "make_input(n=2, a=0.3, key=0) raised TypeError: unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_INPUT.values()), ids=list(WRONG_INPUT))
def test_wrong_highway_inputs_fail_with_what_was_expected(answer, expected_in_message):
    result = check_highway_input(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def _huge(W_Q, W_K, n, a, key):
    return np.full((n, W_Q.shape[1]), 1e200)


def test_input_with_overflowing_scores_does_not_pass():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # the overflow is the student's doing; the status is the point
        result = check_highway_input(_huge)
    assert result.status == FAILED, result


WRONG_PROFILE = {
    "Frobenius instead of spectral": (lambda *args: ssm_profile(*args, norm="fro"),
                                      "ssm_profile on rotation(1.0, rho=0.9), n=12: entry (0,) should be 1; "
                                      "got 1.41421"),
    "rho^l instead of the norms": (lambda A, B, C, n: np.max(np.abs(np.linalg.eigvals(A))) ** np.arange(n),
                                   "ssm_profile on jordan([(0.9, 3)]), n=20: entry"),
    "reversed (by position, not distance)": (lambda *args: ssm_profile(*args)[::-1],
                                             "ssm_profile on rotation(1.0, rho=0.9), n=12: entry (0,) should be 1"),
    "off by one lag": (lambda A, B, C, n: ssm_profile(A, B, C, n + 1)[1:], "entry (0,) should be 1; got 0.9"),
    "one lag short": (lambda A, B, C, n: ssm_profile(A, B, C, n - 1),
                      "ssm_profile on rotation(1.0, rho=0.9), n=12: expected shape (12,); got shape (11,)"),
    "the matrices, not their norms": (lambda A, B, C, n: np.stack([C @ np.linalg.matrix_power(A, l) @ B
                                                                   for l in range(n)]),
                                      "expected shape (12,); got shape (12, 2, 2)"),
    "a number": (lambda *args: 1.0, "expected shape (12,); got shape ()"),
    "string": (lambda *args: "decays", "expected a numeric array of shape (12,); got str"),
    "inf": (lambda A, B, C, n: np.full(n, np.inf), "expected finite numbers"),
    "raises": (_raises_type_error, "ssm_profile on rotation(1.0, rho=0.9), n=12 raised TypeError: unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_PROFILE.values()), ids=list(WRONG_PROFILE))
def test_wrong_profiles_fail_with_what_was_expected(answer, expected_in_message):
    result = check_ssm_gradient_profile(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def test_the_jordan_case_is_what_catches_rho_to_the_l():
    """On a normal A (the rotation) ||C A^l B|| = rho^l with B = C = I; only the Jordan block tells them apart."""
    result = check_ssm_gradient_profile(WRONG_PROFILE["rho^l instead of the norms"][0])
    assert "jordan([(0.9, 3)])" in result.message and "rotation" not in result.message


@pytest.mark.parametrize("key", KEYS)
def test_answer_that_raises_is_reported_not_raised(key):
    result = _check(key)(_raises_type_error)
    assert result.status == FAILED and not result
    assert result.message.endswith(" raised TypeError: unsupported operand")


@pytest.mark.parametrize("key", KEYS)
def test_answer_raising_other_errors_is_reported(key):
    def broken(*args):
        return np.zeros(3) @ np.zeros(4)  # ValueError from numpy

    result = _check(key)(broken)
    assert result.status == FAILED and not result
    assert "raised ValueError" in result.message


@pytest.mark.parametrize("not_a_function", [3, np.zeros((2, 2)), "J", [1.0]])
@pytest.mark.parametrize("key", KEYS)
def test_non_callable_answer_fails(key, not_a_function):
    result = _check(key)(not_a_function)
    assert result.status == FAILED and not result
    assert result.message == f"expected a function; got {type(not_a_function).__name__}"


@pytest.mark.parametrize("key", KEYS)
def test_answer_with_the_wrong_signature_is_reported(key):
    result = _check(key)(lambda: 1)
    assert result.status == FAILED and not result
    assert "raised TypeError" in result.message


# ------------------------------------------------------------ the exact loss of the delay task (new)

from ssmheads.exercises.ch4 import check_delay_loss  # noqa: E402


def _delay_loss(K, L, weights="n - l"):
    K = np.asarray(K, dtype=float)
    n = K.shape[0]
    total = 0.0
    for l in range(n):
        w = n - l if weights == "n - l" else 1.0
        total += w * (K[l] - (1.0 if l == L else 0.0)) ** 2
    return total / (n - L if weights == "n - l" else 1.0)


def test_delay_loss_reference_passes():
    result = check_delay_loss(_delay_loss)
    assert isinstance(result, CheckResult) and result.status == PASSED, str(result)


@pytest.mark.parametrize("stub", [None, ...])
def test_delay_loss_stub_is_not_attempted(stub):
    assert check_delay_loss(stub).status == NOT_ATTEMPTED


def test_delay_loss_function_returning_nothing_is_not_attempted():
    def delay_loss(K, L):
        ...
    assert check_delay_loss(delay_loss).status == NOT_ATTEMPTED


def test_delay_loss_with_uniform_weights_fails_and_says_what_was_expected():
    result = check_delay_loss(lambda K, L: _delay_loss(K, L, weights="uniform"))
    assert result.status == FAILED and "should be" in result.message
    # a scalar answer is named as the loss, not as an array entry, and the weights are hinted at
    assert "the loss should be 2.64327; got 5.18725" in result.message
    assert "entry" not in result.message and "n - l" in result.message


def test_delay_loss_without_the_normalisation_is_told_to_divide():
    result = check_delay_loss(lambda K, L: _delay_loss(K, L) * (len(K) - L))
    assert result.status == FAILED
    assert "the loss should be 1; got 7" in result.message and "n - L" in result.message


def test_delay_loss_plain_wrong_value_gets_no_misleading_hint():
    result = check_delay_loss(lambda K, L: 0.5)
    assert result.status == FAILED and result.message.endswith("the loss should be 1; got 0.5")


def test_missing_query_path_is_hinted_on_the_diagonal_block():
    result = check_head_jacobian(_only("value", "key"))
    i, j = (int(k) for k in result.message.split("entry (")[1].split(")")[0].split(", ")[:2])
    assert i == j and "query path" in result.message


def test_missing_key_path_off_the_diagonal_is_not_sent_to_the_query_path():
    result = check_head_jacobian(_only("value", "query"))
    i, j = (int(k) for k in result.message.split("entry (")[1].split(")")[0].split(", ")[:2])
    assert j < i and "key path" in result.message and "query path" not in result.message


def test_delay_loss_that_raises_is_reported_not_raised():
    def delay_loss(K, L):
        raise RuntimeError("oops")
    result = check_delay_loss(delay_loss)
    assert result.status == FAILED and "RuntimeError" in result.message


# ------------------------------------------------------------ targeted hints (fix after the second review)

def _non_causal(W_Q, W_K, V, X):
    """The right Jacobian, spoiled on the diagonal and on every block j > i (as a non-causal softmax would)."""
    J = head_jacobian(W_Q, W_K, V, X)
    n = X.shape[0]
    if n > 1:
        J = J + 0.1 * np.triu(np.ones((n, n)))[:, :, None, None]
    return J


def test_non_causal_answer_gets_the_causal_hint_not_the_query_path():
    result = check_head_jacobian(_non_causal)
    i, j = (int(k) for k in result.message.split("entry (")[1].split(")")[0].split(", ")[:2])
    assert j > i and "causal" in result.message and "query path" not in result.message


def test_uncentred_answer_on_one_token_is_told_the_score_paths_vanish():
    def uncentred(W_Q, W_K, V, X):
        J = head_jacobian(W_Q, W_K, V, X)
        if X.shape[0] == 1:                       # v_1 instead of v_1 - y_1 in the key path
            q = X @ W_Q.T
            J = J + (X @ V.T)[0][:, None] * (q[0] @ W_K)[None, :] / np.sqrt(W_Q.shape[0])
        return J
    result = check_head_jacobian(uncentred)
    assert result.status == FAILED and "n=1" in result.message and "centred" in result.message


@pytest.mark.parametrize("name, hint", [("Frobenius instead of spectral", "Frobenius norm"),
                                        ("reversed (by position, not distance)", "reversed"),
                                        ("off by one lag", "lag 0 is K_0 = C B")])
def test_profile_slips_get_their_hint(name, hint):
    result = check_ssm_gradient_profile(WRONG_PROFILE[name][0])
    assert result.status == FAILED and hint in result.message


def test_profile_from_the_library_is_refused():
    import ssmheads as sh

    def cheat(A, B, C, n):
        return sh.gradient_profile(sh.LinearSSM(A, B, C), np.zeros((n, B.shape[1])))[1]
    result = check_ssm_gradient_profile(cheat)
    assert result.status == FAILED and "switched off" in result.message
    assert check_ssm_gradient_profile(ssm_profile).status == PASSED      # and works again after


@pytest.mark.parametrize("shift", [1, -1])
@pytest.mark.parametrize("normalise", ["same weights", "n - L"])
def test_delay_loss_off_by_one_weights_get_the_hint(shift, normalise):
    def delay_loss(K, L):
        K = np.asarray(K, dtype=float)
        n = K.shape[0]
        lags = np.arange(n)
        total = np.sum((n - lags + shift) * (K - (lags == L)) ** 2)
        return total / (n - L + shift if normalise == "same weights" else n - L)
    result = check_delay_loss(delay_loss)
    assert result.status == FAILED and "off by one" in result.message, result.message


def test_delay_loss_docstring_does_not_state_the_answer():
    assert "(n - l)" not in check_delay_loss.__doc__
