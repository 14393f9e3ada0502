"""Tests of the Chapter 3 exercise checks in ``ssmheads.exercises``.

For each check: a reference solution written here (independently of
``ssmheads.heads``: numpy's SVD with column-major vec, and a non-negative
least-squares test of pointedness instead of the library's linear program)
passes; stubs are "not attempted yet" without a traceback; wrong answers fail,
never raise, and say what was expected; an answer that calls the library's own
routine fails, and the library works again afterwards.
"""

import numpy as np
import pytest
from scipy.optimize import nnls

import ssmheads
from ssmheads.exercises import CheckResult, check_exact_heads, check_nonnegative_head_count, check_optimal_error
from ssmheads.exercises.ch3 import REFERENCE_ROUTINES, check_quaternion_heads, reference_routines_off
from ssmheads.systems import diagonal, random_stable, rotation
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


def _hamilton(q, r):
    """The quaternion product q r, quaternions as (a, b, c, d) = a + b i + c j + d k."""
    a1, b1, c1, d1 = q
    a2, b2, c2, d2 = r
    return np.array([a1 * a2 - b1 * b2 - c1 * c2 - d1 * d2, a1 * b2 + b1 * a2 + c1 * d2 - d1 * c2,
                     a1 * c2 - b1 * d2 + c1 * a2 + d1 * b2, a1 * d2 + b1 * c2 - c1 * b2 + d1 * a2])


# V_h = left multiplication by 1, i, j, k: column m of V_h is e_h e_m (Hamilton's product)
QUATERNION_VALUES = np.stack([np.stack([_hamilton(unit, e) for e in np.eye(4)], axis=1) for unit in np.eye(4)])


def quaternion_heads(K, X):
    """alpha_ij = (K_(i-j) x_j) x_j^(-1) as a quaternion, x^(-1) = conj(x) / |x|^2; zero for x_j = 0 or j > i."""
    K, X = np.asarray(K, dtype=float), np.asarray(X, dtype=float)
    n = K.shape[0]
    alpha = np.zeros((4, n, n))
    for i in range(n):
        for j in range(i + 1):
            x = X[j]
            if np.any(x):
                conj = x * np.array([1.0, -1.0, -1.0, -1.0])
                alpha[:, i, j] = _hamilton(K[i - j] @ x, conj) / (x @ x)
    return alpha, QUATERNION_VALUES


