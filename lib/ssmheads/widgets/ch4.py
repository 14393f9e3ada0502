"""The Chapter 4 explorer (the gradient highway) and the static figure it redraws."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from .._validate import check_positive_int, check_seed
from ._common import _explorer

#: Longest sequence :func:`highway_explorer_figure` draws.
MAX_N = 100_000


def highway_explorer_figure(rho: float = 0.9, n: int = 256, a: float = 0.9, seed: int = 4):
    """Input-Jacobian norms ``||d y_n / d x_j||`` against the distance ``n - j`` (log-log axes).

    Used in Chapter 4, Section 4.13.

    The query is fixed at the last position ``n`` and the key moves. Five curves: one
    softmax head on Theorem 4.1's input with weight ``a`` on a single key, rebuilt with the
    key at each distance (flat, at the price of a key of norm ~ log n); the SSM
    ``A = rho R(0.3)``, ``B = C = I_2`` (``rho^l``) with its cond(S) bound on the decay
    (Proposition 4.3); the same SSM with ``rho = 1`` (a rotation, no decay); and the head on
    a random input of unit-norm tokens. With the query fixed, every key competes with the
    same ``n`` tokens, so that curve is flat near ``c / n``: the ``1/L`` decay on bounded
    tokens (Proposition 4.2) appears only when the query moves with the distance (key at
    position 1, query at ``L + 1``), as in the chapter's figure: dilution by the number of
    tokens, not attenuation by distance. The comparison is ``1/L`` (or ``1/n``) against
    ``rho^L``, not flat against decaying.

    Parameters
    ----------
    rho : float
        Spectral radius of the SSM, ``0 < rho < 1``.
    n : int
        Sequence length, ``3 <= n <= MAX_N`` (100000).
    a : float
        Attention weight on the key token, ``0 < a < 1``.
    seed : int
        Seed of the attention head (``random_attention(1, 2, seed=seed)``).

    Returns
    -------
    matplotlib Figure
    """
    from ..gradients import decay_bound, gradient_profile, highway_input, jacobian_row
    from ..models import LinearSSM
    from ..systems import random_attention, rotation_matrix

    n = check_positive_int("n", n, minimum=3)
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N} for this figure (its curves cost O(n) each and a "
                         f"longer sequence shows nothing new on log axes); got {n}")
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
    fig, ax = plt.subplots(figsize=(7.4, 4.0), layout="constrained")
    ax.loglog(distances, highway, "o-", label=f"attention, weight a = {a:g} on the key")
    ax.loglog(lags[1:], diluted[1:], ".", ms=3, alpha=0.6, label="attention, random unit-norm tokens (~ c/n)")
    ax.loglog(lags[1:], np.maximum(ssm_norms[1:], 1e-300), "-", lw=4, alpha=0.45, label=rf"SSM, $\rho$ = {rho:g}")
    ax.loglog(lags[1:], bound.diagonalizable[1:], "--", color="black", lw=1.2,
              label="cond(S) bound, Proposition 4.3 (equal: A is normal)")
    ax.loglog(lags[1:], flat[1:], ":", lw=2, label=r"SSM, $\rho$ = 1 (rotation)")
    ax.set_xlabel("distance $L = n - j$")
    ax.set_ylabel(r"$\|\partial y_n / \partial x_j\|$")
    ax.set_ylim(max(1e-12, float(np.min(ssm_norms[ssm_norms > 0])) / 10), 10 * max(max(highway), 1.0))
    ax.legend(fontsize=7, loc="lower left", framealpha=0.9)
    ax.set_title(r"Query fixed at $n$: attention ~ $c/n$ on unit tokens, flat on the highway; SSM ~ $\rho^L$",
                 fontsize=9)
    return fig


def highway_explorer():
    """Explorer for Chapter 4: ``rho``, ``n`` and ``a`` give the gradient profiles.

    Used in Chapter 4, Section 4.13.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        highway_explorer_figure,
        rho=widgets.FloatSlider(value=0.9, min=0.5, max=0.995, step=0.005, description="rho",
                                readout_format=".3f"),
        n=widgets.IntSlider(value=256, min=8, max=2048, step=8, description="n"),
        a=widgets.FloatSlider(value=0.9, min=0.05, max=0.99, step=0.01, description="a"),
    )
