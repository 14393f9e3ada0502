"""Tests of the Chapter 2 exercise checks in ``ssmheads.exercises``.

For each check: a reference solution written here (independently of
``ssmheads.span``) passes; stubs are "not attempted yet" without a traceback;
wrong answers fail, never raise, and say what was expected.
"""

import numpy as np
import pytest

from ssmheads.exercises import CheckResult, check_lag_span_dimension, check_long_plateau, check_rank_three_system
from ssmheads.systems import plateau, rotation
from helpers import STUB_IDS, STUBS
from helpers import assert_printed as _assert_printed
from helpers import raises_type_error as _raises_type_error

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"

# ------------------------------------------------------------ reference solutions, written from the exercise text


def lag_span_dimension(A, B, C, n):
    """``dim span{C A^l B : l < n}``: numpy's rank of the stacked, flattened lags (0 when they all vanish)."""
    lags, power_b = [], np.asarray(B, dtype=float)
    for _ in range(n):
        lags.append((C @ power_b).ravel())
        power_b = A @ power_b
    G = np.array(lags)
    return 0 if not np.any(G) else int(np.linalg.matrix_rank(G))


def rank_three_system():
    """Three distinct eigenvalues whose rank-one terms ``c_s b_s^T`` are independent 2 x 2 matrices."""
    A = np.diag([0.9, 0.5, -0.3])
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    C = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    return A, B, C


def long_plateau_system():
    """Shift ``e_1 -> e_2 -> e_3 -> e_4 -> 0``, ``B = e_1``: ``K_0 = K_1 = K_2 = (1, 0)^T``, ``K_3 = (0, 1)^T``."""
    A = np.eye(4, k=-1)
    B = np.eye(4)[:, :1]
    C = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]])
    return A, B, C


CHECKS = {
    "lag span": (check_lag_span_dimension, lag_span_dimension, "Chapter 2: lag span by hand"),
    "rank three": (check_rank_three_system, rank_three_system, "Chapter 2: three dimensions from two channels"),
    "long plateau": (check_long_plateau, long_plateau_system, "Chapter 2: a longer plateau"),
}
KEYS = list(CHECKS)
DESIGNS = ["rank three", "long plateau"]


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


def test_reference_lag_span_agrees_with_known_answers():
    """The reference is right on its own terms: Prop. 3 rotations and the plateau of Prop. 2(e)."""
    s = rotation(1.0, 0.9)
    assert [lag_span_dimension(s.A, s.B, s.C, n) for n in (1, 2, 5)] == [1, 2, 2]
    s = rotation(np.pi, 0.9)
    assert lag_span_dimension(s.A, s.B, s.C, 5) == 1
    s = plateau()
    assert [lag_span_dimension(s.A, s.B, s.C, n) for n in (1, 2, 3, 4)] == [1, 1, 2, 2]
    assert lag_span_dimension(s.A, np.zeros((3, 1)), s.C, 4) == 0


@pytest.mark.parametrize("system, expected", [(rank_three_system, [1, 2, 3, 3, 3, 3]),
                                              (long_plateau_system, [1, 1, 1, 2, 2, 2, 2])])
def test_reference_designs_are_right_on_their_own_terms(system, expected):
    A, B, C = system()
    assert max(abs(np.linalg.eigvals(A))) < 1
    assert [lag_span_dimension(A, B, C, n) for n in range(1, len(expected) + 1)] == expected


def test_a_different_long_plateau_design_also_passes():
    """Any widths are allowed: p = 3 outputs, d = 2 inputs, with the second input unused."""
    A, B, C = long_plateau_system()
    B2 = np.hstack([B, np.zeros((4, 1))])
    C3 = np.vstack([C, np.zeros((1, 4))])
    result = check_long_plateau(lambda: (0.5 * A, B2, C3))
    assert result.status == PASSED, result.message


def test_float_integer_answer_is_accepted():
    """``2.0`` is an integer value; the check compares values, so a float with an integral value passes."""
    result = check_lag_span_dimension(lambda A, B, C, n: float(lag_span_dimension(A, B, C, n)))
    assert result.status == PASSED, result.message


# ------------------------------------------------------------ stubs