CHECKS = {
    "exact heads": (check_exact_heads, exact_head_construction, "Chapter 3: build the heads"),
    "quaternion heads": (check_quaternion_heads, quaternion_heads, "Chapter 3: four heads on R^4"),
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
    assert nonnegative_head_count(_lags(diagonal([-0.9, -0.5, -0.2]), 8)) == 4  # K_0 + ... : signs cancel
    shift = ssmheads.LinearSSM(np.diag([1.0, 1.0], -1), np.eye(3), np.eye(3))
    assert nonnegative_head_count(_lags(shift, 6)) == 3  # zero lags K_3, K_4, K_5 are ignored
    # the quaternion units: i j = k, i^2 = -1, and the heads reproduce every pair of a k = 16 SSM
    one, i, j, k = QUATERNION_VALUES
    np.testing.assert_array_equal(one, np.eye(4))
    np.testing.assert_array_equal(i @ j, k)
    np.testing.assert_array_equal(i @ i, -np.eye(4))
    s = random_stable(16, 4, 4, rho=0.9, seed=5)
    K, X = _lags(s, 18), np.random.default_rng(0).standard_normal((18, 4))
    alpha, V = quaternion_heads(K, X)
    Y = np.einsum("hij,hpd,jd->ip", alpha, V, X)
    np.testing.assert_allclose(Y, s.forward(X), atol=1e-12 * np.abs(Y).max())
    assert ssmheads.interaction_rank(K) == 16


def test_a_different_basis_of_the_span_also_passes():
    """Theorem 5 allows any basis of the span, not only the singular vectors."""
    def mixed(K):
        c, V = exact_head_construction(K)
        k = V.shape[0]
        M = np.eye(k) + np.triu(np.ones((k, k)), 1)  # invertible, not orthogonal
        return np.linalg.solve(M.T, c), np.einsum("hg,gpd->hpd", M, V)

    result = check_exact_heads(mixed)
    assert result.status == PASSED, result.message


def test_another_family_of_four_fixed_heads_also_passes():
    """The check asks for four fixed value maps that work, not for these particular ones."""
    M = np.linalg.qr(np.random.default_rng(1).standard_normal((4, 4)))[0]

    def conjugated(K, X):
        # W_ij x = M Q_ij M^T x with Q the quaternion answer for the lags M^T K_l M on tokens M^T x
        alpha, V = quaternion_heads(np.einsum("pq,lpr,rs->lqs", M, K, M), X @ M)
        return alpha, np.einsum("pq,hqr,sr->hps", M, V, M)

    result = check_quaternion_heads(conjugated)
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


def _weights_not_square_rooted(K, H, weights):
    s = np.linalg.svd(_vec(K) * weights, compute_uv=False)
    return float(np.sum(s[H:] ** 2))


def _unweighted_value_maps(K, H, weights):
    G = _vec(K)
    U = np.linalg.svd(G, full_matrices=False)[0][:, :H]
    return float(np.sum(weights * np.sum((G - U @ (U.T @ G)) ** 2, axis=0)))


WRONG_ERROR = {
    "tail off by one": (_tail_off_by_one, "optimal_error on rotation(1.0, rho=0.9), n=10, H=1, weights ones: "
                                          "the minimum is"),
    "ignores weights": (_ignores_weights, "H=2, weights n - l: the minimum is"),
    "sigma not squared": (_sum_of_singular_values, "the minimum is"),
    "string": (lambda K, H, w: "small", "expected a number; got str"),
    "array": (lambda K, H, w: np.array([1.0, 2.0]), "expected a number; got ndarray of shape (2,)"),
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


MISTAKES_NAMED = {  # a common wrong answer: words of the mistake its message must name
    "off by one, H - 1": (_tail_off_by_one, "the tail from index H - 1 on"),
    "off by one, H + 1": (lambda K, H, w: optimal_error(K, H + 1, w), "the tail from index H + 1 on"),
    "weights ignored": (_ignores_weights, "the weights ignored"),
    "w for sqrt(w)": (_weights_not_square_rooted, "w_l instead of sqrt(w_l)"),
    "not squared": (_sum_of_singular_values, "singular values not squared"),
    "kept part": (lambda K, H, w: optimal_error(K, 0, w) - optimal_error(K, H, w), "the part the H heads keep"),
    "divided by n": (lambda K, H, w: optimal_error(K, H, w) / K.shape[0], "the minimum divided by n"),
    "eigvalsh ascending": (lambda K, H, w: float(np.sum(np.linalg.eigvalsh(
        (_vec(K) * np.sqrt(w)) @ (_vec(K) * np.sqrt(w)).T)[H:])), "in ascending order, as np.linalg.eigvalsh"),
    "eigvalsh ascending, n x n": (lambda K, H, w: float(np.sum(np.linalg.eigvalsh(
        (_vec(K) * np.sqrt(w)).T @ (_vec(K) * np.sqrt(w)))[H:])), "in ascending order, as np.linalg.eigvalsh"),
    "only sigma_(H+1)^2": (lambda K, H, w: float(np.linalg.svd(_vec(K) * np.sqrt(w), compute_uv=False)[H] ** 2),
                           "only sigma_{H+1}^2"),
    "unweighted maps": (_unweighted_value_maps, "value maps from the SVD of the unweighted G"),
}


@pytest.mark.parametrize("answer, words", list(MISTAKES_NAMED.values()), ids=list(MISTAKES_NAMED))
def test_common_wrong_optimal_errors_are_named(answer, words):
    result = check_optimal_error(answer)
    assert result.status == FAILED, result
    assert "your value is what a common mistake gives: " in result.message and words in result.message


def test_an_unrecognised_wrong_optimal_error_names_no_mistake():
    result = check_optimal_error(lambda K, H, w: optimal_error(K, H, w) * 1.37)
    assert result.status == FAILED and "common mistake" not in result.message


def test_a_one_entry_array_is_a_number():
    assert check_optimal_error(lambda K, H, w: np.array([optimal_error(K, H, w)])).status == PASSED
    assert check_optimal_error(lambda K, H, w: np.array(optimal_error(K, H, w))).status == PASSED


def test_optimal_error_message_states_the_right_value():
    K = _lags(rotation(1.0, 0.9), 10)
    expected = optimal_error(K, 1, np.ones(10))
    result = check_optimal_error(lambda K, H, w: optimal_error(K, H, w) + 1.0)
    assert f"the minimum is {expected:.10g}; got {expected + 1.0:.10g} (a difference of 1.0e+00" in result.message


def test_a_float32_tail_is_told_to_compute_in_float64():
    """Single precision agrees to ~1e-8 of the total: both values in 10 digits, and the float32 question."""
    def single(K, H, w):
        G = (K.reshape(K.shape[0], -1).T * np.sqrt(w)).astype(np.float32)
        return float(np.sum(np.linalg.svd(G, compute_uv=False)[H:] ** 2))

    result = check_optimal_error(single)
    assert result.status == FAILED
    assert "the minimum is 3.996464756; got 3.99646" in result.message
    assert "of the total weighted energy" in result.message
    assert "computed in float32? Compute in float64" in result.message
    off = check_optimal_error(lambda K, H, w: optimal_error(K, H, w) + 1.0)
    assert "float32" not in off.message     # a gross error is not blamed on precision


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
    "non-integral float": (lambda K: nonnegative_head_count(K) + 0.5, "expected an integer; got 1.5"),
    "numpy non-integral float": (lambda K: np.float64(nonnegative_head_count(K)) / 2, "expected an integer; got"),
    "string": (lambda K: "one", "expected an integer; got 'one'"),
    "raises": (_raises_type_error, "nonnegative_head_count on scalar a = 0.5, n=8 raised TypeError: unsupported operand"),
}


def test_a_float_with_an_integer_value_is_that_count():
    assert check_nonnegative_head_count(lambda K: float(nonnegative_head_count(K))).status == PASSED
    assert check_nonnegative_head_count(lambda K: np.float64(nonnegative_head_count(K))).status == PASSED


def test_a_one_entry_array_is_that_count_as_in_exercise_3_2():
    assert check_nonnegative_head_count(lambda K: np.array([nonnegative_head_count(K)])).status == PASSED
    assert check_nonnegative_head_count(lambda K: np.array([[float(nonnegative_head_count(K))]])).status == PASSED
    result = check_nonnegative_head_count(lambda K: np.array([nonnegative_head_count(K)] * 2))
    assert result.status == FAILED and "expected an integer" in result.message
    assert "expected an integer; got True" in check_nonnegative_head_count(lambda K: np.array([True])).message


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


# ------------------------------------------------------------ the quaternion exercise: wrong answers


def _diagonal_only(K, X):
    """Reproduces the outputs through alpha_ii alone (coefficients that read the whole input): not pairwise."""
    n = K.shape[0]
    alpha = np.zeros((4, n, n))
    Y = np.einsum("ijpd,jd->ip", np.where((np.arange(n)[:, None] >= np.arange(n))[..., None, None],
                                          K[np.abs(np.arange(n)[:, None] - np.arange(n))], 0.0), X)
    for i in range(n):
        x = X[i]
        alpha[:, i, i] = _hamilton(Y[i], x * np.array([1.0, -1.0, -1.0, -1.0])) / (x @ x)
    return alpha, QUATERNION_VALUES


def _divides_by_zero(K, X):
    with np.errstate(invalid="ignore", divide="ignore"):
        alpha, V = quaternion_heads(K, X)
        norms = np.einsum("jd,jd->j", X, X)
        return np.where(norms[None, None, :] > 0, alpha, alpha / norms[None, None, :]), V


def _input_dependent_values(K, X):
    alpha, V = quaternion_heads(K, X)
    return alpha * 2.0, V / 2.0 * (1.0 + (K.shape[0] == 6))  # right on n=20, scaled wrongly later


def _anticausal(K, X):
    alpha, V = quaternion_heads(K, X)
    alpha[:, 0, 1] = 1.0
    return alpha, V


WRONG_QUATERNION = {
    "outputs through alpha_ii only": (_diagonal_only, "sum_h alpha[h, i, j] V_h x_j against K_(i-j) x_j"),
    "divides by a zero token": (_divides_by_zero, "token 2 is zero: alpha: expected finite numbers"),
    "value maps change": (_input_dependent_values, "the value maps changed from the first case"),
    "not causal": (_anticausal, "alpha must be causal, zero for j > i; alpha[:, 0, 1] is not"),
    "three heads": (lambda K, X: (quaternion_heads(K, X)[0][:3], QUATERNION_VALUES[:3]),
                    "use exactly four heads; you returned 3 value maps"),
    "identity heads": (lambda K, X: (quaternion_heads(K, X)[0], np.stack([np.eye(4)] * 4)),
                       "against K_(i-j) x_j"),
    "a number": (lambda K, X: 1.0, "expected a pair (alpha, values); got float"),
    "complex": (lambda K, X: (quaternion_heads(K, X)[0] + 0j, QUATERNION_VALUES),
                "alpha: expected a real array of shape (4, 20, 20); got a complex array"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_QUATERNION.values()), ids=list(WRONG_QUATERNION))
def test_wrong_quaternion_heads_fail_with_what_was_expected(answer, expected_in_message):
    result = check_quaternion_heads(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def test_nonnegative_count_that_keeps_zero_lags_fails_on_the_shift():
    """Demanding phi(K_l) >= 1 of a zero lag makes every cone look non-pointed: k + 1 instead of k."""
    def keeps_zero_lags(K):
        G = np.asarray(K).reshape(len(K), -1)
        if np.any(np.linalg.norm(G, axis=1) == 0):
            return _always_k(K) + 1
        return nonnegative_head_count(K)

    result = check_nonnegative_head_count(keeps_zero_lags)
    assert result.status == FAILED
    assert "nilpotent shift, B = C = I_3, n=6 (K_3 = K_4 = K_5 = 0): H+ should be 3; got 4" in result.message


def test_nonnegative_count_that_stops_at_k_two_fails():
    result = check_nonnegative_head_count(lambda K: min(nonnegative_head_count(K), 3) if _always_k(K) < 3
                                          else _always_k(K))
    assert result.status == FAILED
    assert "diagonal([-0.9, -0.5, -0.2]), n=8 (k = 3, signs alternate): H+ should be 4; got 3" in result.message


# ------------------------------------------------------------ the library's own routines are off during a check


def _library_calls():
    """For each check, an answer that only calls the library (through the package, a module, or an early import)."""
    from ssmheads.heads import nonnegative_head_count as imported_early

    return {
        "exact heads": lambda K: ssmheads.optimal_heads(K, ssmheads.interaction_rank(K))[:2],
        "optimal error": lambda K, H, w: ssmheads.heads.head_count_curve(K, H, w)[H],
        "nonnegative count": lambda K: imported_early(K),
        "quaternion heads": lambda K, X: (ssmheads.span.span_basis(K), QUATERNION_VALUES),
    }


@pytest.mark.parametrize("key", KEYS)
def test_an_answer_that_calls_the_library_fails_and_the_library_comes_back(key):
    K = _lags(rotation(1.0, 0.9), 6)
    before = ssmheads.optimal_heads(K, 1)[2], ssmheads.nonnegative_head_count(K)
    result = _check(key)(_library_calls()[key])
    assert result.status == FAILED and not result
    assert "raised RuntimeError: this check asks you to write it yourself" in result.message
    assert (ssmheads.optimal_heads(K, 1)[2], ssmheads.nonnegative_head_count(K)) == before


def test_reference_routines_come_back_after_an_error_inside_the_window():
    K = _lags(rotation(1.0, 0.9), 3)  # (n - 1) theta = 2 < pi: pointed
    with pytest.raises(ZeroDivisionError):
        with reference_routines_off():
            with pytest.raises(RuntimeError, match="write it yourself"):
                ssmheads.heads.is_pointed(K)
            1 / 0
    assert ssmheads.heads.is_pointed(K) is True
    for module, name in REFERENCE_ROUTINES:
        assert getattr(getattr(ssmheads, module), name).__code__.co_name == name


def test_library_use_outside_the_answer_is_allowed():
    """Data made with the library before the check (systems, lags) are fine; only calls during it are refused."""
    lags = {n: _lags(rotation(1.0, 0.9), n) for n in (6, 10)}
    assert check_exact_heads(lambda K: exact_head_construction(lags.get(K.shape[0], K))).status == PASSED


# ------------------------------------------------------------ referee's gamed answers (each must fail)


def _random_gaussian_heads(K, X):
    """Four Gaussian value maps, alpha solved token by token: right wherever [V_h x] is invertible."""
    V = np.random.default_rng(0).standard_normal((4, 4, 4))
    n = K.shape[0]
    alpha = np.zeros((4, n, n))
    for i in range(n):
        for j in range(i + 1):
            if np.any(X[j]):
                alpha[:, i, j] = np.linalg.solve(np.einsum("hpd,d->ph", V, X[j]), K[i - j] @ X[j])
    return alpha, V


def _first_coordinate_heads(K, X):
    """V_h = e_h e_1^T and alpha = K x / x_1: right whenever x_1 != 0 (zero tokens handled)."""
    V = np.stack([np.outer(e, np.eye(4)[0]) for e in np.eye(4)])
    n = K.shape[0]
    alpha = np.zeros((4, n, n))
    with np.errstate(divide="ignore", invalid="ignore"):
        for i in range(n):
            for j in range(i + 1):
                if np.any(X[j]):
                    alpha[:, i, j] = K[i - j] @ X[j] / X[j, 0]
    return alpha, V


def test_gaussian_value_maps_fail_at_a_token_where_they_do_not_span():
    """det[V_h x] changes sign on the sphere, so it vanishes on a cone; the check bisects to it."""
    V = np.random.default_rng(0).standard_normal((4, 4, 4))
    dets = np.linalg.det(np.einsum("hpd,sd->sph", V, np.random.default_rng(1).standard_normal((500, 4))))
    assert dets.min() < 0 < dets.max()  # the premise: the determinant takes both signs
    assert check_exact_heads(exact_head_construction).status == PASSED
    result = check_quaternion_heads(_random_gaussian_heads)
    assert result.status == FAILED, result
    assert "where your value maps come closest to failing" in result.message
    assert "span fewer than four dimensions" in result.message and "at token 4, x = [" in result.message


def test_first_coordinate_value_maps_fail_at_e2():
    """Passes every random token (x_1 != 0), fails on e_2 where V_h x = 0 for every head."""
    result = check_quaternion_heads(_first_coordinate_heads)
    assert result.status == FAILED, result
    assert "at token 1, x = [0, 1, 0, 0]" in result.message and "span fewer than four" in result.message


def test_quaternion_probe_finds_no_bad_token_for_the_quaternions():
    from ssmheads.exercises.ch3 import DEGENERATE_TOKEN, _spanning_ratio, _worst_token

    worst = _worst_token(QUATERNION_VALUES)
    assert abs(_spanning_ratio(QUATERNION_VALUES, worst) - 1.0) < 1e-12  # M(x)^T M(x) = |x|^2 I
    V = np.random.default_rng(0).standard_normal((4, 4, 4))
    assert _spanning_ratio(V, _worst_token(V)) < DEGENERATE_TOKEN / 100


def _nonneg_rule(phi_rule):
    def count(K):
        G = np.asarray(K).reshape(len(K), -1)
        norms = np.linalg.norm(G, axis=1)
        G = G[norms > 1e-12 * norms.max()]
        return _always_k(K) + (0 if phi_rule(G) else 1)
    return count


def _sum_functional(G):
    return bool(np.all(G @ G.sum(axis=0) > 0))


def _nonstrict_lp(G):
    from scipy.optimize import linprog
    lp = linprog(np.zeros(G.shape[1]), A_ub=np.vstack([-G, -G.sum(axis=0)]), b_ub=np.r_[np.zeros(len(G)), -1.0],
                 bounds=[(None, None)] * G.shape[1], method="highs")
    return lp.status == 0


def _default_bounds_lp(G):
    from scipy.optimize import linprog
    return linprog(np.zeros(G.shape[1]), A_ub=-G, b_ub=-np.ones(len(G)), method="highs").status == 0


@pytest.mark.parametrize("rule, expected_in_message", [
    (_sum_functional, "rotation(0.5), n=7 ((n-1) theta = 3 < pi): H+ should be 2; got 3"),
    (_nonstrict_lp, "(a line in the cone): H+ should be 3; got 2"),
    (_default_bounds_lp, "scalar a = 0.5, C = -1, n=8 (all lags negative): H+ should be 1; got 2"),
], ids=["phi = sum of lags", "non-strict LP", "linprog default bounds phi >= 0"])
def test_plausible_wrong_pointedness_rules_fail(rule, expected_in_message):
    result = check_nonnegative_head_count(_nonneg_rule(rule))
    assert result.status == FAILED, result
    assert expected_in_message in result.message


def test_loose_rank_tolerance_fails_the_build_heads_check():
    def loose(K):
        n, p, d = K.shape
        G = _vec(K)
        U, s, Qt = np.linalg.svd(G, full_matrices=False)
        k = int(np.sum(s > 1e-2 * s[0]))
        return s[:k, None] * Qt[:k], np.stack([U[:, h].reshape(p, d, order="F") for h in range(k)])

    result = check_exact_heads(loose)
    assert result.status == FAILED
    assert "C = diag(1, 3e-4), n=9 (sigma_2 / sigma_1 = 1.1e-04)" in result.message
    assert "so use exactly 2 heads; you used 1" in result.message
    assert "your tolerance is too loose: singular value 2 of the stacked lags is 1.1e-04" in result.message


def _heads_with_count(rule):
    """The SVD construction keeping rule(s, n, p, d) heads."""
    def construction(K):
        n, p, d = K.shape
        G = _vec(K)
        U, s, Qt = np.linalg.svd(G, full_matrices=False)
        k = rule(s, n, p, d)
        return s[:k, None] * Qt[:k], U[:, :k].T.reshape(k, d, p).transpose(0, 2, 1)   # column-major
    return construction


def _right_count(s, n, p, d):
    return int(np.sum(s > max(n, p * d) * np.finfo(float).eps * s[0]))


def test_a_tolerance_of_1e_5_fails_on_the_1e_8_case():
    """The visible check now has sigma_2 / sigma_1 ~ 1e-8 (the hidden test has 4e-8): rtol 1e-5 fails here too."""
    result = check_exact_heads(_heads_with_count(lambda s, n, p, d: int(np.sum(s > 1e-5 * s[0]))))
    assert result.status == FAILED
    assert "C = diag(1, 3e-8), n=9 (sigma_2 / sigma_1 = 1.1e-08)" in result.message
    assert "your tolerance is too loose: singular value 2 of the stacked lags is 1.1e-08" in result.message


def test_an_absolute_tolerance_is_asked_whether_it_is_absolute():
    result = check_exact_heads(_heads_with_count(lambda s, n, p, d: int(np.sum(s > 1e-10))))
    assert result.status == FAILED
    assert "times 1e-12 (tiny lags)" in result.message and "you used 0" in result.message
    assert "is your tolerance absolute?" in result.message and "too loose" not in result.message


def test_a_count_off_by_one_is_told_to_check_how_it_counts():
    fewer = check_exact_heads(_heads_with_count(lambda *a: _right_count(*a) - 1))
    assert fewer.status == FAILED and "you used 1" in fewer.message
    assert "no rank tolerance drops a direction this large: singular value 2 of the stacked lags is 8.7e-01" \
        in fewer.message and "too loose" not in fewer.message
    more = check_exact_heads(_heads_with_count(lambda *a: _right_count(*a) + 1))
    assert more.status == FAILED
    assert "singular value 3 of the stacked lags is below 1e-12 of the largest" in more.message
    assert "check how you count (off by one?)" in more.message and "3 to 3" not in more.message


def test_tight_rank_tolerance_is_told_it_counts_rounding_noise():
    def tight(K):
        n, p, d = K.shape
        G = _vec(K)
        U, s, Qt = np.linalg.svd(G, full_matrices=False)
        k = int(np.sum(s > 1e-30 * s[0]))
        return s[:k, None] * Qt[:k], np.stack([U[:, h].reshape(p, d, order="F") for h in range(k)])

    result = check_exact_heads(tight)
    assert result.status == FAILED
    assert "so use exactly 2 heads; you used 4" in result.message
    assert "your tolerance counts rounding noise: singular values 3 to 4" in result.message


def _heads_with_orders(vec_order, unvec_order, projected):
    """The SVD construction with vec and its inverse in the given orders ("C" row-major, "F" column-major).

    ``projected``: coefficients c_h(l) = <V_h, K_l>_F with the returned maps; otherwise the
    SVD's S Q^T (the coordinates for the maps the SVD meant).
    """
    def answer(K):
        n, p, d = K.shape
        G = np.stack([M.reshape(-1, order=vec_order) for M in K], axis=1)
        U, s, Qt = np.linalg.svd(G, full_matrices=False)
        k = _rank(s, G.shape)
        V = np.stack([U[:, h].reshape(p, d, order=unvec_order) for h in range(k)])
        return (np.einsum("hpd,lpd->hl", V, K) if projected else s[:k, None] * Qt[:k]), V
    return answer


@pytest.mark.parametrize("projected", [False, True], ids=["SVD coefficients", "projected coefficients"])
def test_either_vec_order_passes_when_its_inverse_uses_the_same_order(projected):
    for order in ("C", "F"):
        result = check_exact_heads(_heads_with_orders(order, order, projected))
        assert result.status == PASSED, result.message


@pytest.mark.parametrize("projected", [False, True], ids=["SVD coefficients", "projected coefficients"])
@pytest.mark.parametrize("vec_order, unvec_order, named", [
    ("C", "F", "(a row-major vec (K.reshape(n, p * d)) with a column-major inverse)"),
    ("F", "C", "(a column-major vec (K.transpose(0, 2, 1).reshape(n, p * d)) with a row-major inverse)"),
], ids=["row-major vec, column-major inverse", "column-major vec, row-major inverse"])
def test_mixed_vec_orders_fail_with_a_hint_that_names_them(vec_order, unvec_order, named, projected):
    result = check_exact_heads(_heads_with_orders(vec_order, unvec_order, projected))
    assert result.status == FAILED
    assert "your vec and its inverse use different orders, one row-major and one column-major" in result.message
    assert "read back in the other order, your value maps span the lags" in result.message
    if projected:
        # the projected answer is right where the span is closed under transposition (rotation,
        # diagonal lags): it fails first on the random p = 3, d = 2 system, and names the direction
        assert result.message.startswith("exact_head_construction on random_with_lag_rank(4, 2, 3), n=12")
        assert named in result.message
    else:
        # the SVD coordinates belong to the unreordered maps: wrong already on the rotation (p = d,
        # where the two mixes are the same transposition, so no direction is named)
        assert result.message.startswith("exact_head_construction on rotation(1.0, rho=0.9), n=10")
        assert "(a row-major" not in result.message and "(a column-major" not in result.message


def test_mixed_vec_orders_are_harmless_for_a_row_or_a_column():
    """For p = 1 or d = 1 both orders flatten alike: the mixed answer is right and passes."""
    from ssmheads.exercises.ch3 import _vec_order_hint

    K = np.random.default_rng(0).standard_normal((5, 1, 4))
    c, V = _heads_with_orders("C", "F", True)(K)
    np.testing.assert_allclose(np.einsum("hl,hpd->lpd", c, V), K, atol=1e-12)
    assert _vec_order_hint(c, V, K) == ""


def test_a_reordering_that_is_not_a_vec_mix_gets_the_reshape_hint():
    def swapped_heads(K):
        c, V = exact_head_construction(K)   # the rows of each V_h reversed: not a vec-order mix
        return c, V[:, ::-1, :].copy()

    result = check_exact_heads(swapped_heads)
    assert result.status == FAILED
    assert "right singular values but misplaced entries" in result.message
    assert "different orders" not in result.message
    assert "misplaced" not in check_exact_heads(_wrong_values).message
    assert "different orders" not in check_exact_heads(_wrong_values).message
