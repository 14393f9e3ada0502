"""The book's figure style and its recurring pictures.

Call :func:`use_book_style` once at the top of a chapter; every figure function
returns the matplotlib ``Figure`` (or ``Axes``) it drew on and never calls
``plt.show`` itself.
"""

from __future__ import annotations

from typing import Mapping

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
from matplotlib import cycler
from matplotlib.ticker import MaxNLocator

from ._validate import check_positive_int
from .operator import _block_norms, _operator

__all__ = ["BOOK_STYLE", "OKABE_ITO", "LINE_STYLES", "use_book_style", "operator_heatmap", "operator_gallery"]

#: Most panels :func:`operator_gallery` draws in one figure.
MAX_PANELS = 64
#: Largest operator :func:`operator_heatmap` draws: ``n x n`` pixels with ``n`` up to this.
MAX_PIXELS_SIDE = 4096

#: Line colours of the book, safe for colour-blind readers: the palette of Okabe and Ito,
#: "Color Universal Design (CUD): how to make figures and presentations that are friendly
#: to colorblind people" (2008), https://jfly.uni-koeln.de/color/ , without its black
#: (kept for reference lines such as bounds) and its yellow (too pale on white). In a
#: simulation of deuteranopia, protanopia or tritanopia (Machado, Oliveira and Fernandes,
#: 2009) any two of them stay at least 15 CIELAB units apart (tests/test_plotting.py).
OKABE_ITO = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9")
#: Line styles paired with :data:`OKABE_ITO`, so that lines differ by more than colour
#: (in greyscale print, or for a reader who cannot tell two colours apart).
LINE_STYLES = ("-", "--", "-.", ":", (0, (5, 1.5, 1, 1.5, 1, 1.5)), (0, (8, 2.5)))

#: rcParams shared by every figure of the book. The n-th line of an axes gets the n-th
#: colour *and* the n-th line style; a figure that needs markers sets them itself.
BOOK_STYLE = {
    "figure.dpi": 90,
    "savefig.dpi": 90,
    "figure.figsize": (6.4, 3.6),
    "figure.constrained_layout.use": True,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "image.cmap": "viridis",
    "legend.frameon": False,
    "axes.prop_cycle": cycler(color=list(OKABE_ITO)) + cycler(linestyle=list(LINE_STYLES)),
}


def use_book_style() -> None:
    """Apply :data:`BOOK_STYLE` to matplotlib's global settings (call once per notebook).

    Used in Chapter 1 (and at the top of every chapter).

    In a Jupyter kernel it also makes sure figures are shown: when the backend is
    a non-interactive one that displays nothing (``Agg``, as an exported
    ``MPLBACKEND=Agg`` on a server or in CI selects), it switches to the inline
    backend, as ``%matplotlib inline`` would. An interactive backend the reader
    chose (``%matplotlib widget``, a GUI) is left alone, and outside a kernel
    nothing changes.
    """
    mpl.rcParams.update(BOOK_STYLE)
    _show_figures_inline()


def _show_figures_inline() -> None:
    """Select the inline backend in a Jupyter kernel whose backend would display nothing."""
    import sys

    if "ipykernel" not in sys.modules:
        return
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - ipykernel implies IPython
        return
    shell = get_ipython()
    if shell is None or type(shell).__name__ != "ZMQInteractiveShell":
        return
    if mpl.get_backend().lower() in ("agg", "pdf", "svg", "ps", "cairo"):
        shell.run_line_magic("matplotlib", "inline")
    if "inline" in mpl.get_backend().lower():
        # PNGs at twice the pixels, shown at the same size (width and height in their metadata):
        # sharp on high-density screens, and 180 dpi in the printed book (make pdf)
        from matplotlib_inline.backend_inline import set_matplotlib_formats
        set_matplotlib_formats("retina")


def operator_heatmap(W, ax=None, title: str | None = None, vmax: float | None = None,
                     colorbar: bool = True):
    """Draw the block norms ``||W_ij||_F`` of an operator as an ``n x n`` image.

    Used in Chapter 1, Section 1.9.

    Blocks that are exactly zero are left blank (white), so causality (an empty
    upper triangle) and locality (an empty band) are visible at a glance.

    Parameters
    ----------
    W : array, shape (n, n, p, d)
    ax : matplotlib Axes, optional
        Where to draw; a new figure is made if omitted.
    title : str, optional
    vmax : float, optional
        Top of the colour scale (default: the largest block norm).
    colorbar : bool

    Returns
    -------
    matplotlib Axes

    Raises
    ------
    ValueError
        If ``ax`` is not a matplotlib Axes, ``vmax`` is not a finite positive number,
        ``title`` is not a string, ``colorbar`` is not a bool, or ``W`` has more than
        ``MAX_PIXELS_SIDE`` (4096) positions (the image would have more pixels than a
        screen shows; plot ``block_norms`` of a window of ``W`` instead).
    """
    _check_style(ax, title, colorbar)
    vmax = _check_vmax(vmax)
    return _heatmap(_norms_to_draw(W), ax, title, vmax, colorbar)


def _check_style(ax, title, colorbar) -> None:
    from matplotlib.axes import Axes

    if ax is not None and not isinstance(ax, Axes):
        raise ValueError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    if title is not None and not isinstance(title, str):
        raise ValueError(f"title must be a string or None; got {type(title).__name__}")
    if not isinstance(colorbar, (bool, np.bool_)):
        raise ValueError(f"colorbar must be True or False; got {colorbar!r}")


