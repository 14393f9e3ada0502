"""What every explorer shares: a figure function turned into an ipywidgets.interactive.

Each explorer comes with a plain function drawing the same figure, so that a
static page shows the picture at the default settings and a live reader can
move the sliders.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ..plotting import operator_heatmap


def _explorer(figure, **controls):
    """An ``ipywidgets.interactive`` that redraws ``figure(**values)`` whenever a control moves."""
    import ipywidgets as widgets

    def draw(**values):
        figure(**values)
        plt.show()

    return widgets.interactive(draw, **controls)




def _operator_on_two_inputs(name: str, layer, n: int, seed: int):
    """Figure: ``layer``'s operator on two random ``(n, 2)`` inputs (seeds ``seed + 100``, ``seed + 101``),
    as block norms on one shared colour scale, titled with whether it depends on the input."""
    X1 = np.random.default_rng(seed + 100).standard_normal((n, 2))
    X2 = np.random.default_rng(seed + 101).standard_normal((n, 2))
    W1, W2 = np.real(layer.interaction(X1)), np.real(layer.interaction(X2))
    change = float(np.max(np.abs(W1 - W2)))
    top = float(max(np.abs(W1).max(), np.abs(W2).max(), 1e-300))
    verdict = "depends on the input" if change > 1e-12 * top else "is the same for every input"
    fig, axes = plt.subplots(1, 2, figsize=(7.0, 3.2), layout="constrained")
    vmax = float(max(np.sqrt((W1**2).sum(axis=(2, 3))).max(), np.sqrt((W2**2).sum(axis=(2, 3))).max()))
    operator_heatmap(W1, ax=axes[0], title="on input $X$", vmax=vmax, colorbar=False)
    operator_heatmap(W2, ax=axes[1], title="on input $X'$", vmax=vmax)
    fig.suptitle(f"{name}: the operator {verdict}")
    return fig
