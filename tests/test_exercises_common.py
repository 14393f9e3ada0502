"""The shared machinery of the exercise checks (ssmheads.exercises._common)."""

import numpy as np
import pytest

import ssmheads as sh
from ssmheads.exercises._common import _on_its_own, reference_routines_off

ROUTINES = [("span", "lag_span_dimension")]
I2 = np.eye(2)


def test_a_routine_is_off_under_every_name_inside_the_block_and_back_after():
    from ssmheads.span import lag_span_dimension as bound_early

    with reference_routines_off(ROUTINES):
        for f in (sh.lag_span_dimension, sh.span.lag_span_dimension, bound_early):
            with pytest.raises(RuntimeError, match="write it yourself"):
                f(I2, I2, I2, 3)
    assert sh.lag_span_dimension(I2, I2, I2, 3) == 1


def test_the_routine_is_restored_when_the_block_raises():
    with pytest.raises(KeyError):
        with reference_routines_off(ROUTINES):
            raise KeyError("student error")
    assert sh.lag_span_dimension(I2, I2, I2, 3) == 1


def test_on_its_own_wraps_answers_and_passes_stubs_through():
    guarded = _on_its_own(lambda: sh.lag_span_dimension(I2, I2, I2, 3), ROUTINES)
    with pytest.raises(RuntimeError):
        guarded()
    assert _on_its_own(None, ROUTINES) is None and _on_its_own(..., ROUTINES) is ...
    assert _on_its_own(lambda: 7, ROUTINES)() == 7