def _check_vmax(vmax) -> float | None:
    if vmax is not None:
        if isinstance(vmax, (bool, np.bool_)) or not isinstance(vmax, (int, float, np.integer, np.floating)) \
                or not np.isfinite(vmax) or vmax <= 0:
            raise ValueError(f"vmax must be a finite number > 0 or None; got {vmax!r}")
        vmax = float(vmax)
    return vmax


def _check_pixels(n: int) -> None:
    if n > MAX_PIXELS_SIDE:
        raise ValueError(f"W has n = {n} positions, more than the {MAX_PIXELS_SIDE} a heatmap draws "
                         f"(one pixel per block); draw a window W[:m, :m] or the block norms of a part of W")


def _norms_to_draw(W) -> np.ndarray:
    """The block norms of ``W`` (checked once), refusing more positions than a heatmap draws."""
    shape = np.shape(W)
    if len(shape) == 4:
        _check_pixels(shape[0])
    return _block_norms(_operator(W), "fro")


def _heatmap(norms: np.ndarray, ax, title: str | None, vmax: float | None, colorbar: bool):
    """Core of :func:`operator_heatmap`: draw checked block norms ``(n, n)``."""
    if ax is None:
        _, ax = plt.subplots(figsize=(3.4, 3.0), layout="constrained")
    shown = np.ma.masked_where(norms == 0.0, norms)
    n = norms.shape[0]
    image = ax.imshow(shown, vmin=0.0, vmax=vmax if vmax is not None else max(float(norms.max()), 1e-300),
                      extent=(0.5, n + 0.5, n + 0.5, 0.5), interpolation="nearest")
    ax.set_xlabel("source position $j$")
    ax.set_ylabel("output position $i$")
    ax.set_facecolor("white")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax, shrink=0.8, label=r"$\|W_{ij}\|_F$")
    return ax


def operator_gallery(operators: Mapping[str, np.ndarray], ncols: int = 3, suptitle: str | None = None,
                     colorbar: str = "none"):
    """Operator heatmaps side by side, one panel per named operator.

    Used in Chapter 1, Section 1.6.

    Parameters
    ----------
    operators : mapping from str to array of shape (n, n, p, d)
    ncols : int
        Panels per row.
    suptitle : str, optional
        A title for the whole figure; say what to notice.
    colorbar : {"none", "panel", "shared"}
        ``"none"`` (default): each panel has its own colour scale and no colour bar.
        ``"panel"``: each panel keeps its own scale and gets its own colour bar, for
        panels whose patterns are compared but whose sizes are unrelated.
        ``"shared"``: every panel uses one scale, from 0 to the largest block norm
        of all the operators, shown by a single colour bar, for panels whose sizes
        are compared.

    Returns
    -------
    matplotlib Figure

    Raises
    ------
    ValueError
        On a bad argument, or when the grid would have more than ``MAX_PANELS`` (64)
        panels (``ncols`` times the number of rows); draw several galleries instead.
    """
    if not isinstance(operators, Mapping):
        raise ValueError(f"operators must be a mapping from names to operators; got {type(operators).__name__}")
    if not operators:
        raise ValueError("operators must contain at least one operator; got an empty mapping")
    ncols = check_positive_int("ncols", ncols)
    if not isinstance(colorbar, str) or colorbar not in ("none", "panel", "shared"):
        raise ValueError(f"colorbar must be 'none', 'panel' or 'shared'; got {colorbar!r}")
    if suptitle is not None and not isinstance(suptitle, str):
        raise ValueError(f"suptitle must be a string or None; got {type(suptitle).__name__}")
    names = list(operators)
    for name in names:
        if not isinstance(name, str):
            raise ValueError(f"operators must have string names (they become panel titles); got {name!r}")
    panels = ncols * -(-len(names) // ncols)
    if panels > MAX_PANELS:
        raise ValueError(f"ncols = {ncols} with {len(names)} operators makes a grid of {panels} panels, more "
                         f"than the {MAX_PANELS} one figure draws; use ncols <= {max(1, len(names))} "
                         "or several galleries")
    norms = {}
    for name in names:  # validate every operator before drawing anything
        try:
            norms[name] = _block_norms(_operator(operators[name]), "fro")
        except ValueError as exc:
            raise ValueError(f"operators[{name!r}] is not an operator: {exc}") from None
    for name in names:
        _check_pixels(norms[name].shape[0])
    vmax = None
    if colorbar == "shared":
        vmax = max(max(float(norms[name].max()) for name in names), 1e-300)
    nrows = -(-len(names) // ncols)
    width = 3.5 if colorbar == "panel" else 3.0
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, 2.9 * nrows), squeeze=False,
                             layout="constrained")
    for ax, name in zip(axes.flat, names):
        _heatmap(norms[name], ax, name, vmax, colorbar == "panel")
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    if colorbar == "shared":
        fig.colorbar(axes.flat[0].images[0], ax=list(axes.flat[:len(names)]), shrink=0.8,
                     label=r"$\|W_{ij}\|_F$")
    if suptitle:
        fig.suptitle(suptitle)
    return fig
