"""What every explorer shares: a figure function turned into an ipywidgets.interactive.

Each explorer comes with a plain function drawing the same figure, so that a
static page shows the picture at the default settings and a live reader can
move the sliders.
"""

from __future__ import annotations

import matplotlib.pyplot as plt



def _explorer(figure, **controls):
    """An ``ipywidgets.interactive`` that redraws ``figure(**values)`` whenever a control moves."""
    import ipywidgets as widgets

    def draw(**values):
        figure(**values)
        plt.show()

    return widgets.interactive(draw, **controls)


