"""The Chapter 3 explorer (the head count) and the static figure it redraws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.path import Path
from matplotlib.ticker import FuncFormatter, LogFormatterSciNotation, LogLocator, MaxNLocator, NullFormatter
from matplotlib.transforms import blended_transform_factory

from .._validate import check_positive_int
from .ch2 import FAMILIES, family_system
from ._common import _explorer

#: Errors below this fraction of the largest are zero up to rounding; drawn on the axis floor.
ZERO_FLOOR = 1e-12

#: Token and output width of the explorer's "random with lag rank k" family: ``p = d = 3``, so
#: ``pd = 9`` exceeds every ``k`` the explorer offers and "exactly zero from ``H = k``" is a
#: property of the system, not of the ambient dimension.
RANDOM_WIDTH = 3

#: Most heads the explorer draws (its slider's maximum): one coefficient curve per head.
MAX_HEADS = 6

#: Markers and line styles that tell the coefficient curves apart without colour.
_STYLES = (("o", "-"), ("s", "--"), ("^", "-."), ("D", ":"), ("v", "-"), ("P", "--"))


def _bottom(nonzero: np.ndarray, floor: float) -> float:
    """Where a log axis draws its zeros: a decade below the smallest nonzero value (``floor`` if none)."""
    return float(nonzero.min()) / 10 if nonzero.size else floor


class _ZeroLocator(LogLocator):
    """Log ticks above ``3 zero``, plus (for the major ticks) one at ``zero``, where zeros are drawn."""

    def __init__(self, zero: float, subs=(1.0,), mark_zero: bool = True):
        super().__init__(subs=subs)
        self.zero, self.mark_zero = zero, mark_zero

    def tick_values(self, vmin, vmax):
        ticks = super().tick_values(vmin, vmax)
        ticks = ticks[ticks > 3 * self.zero]
        return np.r_[self.zero, ticks] if self.mark_zero else ticks


#: The break mark: two parallel strokes across the spine, and the gap between them.
_BREAK_STROKES = Path([(-1.0, -1.0), (1.0, -0.2), (-1.0, 0.2), (1.0, 1.0)],
                      [Path.MOVETO, Path.LINETO, Path.MOVETO, Path.LINETO])
_BREAK_GAP = Path([(-0.35, -0.55), (0.35, -0.55), (0.35, 0.55), (-0.35, 0.55), (-0.35, -0.55)],
                  [Path.MOVETO, Path.LINETO, Path.LINETO, Path.LINETO, Path.CLOSEPOLY])


def _break_axis(ax, zero: float) -> None:
    """Set the zeros at ``zero`` apart from the log range: a grey strip up to ``sqrt(3) zero``, and a
    break mark on the y-axis there (the log axis has no 0; the gap to the strip is not a decade).

    Drawn as patches and scatter marks, not as lines, so that ``ax.get_lines()`` keeps only data.
    """
    edge = zero * np.sqrt(3.0)   # between the "0" tick and the first other tick (above 3 zero)
    ax.axhspan(zero / 3, edge, color="0.5", alpha=0.12, lw=0, zorder=0)
    spine = blended_transform_factory(ax.transAxes, ax.transData)
    for marker, face, edges in ((_BREAK_GAP, "white", "none"), (_BREAK_STROKES, "none", "black")):
        ax.scatter([0.0], [edge], s=90, marker=marker, transform=spine, clip_on=False, zorder=3,
                   facecolors=face, edgecolors=edges, linewidths=1.0)


def _label_zero(ax, zero: float, top: float) -> None:
    """Label the tick at ``zero`` "0" on the log y-axis ``ax``: the triangles there are zeros, not values.

    ``top`` is the largest value drawn (0 when every value is zero); below two decades above
    ``3 zero`` the ticks are 1, 2, 5 times powers of ten, so that at least two carry numbers.
    When values are drawn too, a break mark and a grey strip set the zeros apart
    (:func:`_break_axis`).
    """
    scientific = LogFormatterSciNotation(labelOnlyBase=False)
    few = top > 0 and top < 300 * zero
    ax.yaxis.set_major_locator(_ZeroLocator(zero, subs=(1.0, 2.0, 5.0) if few else (1.0,)))
    ax.yaxis.set_minor_locator(_ZeroLocator(zero, subs=np.arange(2.0, 10.0), mark_zero=False))
    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(
        lambda y, pos: "0" if np.isclose(y, zero, rtol=1e-9, atol=0.0) else scientific(y, pos)))
    if top > 0:
        ax.set_ylim(bottom=zero / 3)
        _break_axis(ax, zero)
    else:
        ax.set_ylim(zero / 3, zero * 3)


def _head_system(family: str, theta: float, rho: float, k: int, seed: int):
    """The explorer's system: :func:`family_system`, except that the random family has ``p = d = 3``."""
    from ..systems import random_with_lag_rank

    if family == "random with lag rank k":
        k = min(check_positive_int("k", k), 6)
        return random_with_lag_rank(k, RANDOM_WIDTH, RANDOM_WIDTH, rho=rho, seed=seed)
    return family_system(family, theta, rho, k, seed)


