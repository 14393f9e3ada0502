"""Tests of the Chapter 3 exercise checks in ``ssmheads.exercises``.

For each check: a reference solution written here (independently of
``ssmheads.heads``: numpy's SVD with column-major vec, and a non-negative
least-squares test of pointedness instead of the library's linear program)
passes; stubs are "not attempted yet" without a traceback; wrong answers fail,
never raise, and say what was expected.
"""

import numpy as np
import pytest
from scipy.optimize import nnls

from ssmheads.exercises import CheckResult, check_exact_heads, check_nonnegative_head_count, check_optimal_error
from ssmheads.systems import diagonal, rotation
from helpers import STUB_IDS, STUBS
from helpers import assert_printed as _assert_printed
from helpers import raises_type_error as _raises_type_error

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"
EPS = np.finfo(float).eps

# ------------------------------------------------------------ reference solutions, written from the exercise text


def _vec(K):
    """Columns ``vec K_l`` (column-major), shape (p*d, n)."""
    return np.stack([M.reshape(-1, order="F") for M in K], axis=1)


def _rank(s, shape):
    return 0 if s.size == 0 or s[0] == 0 else int(np.sum(s > s[0] * max(shape) * EPS))


def exact_head_construction(K):
    """Theorem 5's recipe: thin SVD G = U S Q^T, V_h = unvec(U[:, h]), c_h(l) = (S Q^T)[h, l], h < k."""
    K = np.asarray(K, dtype=float)
    n, p, d = K.shape
    G = _vec(K)
    U, s, Qt = np.linalg.svd(G, full_matrices=False)
    k = _rank(s, G.shape)
    values = np.stack([U[:, h].reshape(p, d, order="F") for h in range(k)]) if k else np.zeros((0, p, d))
    coefficients = s[:k, None] * Qt[:k]
    return coefficients, values


def optimal_error(K, H, weights):
    """Corollary 7: the Eckart-Young tail sum_{r > H} sigma_r^2 of G_w = [sqrt(w_l) vec K_l]."""
    K = np.asarray(K, dtype=float)
    s = np.linalg.svd(_vec(K) * np.sqrt(np.asarray(weights, dtype=float)), compute_uv=False)
    return float(np.sum(s[H:] ** 2))


def _pointed(K):
    """Gordan: pointed iff 0 is not a convex combination of the (normalised) nonzero lags; decided by NNLS."""
    G = K.reshape(K.shape[0], -1)
    norms = np.linalg.norm(G, axis=1)
    keep = norms > 1e-12 * norms.max()
    G = G[keep] / norms[keep, None]
    weight = 1e3  # a heavy row of ones enforces sum(lam) = 1
    lam, _ = nnls(np.vstack([G.T, weight * np.ones(G.shape[0])]), np.r_[np.zeros(G.shape[1]), weight])
    return float(np.linalg.norm(lam @ G / lam.sum())) > 1e-8


def nonnegative_head_count(K):
    """Theorem 12: k if the cone of the lags is pointed, k + 1 otherwise."""
    K = np.asarray(K, dtype=float)
    G = _vec(K)
    k = _rank(np.linalg.svd(G, compute_uv=False), G.shape)
    return k if _pointed(K) else k + 1


CHECKS = {
    "exact heads": (check_exact_heads, exact_head_construction, "Chapter 3: build the heads"),
    "optimal error": (check_optimal_error, optimal_error, "Chapter 3: the Eckart-Young tail"),
    "nonnegative count": (check_nonnegative_head_count, nonnegative_head_count, "Chapter 3: count nonnegative heads"),
}
KEYS = list(CHECKS)


def _check(key):
    return CHECKS[key][0]


def _lags(ssm, n):
    return ssm.lag_operators(n)


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
    """The references agree with known answers (Prop. 3, Theorem 12's examples), not only with the checks."""
    K = _lags(rotation(1.0, 0.9), 6)
    c, V = exact_head_construction(K)
    assert V.shape == (2, 2, 2)
    np.testing.assert_allclose(np.einsum("hl,hpd->lpd", c, V), K, atol=1e-14)
    K = _lags(diagonal([0.9, 0.5, -0.3]), 8)
    s = np.linalg.svd(_vec(K), compute_uv=False)
    assert optimal_error(K, 2, np.ones(8)) == pytest.approx(s[2] ** 2)
    assert optimal_error(K, 3, np.ones(8)) < 1e-25
    scalar = [np.array([[[a ** l]] for l in range(8)]) for a in (0.5, -0.5)]
    assert [nonnegative_head_count(K) for K in scalar] == [1, 2]
    assert nonnegative_head_count(_lags(rotation(0.5, 0.9), 6)) == 2  # 5 * 0.5 < pi
    assert nonnegative_head_count(_lags(rotation(0.5, 0.9), 8)) == 3  # 7 * 0.5 > pi
    assert nonnegative_head_count(_lags(diagonal([0.9, 0.5, 0.2]), 8)) == 3  # trace is positive


