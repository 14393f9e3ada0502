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
    """An ``ipywidgets.interactive`` that redraws ``figure(**values)`` whenever a control moves.

    The first picture (at the controls' initial values) is put into the explorer's Output
    widget as data, not captured from a display call made inside ``with out:``. A capture
    during the cell that builds the explorer sets the Output widget's ``msg_id`` to that
    cell's request; nbclient (site build, run_notebooks, check_standalone) then mimics a
    front end and sends a ``comm_msg`` back on the shell socket while it awaits the cell's
    ``execute_reply`` on that same socket. jupyter_client sends through a synchronous shadow
    of the asyncio socket, which can swallow the socket's wake-up for the reply, and nbclient
    then waits until the cell timeout with the kernel idle (nbclient#312). Redraws after a
    control moves (a live reader) go through ``interactive.update`` as before.
    """
    import ipywidgets as widgets

    def draw(**values):
        figure(**values)
        plt.show()

    class _Explorer(widgets.interactive):
        def update(self, *args):
            from IPython import get_ipython

            if getattr(self, "_drawn", False) or get_ipython() is None:
                return super().update(*args)
            # The call from interactive.__init__, inside a kernel: draw without capture.
            self._drawn = True
            self.kwargs = {w._kwarg: w.get_interact_value() for w in self.kwargs_widgets}
            fig = figure(**self.kwargs)
            try:
                self.out.append_display_data(fig)   # the shell's formatter: the PNG plt.show() shows
            finally:
                plt.close(fig)

    return _Explorer(draw, **controls)


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
