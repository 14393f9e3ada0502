"""The Chapter 6 explorer: the static figure from the committed results, the widget, bad arguments."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from ssmheads.widgets import tradeoff_explorer, tradeoff_explorer_figure  # noqa: E402


def test_the_figure_has_one_panel_per_distance_and_a_line_per_seed():
    fig = tradeoff_explorer_figure("s4d", "delay")
    axes = [ax for ax in fig.axes if ax.get_title()]
    assert [ax.get_title() for ax in axes] == ["L = 4", "L = 16", "L = 48"]
    assert all(len(ax.get_lines()) == 3 for ax in axes)   # three seeds, no floor for S4D on the delay
    plt.close(fig)
    fig = tradeoff_explorer_figure("s5", "selective-copy")
    assert all(len(ax.get_lines()) == 4 for ax in fig.axes if ax.get_title())   # + the floor 1 - 1/L
    plt.close(fig)


def test_the_explorer_builds():
    widget = tradeoff_explorer()
    assert widget.children[0].value == "s4d"
    plt.close("all")


@pytest.mark.parametrize("args, name", [(("nope", "delay"), "architecture"), (("s5", "nope"), "task")])
def test_bad_arguments_name_themselves(args, name):
    with pytest.raises(ValueError, match=name):
        tradeoff_explorer_figure(*args)
