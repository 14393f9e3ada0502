"""Chapter 2 explorer: family_system, rank_explorer_figure, rank_explorer."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

import ssmheads as sh
from ssmheads.widgets import FAMILIES, family_system, rank_explorer, rank_explorer_figure

EXPECTED_K = {"rotation": 2, "diagonal": 3, "Jordan": 3, "plateau": 2, "random with lag rank k": 3}


@pytest.mark.parametrize("family", FAMILIES)
def test_family_system_has_the_documented_lag_span(family):
    s = family_system(family, theta=1.0, rho=0.9, k=3, seed=0)
    assert sh.lag_span_dimension(s.A, s.B, s.C, 12) == EXPECTED_K[family]


def test_family_system_rotation_follows_theta_and_rho():
    s = family_system("rotation", theta=np.pi, rho=0.5)
    assert sh.lag_span_dimension(s.A, s.B, s.C, 6) == 1
    assert s.spectral_radius == pytest.approx(0.5)


def test_family_system_rejects_unknown_family():
    with pytest.raises(ValueError, match="family must be one of"):
        family_system("banana")


@pytest.mark.parametrize("family", FAMILIES)
def test_rank_explorer_figure_reports_k_in_its_title(family):
    fig = rank_explorer_figure(family, n=9)
    k = EXPECTED_K[family]
    assert fig._suptitle.get_text().startswith(f"{family}: k(9) = {k}")
    assert len(fig.axes) == 2
    plt.close(fig)


def test_rank_explorer_has_all_controls():
    explorer = rank_explorer()
    names = {getattr(child, "description", None) for child in explorer.children}
    assert {"family", "n", "theta", "rho", "k", "seed"} <= names
    plt.close("all")
