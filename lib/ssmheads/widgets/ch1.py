"""The Chapter 1 explorer (the unified operator) and the static figure it redraws."""

from __future__ import annotations

import numpy as np

from .._validate import check_positive_int, check_seed
from ..models import ElmanRNN, KANLayer
from ..systems import GALLERY_NAMES, gallery
from ._common import _explorer, _operator_on_two_inputs

#: The layers the explorer offers: the gallery of :func:`ssmheads.systems.gallery` and the two
#: nonlinear layers of Chapter 1 (drawn by :func:`_nonlinear_layer`).
LAYER_NAMES = GALLERY_NAMES + ("Elman RNN", "KAN layer")


def _nonlinear_layer(name: str, d: int, seed: int):
    """Chapter 1's Elman RNN (state size ``2d``, ``W_h`` of spectral radius 0.9) or KAN layer (5 intervals on
    ``[-3, 3]``), mapping width ``d`` to ``d``: the RNN is drawn first from ``seed``, then the KAN layer,
    as in the chapter's table of structures."""
    g = np.random.default_rng(seed).standard_normal
    W_h = g((2 * d, 2 * d))
    W_h *= 0.9 / np.max(np.abs(np.linalg.eigvals(W_h)))
    rnn = ElmanRNN(W_h, g((2 * d, d)), g((d, 2 * d)) / np.sqrt(2 * d))
    if name == "Elman RNN":
        return rnn
    return KANLayer(g((d, d, 8)), g((d, d)), grid=(-3.0, 3.0))


#: Largest ``n`` of :func:`operator_explorer_figure`: the heatmaps draw ``n x n`` blocks, and
#: beyond 100 a block is narrower than about three pixels at the figure's size.
MAX_N = 100


def operator_explorer_figure(layer: str = "softmax attention, 4 heads", n: int = 12, seed: int = 0):
    """A layer's operator on two different random inputs, side by side.

    Used in Chapter 1, Section 1.9.

    The layer is ``gallery(d=2, seed=seed)[layer]``, or the Elman RNN or KAN layer of
    Chapter 1's gallery drawn from ``seed``; the inputs ``X`` and ``X'`` are
    standard normal ``(n, 2)`` sequences drawn from seeds ``seed + 100`` and
    ``seed + 101``. Both panels share one colour scale, so an input-independent
    operator gives two identical pictures.

    Parameters
    ----------
    layer : str
        One of ``LAYER_NAMES``: :data:`ssmheads.systems.GALLERY_NAMES`, ``"Elman RNN"``
        or ``"KAN layer"``.
    n : int
        Sequence length, ``1 <= n <= MAX_N`` (100).
    seed : int

    Returns
    -------
    matplotlib Figure
    """
    if not isinstance(layer, str) or layer not in LAYER_NAMES:
        raise ValueError(f"layer must be one of {list(LAYER_NAMES)}; got {layer!r}")
    n = check_positive_int("n", n)
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N} for this figure (its heatmaps draw n x n blocks, and "
                         f"beyond {MAX_N} a block is narrower than a few pixels); got {n}")
    seed = check_seed(seed)
    model = gallery(d=2, seed=seed)[layer] if layer in GALLERY_NAMES else _nonlinear_layer(layer, 2, seed)
    return _operator_on_two_inputs(layer, model, n, seed)


def operator_explorer():
    """Explorer for Chapter 1: pick a layer, ``n`` and a seed; see its operator on two inputs.

    Used in Chapter 1, Section 1.9.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        operator_explorer_figure,
        layer=widgets.Dropdown(options=list(LAYER_NAMES), value="softmax attention, 4 heads",
                               description="layer"),
        n=widgets.IntSlider(value=12, min=2, max=40, description="n"),
        seed=widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    )


