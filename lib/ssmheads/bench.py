"""The trade-off bench: every architecture of the book trained on the same three tasks (Chapter 6).

Architectures (:data:`ARCHITECTURES`): softmax attention with a learned relative-position
bias and a sink, with ``H = 1, ..., 5`` heads; linear attention; retention; S4D; S5;
Mamba; Mamba-2; and a hybrid (an S5 layer, then attention). Each is a JAX twin of
the book's numpy layers (:mod:`ssmheads.architectures` and friends), checked equal on
the same weights by the tests, and initialised as its paper does.

Tasks (:data:`TASKS`), all on white-noise tokens of width 2, each with its loss
normalised so that the model that outputs 0 scores 1 (in expectation):

* ``"emulation"``: reproduce a fixed MIMO LTI SSM (``N = 4``, ``d = p = 2``) whose lag
  span has dimension ``k = 4`` (:func:`emulation_target`), at every position of a
  sequence of length 64. The ``distance`` is not used for training (only for the
  Jacobian, :class:`BenchResult`).
* ``"delay"``: the filter ``y_i = sum_{s<4} E_s x_{i-L-s}`` at distance ``L = distance``,
  with four orthogonal ``2 x 2`` matrices ``E_s`` (so again ``k = 4``).
* ``"selective-copy"``: one token, marked by a third input channel, sits at a uniformly
  random distance ``1, ..., L`` before the last token; the last output must copy it.

:func:`train` trains one architecture on one task (Adam, seeded data and
initialisation); :func:`sweep` runs a grid; :func:`load_results` reads the committed
results of ``benchmarks/bench_tradeoff.py``.

JAX is imported on first use (``import ssmheads`` does not need it), with 64-bit floats
switched on (``jax_enable_x64``), which this module needs.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy as np

from ._validate import check_positive_int
from .heads import head_count_curve, white_noise_weights
from .models import lag_operators

__all__ = [
    "ARCHITECTURES",
    "CONTROLS",
    "TASKS",
    "BenchResult",
    "train",
    "loss_curve",
    "test_batch",
    "sweep",
    "emulation_target",
    "delay_taps",
    "task_floor",
    "parameter_count",
    "architecture_info",
    "load_results",
    "RESULTS",
    "save_results",
    "steps_to",
]

_JAX = None

#: The committed results of ``benchmarks/bench_tradeoff.py``, shipped with the package (Chapter 6 reads them).
RESULTS = Path(__file__).resolve().parent / "data" / "tradeoff.json"


def _jax():
    """``(jax, jax.numpy)``, imported once, with 64-bit floats on."""
    global _JAX
    if _JAX is None:
        try:
            import jax
            import jax.numpy as jnp
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("ssmheads.bench needs JAX (pip install 'jax[cpu]', or the package's "
                              "extra: pip install 'ssmheads[bench]')") from exc
        jax.config.update("jax_enable_x64", True)
        _JAX = (jax, jnp)
    return _JAX


from . import _bench_models as _models  # noqa: E402  (after _jax, which it imports lazily)

#: The architectures, in the order of the book's tables.
ARCHITECTURES = list(_models.REGISTRY)

#: Controlled variants (``benchmarks/bench_tradeoff.py --controls``), accepted by :func:`train`: ``"s4d-dt32"``.
CONTROLS = list(_models.CONTROLS)

#: The tasks.
TASKS = ["emulation", "delay", "selective-copy"]

_N = 64  # sequence length of every task
_K = 4  # the lag-span dimension of the emulation and delay targets
_LR = 0.01
_BETAS = (0.9, 0.999)
_EPS = 1e-8
_STEPS = {"emulation": 500, "delay": 500, "selective-copy": 500}
MAX_STEPS = 20_000  # Adam steps one call may take: 40 times the bench's 500, minutes of CPU, not days
_BATCH = {"emulation": 16, "delay": 16, "selective-copy": 32}
_TEST = 512  # sequences in the final test estimate
_JACOBIAN_INPUTS = 8


# ----------------------------------------------------------------------------------------------
# Tasks


def emulation_target():
    """``(A, B, C)`` of the emulation task: ``A = 0.9 R(0.5) (+) 0.7 R(1.7)``, ``B (4, 2)``, ``C (2, 4)``
    drawn from ``default_rng(1)``; its lag span has dimension ``k = 4`` on 64 tokens.

    Used in Chapter 6.
    """
    from .systems import rotation_matrix

    rng = np.random.default_rng(1)
    A = np.zeros((4, 4))
    A[:2, :2] = 0.9 * rotation_matrix(0.5)
    A[2:, 2:] = 0.7 * rotation_matrix(1.7)
    return A, rng.standard_normal((4, 2)), rng.standard_normal((2, 4))


def delay_taps():
    """The four ``2 x 2`` taps ``E_s`` of the delay task: ``I``, ``J``, ``diag(1, -1)``, the swap; orthogonal.

    Used in Chapter 6.
    """
    return np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, -1.0], [1.0, 0.0]],
                     [[1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])


def _target_lags(task, L):
    """``K (n, 2, 2)``: the target's lag operators (emulation, delay)."""
    if task == "emulation":
        return lag_operators(*emulation_target(), _N)
    K = np.zeros((_N, 2, 2))
    K[L:L + _K] = delay_taps()
    return K


