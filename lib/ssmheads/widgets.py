"""Interactive explorers (ipywidgets) and the static figures they redraw.

Each explorer comes with a plain function drawing the same figure, so that a
static page shows the picture at the default settings and a live reader can
move the sliders.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from ._validate import check_positive_int, check_seed
from .plotting import operator_heatmap
from .systems import GALLERY_NAMES, gallery

__all__ = ["operator_explorer_figure", "operator_explorer", "FAMILIES", "family_system",
           "rank_explorer_figure", "rank_explorer", "head_explorer_figure", "head_explorer",
           "highway_explorer_figure", "highway_explorer"]

def _explorer(figure, **controls):
    """An ``ipywidgets.interactive`` that redraws ``figure(**values)`` whenever a control moves."""
    import ipywidgets as widgets

    def draw(**values):
        figure(**values)
        plt.show()

    return widgets.interactive(draw, **controls)



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
        Sequence length.
    seed : int

    Returns
    -------
    matplotlib Figure
    """
    if layer not in GALLERY_NAMES:
        raise ValueError(f"layer must be one of {list(GALLERY_NAMES)}; got {layer!r}")
    n = check_positive_int("n", n)
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


# ---------------------------------------------------------------- Chapter 2

#: The system families of the Chapter 2 and 3 explorers (see :func:`family_system`).
FAMILIES = ("rotation", "diagonal", "Jordan", "plateau", "random with lag rank k")


def family_system(family: str, theta: float = 1.0, rho: float = 0.9, k: int = 3, seed: int = 0):
    """The example SSM of a family in the Chapter 2 explorer.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`: ``"rotation"`` (``rho R(theta)``, ``B = C = I_2``);
        ``"diagonal"`` (``k`` distinct eigenvalues spread over ``[-rho, rho]``, ``B = C = I``);
        ``"Jordan"`` (``J_2(rho) + [rho] + [-rho/2]``, ``B = C = I``); ``"plateau"``
        (Proposition 2(e)); ``"random with lag rank k"`` (``p = d = 2``, so ``k <= 4``).
    theta, rho : float
    k : int
    seed : int

    Returns
    -------
    LinearSSM
    """
    from .systems import diagonal, jordan, plateau, random_with_lag_rank, rotation

    if family == "rotation":
        return rotation(theta, rho)
    if family == "diagonal":
        return diagonal(rho * np.linspace(1.0, -1.0, check_positive_int("k", k)))
    if family == "Jordan":
        return jordan([(rho, 2), (rho, 1), (-rho / 2, 1)])
    if family == "plateau":
        return plateau()
    if family == "random with lag rank k":
        return random_with_lag_rank(min(check_positive_int("k", k), 4), 2, 2, rho=rho, seed=seed)
    raise ValueError(f"family must be one of {list(FAMILIES)}; got {family!r}")


def rank_explorer_figure(family: str = "rotation", n: int = 12, theta: float = 1.0, rho: float = 0.9,
                         k: int = 3, seed: int = 0):
    """Singular values of the lag matrix and the profile ``k(1..n)`` of one example SSM.

    Left: the singular values of ``G = [vec K_0, ..., vec K_{n-1}]`` relative to the
    largest, on a log scale, with the default rank tolerance as a dashed line.
    Right: ``k(l)`` for ``l = 1..n`` against the bound ``min(l, rank B rank C, m)``.

    Parameters
    ----------
    family, theta, rho, k, seed
        As in :func:`family_system`.
    n : int
        Sequence length.

    Returns
    -------
    matplotlib Figure
    """
    from .models import lag_operators
    from .span import default_rtol, lag_span_bound, lag_span_profile, singular_values

    ssm = family_system(family, theta, rho, k, seed)
    n = check_positive_int("n", n)
    s = singular_values(lag_operators(ssm.A, ssm.B, ssm.C, n))
    profile = lag_span_profile(ssm.A, ssm.B, ssm.C, n)
    bound = [lag_span_bound(ssm.A, ssm.B, ssm.C, length) for length in range(1, n + 1)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.6, 3.2), layout="constrained")
    rel = s / s[0] if s.size and s[0] > 0 else s
    floor = 1e-18
    left.semilogy(np.arange(1, s.size + 1), np.maximum(rel, floor), "o-")
    left.axhline(default_rtol(n, ssm.p, ssm.d), ls="--", color="gray", label="default tolerance")
    left.set_xlabel("index $r$")
    left.set_ylabel(r"$\sigma_r / \sigma_1$")
    left.set_ylim(floor / 10, 3)
    left.legend(loc="lower left")
    left.set_title("singular values of the lag matrix")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    lengths = np.arange(1, n + 1)
    right.step(lengths, bound, where="mid", color="gray", ls="--", label=r"bound $\min(n, \mathrm{rk}B\,\mathrm{rk}C, m)$")
    right.plot(lengths, profile, "o", label="$k(n)$")
    right.set_xlabel("sequence length $n$")
    right.set_ylabel("dimension")
    right.legend(loc="lower right")
    right.set_title("lag-span dimension")
    right.yaxis.set_major_locator(MaxNLocator(integer=True))
    right.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.suptitle(f"{family}: k({n}) = {profile[-1]} with N = {ssm.N}, p = {ssm.p}, d = {ssm.d}")
    return fig