@pytest.mark.parametrize("stub", STUBS, ids=STUB_IDS)
@pytest.mark.parametrize("key", KEYS)
def test_stubs_are_not_attempted(key, stub):
    result = _check(key)(stub)
    assert result.status == NOT_ATTEMPTED
    assert not result
    _assert_printed(result, "NOT ATTEMPTED YET")


def test_partial_lag_span_answer_returning_none_later_is_not_attempted():
    result = check_lag_span_dimension(lambda A, B, C, n: 1 if n == 1 else None)
    assert result.status == NOT_ATTEMPTED and not result
    assert "returns nothing yet" in result.message


# ------------------------------------------------------------ wrong answers


def _always_min_n_2(A, B, C, n):
    """Right for rotations by a generic angle, wrong for theta = pi (where R = -I and k = 1)."""
    return min(n, 2)


def _never_zero(A, B, C, n):
    return max(1, lag_span_dimension(A, B, C, n))


def _stops_at_first_plateau(A, B, C, n):
    """The trap of Prop. 2(e): stop as soon as one more lag adds nothing."""
    k = 0
    for length in range(1, n + 1):
        new = lag_span_dimension(A, B, C, length)
        if length > 1 and new == k:
            return k
        k = new
    return k


WRONG_LAG_SPAN = {
    "theta = pi": (_always_min_n_2, "lag_span_dimension on rotation(theta=3.142), n=5: k(n) should be 1; got 2"),
    "float 2.5": (lambda A, B, C, n: 2.5, "lag_span_dimension on rotation(theta=1), n=1: k(n) should be 1; got 2.5"),
    "string": (lambda A, B, C, n: "two", "expected an integer; got str"),
    "nan": (lambda A, B, C, n: float("nan"), "expected an integer; got float"),
    "array": (lambda A, B, C, n: np.array([1, 2]), "expected an integer; got ndarray"),
    "B = 0": (_never_zero, "lag_span_dimension on B = 0, n=4: k(n) should be 0; got 1"),
    "first plateau": (_stops_at_first_plateau, "lag_span_dimension on plateau(), n=3: k(n) should be 2; got 1"),
    "raises": (_raises_type_error, "raised TypeError: unsupported operand"),
}


