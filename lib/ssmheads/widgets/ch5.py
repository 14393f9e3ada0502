"""The Chapter 5 explorer (the architectures people use) and the static figure it redraws."""

from __future__ import annotations

import numpy as np

from .._validate import check_positive_int, check_seed
from ._common import _explorer, _operator_on_two_inputs

#: Largest ``n`` of :func:`architecture_explorer_figure` (the heatmaps draw ``n x n`` blocks).
MAX_N = 64

#: Largest token width ``d`` of :func:`architecture_gallery` (a figure helper: the weights are ``d x d``).
MAX_D = 64

#: The architectures of :func:`architecture_gallery`, in the order of Chapter 5.
ARCHITECTURE_NAMES = ("linear attention", "retention", "ALiBi head", "RoPE head", "S4D", "S5",
                      "Mamba", "Mamba-2, 1 head", "Mamba-2, 2 heads", "hybrid (Mamba, then RoPE)")


def architecture_gallery(d: int = 2, seed: int = 0) -> dict:
    """One layer of each architecture of Chapter 5, on tokens of dimension ``d``, weights from ``seed``.

    Used in Chapter 5, Section 5.14.

    The sizes are small and fixed (``d_k = 2``, state size ``N = 4``, ``d_inner = 2 d`` for
    Mamba, ``P = 2`` per Mamba-2 head); the S4D and S5 eigenvalues have real parts in
    ``[-0.9, -0.1]``, with ``dt = 0.5``. Every layer maps ``(n, d)`` to ``(n, d)`` except
    Mamba, whose output has ``d_inner`` channels (no output projection).
    """
    d = check_positive_int("d", d)
    if d > MAX_D:
        raise ValueError(f"d must be at most {MAX_D} for this gallery of small example layers; got {d}")
    return _gallery(d, check_seed(seed))


def _gallery(d, seed):
    """The layers of :func:`architecture_gallery` for a checked ``d`` and ``seed``."""
    from .. import architectures as arch

    rng = np.random.default_rng(seed)
    g = lambda *shape: rng.standard_normal(shape) / np.sqrt(shape[-1])  # noqa: E731
    N, dk, d_inner = 4, 2, 2 * d

    def lam(*shape):
        return -rng.uniform(0.1, 0.9, shape) + 1j * rng.uniform(0.0, np.pi, shape)

    mamba = arch.Mamba(g(d_inner, d), g(d_inner, d_inner), g(N, d_inner), g(N, d_inner),
                       np.log(rng.uniform(0.5, 2.0, (d_inner, N))))
    rope = arch.RoPEAttention(g(dk, d), g(dk, d), g(d, d), base=10.0)
    layers = {
        "linear attention": arch.LinearAttention(g(dk, d), g(dk, d), g(d, d)),
        "retention": arch.Retention(g(dk, d), g(dk, d), g(d, d), gamma=0.9, theta=0.3),
        "ALiBi head": arch.ALiBiAttention(g(dk, d), g(dk, d), g(d, d), slope=0.5),
        "RoPE head": rope,
        "S4D": arch.S4D(lam(d, N), g(d, N) + 0j, g(d, N) + 1j * g(d, N), np.full(d, 0.5)),
        "S5": arch.S5(lam(N), g(N, d) + 0j, g(d, N) + 1j * g(d, N), 0.5),
        "Mamba": mamba,
        "Mamba-2, 1 head": arch.Mamba2(g(2, d), g(d, 2), g(1, d), g(N, d), g(N, d), heads=1),
        "Mamba-2, 2 heads": arch.Mamba2(g(4, d), g(d, 4), g(2, d), g(N, d), g(N, d), heads=2),
        "hybrid (Mamba, then RoPE)": arch.Hybrid([mamba, arch.RoPEAttention(g(dk, d_inner), g(dk, d_inner),
                                                                            g(d, d_inner), base=10.0)]),
    }
    return layers


def architecture_explorer_figure(architecture: str = "Mamba", n: int = 16, seed: int = 0):
    """An architecture's operator ``W_ij(X)`` on two random inputs, side by side, one colour scale.

    Used in Chapter 5, Section 5.14.

    The layer is ``architecture_gallery(d=2, seed=seed)[architecture]``; the inputs are
    standard normal ``(n, 2)`` sequences from seeds ``seed + 100`` and ``seed + 101``.
    The title says whether the operator changed with the input.

    Parameters
    ----------
    architecture : str
        One of ``ARCHITECTURE_NAMES`` (this module).
    n : int
        Sequence length, ``1 <= n <= MAX_N`` (64).
    seed : int

    Returns
    -------
    matplotlib Figure
    """
    if architecture not in ARCHITECTURE_NAMES:
        raise ValueError(f"architecture must be one of {list(ARCHITECTURE_NAMES)}; got {architecture!r}")
    n = check_positive_int("n", n)
    if n > MAX_N:
        raise ValueError(f"n must be at most {MAX_N} for this figure (its heatmaps draw n x n blocks); got {n}")
    seed = check_seed(seed)
    layer = _gallery(2, seed)[architecture]
    return _operator_on_two_inputs(architecture, layer, n, seed)


def architecture_explorer():
    """Explorer for Chapter 5: pick an architecture, ``n`` and a seed; see its operator on two inputs.

    Used in Chapter 5, Section 5.14.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    return _explorer(
        architecture_explorer_figure,
        architecture=widgets.Dropdown(options=list(ARCHITECTURE_NAMES), value="Mamba", description="layer"),
        n=widgets.IntSlider(value=16, min=2, max=40, description="n"),
        seed=widgets.IntSlider(value=0, min=0, max=20, description="seed"),
    )