@dataclasses.dataclass(frozen=True)
class _Task:
    name: str
    d: int  # data width (without the constant)
    p: int
    shape: _models.Shape


def _task(name):
    d = 3 if name == "selective-copy" else 2
    return _Task(name, d, 2, _models.Shape(d + 1, 2, _N))


def _check_task(task, distance):
    if not isinstance(task, str) or task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}")
    distance = check_positive_int("distance", distance)
    if task == "delay" and distance > _N - _K:
        raise ValueError(f"distance must be at most {_N - _K} for the delay task (taps at L, ..., L+3 of "
                         f"{_N} tokens); got {distance}")
    if distance > _N - 1:
        raise ValueError(f"distance must be at most {_N - 1} ({_N} tokens); got {distance}")
    return task, distance


def _batch(task, L, rng, size):
    """``(X (size, n, d+1), Y (size, n, p), normaliser)``: tokens with the constant appended, targets."""
    spec = _task(task)
    n = _N
    if task == "selective-copy":
        data = rng.standard_normal((size, n, 2))
        D = rng.integers(1, L + 1, size)
        marker = np.zeros((size, n, 1))
        marker[np.arange(size), n - 1 - D, 0] = 1.0
        X = np.concatenate([data, marker], axis=2)
        Y = np.zeros((size, n, 2))
        Y[:, -1] = data[np.arange(size), n - 1 - D]
    else:
        X = rng.standard_normal((size, n, spec.d))
        Y = (X.reshape(size, n * spec.d) @ _operator_matrix(task, L).T).reshape(size, n, 2)
    return np.concatenate([X, np.ones((size, n, 1))], axis=2), Y


_OPERATORS = {}


def _operator_matrix(task, L):
    """The target's operator as an ``(n p, n d)`` matrix: ``y = T x`` with ``x``, ``y`` stacked by token."""
    key = (task, L)
    if key not in _OPERATORS:
        K = _target_lags(task, L)
        lag = np.arange(_N)[:, None] - np.arange(_N)[None, :]
        T = np.where((lag >= 0)[:, :, None, None], K[np.clip(lag, 0, _N - 1)], 0.0)  # (i, j, p, d)
        _OPERATORS[key] = T.transpose(0, 2, 1, 3).reshape(_N * 2, _N * 2)
    return _OPERATORS[key]


def _normaliser(task, L):
    """Expected loss of the zero output: ``sum_l (n - l) ||K_l||_F^2`` (white-noise identity), or ``p``."""
    if task == "selective-copy":
        return 2.0
    K = _target_lags(task, L)
    return float(np.sum(white_noise_weights(_N) * np.sum(K**2, axis=(1, 2))))


def task_floor(task, distance, heads):
    """The smallest expected loss of ``heads`` positional heads (``None``: of any time-invariant model).

    Emulation and delay: the Eckart-Young tail of Chapter 3 (Corollary 3.1) with the
    white-noise weights ``w_l = n - l``, divided by the normaliser (0 from ``heads = k = 4``
    on; 0 for ``heads=None``, as an LTI SSM can match the target). Selective copy: a
    time-invariant model (any number of heads) can do no better than ``1 - 1/L``
    (Chapter 6, Proposition 6.1); ``heads`` is then ignored.

    Used in Chapter 6.
    """
    task, distance = _check_task(task, distance)
    if task == "selective-copy":
        return 1.0 - 1.0 / distance
    if heads is None:
        return 0.0
    heads = check_positive_int("heads", heads, minimum=0)
    K = _target_lags(task, distance)
    H = min(heads, K.shape[1] * K.shape[2])  # the lags span at most p d dimensions: the tail is 0 beyond
    curve = head_count_curve(K, H, white_noise_weights(_N))
    return float(curve[H] / curve[0])