@pytest.mark.parametrize("answer, expected_in_message", list(WRONG_LAG_SPAN.values()), ids=list(WRONG_LAG_SPAN))
def test_wrong_lag_span_answers_fail_with_what_was_expected(answer, expected_in_message):
    result = check_lag_span_dimension(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


def _absolute_cutoff(cutoff):
    """Counts the singular values above a fixed number, not above a multiple of the largest one."""
    def answer(A, B, C, n):
        lags, power_b = [], np.asarray(B, dtype=float)
        for _ in range(n):
            lags.append((C @ power_b).ravel())
            power_b = A @ power_b
        return int(np.sum(np.linalg.svd(np.array(lags), compute_uv=False) > cutoff))
    return answer


@pytest.mark.parametrize("cutoff, case", [(1e-3, "B = 1e-10 I"), (1e-9, "B = 1e-10 I"), (1e-10, "C = 1e8 I"),
                                          (1e-12, "C = 1e8 I"), (1e-14, "C = 1e8 I")])
def test_an_absolute_tolerance_fails_whatever_its_value(cutoff, case):
    """The referee's answer (absolute 1e-3) passed all 9 old cases; tiny and huge lags catch every cut-off."""
    result = check_lag_span_dimension(_absolute_cutoff(cutoff))
    assert result.status == FAILED, result
    assert case in result.message and "RELATIVE to the largest one" in result.message


def test_the_scaled_cases_are_what_their_labels_say():
    """B = 1e-10 I: all singular values near 1e-10; C = 1e8 I: a rounding-level one near 1e-8, far below 1e8."""
    from ssmheads.exercises.ch2 import _lag_span_cases
    from ssmheads.span import singular_values
    from ssmheads.models import lag_operators

    scaled = {label: args for label, args, _ in _lag_span_cases() if "lags" in label}
    (tiny,) = [args for label, args in scaled.items() if "1e-10" in label]
    (huge,) = [args for label, args in scaled.items() if "1e8" in label]
    s = singular_values(lag_operators(*tiny))
    assert 1e-11 < s[1] < s[0] < 1e-9
    s = singular_values(lag_operators(*huge))
    assert s[0] > 1e8 and 1e-9 < s[1] < 1e-6 and s[1] / s[0] < 1e-15


def test_infinite_lag_span_answer_fails_without_raising():
    result = check_lag_span_dimension(lambda A, B, C, n: float("inf"))
    assert result.status == FAILED and not result
    assert "expected an integer" in result.message


def _rank_two_system():
    A, B, C = rank_three_system()
    return A[:2, :2], B[:2], C[:, :2]


def _unstable(system):
    def make():
        A, B, C = system()
        return 2.0 * np.eye(A.shape[0]), B, C
    return make


def _marginal(system):
    def make():
        A, B, C = system()
        return np.eye(A.shape[0], k=-1) + np.diag(np.r_[1.0, np.zeros(A.shape[0] - 1)]), B, C
    return make


def _divide_by_zero():
    return 1 / 0


WRONG_DESIGNS = {
    ("rank three", "unstable"): (_unstable(rank_three_system),
                                 "make(): the system must be stable (spectral radius < 1); got 2"),
    ("rank three", "spectral radius 1"): (_marginal(rank_three_system), "the system must be stable (spectral radius < 1); got 1"),
    ("rank three", "d = 3"): (lambda: (np.diag([0.9, 0.5, -0.3]), np.eye(3), np.eye(3)[:2]),
                              "expected p = 2 output and d = 2 input channels; got p = 2, d = 3"),
    ("rank three", "p = 3"): (lambda: (np.diag([0.9, 0.5, -0.3]), np.eye(3)[:, :2], np.eye(3)),
                              "expected p = 2 output and d = 2 input channels; got p = 3, d = 2"),
    ("rank three", "rank two"): (_rank_two_system, "k(1..7) should be [1, 2, 3, 3, 3, 3, 3]; yours is"),
    ("rank three", "two matrices"): (lambda: rank_three_system()[:2],
                                     "expected a tuple (A, B, C) of compatible real matrices (not enough values to unpack"),
    ("rank three", "four matrices"): (lambda: rank_three_system() + (np.zeros((2, 2)),),
                                      "expected a tuple (A, B, C) of compatible real matrices (too many values to unpack"),
    ("rank three", "incompatible"): (lambda: (np.eye(3) / 2, np.eye(2), np.eye(2)),
                                     "expected a tuple (A, B, C) of compatible real matrices (B has shape (2, 2)"),
    ("rank three", "complex"): (lambda: (0.5j * np.eye(3), *rank_three_system()[1:]), "A must be real"),
    ("rank three", "not a tuple"): (lambda: 5, "expected a tuple (A, B, C) of compatible real matrices"),
    ("rank three", "raises"): (_divide_by_zero, "_divide_by_zero() raised ZeroDivisionError: division by zero"),
    ("long plateau", "unstable"): (_unstable(long_plateau_system), "the system must be stable (spectral radius < 1); got 2"),
    ("long plateau", "short plateau"): (lambda: (plateau().A, plateau().B, plateau().C),
                                        "k(1..7) should be [1, 1, 1, 2, 2, 2, 2]; yours is"),
    ("long plateau", "no plateau"): (rank_three_system, "k(1..7) should be [1, 1, 1, 2, 2, 2, 2]; yours is"),
    ("long plateau", "two matrices"): (lambda: long_plateau_system()[:2], "not enough values to unpack"),
    ("long plateau", "nan"): (lambda: (np.full((4, 4), np.nan), *long_plateau_system()[1:]),
                              "A must contain only finite numbers"),
    ("long plateau", "raises"): (_divide_by_zero, "raised ZeroDivisionError: division by zero"),
}


@pytest.mark.parametrize("key, answer, expected_in_message",
                         [(k, *v) for (k, _), v in WRONG_DESIGNS.items()], ids=[f"{k}-{c}" for k, c in WRONG_DESIGNS])
def test_wrong_designs_fail_with_what_was_expected(key, answer, expected_in_message):
    result = _check(key)(answer)
    assert result.status == FAILED, result
    assert not result
    assert expected_in_message in result.message
    _assert_printed(result, "NOT YET")


@pytest.mark.parametrize("key, answer, shown", [
    ("rank three", _rank_two_system, "yours is [1, 2, 2, 2, 2, 2, 2]"),
    ("long plateau", lambda: (plateau().A, plateau().B, plateau().C), "yours is [1, 1, 2, 2, 2, 2, 2]"),
], ids=DESIGNS)
def test_wrong_profile_is_shown_as_plain_integers(key, answer, shown):
    result = _check(key)(answer)
    assert result.status == FAILED
    assert shown in result.message


@pytest.mark.parametrize("key", KEYS)
def test_answer_that_raises_is_reported_not_raised(key):
    result = _check(key)(_raises_type_error)
    assert result.status == FAILED and not result
    assert result.message.endswith(" raised TypeError: unsupported operand")


@pytest.mark.parametrize("not_a_function", [3, np.zeros((2, 2)), "A, B, C"])
@pytest.mark.parametrize("key", KEYS)
def test_non_callable_answer_fails(key, not_a_function):
    result = _check(key)(not_a_function)
    assert result.status == FAILED and not result
    assert result.message == f"expected a function; got {type(not_a_function).__name__}"


@pytest.mark.parametrize("key", DESIGNS)
def test_design_check_with_arguments_reports_the_error(key):
    """The designs take no arguments; a function that requires one fails with the TypeError, not a traceback."""
    result = _check(key)(lambda seed: rank_three_system())
    assert result.status == FAILED and not result
    assert "raised TypeError" in result.message


# ------------------------------------------------------------ the checks look as far as the plateau lesson says


def _late_chain(length, b, c):
    """A nilpotent shift of ``length`` states, fed by input direction ``b`` into state 1 and read by ``c`` at
    the last state: it adds ``c b^T`` to the lag ``K_(length-1)`` and nothing else."""
    A = np.eye(length, k=-1)
    B = np.outer(np.eye(length)[:, 0], b)
    C = np.outer(c, np.eye(length)[:, -1])
    return A, B, C


def _direct_sum(first, second):
    (A1, B1, C1), (A2, B2, C2) = first, second
    A = np.block([[A1, np.zeros((A1.shape[0], A2.shape[1]))], [np.zeros((A2.shape[0], A1.shape[1])), A2]])
    return A, np.vstack([B1, B2]), np.hstack([C1, C2])


def _grows_again_at_8():
    """Rank three for n = 1..7, then a fourth direction e_1 e_2^T at lag 7: k(8) = 4 (N = 11)."""
    return _direct_sum(rank_three_system(), _late_chain(8, np.array([0.0, 1.0]), np.array([1.0, 0.0])))


def _plateau_grows_again_at_8():
    """The long plateau with a third output channel that lights up at lag 7: k(8) = 3 (N = 12)."""
    A, B, C = long_plateau_system()
    C3 = np.vstack([C, np.zeros((1, 4))])
    return _direct_sum((A, B, C3), _late_chain(8, np.array([1.0]), np.array([0.0, 0.0, 1.0])))


def test_designs_whose_profile_grows_again_after_n_7_fail():
    """Both pass a check of k(1..7) alone; checked up to n = N they fail."""
    A, B, C = _grows_again_at_8()
    profile = [lag_span_dimension(A, B, C, n) for n in range(1, 12)]
    assert profile == [1, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4] and max(abs(np.linalg.eigvals(A))) < 1
    result = check_rank_three_system(_grows_again_at_8)
    assert result.status == FAILED
    assert "k(1..11) should be [1, 2, 3, 3, 3, 3, 3, 3, 3, 3, 3]" in result.message
    assert "k exceeds 3: something must cap k at 3, for instance m = 3" in result.message

    A, B, C = _plateau_grows_again_at_8()
    assert [lag_span_dimension(A, B, C, n) for n in range(1, 13)] == [1, 1, 1, 2, 2, 2, 2] + [3] * 5
    result = check_long_plateau(_plateau_grows_again_at_8)
    assert result.status == FAILED
    assert "k(1..12) should be [1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 2]" in result.message
    assert "k exceeds 2: every later lag must stay in span{K_0, K_3}" in result.message


def test_rank_three_hint_when_k_stays_below_three():
    result = check_rank_three_system(_rank_two_system)
    assert "k stays below 3" in result.message


def test_rank_three_hint_names_the_binding_bound_or_dependent_terms():
    """A rank-one B: the bound min(rank B rank C, m) = 2 binds. Terms E11, E22, E11: the bounds allow 3
    (m = 3, rank B = rank C = 2), so the hint asks whether the rank-one terms are independent."""
    low = check_rank_three_system(lambda: (np.diag([0.9, 0.5, -0.3]), np.ones((3, 2)), np.eye(2, 3)))
    assert "the bound min(rank B rank C, m) = 2 binds (rank B = 1, rank C = 2, m = 3)" in low.message
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    dependent = check_rank_three_system(lambda: (np.diag([0.8, 0.3, -0.5]), B, B.T.copy()))
    assert dependent.status == FAILED and "yours is [1, 2, 2, 2, 2, 2, 2]" in dependent.message
    assert "min(rank B rank C, m) = 3 allows 3: your lags are dependent" in dependent.message
    assert "are the rank-one terms c_s b_s^T of distinct eigenvalues linearly independent?" in dependent.message


def _chains(*lags):
    """A direct sum of shift chains, one per (length, b, c) in ``lags``: each adds c b^T to the lag
    K_(length - 1) alone, so K_l is the sum of the c b^T of the chains of length l + 1."""
    system = _late_chain(*lags[0])
    for chain in lags[1:]:
        system = _direct_sum(system, _late_chain(*chain))
    return system


E1, E2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])