def rank_explorer():
    """Explorer for Chapter 2: a system family, its parameters and ``n`` give its singular values and ``k(n)``.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        rank_explorer_figure,
        family=widgets.Dropdown(options=list(FAMILIES), value="rotation", description="family"),
        n=widgets.IntSlider(value=12, min=1, max=40, description="n"),
        theta=widgets.FloatSlider(value=1.0, min=0.0, max=float(np.pi), step=0.05, description="theta"),
        rho=widgets.FloatSlider(value=0.9, min=0.05, max=1.0, step=0.05, description="rho"),
        k=widgets.IntSlider(value=3, min=1, max=4, description="k"),
        seed=widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    )


# ---------------------------------------------------------------- Chapter 3

def head_explorer_figure(family: str = "random with lag rank k", n: int = 16, H: int = 2,
                         theta: float = 1.0, rho: float = 0.9, k: int = 4, seed: int = 0):
    """The best ``H`` heads for one example SSM: their error, their coefficients, the error per lag.

    Left: optimal per-position white-noise error ``(1/n) sum_{r>H} sigma_r^2`` (weights
    ``n - l``) for every head count, the chosen ``H`` marked. Middle: the coefficients
    ``c_h(l)`` of the optimal ``H`` heads. Right: ``||K_l - Khat_l||_F`` per lag (log scale).

    Parameters
    ----------
    family, theta, rho, k, seed
        As in :func:`family_system`.
    n : int
        Sequence length.
    H : int
        Number of heads.

    Returns
    -------
    matplotlib Figure
    """
    from .heads import head_count_curve, optimal_heads, white_noise_weights
    from .models import lag_operators
    from .span import interaction_rank

    ssm = family_system(family, theta, rho, k, seed)
    n = check_positive_int("n", n)
    H = check_positive_int("H", H, minimum=0)
    K = lag_operators(ssm.A, ssm.B, ssm.C, n)
    w = white_noise_weights(n)
    rank = interaction_rank(K)
    H_max = max(rank + 1, H)
    curve = head_count_curve(K, H_max, w) / n
    c, V, residual = optimal_heads(K, H, w)
    Khat = np.einsum("hl,hpd->lpd", c, V)
    per_lag = np.sqrt(np.einsum("lpd,lpd->l", K - Khat, K - Khat))
    fig, (a0, a1, a2) = plt.subplots(1, 3, figsize=(10.5, 3.2), layout="constrained")
    a0.plot(range(H_max + 1), curve, "o-")
    a0.plot([H], [curve[H]], "o", ms=12, mfc="none", color="C3")
    a0.axvline(rank, color="gray", ls=":", label=f"k = {rank}")
    a0.set_xlabel("heads $H$")
    a0.set_ylabel("error per position")
    a0.legend()
    a0.set_title("optimal error")
    a0.xaxis.set_major_locator(MaxNLocator(integer=True))
    for h in range(H):
        a1.plot(range(n), c[h], ".-", label=f"$c_{{{h + 1}}}(l)$")
    a1.axhline(0.0, color="gray", lw=0.5)
    a1.set_xlabel("lag $l$")
    a1.set_title(f"coefficients of the {H} heads")
    if 0 < H <= 6:
        a1.legend(fontsize=7)
    a2.semilogy(range(n), np.maximum(per_lag, 1e-17), ".-")
    a2.set_xlabel("lag $l$")
    a2.set_ylabel(r"$\|K_l-\hat K_l\|_F$")
    a2.set_title("what the heads miss, per lag")
    fig.suptitle(f"{family}: k = {rank}, H = {H}, error per position {residual / n:.2e}")
    return fig


def head_explorer():
    """Explorer for Chapter 3: a system, ``n`` and ``H`` give the best ``H`` heads and their error.

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
        H=widgets.IntSlider(value=2, min=0, max=6, description="H"),
        theta=widgets.FloatSlider(value=1.0, min=0.0, max=float(np.pi), step=0.05, description="theta"),
        rho=widgets.FloatSlider(value=0.9, min=0.05, max=0.99, step=0.05, description="rho"),
        k=widgets.IntSlider(value=4, min=1, max=4, description="k"),
        seed=widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    )


