"""Chapter 3 explorer: head_explorer_figure and head_explorer."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from ssmheads.widgets import FAMILIES, head_explorer, head_explorer_figure


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("H", [0, 1, 3])
def test_head_explorer_figure_reports_k_and_h(family, H):
    fig = head_explorer_figure(family, n=10, H=H, k=3)
    title = fig._suptitle.get_text()
    assert title.startswith(f"{family}: k = ") and f"H = {H}," in title
    assert len(fig.axes) == 3
    plt.close(fig)


def test_head_explorer_figure_error_vanishes_at_k():
    fig = head_explorer_figure("diagonal", n=12, H=3, k=3)
    assert fig._suptitle.get_text().endswith("exact: error per position < 1e-12 of H = 0")
    plt.close(fig)
    fig = head_explorer_figure("diagonal", n=12, H=2, k=3)
    assert float(fig._suptitle.get_text().rsplit(" ", 1)[-1]) > 1e-6
    plt.close(fig)


def test_head_explorer_figure_is_logarithmic_and_draws_no_fake_values():
    """Errors that are zero up to rounding sit on the axis floor as triangles, not as plotted values."""
    fig = head_explorer_figure("random with lag rank k", n=16, H=2, k=4)
    left, middle, right = fig.axes
    assert left.get_yscale() == "log" and right.get_yscale() == "log"
    error_line, exact_marks = left.get_lines()[:2]
    np.testing.assert_array_equal(error_line.get_xdata(), [0, 1, 2, 3])  # H < k = 4: positive errors
    np.testing.assert_array_equal(exact_marks.get_xdata(), [4, 5])      # H >= k: exact
    assert exact_marks.get_marker() == "v"
    assert np.all(np.asarray(error_line.get_ydata()) > 1e-12 * error_line.get_ydata()[0])
    assert len(right.get_lines()) == 1  # H = 2 < k misses every lag: no exact marks, no floor
    assert len(middle.get_lines()) == 2 + 1  # two coefficient curves and the zero line
    plt.close(fig)


def test_head_explorer_figure_draws_zeros_a_decade_down_at_a_tick_labelled_0():
    """No empty decades down to 1e-12: the zeros sit a decade below the smallest error, at a "0" tick."""
    fig = head_explorer_figure("random with lag rank k", n=16, H=4, k=4)
    fig.canvas.draw()
    left, _, right = fig.axes
    error_line, exact_marks = left.get_lines()[:2]
    smallest = float(np.min(error_line.get_ydata()))
    np.testing.assert_allclose(exact_marks.get_ydata(), smallest / 10)
    assert left.get_ylim()[0] > smallest / 100          # no decades below the zeros
    labels = {t.get_text() for t in left.get_yticklabels()}
    assert "0" in labels and len(labels) >= 3
    assert "0" in {t.get_text() for t in right.get_yticklabels()}   # H = k: every lag is exact
    plt.close(fig)


def test_head_explorer_figure_breaks_the_axis_between_the_zeros_and_the_log_range():
    """The "0" tick is not a decade below the smallest value: a grey strip and a break mark say so."""
    fig = head_explorer_figure("random with lag rank k", n=16, H=2, k=4)
    left, _, right = fig.axes
    zero = float(left.get_lines()[1].get_ydata()[0])
    strips = [p for p in left.patches if p.get_alpha() == 0.12]
    assert len(strips) == 1
    assert len(left.collections) == 2                     # the break mark: the gap and the strokes
    for mark in left.collections:
        np.testing.assert_allclose(mark.get_offsets()[0, 1], zero * np.sqrt(3.0))   # between 0 and 3 zero
    assert not right.collections and not right.patches    # no zeros on the right: no break
    plt.close(fig)
    fig = head_explorer_figure("random with lag rank k", n=16, H=4, k=4)
    assert not fig.axes[2].collections                    # only zeros: nothing to set apart
    plt.close(fig)


def test_head_explorer_figure_rejects_negative_heads():
    with pytest.raises(ValueError, match="H must be an integer >= 0"):
        head_explorer_figure(H=-1)


def test_head_explorer_has_all_controls():
    names = {getattr(child, "description", None) for child in head_explorer().children}
    assert {"family", "n", "H", "theta", "rho", "k", "seed"} <= names
    plt.close("all")


def test_random_family_has_k_below_pd_so_the_zero_at_k_is_not_forced():
    """p = d = 3 (pd = 9 > k): the error from H = k on is a computed tail, not head_count_curve's literal 0."""
    from ssmheads.heads import head_count_curve, white_noise_weights
    from ssmheads.systems import random_with_lag_rank
    from ssmheads.widgets.ch3 import RANDOM_WIDTH, _head_system

    ssm = _head_system("random with lag rank k", 1.0, 0.9, 4, 0)
    assert RANDOM_WIDTH == 3 and ssm.B.shape == (4, 3) and ssm.C.shape == (3, 4)
    reference = random_with_lag_rank(4, 3, 3, seed=0)
    assert np.array_equal(ssm.A, reference.A) and np.array_equal(ssm.C, reference.C)
    curve = head_count_curve(ssm.lag_operators(16), 5, white_noise_weights(16))
    assert np.all(curve[4:] > 0) and np.all(curve[4:] < 1e-12 * curve[0])
    assert curve[3] > 1e-6 * curve[0]
    assert _head_system("random with lag rank k", 1.0, 0.9, 6, 0).A.shape == (6, 6)


def test_head_explorer_figure_legends_the_chosen_h_and_styles_each_head():
    fig = head_explorer_figure("random with lag rank k", n=16, H=3, k=4)
    left, middle, _ = fig.axes
    assert "chosen $H = 3$" in [t.get_text() for t in left.get_legend().get_texts()]
    curves = middle.get_lines()[:3]
    assert len({(line.get_marker(), line.get_linestyle()) for line in curves}) == 3
    plt.close(fig)


def test_head_explorer_figure_caps_H_at_the_slider_maximum():
    """H = 10**5 used to allocate until MemoryError; the explorer draws at most MAX_HEADS = 6 curves."""
    from ssmheads.widgets.ch3 import MAX_HEADS

    assert MAX_HEADS == 6
    H_slider = next(child for child in head_explorer().children if getattr(child, "description", None) == "H")
    assert H_slider.max == MAX_HEADS
    plt.close("all")
    for H in (MAX_HEADS + 1, 10**5):
        with pytest.raises(ValueError, match=rf"^H must be an integer between 0 and 6 .*; got {H}$"):
            head_explorer_figure(H=H)
    fig = head_explorer_figure("diagonal", n=12, H=MAX_HEADS, k=3)
    assert "H = 6," in fig._suptitle.get_text()
    plt.close(fig)