# ----------------------------------------------------------------------------------------------
# Training


@dataclasses.dataclass(frozen=True)
class BenchResult:
    """One training run of :func:`train`.

    Used in Chapter 6.

    Attributes
    ----------
    architecture, task : str
    distance, seed, steps : int
    losses : ndarray, shape (steps + 1,)
        The normalised loss of each step's training batch, before the step's Adam update,
        and of one more batch after the last (1 is the expected loss of the zero output).
    final_loss : float
        ``losses[-1]``.
    test_loss : float
        The final parameters' loss on 512 fresh sequences (for comparisons with a floor).
    jacobian_init, jacobian_final : float
        ``||dy_i / dx_{i-L}||`` (spectral norm over the data channels), ``i`` the last position
        and ``L`` the distance, median over 8 evaluation inputs (for the selective copy, inputs
        whose marked token is at distance ``L``), at initialisation and after training.
    parameters : int
        Number of trained parameters.
    params : dict of ndarray
        The final parameters.
    """

    architecture: str
    task: str
    distance: int
    seed: int
    steps: int
    losses: np.ndarray
    final_loss: float
    test_loss: float
    jacobian_init: float
    jacobian_final: float
    parameters: int
    params: dict

    def steps_to(self, threshold: float) -> int | None:
        """First step at which the evaluation loss is below ``threshold`` (``None`` if never)."""
        return steps_to(self.losses, threshold)


def steps_to(losses, threshold: float):
    """First index ``t`` with ``losses[t] < threshold``, or ``None``.

    ``losses`` (steps + 1,) is a loss curve (finite values); ``threshold`` a finite number.
    Used in Chapter 6.
    """
    try:
        curve = np.asarray(losses, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"losses must be a 1-D array of finite numbers; got {type(losses).__name__}") from None
    if curve.ndim != 1 or curve.size == 0 or not np.all(np.isfinite(curve)):
        raise ValueError(f"losses must be a nonempty 1-D array of finite numbers; got shape {curve.shape}"
                         + ("" if curve.size == 0 or np.all(np.isfinite(curve)) else " with non-finite entries"))
    if isinstance(threshold, (bool, np.bool_)) or not isinstance(threshold, (int, float, np.integer, np.floating)) \
            or not np.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number; got {threshold!r}")
    below = np.flatnonzero(curve < threshold)
    return int(below[0]) if below.size else None


def _check_architecture(architecture):
    if isinstance(architecture, str) and architecture in _models.CONTROLS:
        return _models.CONTROLS[architecture]
    if not isinstance(architecture, str) or architecture not in _models.REGISTRY:
        raise ValueError(f"architecture must be one of {ARCHITECTURES} (or a control, "
                         f"{list(_models.CONTROLS)}); got {architecture!r}")
    return _models.REGISTRY[architecture]


def _init(spec, task, seed):
    return spec.init(np.random.default_rng([seed, 0]), _task(task).shape)


def parameter_count(architecture: str, task: str) -> int:
    """Number of trained parameters of ``architecture`` on ``task``.

    Used in Chapter 6.
    """
    spec = _check_architecture(architecture)
    task, _ = _check_task(task, 1)
    return int(sum(v.size for v in _init(spec, task, 0).values()))


def architecture_info(architecture: str) -> dict:
    """``{"family", "heads", "time_invariant", "description"}`` of one architecture.

    Used in Chapter 6.
    """
    spec = _check_architecture(architecture)
    return {"family": spec.family, "heads": spec.heads, "time_invariant": spec.time_invariant,
            "description": spec.description}


_COMPILED = {}


def _loss_fn(spec, task):
    jax, jnp = _jax()

    def loss(P, X, Y, scale):
        out = spec.forward(P, X)
        if task == "selective-copy":
            err = out[:, -1] - Y[:, -1]
            return jnp.mean(jnp.sum(err**2, axis=-1)) / scale
        return jnp.mean(jnp.sum((out - Y) ** 2, axis=(1, 2))) / scale

    return loss