def head_explorer_figure(family: str = "random with lag rank k", n: int = 16, H: int = 2,
                         theta: float = 1.0, rho: float = 0.9, k: int = 4, seed: int = 0):
    """The best ``H`` heads for one example SSM: their error, their coefficients, the error per lag.

    Left: optimal per-position white-noise error ``(1/n) sum_{r>H} sigma_r^2`` (weights
    ``n - l``) for every head count, on a log scale, the chosen ``H`` marked; head
    counts whose error is below ``1e-12`` of the error with no heads (zero up to
    rounding: ``H >= k``) are drawn as triangles at the bottom of the axis, a decade
    below the smallest nonzero value (not at ``1e-12``, which would stretch the axis
    over empty decades), at a tick labelled 0, in a grey strip below a break mark on
    the axis (the gap to the strip is not a decade). Middle: the coefficients ``c_h(l)`` of
    the optimal ``H`` heads, one marker and line style per head (each is a combination
    ``sum_m <V_h, R_m>_F lambda_m^l`` of the modal sequences of a diagonalisable ``A``).
    Right: ``||K_l - Khat_l||_F`` per lag (log scale), with lags matched to rounding drawn
    as triangles at the bottom in the same way.

    Used in Chapter 3, Section 3.8 (the figure above the explorer).

    Parameters
    ----------
    family, theta, rho, k, seed
        As in :func:`family_system`, except that ``"random with lag rank k"`` is
        ``random_with_lag_rank(k, 3, 3, rho, seed)`` (``p = d = 3``, ``RANDOM_WIDTH``;
        ``k <= 6``), so that ``k < pd`` and the error's vanishing at ``H = k`` is not forced
        by the dimension ``pd`` of the space of ``p x d`` matrices.
    n : int
        Sequence length.
    H : int
        Number of heads, ``0 <= H <= MAX_HEADS`` (6, the slider's maximum).

    Returns
    -------
    matplotlib Figure
    """
    from ..heads import _head_count_curve, _optimal_heads, _white_noise
    from ..models import _checked_lags
    from ..span import _default_rtol, _interaction_rank

    H = check_positive_int("H", H, minimum=0)
    if H > MAX_HEADS:
        raise ValueError(f"H must be an integer between 0 and {MAX_HEADS} (the explorer's slider: one "
                         f"coefficient curve per head); got {H}")
    ssm = _head_system(family, theta, rho, k, seed)
    n = check_positive_int("n", n)
    # the system and n are checked: call the cores, not the public functions that check again
    K = _checked_lags(ssm.A, ssm.B, ssm.C, n)
    w = _white_noise(n)
    rank = _interaction_rank(K, _default_rtol(*K.shape))
    H_max = max(rank + 1, H)
    curve = _head_count_curve(K, H_max, w, "K and weights") / n
    c, V, residual = _optimal_heads(K, H, w, "K and weights")
    Khat = np.einsum("hl,hpd->lpd", c, V)
    per_lag = np.sqrt(np.einsum("lpd,lpd->l", K - Khat, K - Khat))
    fig, (a0, a1, a2) = plt.subplots(1, 3, figsize=(10.5, 3.2), layout="constrained")
    Hs = np.arange(H_max + 1)
    floor = ZERO_FLOOR * curve[0] if curve[0] > 0 else 1.0
    zero = curve <= floor
    bottom = _bottom(curve[~zero], floor)   # where the zeros are drawn
    a0.semilogy(Hs[~zero], curve[~zero], "o-", label="optimal error")
    if zero.any():
        a0.semilogy(Hs[zero], np.full(zero.sum(), bottom), "v", color="C2",
                    label=f"zero (< {ZERO_FLOOR:.0e} of $H=0$)")
    a0.plot([H], [curve[H] if curve[H] > floor else bottom], "o", ms=12, mfc="none", color="C3",
            label=f"chosen $H = {H}$")
    a0.axvline(rank, color="gray", ls=":", label=f"k = {rank}")
    if zero.any():
        _label_zero(a0, bottom, float(curve[~zero].max(initial=0.0)))
    a0.set_xlabel("heads $H$")
    a0.set_ylabel("error per position")
    a0.legend(fontsize=7)
    a0.set_title("optimal error (log scale)")
    a0.xaxis.set_major_locator(MaxNLocator(integer=True))
    for h in range(H):
        marker, style = _STYLES[h % len(_STYLES)]
        a1.plot(range(n), c[h], marker=marker, ls=style, ms=4, label=f"$c_{{{h + 1}}}(l)$")
    a1.axhline(0.0, color="gray", lw=0.5)
    a1.set_xlabel("lag $l$")
    a1.xaxis.set_major_locator(MaxNLocator(integer=True))
    a1.set_title(f"coefficients of the {H} head{'' if H == 1 else 's'}")
    if 0 < H <= 6:
        a1.legend(fontsize=7)
    lag_floor = ZERO_FLOOR * float(np.sqrt(np.einsum("lpd,lpd->l", K, K)).max() or 1.0)
    missed = per_lag > lag_floor
    lag_bottom = _bottom(per_lag[missed], lag_floor)
    if missed.any():
        a2.semilogy(np.arange(n)[missed], per_lag[missed], ".-", label="missed")
    if not missed.all():
        a2.semilogy(np.arange(n)[~missed], np.full((~missed).sum(), lag_bottom), "v", color="C2",
                    label=f"zero (< {ZERO_FLOOR:.0e} of max $\\|K_l\\|$)")
    if not missed.all():
        _label_zero(a2, lag_bottom, float(per_lag[missed].max(initial=0.0)))
    a2.legend(fontsize=7)
    a2.set_xlabel("lag $l$")
    a2.set_ylabel(r"$\|K_l-\hat K_l\|_F$")
    a2.set_title("what the heads miss, per lag")
    error = (f"error per position {residual / n:.2e}" if residual / n > floor
             else f"exact: error per position < {ZERO_FLOOR:.0e} of H = 0")
    fig.suptitle(f"{family}: k = {rank}, H = {H}, {error}")
    return fig


def head_explorer():
    """Explorer for Chapter 3: a system, ``n`` and ``H`` give the best ``H`` heads and their error.

    Used in Chapter 3, Section 3.8.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        head_explorer_figure,
        family=widgets.Dropdown(options=list(FAMILIES), value="random with lag rank k", description="family"),
        n=widgets.IntSlider(value=16, min=2, max=48, description="n"),
        H=widgets.IntSlider(value=2, min=0, max=MAX_HEADS, description="H"),
        theta=widgets.FloatSlider(value=1.0, min=0.0, max=float(np.pi), step=0.05, description="theta"),
        rho=widgets.FloatSlider(value=0.9, min=0.05, max=0.99, step=0.05, description="rho"),
        k=widgets.IntSlider(value=4, min=1, max=6, description="k"),
        seed=widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    )


