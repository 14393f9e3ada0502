"""Tests of ``ssmheads.plotting`` and ``ssmheads.widgets``.

Figures are drawn with the Agg backend (see conftest.py) and closed after each
test. The tests check what a reader relies on: titles, one panel per operator,
blank (masked) zero blocks, and the explorer's verdict on input dependence.
"""

import ipywidgets
import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from ssmheads import toeplitz_operator
from ssmheads.plotting import (BOOK_STYLE, LINE_STYLES, OKABE_ITO, operator_gallery, operator_heatmap,
                               use_book_style)
from ssmheads.systems import GALLERY_NAMES
from ssmheads.widgets import operator_explorer, operator_explorer_figure

LTI_NAMES = ("position-wise linear", "causal convolution", "LTI SSM")
ATTENTION_NAMES = ("softmax attention, 1 head", "softmax attention, 4 heads", "linear attention")


def _causal_operator(n=5, seed=0):
    return toeplitz_operator(np.random.default_rng(seed).standard_normal((n, 2, 2)), n)


def _visible_axes(fig):
    return [ax for ax in fig.axes if ax.get_visible()]


# ------------------------------------------------------------ use_book_style


def test_use_book_style_sets_rcparams():
    with mpl.rc_context():  # restore the global settings afterwards
        mpl.rcParams["font.size"] = 23.0
        mpl.rcParams["axes.spines.top"] = True
        use_book_style()
        for key, value in BOOK_STYLE.items():
            got = mpl.rcParams[key]
            if isinstance(value, tuple):
                assert tuple(got) == value, key
            else:
                assert got == value, key
        assert mpl.rcParams["font.size"] == 10
        assert mpl.rcParams["axes.spines.top"] is False


def test_book_style_keys_are_valid_rcparams():
    assert set(BOOK_STYLE) <= set(mpl.rcParams)


