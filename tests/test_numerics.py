"""ssmheads.numerics: relative_gap and close."""

import numpy as np
import pytest

import ssmheads as sh
from ssmheads.numerics import close, relative_gap


def test_relative_gap_is_relative_for_large_and_absolute_for_small_arrays():
    b = np.array([100.0, -200.0])
    assert relative_gap(b + np.array([1.0, 0.0]), b) == pytest.approx(1.0 / 200.0)
    small = np.array([1e-3, 0.0])
    assert relative_gap(small + 1e-6, small) == pytest.approx(1e-6)
    assert relative_gap(np.zeros(0), np.zeros(0)) == 0.0


def test_close_uses_the_tolerance_and_rejects_shape_mismatch():
    b = np.linspace(-3, 3, 7)
    assert close(b + 1e-13, b)
    assert not close(b + 1e-9, b)
    assert close(b + 1e-9, b, tol=1e-8)
    assert not close(b[:3], b)
    assert sh.close is close and sh.relative_gap is relative_gap


def test_relative_gap_names_mismatched_shapes():
    with pytest.raises(ValueError, match=r"a and b must have the same shape; got \(2,\) and \(3,\)"):
        relative_gap(np.zeros(2), np.zeros(3))


def test_complex_input_counts_the_imaginary_part():
    a = np.ones(3)
    assert not close(a + 1j, a - 1j)
    assert relative_gap(a + 1j, a - 1j) == pytest.approx(2 / np.sqrt(2))
    assert close(a + 1j, a + 1j)


def test_huge_entries_give_a_finite_gap_not_overflow():
    assert relative_gap(np.array([1e308]), np.array([-1e308])) == pytest.approx(2.0)
    assert close(np.array([1e300]), np.array([1e300 * (1 + 1e-15)]))


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_is_rejected_naming_the_argument(bad):
    with pytest.raises(ValueError, match="a must contain only finite"):
        relative_gap(np.array([bad]), np.array([1.0]))
    with pytest.raises(ValueError, match="b must contain only finite"):
        close(np.array([1.0]), np.array([bad]))


@pytest.mark.parametrize("tol", [-1.0, np.nan, np.inf, "1e-12", True])
def test_bad_tolerance_is_rejected(tol):
    with pytest.raises(ValueError, match="tol must be"):
        close(np.ones(2), np.ones(2), tol=tol)


def test_non_numeric_input_is_rejected():
    with pytest.raises(ValueError, match="a must be a numeric array"):
        relative_gap(["x"], [1.0])
