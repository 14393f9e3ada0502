"""Interactive explorers (ipywidgets) and the static figures they redraw.

Each explorer comes with a plain function drawing the same figure, so that a
static page shows the picture at the default settings and a live reader can
move the sliders. The explorer of Chapter N lives in ``ssmheads.widgets.chN``.
"""

from .ch1 import operator_explorer, operator_explorer_figure
from .ch2 import FAMILIES, family_system, rank_explorer, rank_explorer_figure
from .ch3 import head_explorer, head_explorer_figure
from .ch4 import highway_explorer, highway_explorer_figure
from .ch5 import ARCHITECTURE_NAMES, architecture_explorer, architecture_explorer_figure, architecture_gallery
from .ch6 import tradeoff_explorer, tradeoff_explorer_figure

__all__ = ["operator_explorer_figure", "operator_explorer", "FAMILIES", "family_system",
           "rank_explorer_figure", "rank_explorer", "head_explorer_figure", "head_explorer",
           "highway_explorer_figure", "highway_explorer",
           "ARCHITECTURE_NAMES", "architecture_gallery", "architecture_explorer_figure", "architecture_explorer",
           "tradeoff_explorer_figure", "tradeoff_explorer"]