# Colour-vision deficiency simulation: Machado, Oliveira and Fernandes (2009), severity 1,
# applied to linear RGB; colours compared in CIELAB (D65), distance = Delta E 1976.
_CVD = {
    "deuteranopia": [[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                     [-0.011820, 0.042940, 0.968881]],
    "protanopia": [[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                   [-0.003882, -0.048116, 1.051998]],
    "tritanopia": [[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                   [0.004733, 0.691367, 0.303900]],
}
MIN_DELTA_E = 15.0


def _lab(linear_rgb):
    xyz = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]) \
        @ np.clip(linear_rgb, 0.0, 1.0)
    t = xyz / np.array([0.95047, 1.0, 1.08883])
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def _closest_pair_under_cvd(colours):
    """``{deficiency: smallest Delta E between two of colours as that reader sees them}``."""
    srgb = np.array([mpl.colors.to_rgb(c) for c in colours])
    linear = np.where(srgb <= 0.04045, srgb / 12.92, ((srgb + 0.055) / 1.055) ** 2.4)
    closest = {}
    for name, matrix in _CVD.items():
        lab = [_lab(np.array(matrix) @ c) for c in linear]
        closest[name] = min(np.linalg.norm(lab[i] - lab[j])
                            for i in range(len(lab)) for j in range(i + 1, len(lab)))
    return closest


def test_book_style_cycle_is_colour_blind_safe():
    """Any two line colours stay apart for deuteranopic, protanopic and tritanopic readers."""
    colours = BOOK_STYLE["axes.prop_cycle"].by_key()["color"]
    assert list(colours) == list(OKABE_ITO) and len(colours) >= 6
    for name, delta in _closest_pair_under_cvd(colours).items():
        assert delta >= MIN_DELTA_E, (name, delta)
    # the measure has teeth: matplotlib's default cycle (tab10) fails it, green and red
    # merging for deuteranopes and orange and green for protanopes
    default = mpl.rcParamsDefault["axes.prop_cycle"].by_key()["color"][:len(colours)]
    closest = _closest_pair_under_cvd(default)
    assert closest["deuteranopia"] < MIN_DELTA_E and closest["protanopia"] < MIN_DELTA_E


def test_book_style_cycle_varies_the_line_style_with_the_colour():
    """Lines drawn one after another differ by line style too, not by colour alone."""
    cycle = BOOK_STYLE["axes.prop_cycle"].by_key()
    assert set(cycle) == {"color", "linestyle"} and tuple(cycle["linestyle"]) == LINE_STYLES
    with mpl.rc_context(BOOK_STYLE):
        fig, ax = plt.subplots()
        lines = [ax.plot([0, 1], [k, k])[0] for k in range(len(OKABE_ITO))]
        dashes = [(line.get_color(), repr(line._unscaled_dash_pattern)) for line in lines]
        plt.close(fig)
    assert len({colour for colour, _ in dashes}) == len(lines)
    assert len({pattern for _, pattern in dashes}) == len(lines), dashes


# ------------------------------------------------------------ operator_heatmap


def test_operator_heatmap_returns_axes_with_title_and_labels():
    ax = operator_heatmap(_causal_operator(), title="an SSM operator")
    assert isinstance(ax, Axes)
    assert ax.get_title() == "an SSM operator"
    assert "j" in ax.get_xlabel() and "i" in ax.get_ylabel()
    assert len(ax.figure.axes) == 2  # the heatmap and its colour bar


def test_operator_heatmap_draws_on_given_axes_without_colorbar():
    fig, ax = plt.subplots()
    assert operator_heatmap(_causal_operator(), ax=ax, colorbar=False) is ax
    assert fig.axes == [ax]
    assert ax.get_title() == ""


def test_operator_heatmap_blanks_zero_blocks():
    """The image shows block norms; the exactly-zero upper triangle is masked (left white)."""
    W = _causal_operator(n=6)
    ax = operator_heatmap(W, colorbar=False)
    data = ax.images[0].get_array()
    norms = np.sqrt((W**2).sum(axis=(2, 3)))
    upper = np.triu(np.ones((6, 6), dtype=bool), k=1)
    assert np.all(np.ma.getmaskarray(data) == upper)
    np.testing.assert_allclose(data.data[~upper], norms[~upper], rtol=1e-14)


def test_operator_heatmap_colour_scale():
    W = _causal_operator()
    norms = np.sqrt((W**2).sum(axis=(2, 3)))
    assert operator_heatmap(W).images[0].get_clim() == pytest.approx((0.0, norms.max()))
    assert operator_heatmap(W, vmax=10.0).images[0].get_clim() == (0.0, 10.0)


def test_operator_heatmap_of_zero_operator_draws():
    ax = operator_heatmap(np.zeros((3, 3, 1, 1)))
    ax.figure.canvas.draw()
    assert np.all(np.ma.getmaskarray(ax.images[0].get_array()))


def test_operator_heatmap_validates_W():
    with pytest.raises(ValueError, match="W must have shape .* with equal first two axes"):
        operator_heatmap(np.zeros((2, 3, 1, 1)))


# ------------------------------------------------------------ operator_gallery


@pytest.mark.parametrize("count, ncols, rows", [(1, 3, 1), (4, 3, 2), (6, 3, 2), (5, 2, 3), (2, 1, 2)])
def test_operator_gallery_has_one_visible_panel_per_operator(count, ncols, rows):
    operators = {f"op {k}": _causal_operator(seed=k) for k in range(count)}
    fig = operator_gallery(operators, ncols=ncols, suptitle="what to notice")
    assert isinstance(fig, Figure)
    visible = _visible_axes(fig)
    assert [ax.get_title() for ax in visible] == list(operators)
    assert len(fig.axes) == rows * ncols  # spare panels exist but are hidden; no colour bars
    assert fig.get_suptitle() == "what to notice"


def test_operator_gallery_default_has_no_suptitle():
    fig = operator_gallery({"a": _causal_operator()})
    assert fig.get_suptitle() == ""


def test_operator_gallery_errors():
    with pytest.raises(ValueError, match="operators must contain at least one operator; got an empty mapping"):
        operator_gallery({})
    for bad in (0, -1, 2.0, "3"):
        with pytest.raises(ValueError, match="ncols must be an integer >= 1; got"):
            operator_gallery({"a": _causal_operator()}, ncols=bad)
    with pytest.raises(ValueError, match=r"W must have shape \(n, n, p, d\)"):
        operator_gallery({"a": np.zeros((2, 2))})


@pytest.mark.parametrize("ncols, ok", [(True, False), (np.int64(2), True)], ids=["True", "np.int64(2)"])
def test_operator_gallery_ncols_like_other_sizes(ncols, ok):
    operators = {"a": _causal_operator(), "b": _causal_operator(seed=1)}
    if ok:
        assert len(_visible_axes(operator_gallery(operators, ncols=ncols))) == 2
    else:
        with pytest.raises(ValueError, match="ncols"):
            operator_gallery(operators, ncols=ncols)


# ------------------------------------------------------------ operator_explorer_figure


@pytest.mark.parametrize("layer", GALLERY_NAMES)
def test_explorer_figure_states_whether_the_operator_depends_on_the_input(layer):
    fig = operator_explorer_figure(layer, n=8, seed=1)
    assert isinstance(fig, Figure)
    verdict = "depends on the input" if layer in ATTENTION_NAMES else "is the same for every input"
    assert fig.get_suptitle() == f"{layer}: the operator {verdict}"
    panels = [ax for ax in fig.axes if ax.images]
    assert [ax.get_title() for ax in panels] == ["on input $X$", "on input $X'$"]
    # one shared colour scale, so equal operators give equal pictures
    assert panels[0].images[0].get_clim() == panels[1].images[0].get_clim()
    same = np.ma.allequal(panels[0].images[0].get_array(), panels[1].images[0].get_array())
    assert same == (layer in LTI_NAMES)


def test_explorer_figure_default_is_four_head_attention():
    assert operator_explorer_figure().get_suptitle() == "softmax attention, 4 heads: the operator depends on the input"


def test_explorer_figure_single_token_attention_is_input_independent():
    """With n = 1 every attention weight is 1, so the operator is V_1 + ... + V_H whatever X is."""
    fig = operator_explorer_figure("softmax attention, 4 heads", n=1)
    assert fig.get_suptitle().endswith("is the same for every input")


def test_explorer_figure_errors():
    with pytest.raises(ValueError, match=r"layer must be one of \['position-wise linear', .*\]; got 'attention'"):
        operator_explorer_figure("attention")
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="n must be an integer >= 1; got"):
            operator_explorer_figure("LTI SSM", n=bad)


