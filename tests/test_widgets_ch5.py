"""Chapter 5 explorer: architecture_gallery, architecture_explorer_figure and architecture_explorer.

The figure's two panels are checked against the operators computed here: each panel's
image is the block norms ||W_ij(X)||_F of the layer's operator on the stated input, the
title says "depends on the input" exactly when the two operators differ, and the
time-invariant layers (S4D, S5) give two identical Toeplitz panels.
"""

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.figure import Figure

from ssmheads.widgets import (ARCHITECTURE_NAMES, architecture_explorer, architecture_explorer_figure,
                              architecture_gallery)


def _panels(fig):
    return [np.ma.filled(ax.images[0].get_array().astype(float), np.nan) for ax in fig.axes if ax.images]


def test_gallery_has_every_architecture_and_each_forward_matches_its_operator():
    layers = architecture_gallery(d=2, seed=0)
    assert tuple(layers) == ARCHITECTURE_NAMES
    X = np.random.default_rng(0).standard_normal((7, 2))
    for name, layer in layers.items():
        W = layer.interaction(X)
        Y = np.einsum("ijpd,jd->ip", W, X)
        assert np.allclose(Y, layer.forward(X), rtol=1e-10, atol=1e-12), name


def test_gallery_is_deterministic_per_seed():
    X = np.random.default_rng(1).standard_normal((5, 2))
    a = architecture_gallery(seed=3)["Mamba"].forward(X)
    b = architecture_gallery(seed=3)["Mamba"].forward(X)
    c = architecture_gallery(seed=4)["Mamba"].forward(X)
    assert np.array_equal(a, b) and not np.allclose(a, c)


@pytest.mark.parametrize("name", ARCHITECTURE_NAMES)
def test_figure_panels_are_the_block_norms(name):
    n, seed = 9, 2
    fig = architecture_explorer_figure(name, n=n, seed=seed)
    assert isinstance(fig, Figure)
    layer = architecture_gallery(d=2, seed=seed)[name]
    X1 = np.random.default_rng(seed + 100).standard_normal((n, 2))
    X2 = np.random.default_rng(seed + 101).standard_normal((n, 2))
    W1, W2 = layer.interaction(X1), layer.interaction(X2)
    panels = _panels(fig)
    assert len(panels) == 2
    for panel, W in zip(panels, (W1, W2)):
        norms = np.sqrt((np.real(W) ** 2).sum(axis=(2, 3)))
        shown = np.nan_to_num(panel, nan=0.0)
        assert np.allclose(shown, norms, atol=1e-9 * norms.max()), name
    varies = np.max(np.abs(W1 - W2)) > 1e-12 * np.abs(W1).max()
    title = fig._suptitle.get_text()
    assert title.startswith(name) and (("depends on the input" in title) == varies)
    plt.close(fig)


@pytest.mark.parametrize("name", ["S4D", "S5"])
def test_time_invariant_layers_give_identical_panels(name):
    fig = architecture_explorer_figure(name, n=8, seed=0)
    a, b = _panels(fig)
    assert np.allclose(np.nan_to_num(a), np.nan_to_num(b)) and "the same for every input" in fig._suptitle.get_text()
    plt.close(fig)


@pytest.mark.parametrize("name", ["Mamba", "Mamba-2, 1 head", "RoPE head"])
def test_input_dependent_layers_say_so(name):
    fig = architecture_explorer_figure(name, n=8, seed=0)
    assert "depends on the input" in fig._suptitle.get_text()
    plt.close(fig)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="architecture must be one of"):
        architecture_explorer_figure("transformer")
    with pytest.raises(ValueError, match="n must be at most 64"):
        architecture_explorer_figure("Mamba", n=65)
    with pytest.raises(ValueError, match="n"):
        architecture_explorer_figure("Mamba", n=0)
    with pytest.raises(ValueError, match="seed"):
        architecture_explorer_figure("Mamba", seed=-1)
    with pytest.raises(ValueError, match="d"):
        architecture_gallery(d=0)
    with pytest.raises(ValueError, match="d must be at most 64"):
        architecture_gallery(d=10**7)


def test_n_equal_one_draws():
    fig = architecture_explorer_figure("retention", n=1, seed=0)
    assert len(_panels(fig)) == 2
    plt.close(fig)


def test_explorer_builds():
    pytest.importorskip("ipywidgets")
    w = architecture_explorer()
    names = {getattr(c, "description", None) for c in w.children}
    assert {"layer", "n", "seed"} <= names