@pytest.mark.parametrize("lags, hint", [
    (((2, E1, E1), (3, E2, E1), (4, E1, E2)),
     "yours is [0, 1, 2, 3, 3, 3, 3, 3, 3]. K_0 = C B is zero, so k(1) = 0"),
    (((1, E1, E1), (2, E1, E1), (3, E2, E1), (4, E1, E2)),
     "yours is [1, 1, 2, 3, 3, 3, 3, 3, 3, 3]. k reaches 3 only at n = 4, too late: K_0, K_1 and K_2"),
], ids=["K_0 = 0", "too late"])
def test_rank_three_hints_for_a_zero_or_late_start(lags, hint):
    result = check_rank_three_system(lambda: _chains(*lags))
    assert result.status == FAILED and hint in result.message


def test_rank_three_passes_a_symmetric_system_with_m_four():
    """A symmetric A and C = B^T give symmetric lags, a 3-dimensional space: k = min(n, 3) with m = 4."""
    A, B = np.diag([0.9, 0.5, -0.3, 0.1]), np.array([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0], [1.0, 1.0]])
    result = check_rank_three_system(lambda: (A, B, B.T.copy()))
    assert result.status == PASSED, result


@pytest.mark.parametrize("answer, hint", [
    (lambda: (plateau().A, plateau().B, plateau().C),
     "k grows at n = 3, too early: K_1 and K_2 must be multiples of K_0, and K_3 must not be"),
    (lambda: (0.5 * np.eye(3), np.ones((3, 1)), np.eye(3)[:2]),
     "k never reaches 2: K_3 must leave the line of K_0; here m = 1 (N = 3), and k can grow only at some n <= m <= N"),
    (lambda: (np.eye(4, k=-1), np.eye(4)[:, :1], np.zeros((2, 4))), "K_0 = C B is zero, so k(1) = 0"),
    (lambda: (np.eye(5, k=-1), np.eye(5)[:, :1], np.array([[1.0, 1, 1, 1, 0], [0, 0, 0, 0, 1]])),
     "yours is [1, 1, 1, 1, 2, 2, 2]. k grows at n = 5, too late: K_3 must leave the line of K_0"),
    (lambda: (np.eye(5, k=-1), np.eye(5)[:, :1], np.array([[1.0, 1, 1, 2, 0]])),
     "with p = d = 1 every lag is a number, so k <= 1 (Proposition 2.2 (c)); use two output"),
    (lambda: (np.eye(4, k=-1), np.eye(4)[:, :1], np.array([[1.0, 1, 1, 1], [2, 2, 2, 2]])),
     "rank B rank C = 1 bounds k (Proposition 2.1 (b))"),
], ids=["Example 2.1", "m = 1", "K_0 = 0", "too late", "SISO", "rank one"])
def test_long_plateau_hints_say_what_is_wrong(answer, hint):
    result = check_long_plateau(answer)
    assert result.status == FAILED and hint in result.message