def test_explorer_figure_caps_n_itself():
    """A huge n is refused by the figure, naming n, before any operator is built."""
    from ssmheads.widgets.ch1 import MAX_N
    fig = operator_explorer_figure("LTI SSM", n=MAX_N)
    assert fig.get_suptitle() == "LTI SSM: the operator is the same for every input"
    for bad in (MAX_N + 1, 10**7):
        with pytest.raises(ValueError, match=rf"^n must be at most {MAX_N} for this figure .*; got {bad}$"):
            operator_explorer_figure("softmax attention, 4 heads", n=bad)


# ------------------------------------------------------------ operator_explorer (widget; never displayed)


def test_operator_explorer_has_layer_n_seed_controls():
    explorer = operator_explorer()
    assert isinstance(explorer, ipywidgets.interactive)
    controls = {w.description: w for w in explorer.children if isinstance(w, ipywidgets.ValueWidget)}
    assert set(controls) == {"layer", "n", "seed"}
    assert tuple(controls["layer"].options) == GALLERY_NAMES + ("Elman RNN", "KAN layer")
    assert controls["layer"].value == "softmax attention, 4 heads"
    assert (controls["n"].value, controls["n"].min) == (12, 2)
    assert controls["seed"].value == 0
    assert explorer.kwargs == {"layer": "softmax attention, 4 heads", "n": 12, "seed": 0}


def test_operator_explorer_redraws_when_a_control_changes():
    """Moving a control calls operator_explorer_figure with the new values (no exception swallowed)."""
    explorer = operator_explorer()
    layer = next(w for w in explorer.children if getattr(w, "description", None) == "layer")
    before = set(plt.get_fignums())
    layer.value = "LTI SSM"
    new = set(plt.get_fignums()) - before
    assert len(new) == 1
    assert plt.figure(new.pop()).get_suptitle() == "LTI SSM: the operator is the same for every input"
    assert explorer.kwargs["layer"] == "LTI SSM"


