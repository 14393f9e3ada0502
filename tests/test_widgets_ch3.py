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
    error = float(fig._suptitle.get_text().rsplit(" ", 1)[-1])
    assert error < 1e-20
    plt.close(fig)
    fig = head_explorer_figure("diagonal", n=12, H=2, k=3)
    assert float(fig._suptitle.get_text().rsplit(" ", 1)[-1]) > 1e-6
    plt.close(fig)


def test_head_explorer_figure_rejects_negative_heads():
    with pytest.raises(ValueError, match="H must be an integer >= 0"):
        head_explorer_figure(H=-1)


def test_head_explorer_has_all_controls():
    names = {getattr(child, "description", None) for child in head_explorer().children}
    assert {"family", "n", "H", "theta", "rho", "k", "seed"} <= names
    plt.close("all")
