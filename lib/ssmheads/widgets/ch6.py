"""The Chapter 6 explorer (the trade-off, measured) and the static figure it redraws.

It reads the committed results of ``benchmarks/bench_tradeoff.py`` (no training, no JAX).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np

from ._common import _explorer


def tradeoff_explorer_figure(architecture: str = "s4d", task: str = "delay", results=None):
    """Loss curves of one architecture on one task, every distance and seed of the sweep.

    Used in Chapter 6.

    One panel per distance of the sweep: the training loss against the Adam step, one
    line per seed (line styles differ), the floor of the architecture's class on that task
    (``ssmheads.bench.task_floor``: its heads for the emulation and the delay, and ``1 - 1/L``
    for time-invariant models on the selective copy) dashed in black where it applies.

    Parameters
    ----------
    architecture : str
        One of ``ssmheads.bench.ARCHITECTURES``.
    task : str
        One of ``ssmheads.bench.TASKS``.
    results : dict, optional
        As returned by ``ssmheads.bench.load_results`` (default: the committed file).

    Returns
    -------
    matplotlib Figure
    """
    from .. import bench

    bench._check_architecture(architecture)
    bench._check_task(task, 1)
    data = bench.load_results() if results is None else results
    try:
        runs = [r for r in data["runs"] if r["architecture"] == architecture and r["task"] == task]
        distances = sorted({r["distance"] for r in runs})
    except (TypeError, KeyError, IndexError) as exc:
        raise ValueError(f"results must be a dict with the list 'runs' of ssmheads.bench.load_results (each run "
                         f"a dict with architecture, task, distance, seed and losses); got {type(results).__name__}"
                         f" ({type(exc).__name__}: {exc})") from None
    if not runs:
        raise ValueError(f"results has no run of {architecture!r} on the {task!r} task; pass the dict of "
                         "ssmheads.bench.load_results (or None, the committed results)")
    info = bench.architecture_info(architecture)
    fig, axes = plt.subplots(1, len(distances), figsize=(2.2 + 2.0 * len(distances), 3.0), sharey=True,
                             layout="constrained", squeeze=False)
    styles = ["-", "--", ":", "-."]
    for ax, L in zip(axes[0], distances):
        for k, r in enumerate(sorted((r for r in runs if r["distance"] == L), key=lambda r: r["seed"])):
            losses = np.maximum(np.asarray(r["losses"]), 1e-6)
            ax.semilogy(losses, styles[k % len(styles)], lw=1.2, label=f"seed {r['seed']}")
        if task == "selective-copy" and info["time_invariant"]:
            floor = bench.task_floor(task, L, None)
        elif task != "selective-copy" and info["heads"] is not None and info["heads"] < 4:
            floor = bench.task_floor(task, L, info["heads"])
        else:
            floor = None
        if floor is not None:
            ax.axhline(floor, color="black", ls="--", lw=1, label="floor of its class")
        ax.set_title(f"L = {L}" if task != "emulation" else "emulation", fontsize=9)
        ax.set_xlabel("Adam step")
    axes[0, 0].set_ylabel("loss (1 = zero output)")
    axes[0, 0].set_ylim(1e-4, 3.0)
    axes[0, -1].legend(fontsize=7, loc="lower left")
    fig.suptitle(f"{architecture} on the {task} task: loss curves of the sweep", fontsize=10)
    return fig


def tradeoff_explorer():
    """Explorer for Chapter 6: pick an architecture and a task, see the sweep's loss curves.

    Used in Chapter 6.

    Returns
    -------
    ipywidgets.interactive
        Display it as the last expression of a cell. Needs a live kernel.
    """
    import ipywidgets as widgets

    from .. import bench

    return _explorer(
        tradeoff_explorer_figure,
        architecture=widgets.Dropdown(options=bench.ARCHITECTURES, value="s4d", description="architecture"),
        task=widgets.Dropdown(options=bench.TASKS, value="delay", description="task"),
    )
