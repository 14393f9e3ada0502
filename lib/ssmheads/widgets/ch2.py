"""The Chapter 2 explorer (the rank gap) and the static figure it redraws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.ticker import MaxNLocator

from .._validate import check_positive_int, check_seed
from ._common import _explorer

#: Largest ``k`` of :func:`family_system` and longest ``n`` of :func:`rank_explorer_figure`
#: (the profile costs one SVD per prefix).
MAX_K = 64
MAX_N = 400


#: The system families of the Chapter 2 and 3 explorers (see :func:`family_system`).
FAMILIES = ("rotation", "diagonal", "Jordan", "plateau", "random with lag rank k")


def family_system(family: str, theta: float = 1.0, rho: float = 0.9, k: int = 3, seed: int = 0):
    """The example SSM of a family in the Chapter 2 explorer.

    Used in Chapter 2, Section 2.9 (and in the explorer of Chapter 3).

    Parameters
    ----------
    family : str
        One of ``ssmheads.widgets.ch2.FAMILIES``: ``"rotation"`` (``rho R(theta)``, ``B = C = I_2``);
        ``"diagonal"`` (``k`` distinct eigenvalues spread over ``[-rho, rho]``, ``B = C = I``);
        ``"Jordan"`` (``J_2(rho) + [rho] + [-rho/2]``, ``B = C = I``); ``"plateau"``
        (Example 2.1); ``"random with lag rank k"`` (``p = d = 2``, so ``k <= 4``).
    theta, rho : float
        Finite; ``rho > 0``.
    k : int
        ``1 <= k <= MAX_K`` (64).
    seed : int

    Returns
    -------
    LinearSSM
    """
    from ..systems import _finite_scalar, diagonal, jordan, plateau, random_with_lag_rank, rotation

    if not isinstance(family, str) or family not in FAMILIES:
        raise ValueError(f"family must be one of {list(FAMILIES)}; got {family!r}")
    theta = _finite_scalar("theta", theta)
    rho = _finite_scalar("rho", rho)
    if rho <= 0:
        raise ValueError(f"rho must be a positive number (the spectral radius of the example); got {rho!r}")
    k = check_positive_int("k", k)
    if k > MAX_K:
        raise ValueError(f"k must be at most {MAX_K} for the explorer's families; got {k}")
    seed = check_seed(seed)
    if family == "rotation":
        return rotation(theta, rho)
    if family == "diagonal":
        return diagonal(rho * np.linspace(1.0, -1.0, k))
    if family == "Jordan":
        return jordan([(rho, 2), (rho, 1), (-rho / 2, 1)])
    if family == "plateau":
        return plateau()
    if family == "random with lag rank k":
        return random_with_lag_rank(min(k, 4), 2, 2, rho=rho, seed=seed)


def rank_explorer_figure(family: str = "rotation", n: int = 12, theta: float = 1.0, rho: float = 0.9,
                         k: int = 3, seed: int = 0):
    """Singular values of the lag matrix and the profile ``k(1..n)`` of one example SSM.

    Left: the singular values of ``G = [vec K_0, ..., vec K_{n-1}]`` relative to the
    largest, on a log scale, with the default rank tolerance as a dashed line.
    Right: ``k(l)`` for ``l = 1..n`` against the bound ``min(l, rank B rank C, m)``.

    Used in Chapter 2, Section 2.9.

    Parameters
    ----------
    family, theta, rho, k, seed
        As in :func:`family_system`.
    n : int
        Sequence length, ``1 <= n <= MAX_N`` (400).

    Returns
    -------
    matplotlib Figure
    """
    from ..models import _checked_lags
    from ..span import _default_rtol, _lag_span_bound, _lag_span_profile, _singular_values

    ssm = family_system(family, theta, rho, k, seed)
    n = check_positive_int("n", n)
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N} for this figure (the profile k(1..n) costs one SVD per "
                         f"prefix); got {n}")
    # ssm's arrays were checked when it was made: the cores, not the public functions
    s = _singular_values(_checked_lags(ssm.A, ssm.B, ssm.C, n))
    profile = _lag_span_profile(ssm.A, ssm.B, ssm.C, n, None)
    bound = [_lag_span_bound(ssm.A, ssm.B, ssm.C, length, None) for length in range(1, n + 1)]
    fig, (left, right) = plt.subplots(1, 2, figsize=(7.6, 3.2), layout="constrained")
    rel = s / s[0] if s.size and s[0] > 0 else s
    floor = 1e-18
    left.semilogy(np.arange(1, s.size + 1), np.maximum(rel, floor), "o-")
    left.axhline(_default_rtol(n, ssm.p, ssm.d), ls="--", color="gray", label="default tolerance")
    left.set_xlabel("index $r$")
    left.set_ylabel(r"$\sigma_r / \sigma_1$")
    left.set_ylim(floor / 10, 3)
    left.legend(loc="lower left")
    left.set_title("singular values of the lag matrix")
    left.xaxis.set_major_locator(MaxNLocator(integer=True))
    lengths = np.arange(1, n + 1)
    right.step(lengths, bound, where="mid", color="gray", ls="--",
               label=r"bound $\min(n,\,\mathrm{rank}\,B\cdot\mathrm{rank}\,C,\,m)$")
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

    Used in Chapter 2, Section 2.9.

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


