"""The Chapter 1 explorer (the unified operator) and the static figure it redraws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .._validate import check_positive_int, check_seed
from ..plotting import operator_heatmap
from ..systems import GALLERY_NAMES, gallery
from ._common import _explorer

#: Largest ``n`` of :func:`operator_explorer_figure`: the heatmaps draw ``n x n`` blocks, and
#: beyond 100 a block is narrower than about three pixels at the figure's size.
MAX_N = 100


def operator_explorer_figure(layer: str = "softmax attention, 4 heads", n: int = 12, seed: int = 0):
    """A layer's operator on two different random inputs, side by side.

    The layer is ``gallery(d=2, seed=seed)[layer]``; the inputs ``X`` and ``X'`` are
    standard normal ``(n, 2)`` sequences drawn from seeds ``seed + 100`` and
    ``seed + 101``. Both panels share one colour scale, so an input-independent
    operator gives two identical pictures.

    Parameters
    ----------
    layer : str
        One of :data:`ssmheads.systems.GALLERY_NAMES`.
    n : int
        Sequence length, ``1 <= n <= MAX_N`` (100).
    seed : int

    Returns
    -------
    matplotlib Figure
    """
    if layer not in GALLERY_NAMES:
        raise ValueError(f"layer must be one of {list(GALLERY_NAMES)}; got {layer!r}")
    n = check_positive_int("n", n)
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N} for this figure (its heatmaps draw n x n blocks, and "
                         f"beyond {MAX_N} a block is narrower than a few pixels); got {n}")
    seed = check_seed(seed)
    model = gallery(d=2, seed=seed)[layer]
    X1 = np.random.default_rng(seed + 100).standard_normal((n, 2))
    X2 = np.random.default_rng(seed + 101).standard_normal((n, 2))
    W1, W2 = model.interaction(X1), model.interaction(X2)
    change = float(np.max(np.abs(W1 - W2)))
    top = float(max(np.abs(W1).max(), np.abs(W2).max(), 1e-300))
    verdict = "depends on the input" if change > 1e-12 * top else "is the same for every input"
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.2), layout="constrained")
    vmax = float(max(np.sqrt((W1**2).sum(axis=(2, 3))).max(), np.sqrt((W2**2).sum(axis=(2, 3))).max()))
    operator_heatmap(W1, ax=axes[0], title="on input $X$", vmax=vmax, colorbar=False)
    operator_heatmap(W2, ax=axes[1], title="on input $X'$", vmax=vmax)
    fig.suptitle(f"{layer}: the operator {verdict}")
    return fig


def operator_explorer():
    """Explorer for Chapter 1: pick a layer, ``n`` and a seed; see its operator on two inputs.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        operator_explorer_figure,
        layer=widgets.Dropdown(options=list(GALLERY_NAMES), value="softmax attention, 4 heads",
                               description="layer"),
        n=widgets.IntSlider(value=12, min=2, max=40, description="n"),
        seed=widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    )