def test_a_different_basis_of_the_span_also_passes():
    """Theorem 5 allows any basis of the span, not only the singular vectors."""
    def mixed(K):
        c, V = exact_head_construction(K)
        k = V.shape[0]
        M = np.eye(k) + np.triu(np.ones((k, k)), 1)  # invertible, not orthogonal
        return np.linalg.solve(M.T, c), np.einsum("hg,gpd->hpd", M, V)

    result = check_exact_heads(mixed)
    assert result.status == PASSED, result.message


def test_answers_as_lists_and_numpy_integers_pass():
    def as_lists(K):
        c, V = exact_head_construction(K)
        return c.tolist(), V.tolist()

    assert check_exact_heads(as_lists).status == PASSED
    assert check_optimal_error(lambda K, H, w: np.float64(optimal_error(K, H, w))).status == PASSED
    assert check_nonnegative_head_count(lambda K: np.int64(nonnegative_head_count(K))).status == PASSED


# ------------------------------------------------------------ stubs


@pytest.mark.parametrize("stub", STUBS, ids=STUB_IDS)
@pytest.mark.parametrize("key", KEYS)
def test_stubs_are_not_attempted(key, stub):
    result = _check(key)(stub)
    assert result.status == NOT_ATTEMPTED
    assert not result
    _assert_printed(result, "NOT ATTEMPTED YET")


def test_answer_returning_none_later_is_not_attempted():
    calls = []

    def first_only(K, H, weights):
        calls.append(1)
        return optimal_error(K, H, weights) if len(calls) == 1 else None

    result = check_optimal_error(first_only)
    assert result.status == NOT_ATTEMPTED and not result
    assert "returns nothing yet" in result.message


# ------------------------------------------------------------ wrong answers


def _one_head_too_many(K):
    c, V = exact_head_construction(K)
    return np.vstack([c, np.zeros((1, c.shape[1]))]), np.concatenate([V, np.zeros((1,) + V.shape[1:])])


def _one_head_too_few(K):
    c, V = exact_head_construction(K)
    return c[:-1], V[:-1]


def _wrong_values(K):
    c, V = exact_head_construction(K)
    return c, 1.01 * V


def _values_only(K):
    return exact_head_construction(K)[1]


def _transposed_values(K):
    """Row-major instead of column-major unvec: wrong whenever p = d and V_h is not symmetric."""
    c, V = exact_head_construction(K)
    return c, V.transpose(0, 2, 1)


def _complex_values(K):
    c, V = exact_head_construction(K)
    return c, V + 0j


def _nan_coefficients(K):
    c, V = exact_head_construction(K)
    return np.full_like(c, np.nan), V


def _short_coefficients(K):
    c, V = exact_head_construction(K)
    return c[:, :-1], V


def _flat_values(K):
    c, V = exact_head_construction(K)
    return c, V.reshape(V.shape[0], -1)