# ---------------------------------------------------------------- Chapter 4

def highway_explorer_figure(rho: float = 0.9, n: int = 256, a: float = 0.9, seed: int = 4):
    """Gradient norms ``||d y_n / d x_j||`` against the distance ``n - j``, on a log scale.

    Five curves: one softmax head on Theorem 9's input with weight ``a`` on a single key,
    rebuilt with the key at each distance (flat); the SSM ``A = rho R(0.3)``, ``B = C = I_2``
    (a line of slope ``log rho``) with its Proposition 10 bound; the same SSM with
    ``rho = 1`` (a rotation, no decay); and the head on a random input of unit-size tokens
    (dilution: small, but not decaying with distance).

    Parameters
    ----------
    rho : float
        Spectral radius of the SSM, ``0 < rho < 1``.
    n : int
        Sequence length, ``n >= 3``.
    a : float
        Attention weight on the key token, ``0 < a < 1``.
    seed : int
        Seed of the attention head (``random_attention(1, 2, seed=seed)``).

    Returns
    -------
    matplotlib Figure
    """
    from .gradients import decay_bound, gradient_profile, highway_input, jacobian_row
    from .models import LinearSSM
    from .systems import random_attention, rotation_matrix

    n = check_positive_int("n", n, minimum=3)
    if not (isinstance(rho, (int, float, np.floating)) and 0 < rho < 1):
        raise ValueError(f"rho must lie in (0, 1); got {rho!r}")
    head = random_attention(1, 2, seed=check_seed(seed))
    distances = np.unique(np.round(np.geomspace(1, n - 1, 24)).astype(int))
    highway = [np.linalg.norm(jacobian_row(head, highway_input(head, n, a, key=n - 1 - dist))[n - 1 - dist], 2)
               for dist in distances]
    ssm = LinearSSM(rho * rotation_matrix(0.3), np.eye(2), np.eye(2))
    lags, ssm_norms = gradient_profile(ssm, np.zeros((n, 2)))
    bound = decay_bound(ssm.A, ssm.B, ssm.C, lags)
    marginal = LinearSSM(rotation_matrix(0.3), np.eye(2), np.eye(2))
    _, flat = gradient_profile(marginal, np.zeros((n, 2)))
    X = np.random.default_rng(seed + 100).standard_normal((n, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    _, diluted = gradient_profile(head, X)
    fig, ax = plt.subplots(figsize=(9.0, 3.8), layout="constrained")
    ax.semilogy(distances, highway, "o-", label=f"attention, weight a = {a:g} on the key")
    ax.semilogy(lags[1:], diluted[1:], ".", ms=3, alpha=0.6, label="attention, random unit-norm tokens")
    ax.semilogy(lags, np.maximum(ssm_norms, 1e-300), "-", label=rf"SSM, $\rho$ = {rho:g}")
    ax.semilogy(lags, bound.diagonalizable, "--", color="gray", lw=0.8, label="Prop. 10 bound (equal here: A is normal)")
    ax.semilogy(lags, flat, "-", label=r"SSM, $\rho$ = 1 (rotation)")
    ax.set_xlabel("distance $n - j$")
    ax.set_ylabel(r"$\|\partial y_n / \partial x_j\|$")
    ax.set_ylim(max(1e-12, float(np.min(ssm_norms[ssm_norms > 0])) / 10), 10 * max(max(highway), 1.0))
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
    ax.set_title("Attention's gradient does not decay with distance; a stable SSM's does")
    return fig


def highway_explorer():
    """Explorer for Chapter 4: ``rho``, ``n`` and ``a`` give the gradient profiles.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        highway_explorer_figure,
        rho=widgets.FloatSlider(value=0.9, min=0.5, max=0.995, step=0.005, description="rho"),
        n=widgets.IntSlider(value=256, min=8, max=2048, step=8, description="n"),
        a=widgets.FloatSlider(value=0.9, min=0.05, max=0.99, step=0.01, description="a"),
    )