def test_operator_gallery_colorbar_panel_gives_each_panel_its_own_bar_and_scale():
    small = _causal_operator(seed=0)
    large = 10.0 * small
    fig = operator_gallery({"small": small, "large": large}, ncols=2, colorbar="panel")
    panels = [ax for ax in _visible_axes(fig) if ax.get_title()]
    assert [ax.get_title() for ax in panels] == ["small", "large"]
    assert len(fig.axes) == 4  # two panels and two colour bars
    tops = [ax.images[0].get_clim()[1] for ax in panels]
    assert tops[1] == pytest.approx(10.0 * tops[0])  # each panel keeps its own scale


def test_operator_gallery_colorbar_shared_uses_one_scale_and_one_bar():
    small, large = _causal_operator(seed=0), 10.0 * _causal_operator(seed=1)
    fig = operator_gallery({"small": small, "large": large}, ncols=3, colorbar="shared")
    panels = [ax for ax in _visible_axes(fig) if ax.get_title()]
    assert len(fig.axes) == 3 + 1  # three panel slots (one hidden) and one colour bar
    top = float(np.sqrt((large ** 2).sum(axis=(2, 3))).max())
    assert [ax.images[0].get_clim() for ax in panels] == [pytest.approx((0.0, top))] * 2


def test_operator_gallery_rejects_unknown_colorbar():
    with pytest.raises(ValueError, match="colorbar must be 'none', 'panel' or 'shared'; got 'each'"):
        operator_gallery({"a": _causal_operator()}, colorbar="each")


def test_figures_show_in_a_kernel_even_with_mplbackend_agg(tmp_path):
    """With MPLBACKEND=Agg exported (servers, CI), plt.show() would display nothing;
    use_book_style() selects the inline backend so every figure cell still has its image."""
    import os

    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nfrom ssmheads.plotting import use_book_style\n"
        "use_book_style()\nplt.plot([0, 1]); plt.show()")]
    env = dict(os.environ, MPLBACKEND="Agg")
    old = os.environ.get("MPLBACKEND")
    os.environ["MPLBACKEND"] = "Agg"  # the kernel inherits this process's environment
    try:
        NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    finally:
        if old is None:
            os.environ.pop("MPLBACKEND")
        else:
            os.environ["MPLBACKEND"] = old
    kinds = [set(o.get("data", {})) for o in nb.cells[0].outputs]
    assert env["MPLBACKEND"] == "Agg" and any("image/png" in k for k in kinds), kinds


def test_use_book_style_outside_a_kernel_keeps_the_backend():
    import matplotlib as mpl

    from ssmheads.plotting import use_book_style

    before = mpl.get_backend()
    use_book_style()
    assert mpl.get_backend() == before


# ---- issue 11: clear messages and size guards -------------------------------------------------

def test_operator_heatmap_checks_ax_and_vmax():
    from ssmheads import plotting
    W = np.ones((3, 3, 1, 1))
    with pytest.raises(ValueError, match="ax must be a matplotlib Axes"):
        plotting.operator_heatmap(W, ax="x")
    for bad in (float("nan"), float("inf"), 0.0, -1.0, "1"):
        with pytest.raises(ValueError, match="vmax must be a finite number > 0"):
            plotting.operator_heatmap(W, vmax=bad)
    with pytest.raises(ValueError, match=r"W has n = 5000 positions, more than the 4096"):
        plotting.operator_heatmap(np.zeros((5000, 5000, 0, 0)))


def test_operator_gallery_refuses_a_huge_grid():
    from ssmheads import plotting
    with pytest.raises(ValueError, match=r"ncols = 1000000 with 1 operators makes a grid of 1000000 panels"):
        plotting.operator_gallery({"a": np.ones((2, 2, 1, 1))}, ncols=10**6)
    with pytest.raises(ValueError, match=r"operators\['a'\] is not an operator: W must"):
        plotting.operator_gallery({"a": np.ones(3)})