WRONG_EXACT = {
    "too many heads": (_one_head_too_many, "the lags span k = 2 dimensions, so use exactly 2 heads; you used 3"),
    "too few heads": (_one_head_too_few, "the lags span k = 2 dimensions, so use exactly 2 heads; you used 1"),
    "wrong values": (_wrong_values, "exact_head_construction on rotation(1.0, rho=0.9), n=10: sum_h c_h(l) V_h "
                                    "against K_l: entry (0, 0, 0) should be 1; got 1.01"),
    # two value maps unpack as a "pair" of 2 x 2 matrices: the shape check catches it
    "values only": (_values_only, "values: expected shape (2, 2, 2); got shape (2, 2)"),
    "a triple": (lambda K: exact_head_construction(K) + (None,), "expected a pair (coefficients, values); got tuple"),
    "a number": (lambda K: 3.0, "expected a pair (coefficients, values); got float"),
    "row-major unvec": (_transposed_values, "sum_h c_h(l) V_h against K_l: entry (1, 0, 1) should be"),
    "complex": (_complex_values, "values: expected a real array of shape (2, 2, 2); got a complex array"),
    "NaN": (_nan_coefficients, "coefficients: expected finite numbers; your array contains NaN or infinity"),
    "short coefficients": (_short_coefficients, "coefficients: expected shape (2, 10); got shape (2, 9)"),
    "flat values": (_flat_values, "values: expected shape (2, 2, 2); got shape (2, 4)"),
    "strings": (lambda K: ("c", "V"), "values: expected a numeric array of shape (2, 2, 2); got str"),
    "raises": (_raises_type_error, "exact_head_construction on rotation(1.0, rho=0.9), n=10 raised TypeError: "
                                   "unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_EXACT.values()), ids=list(WRONG_EXACT))
def test_wrong_exact_heads_fail_with_what_was_expected(answer, expected_in_message):
    result = check_exact_heads(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def _tail_off_by_one(K, H, weights):
    return optimal_error(K, H - 1, weights)


def _ignores_weights(K, H, weights):
    return optimal_error(K, H, np.ones(len(weights)))


def _sum_of_singular_values(K, H, weights):
    s = np.linalg.svd(_vec(K) * np.sqrt(weights), compute_uv=False)
    return float(np.sum(s[H:]))


WRONG_ERROR = {
    "tail off by one": (_tail_off_by_one, "optimal_error on rotation(1.0, rho=0.9), n=10, H=1, weights ones: "
                                          "the minimum is"),
    "ignores weights": (_ignores_weights, "H=2, weights n - l: the minimum is"),
    "sigma not squared": (_sum_of_singular_values, "the minimum is"),
    "string": (lambda K, H, w: "small", "expected a number; got str"),
    "array": (lambda K, H, w: np.array([1.0, 2.0]), "expected a number; got ndarray"),
    "list": (lambda K, H, w: [optimal_error(K, H, w)], "expected a number; got list"),
    "complex": (lambda K, H, w: complex(optimal_error(K, H, w)), "expected a number; got complex"),
    "nan": (lambda K, H, w: float("nan"), "got nan"),
    "inf": (lambda K, H, w: float("inf"), "got inf"),
    "raises": (_raises_type_error, "raised TypeError: unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_ERROR.values()), ids=list(WRONG_ERROR))
def test_wrong_optimal_errors_fail_with_what_was_expected(answer, expected_in_message):
    result = check_optimal_error(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def test_optimal_error_message_states_the_right_value():
    K = _lags(rotation(1.0, 0.9), 10)
    expected = optimal_error(K, 1, np.ones(10))
    result = check_optimal_error(lambda K, H, w: optimal_error(K, H, w) + 1.0)
    assert f"the minimum is {expected:.6g}; got {expected + 1.0:.6g}" in result.message


def test_optimal_error_tolerance_is_relative():
    """Rounding-level differences pass; a relative error of 1e-6 does not."""
    assert check_optimal_error(lambda K, H, w: optimal_error(K, H, w) * (1 + 1e-12)).status == PASSED
    assert check_optimal_error(lambda K, H, w: optimal_error(K, H, w) * (1 + 1e-6)).status == FAILED


def _always_k(K):
    G = _vec(np.asarray(K))
    return _rank(np.linalg.svd(G, compute_uv=False), G.shape)


WRONG_COUNT = {
    "always k": (_always_k, "nonnegative_head_count on scalar a = -0.5, n=8: H+ should be 2; got 1"),
    "always k + 1": (lambda K: _always_k(K) + 1, "nonnegative_head_count on scalar a = 0.5, n=8: H+ should be 1; got 2"),
    "ignores the half turn": (lambda K: 2 if K.shape[1] == 2 else nonnegative_head_count(K),
                              "rotation(0.5), n=8 ((n-1) theta > pi): H+ should be 3; got 2"),
    "bool": (lambda K: True, "expected an integer; got True"),
    "float": (lambda K: float(nonnegative_head_count(K)), "expected an integer; got 1.0"),
    "numpy float": (lambda K: np.float64(nonnegative_head_count(K)), "expected an integer; got"),
    "string": (lambda K: "one", "expected an integer; got 'one'"),
    "raises": (_raises_type_error, "nonnegative_head_count on scalar a = 0.5, n=8 raised TypeError: unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_COUNT.values()), ids=list(WRONG_COUNT))
def test_wrong_head_counts_fail_with_what_was_expected(answer, expected_in_message):
    result = check_nonnegative_head_count(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


@pytest.mark.parametrize("key", KEYS)
def test_answer_that_raises_is_reported_not_raised(key):
    result = _check(key)(_raises_type_error)
    assert result.status == FAILED and not result
    assert result.message.endswith(" raised TypeError: unsupported operand")


@pytest.mark.parametrize("not_a_function", [3, np.zeros((2, 2)), "k + 1"])
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


@pytest.mark.parametrize("answer", [
    lambda K: (np.zeros((2, K.shape[0])), [[1.0, 2.0], [3.0]]),
    lambda K: ([[1.0, 2.0], [3.0]], exact_head_construction(K)[1]),
], ids=["ragged values", "ragged coefficients"])
def test_ragged_answer_fails_without_raising(answer):
    result = check_exact_heads(answer)
    assert result.status == FAILED and not result
    assert "expected" in result.message