@pytest.mark.parametrize("out", ["1", True, np.True_], ids=["str", "bool", "numpy bool"])
def test_lag_span_answer_that_is_not_an_int_is_told_to_return_an_int(out):
    result = check_lag_span_dimension(lambda A, B, C, n: out)
    assert result.status == FAILED and "expected an integer" in result.message
    assert "return an int" in result.message


def test_passing_designs_report_the_length_checked():
    """N = 3 < 7: checked up to n = 7; a padded N = 9 system is checked up to n = 9 and still passes."""
    assert "k(1..7) = [1, 2, 3, 3, 3, 3, 3]" in check_rank_three_system(rank_three_system).message
    A, B, C = rank_three_system()
    padded = _direct_sum((A, B, C), (0.5 * np.eye(6), np.zeros((6, 2)), np.zeros((2, 6))))
    result = check_rank_three_system(lambda: padded)
    assert result.status == PASSED and "k(1..9)" in result.message


# ------------------------------------------------------------ "without ssmheads.span"


LIBRARY_ANSWERS = {
    "ssmheads.lag_span_dimension": lambda A, B, C, n: __import__("ssmheads").lag_span_dimension(A, B, C, n),
    "ssmheads.span.lag_span_profile": lambda A, B, C, n: int(__import__("ssmheads").span.lag_span_profile(A, B, C, n)[-1]),
    "ssmheads.interaction_rank": lambda A, B, C, n: __import__("ssmheads").interaction_rank(
        __import__("ssmheads").lag_operators(A, B, C, n)),
    "ssmheads.singular_values": lambda A, B, C, n: int(np.sum(
        __import__("ssmheads").singular_values(__import__("ssmheads").lag_operators(A, B, C, n)) > 1e-10)),
    "ssmheads.span_basis": lambda A, B, C, n: len(__import__("ssmheads").span_basis(
        __import__("ssmheads").lag_operators(A, B, C, n))),
}


