"""Chapter 4 explorer: highway_explorer_figure and highway_explorer.

The figure's curves are checked against values computed here: the highway curve is flat
and above Theorem 4.1's bound ``a sigma_2(V)``, the SSM curve is ``rho^l`` (``A = rho R(0.3)``,
``B = C = I``, so ``||C A^l B|| = rho^l``) and equals its Proposition 4.3 bound (``A`` is
normal, ``cond(S) = 1``), the rotation curve is 1, and the diluted curve is small but flat.
"""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from ssmheads.systems import random_attention
from ssmheads.widgets import highway_explorer, highway_explorer_figure


def _labels(rho, a):
    return [f"attention, weight a = {a:g} on the key",
            "attention, random unit-norm tokens (~ c/n)",
            rf"SSM, $\rho$ = {rho:g}",
            "cond(S) bound, Proposition 4.3 (equal: A is normal)",
            r"SSM, $\rho$ = 1 (rotation)"]


def _curves(fig):
    ax = fig.axes[0]
    return {line.get_label(): (np.asarray(line.get_xdata()), np.asarray(line.get_ydata())) for line in ax.lines}


def test_default_figure_has_one_log_axes_and_five_labelled_curves():
    fig = highway_explorer_figure()
    assert isinstance(fig, Figure)
    assert len(fig.axes) == 1
    ax = fig.axes[0]
    assert ax.get_yscale() == "log" and ax.get_xscale() == "log"
    assert len(ax.lines) + len(ax.collections) == 5
    assert [line.get_label() for line in ax.lines] == _labels(0.9, 0.9)
    assert ax.get_legend_handles_labels()[1] == _labels(0.9, 0.9)
    assert ax.get_xlabel() == "distance $L = n - j$"
    assert "partial y_n" in ax.get_ylabel()
    title = ax.get_title()
    assert "does not decay" not in title and "c/n" in title and r"\rho^L" in title
    plt.close(fig)


@pytest.mark.parametrize("rho, n, a, seed", [(0.9, 256, 0.9, 4), (0.8, 64, 0.5, 1), (0.99, 17, 0.2, 7)])
def test_curves_carry_the_theorems(rho, n, a, seed):
    fig = highway_explorer_figure(rho=rho, n=n, a=a, seed=seed)
    curves = _curves(fig)
    assert list(curves) == _labels(rho, a)
    highway, diluted, ssm, bound, flat = (curves[label] for label in _labels(rho, a))
    # attention on Theorem 4.1's input: one point per distance in [1, n - 1], all equal, above a sigma_2(V)
    dist, norms = highway
    assert dist[0] == 1 and dist[-1] == n - 1 and np.all(np.diff(dist) > 0)
    assert np.max(norms) - np.min(norms) <= 1e-10 * np.max(norms)
    V = random_attention(1, 2, seed=seed).value_maps()[0]
    assert np.min(norms) >= a * np.linalg.svd(V, compute_uv=False)[1]
    # the SSM: rho^l at every lag 1..n-1 (log x-axis: lag 0 is not drawn), equal to its bound
    lags, values = ssm
    np.testing.assert_array_equal(lags, np.arange(1, n))
    np.testing.assert_allclose(values, rho ** np.arange(1, n), rtol=1e-9)
    np.testing.assert_array_equal(bound[0], lags)
    np.testing.assert_allclose(bound[1], values, rtol=1e-9)
    # the rotation: no decay
    np.testing.assert_allclose(flat[1], 1.0, rtol=1e-12)
    # dilution: smaller than the highway, but flat in distance (no exponential decay)
    d_lags, d_norms = diluted
    np.testing.assert_array_equal(d_lags, np.arange(1, n))
    assert np.max(d_norms) < np.min(norms)
    assert np.max(d_norms) < 5 * np.min(d_norms)
    # ... and below the dilution bound for tokens of norm <= 1 (math.md §1.9, remark):
    # a_nj <= e^D / (e^D + n - 1), D = 2 ||W_K^T W_Q|| / sqrt(d_k), times ||V|| (1 + 2 ||W_K^T W_Q|| / sqrt(d_k))
    head = random_attention(1, 2, seed=seed)
    m = np.linalg.norm(head.W_K[0].T @ head.W_Q[0], 2) / np.sqrt(head.d_k)
    weight_bound = np.exp(2 * m) / (np.exp(2 * m) + n - 1)
    assert np.max(d_norms) <= weight_bound * np.linalg.norm(V, 2) * (1 + 2 * m)
    plt.close(fig)


def test_figure_depends_on_its_parameters():
    base = _curves(highway_explorer_figure(rho=0.9, n=32, a=0.9))
    other = _curves(highway_explorer_figure(rho=0.9, n=32, a=0.3))
    assert other[_labels(0.9, 0.3)[0]][1][0] != base[_labels(0.9, 0.9)[0]][1][0]
    reseeded = _curves(highway_explorer_figure(rho=0.9, n=32, a=0.9, seed=5))
    assert reseeded[_labels(0.9, 0.9)[0]][1][0] != base[_labels(0.9, 0.9)[0]][1][0]
    plt.close("all")


@pytest.mark.parametrize("rho", [0, 1, 0.0, 1.0, 1.5, -0.1, float("nan"), "0.9", None])
def test_rho_must_be_strictly_between_zero_and_one(rho):
    with pytest.raises(ValueError, match=r"rho must lie in \(0, 1\)"):
        highway_explorer_figure(rho=rho)


@pytest.mark.parametrize("n", [2, 1, 0, -5, 3.0, True])
def test_n_must_be_an_integer_at_least_three(n):
    with pytest.raises(ValueError, match="n must be an integer >= 3"):
        highway_explorer_figure(n=n)


@pytest.mark.parametrize("a", [0, 1, 1.2, -0.5])
def test_a_must_be_a_weight(a):
    with pytest.raises(ValueError, match="a must be a number strictly between 0 and 1"):
        highway_explorer_figure(n=16, a=a)


@pytest.mark.parametrize("seed", [-1, 1.5])
def test_seed_must_be_a_nonnegative_integer(seed):
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        highway_explorer_figure(n=16, seed=seed)


def test_highway_explorer_has_controls_rho_n_and_a_with_valid_ranges():
    explorer = highway_explorer()
    controls = {getattr(child, "description", None): child for child in explorer.children}
    assert {"rho", "n", "a"} <= set(controls)
    rho, n, a = controls["rho"], controls["n"], controls["a"]
    assert (rho.value, n.value, a.value) == (0.9, 256, 0.9)  # the figure's defaults
    assert 0 < rho.min and rho.max < 1
    assert n.min >= 3
    assert 0 < a.min and a.max < 1
    # every corner of the sliders draws without error
    for r in (rho.min, rho.max):
        for aa in (a.min, a.max):
            plt.close(highway_explorer_figure(rho=r, n=n.min, a=aa))
    plt.close(highway_explorer_figure(rho=rho.max, n=n.max, a=a.max))
    plt.close("all")