def _compiled(spec, task):
    """The jitted Adam step and evaluation loss of one architecture on one task (compiled once)."""
    key = (spec.forward, task)  # variants with the same forward (the controls) share it
    if key not in _COMPILED:
        jax, jnp = _jax()
        loss = _loss_fn(spec, task)
        b1, b2 = _BETAS

        def step(P, m, v, t, X, Y, scale):
            before, g = jax.value_and_grad(loss)(P, X, Y, scale)
            m = jax.tree.map(lambda a, b: b1 * a + (1 - b1) * b, m, g)
            v = jax.tree.map(lambda a, b: b2 * a + (1 - b2) * b * b, v, g)
            c1, c2 = 1 - b1**t, 1 - b2**t
            P = jax.tree.map(lambda p, a, b: p - _LR * (a / c1) / (jnp.sqrt(b / c2) + _EPS), P, m, v)
            return P, m, v, before

        def jac(P, X, j):
            """``||dy_{n-1}/dx_j||`` (data channels) for each input in ``X``."""

            def out_last(x_j, Xk):
                return spec.forward(P, Xk.at[j].set(x_j)[None])[0, -1]

            J = jax.vmap(lambda Xk: jax.jacfwd(out_last)(Xk[j], Xk))(X)  # (J, p, d1)
            d = _task(task).d
            J = J[:, :, :2] if task == "selective-copy" else J[:, :, :d]
            return jnp.linalg.norm(J, ord=2, axis=(1, 2))

        _COMPILED[key] = (jax.jit(step), jax.jit(loss), jax.jit(jac, static_argnums=2))
    return _COMPILED[key]


def _jacobian_inputs(task, L, rng):
    """Inputs for the Jacobian at distance ``L``: for the selective copy the marked token is there."""
    X, _ = _batch(task, L, rng, _JACOBIAN_INPUTS)
    if task == "selective-copy":
        X[:, :, 2] = 0.0
        X[:, _N - 1 - L, 2] = 1.0
    return X


def train(architecture: str, task: str, distance: int, seed: int = 0, steps: int | None = None) -> BenchResult:
    """Train one architecture on one task with Adam and return the run.

    Used in Chapter 6.

    Parameters
    ----------
    architecture : str
        One of :data:`ARCHITECTURES`.
    task : str
        One of :data:`TASKS`.
    distance : int
        ``L``: the delay (``1 <= L <= 60``), or the largest distance of the marked token
        (``1 <= L <= 63``); for the emulation only the lag of the Jacobian (``<= 63``).
    seed : int
        Seeds the initialisation (``default_rng([seed, 0])``, the same for every task and
        distance), the training batches and the evaluation batch (both from ``seed``,
        the task and ``distance``). The same arguments give the same run.
    steps : int, optional
        Adam steps (500 by default), learning rate 0.01, batches of 16 sequences (32 for
        the selective copy).

    Returns
    -------
    BenchResult
    """
    spec, task, L, seed, steps = _check_run(architecture, task, distance, seed, steps)
    jax, jnp = _jax()
    _, loss, jac = _compiled(spec, task)
    P = {k: jnp.asarray(v) for k, v in _init(spec, task, seed).items()}
    tid = TASKS.index(task)
    Xj = _jacobian_inputs(task, L, np.random.default_rng([seed, 3, tid, L]))
    scale = _normaliser(task, L)
    j = _N - 1 - L
    jac0 = float(np.median(np.asarray(jac(P, Xj, j))))
    P, losses = _adam(spec, task, L, seed, steps, P)
    Xt, Yt = test_batch(task, L, seed)
    test = float(np.mean([float(loss(P, Xt[i:i + 128], Yt[i:i + 128], scale)) for i in range(0, _TEST, 128)]))
    jac1 = float(np.median(np.asarray(jac(P, Xj, j))))
    return BenchResult(architecture, task, L, seed, steps, losses, float(losses[-1]), test, jac0, jac1,
                       int(sum(v.size for v in P.values())), {k: np.asarray(val) for k, val in P.items()})


def test_batch(task: str, distance: int, seed: int = 0):
    """``(X (512, n, d+1), Y (512, n, p))``: the test sequences on which :func:`train` measures ``test_loss``.

    Used in Chapter 6 (to score another model, such as the floor model, on the same sequences).
    """
    _check_run("s5", task, distance, seed, None)
    return _batch(task, distance, np.random.default_rng([seed, 2, TASKS.index(task), distance]), _TEST)


