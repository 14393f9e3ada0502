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