@pytest.mark.parametrize("answer", list(LIBRARY_ANSWERS.values()), ids=list(LIBRARY_ANSWERS))
def test_lag_span_answer_that_calls_the_library_fails(answer):
    import ssmheads as sh

    result = check_lag_span_dimension(answer)
    assert result.status == FAILED and not result
    assert "raised RuntimeError: this check asks you to write it yourself" in result.message
    # the routines work again after the check, and lag_operators (not a span routine) was allowed
    s = rotation(1.0, 0.9)
    assert sh.lag_span_dimension(s.A, s.B, s.C, 5) == 2 == sh.interaction_rank(s.lag_operators(5))


def test_lag_span_references_are_the_known_answers():
    """The check computes its references with the library, outside the guard; they equal the stated k."""
    from ssmheads.exercises.ch2 import _lag_span_cases
    from ssmheads.span import lag_span_dimension as library

    for label, args, k in _lag_span_cases():
        assert library(*args) == k == lag_span_dimension(*args), label


@pytest.mark.parametrize("tol, status", [(1e-2, FAILED), (1e-3, PASSED), (1e-10, PASSED)])
def test_how_loose_a_tolerance_may_be(tol, status):
    """The exercise text: a relative tolerance of 1e-2 is too loose, 1e-3 passes, 1e-10 is the suggestion."""
    def answer(A, B, C, n):
        lags, M = [], np.asarray(B, dtype=float)
        for _ in range(n):
            lags.append((C @ M).ravel())
            M = A @ M
        sv = np.linalg.svd(np.array(lags), compute_uv=False)
        return 0 if sv[0] == 0 else int(np.sum(sv > tol * sv[0]))

    assert check_lag_span_dimension(answer).status == status