def loss_curve(architecture: str, task: str, distance: int, seed: int = 0, steps: int | None = None) -> np.ndarray:
    """``train(...).losses`` alone, without the test loss and the Jacobians (quicker).

    Used in Chapter 6.

    Returns
    -------
    ndarray, shape (steps + 1,)
        The same numbers as :func:`train`'s ``losses`` for the same arguments.
    """
    spec, task, L, seed, steps = _check_run(architecture, task, distance, seed, steps)
    _, jnp = _jax()
    P = {k: jnp.asarray(v) for k, v in _init(spec, task, seed).items()}
    return _adam(spec, task, L, seed, steps, P)[1]


def _check_run(architecture, task, distance, seed, steps):
    spec = _check_architecture(architecture)
    task, L = _check_task(task, distance)
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a nonnegative integer; got {seed!r}")
    steps = _STEPS[task] if steps is None else check_positive_int("steps", steps)
    if steps > MAX_STEPS:
        raise ValueError(f"steps must be at most {MAX_STEPS} (one call trains in bounded time; "
                         f"run several calls for more); got {steps}")
    return spec, task, L, int(seed), steps


def _adam(spec, task, L, seed, steps, P):
    """``steps`` Adam steps from ``P`` on the training stream of ``(seed, task, L)``; ``(P, losses)``."""
    jax, jnp = _jax()
    step, loss, _ = _compiled(spec, task)
    m = jax.tree.map(jnp.zeros_like, P)
    v = jax.tree.map(jnp.zeros_like, P)
    data = np.random.default_rng([seed, 1, TASKS.index(task), L])
    scale = _normaliser(task, L)
    losses = np.empty(steps + 1)
    for t in range(steps):
        X, Y = _batch(task, L, data, _BATCH[task])
        P, m, v, before = step(P, m, v, t + 1, X, Y, scale)
        losses[t] = float(before)
    X, Y = _batch(task, L, data, _BATCH[task])
    losses[steps] = float(loss(P, X, Y, scale))
    return P, losses


# ----------------------------------------------------------------------------------------------
# Sweeps and the results file


def sweep(architectures, tasks_and_distances, seeds, steps=None, progress=None) -> list[dict]:
    """Train every architecture on every ``(task, distance)`` with every seed; one record per run.

    Used in Chapter 6 and by ``benchmarks/bench_tradeoff.py``.

    Returns
    -------
    list of dict
        ``{"architecture", "task", "distance", "seed", "steps", "final_loss", "test_loss",
        "jacobian_init", "jacobian_final", "parameters", "losses"}`` (``losses`` a list).
    """
    records = []
    for a in architectures:
        for task, L in tasks_and_distances:
            for s in seeds:
                r = train(a, task, L, seed=s, steps=steps)
                records.append(_record(r))
                if progress is not None:
                    progress(records[-1])
    return records


def _six(x: float) -> float:
    """``x`` to 6 significant digits (the results file stores no more)."""
    return float(f"{x:.6g}")


def _record(r: BenchResult) -> dict:
    """One run as stored in the results file: every number to 6 significant digits."""
    losses = [_six(x) for x in r.losses]
    return {"architecture": r.architecture, "task": r.task, "distance": r.distance, "seed": r.seed,
            "steps": r.steps, "final_loss": losses[-1], "test_loss": _six(r.test_loss),
            "jacobian_init": _six(r.jacobian_init), "jacobian_final": _six(r.jacobian_final),
            "parameters": r.parameters, "losses": losses}


def save_results(records, path, meta=None) -> None:
    """Write ``records`` (from :func:`sweep`) and ``meta`` to a JSON file (standard JSON: no NaN)."""
    if not isinstance(records, list) or not all(isinstance(r, dict) for r in records):
        raise ValueError(f"records must be a list of dicts (as sweep returns); got {type(records).__name__}")
    if meta is not None and not isinstance(meta, dict):
        raise ValueError(f"meta must be a dict or None; got {type(meta).__name__}")
    try:
        text = json.dumps({"meta": meta or {}, "runs": records}, indent=None, separators=(",", ":"),
                          allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"records and meta must hold finite numbers, strings, lists and dicts only: {error}") from None
    Path(path).write_text(text + "\n")


def load_results(path=None) -> dict:
    """The results file of ``benchmarks/bench_tradeoff.py`` (default: :data:`RESULTS`, installed with the package).

    Used in Chapter 6.

    Returns
    -------
    dict
        ``{"meta": dict, "runs": list of dict}`` as written by :func:`save_results`, with
        each run's ``losses`` as an ndarray.
    """
    if path is None:
        path = RESULTS
    data = json.loads(Path(path).read_text())
    for r in data["runs"]:
        r["losses"] = np.asarray(r["losses"])
    return data
