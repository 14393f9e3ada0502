"""A fuzz test of the public API: every public callable on bad and extreme inputs.

For each public function, class and method there is one *valid* baseline call
(:data:`TARGETS`). Each case changes one argument of it (:func:`_mutations`):
``None``, a string, NaN, infinities, a wrong number of dimensions, a wrong
shape, an empty array, a complex array, ``True`` for an integer, negative, zero
and huge sizes (``10**7``), a non-callable for a function, scales of ``1e155``
and ``1e-300`` where a scale is legitimate, an unstable ``A`` (spectral radius
1.5) with a sequence long enough to overflow.

Sizes and working sets (issue 22). Sequences ``X`` are also made 4096, 10000 and
300000 tokens long, lag stacks 4096 lags long, sizes set to 4096, and the state matrix
``A`` replaced by a random ``64 x 64`` matrix with spectral radius 0.999 (slow to
decay), a random ``256 x 256`` one and a ``1500 x 1500`` one (with ``B`` and ``C``
resized to match). Every case is measured in the child, with one BLAS thread: its
user CPU time (the computation; the kernel's time to hand a fresh process new
pages is left out, since on a shared virtual machine it varies tenfold with the
load) and the peak of the memory it allocates (``tracemalloc``, which sees numpy's
arrays). No case may hold more than ``MAX_TOTAL_BYTES`` (2 GiB, the library's limit
on a call's working set); a case within the issue's budget (a sequence length
``n <= 4096`` or a state size ``N <= 256``: :func:`_seconds`) and every refusal must
take at most :data:`FAST_SECONDS` of CPU, any other case :data:`SLOW_SECONDS`.

With ``SSMHEADS_FUZZ_LOG=<file>`` every case's CPU time (s), peak (MiB), outcome and
name are appended to that file, one tab-separated line each.

Each case runs in a forked child (CPU-time and wall-clock alarms), and must end
in one of two ways:

* a ``ValueError`` or ``TypeError`` whose message names the argument that was
  changed (a regular expression on the parameter name; for the unstable ``A``,
  on "spectral radius"), or
* a result that is finite (no NaN or infinity anywhere in it), of the
  baseline's shape when the change keeps shapes (the scale changes), and, where
  the function is homogeneous in the changed argument, equal to the baseline
  times the scale to that degree (``DEGREE``).

Anything else fails: another exception type (including ``MemoryError``), a
message naming an internal variable, a non-finite or wrong result, a hang, a
crash. Defects in files that other people own are marked
``xfail(strict=True)`` with the file and the fix (:data:`KNOWN`), so the test
turns red when they are fixed and the marker must go.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import re
import resource
import signal
import time
import tracemalloc
import warnings

from _blas import one_blas_thread

import numpy as np
import pytest

import ssmheads as sh
from ssmheads import architectures, exercises, gradients, heads, numerics, operator, plotting, span, systems, widgets
from ssmheads.models import Convolution, ElmanRNN, KANLayer, LinearSSM, MultiHeadAttention, PositionwiseLinear

# About 90 s of calls in forked children: make test-extended runs it (EXTENDED=1).
pytestmark = pytest.mark.extended

from ssmheads._validate import MAX_TOTAL_BYTES

#: The library's limit on the memory one call holds (traced peak in the child): 2 GiB.
MAX_BYTES = MAX_TOTAL_BYTES
#: CPU seconds (one BLAS thread) for a case within the issue's budget and for any refusal: the
#: issue's 1 s on two cores, with room for tracemalloc's bookkeeping.
FAST_SECONDS = 1.5
#: CPU seconds for every other case (a long sequence, a huge size that is legitimately computed).
SLOW_SECONDS = 10.0
#: Wall-clock safety net per case: a shared machine may be slow, the CPU limit is the test.
WALL_SECONDS = 120
#: Address space of a child beyond its own at the fork: room to exceed MAX_BYTES and be measured.
EXTRA_ADDRESS_SPACE = MAX_BYTES + 2 * 2**30
HUGE, TINY = 1e155, 1e-300

# ----------------------------------------------------------------------------------------------
# Baseline inputs: small, valid, deterministic.
rng = np.random.default_rng(11)
R = systems.rotation_matrix(0.5)
A = 0.9 * R
B = np.array([[1.0, 0.0], [0.5, 1.0]])
C = np.array([[1.0, 0.2], [0.0, 1.0]])
D = np.array([[0.1, 0.0], [0.0, 0.1]])
X = rng.standard_normal((6, 2))
K = sh.lag_operators(A, B, C, 8)
UNSTABLE = 1.5 * systems.rotation_matrix(0.3)
LONG = np.ones((2000, 2))  # 1.5^2000 overflows (at about 1750)
W_Q, W_K, W_V, W_O = (rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 2)),
                      rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2)))
ATT = MultiHeadAttention(W_Q, W_K, W_V, W_O, causal=False)
W_ATT = ATT.interaction(X)  # non-causal, not Toeplitz
SSM = LinearSSM(A, B, C, D)
W_SSM = SSM.interaction(X)
CONV_K = rng.standard_normal((3, 2, 2))
POS_W = rng.standard_normal((2, 2))
FH = heads.FactorizedHeads(rng.standard_normal((2, 8)), rng.standard_normal((2, 2, 2)))
SINK = heads.SoftmaxSinkHeads(rng.standard_normal((2, 6, 7)), rng.standard_normal((2, 2, 2)))
MAP = rng.standard_normal((2, 2))
RECALL = gradients.train_recall_head(6, steps=2, batch=4, d_k=4, d_v=2)


def _random_with_radius(N, rho, seed):
    """A random (non-normal) N x N matrix scaled to spectral radius rho."""
    M = np.random.default_rng(seed).standard_normal((N, N))
    return rho * M / np.max(np.abs(np.linalg.eigvals(M)))


# state matrices of other sizes: (N, A); B and C are resized to match (_resized_system)
SLOW_64 = _random_with_radius(64, 0.999, 64)  # decay_bound took 11.9 s (issue 22)
RANDOM_256 = _random_with_radius(256, 0.999, 256)
_g_big = np.random.default_rng(1500)
BIG_1500 = np.diag(np.linspace(-0.9, 0.9, 1500)) + np.triu(_g_big.standard_normal((1500, 1500)), 1) * 1e-3
SIZED_A = {"N64-slow": SLOW_64, "N256": RANDOM_256, "N1500": BIG_1500}
# a sequence's length: 10000 makes an n x n array of 0.75 GiB (three of them above the 2 GiB a call may
# hold); 300000 a recurrence longer than the library runs (MAX_SCAN)
LENGTHS = {"n4096": 4096, "n10000": 10000, "n300000": 300_000}
#: Mutations within the issue's budget of 1 s (n <= 4096, N <= 256); "4096" is tried only on the
#: parameters that are a sequence length or a state size (a number of training steps or a width is not).
FAST_LABELS = {"n4096", "4096", "N64-slow", "N256"}
FAST_PARAMS = {"n", "N", "n_or_X", "X", "K", "mats", "A", "n_max"}


def _bc(A_):
    """``B``, ``C``, ``D`` for a state matrix ``A_``: the baselines for N = 2, ones of matching size otherwise."""
    if isinstance(A_, np.ndarray) and A_.ndim == 2 and A_.shape[0] not in (0, 2):
        N = A_.shape[0]
        return np.ones((N, 2)) / np.sqrt(N), np.ones((2, N)) / np.sqrt(N), D
    return B, C, D


def _linear_map(Z):
    return np.cumsum(Z, axis=0) @ MAP.T


def _quadratic(Z):
    return Z * Z


# ----------------------------------------------------------------------------------------------
# Targets: name -> (call, {parameter: (value, kind)}, {parameter: degree}).
#   kind: "array" (any array), "scaled" (array whose scale is legitimate), "size", "index", "seed",
#         "scale" (a positive float with legitimate range), "real", "rtol", "choice", "bool",
#         "callable", "object", "mapping", "A" (an SSM's A: adds the unstable case), "ints", "fixed"
#   degree d: f(s x) = s^d f(x) (d = 0: invariant, d = 1 or -1: homogeneous), checked at 1e155 and 1e-300.


@dataclasses.dataclass
class Target:
    call: object
    args: dict
    degree: dict = dataclasses.field(default_factory=dict)
    long: str | None = None  # the argument made long (LONG or 3000) in the unstable case
    only: tuple | None = None  # run only these mutations (a costly baseline)

    def kwargs(self):
        return {name: value for name, (value, _) in self.args.items()}


def _ssm(method):
    def call(A, X, **kw):
        return getattr(LinearSSM(A, *_bc(A)), method)(X, **kw)
    return call


TARGETS = {
    # models
    "lag_operators": Target(sh.lag_operators, {"A": (A, "A"), "B": (B, "scaled"), "C": (C, "scaled"),
                                               "n": (8, "size"), "D": (D, "array")}, long="n"),
    "lag_operators(D=None)": Target(lambda B, C: sh.lag_operators(A, B, C, 8), {"B": (B, "scaled"),
                                                                                "C": (C, "scaled")}, {"B": 1, "C": 1}),
    "LinearSSM": Target(LinearSSM, {"A": (A, "scaled"), "B": (B, "scaled"), "C": (C, "scaled"),
                                    "D": (D, "array")}),
    "LinearSSM.forward": Target(_ssm("forward"), {"A": (A, "A"), "X": (X, "scaled")}, {"X": 1}, long="X"),
    "LinearSSM.interaction": Target(_ssm("interaction"), {"A": (A, "A"), "X": (X, "scaled")}, {"X": 0},
                                    long="X"),
    "LinearSSM.lag_operators": Target(lambda A, n: LinearSSM(A, *_bc(A)[:2]).lag_operators(n),
                                      {"A": (A, "A"), "n": (8, "size")}, long="n"),
    "two_route_gap(LinearSSM)": Target(lambda A, X: sh.two_route_gap(LinearSSM(A, *_bc(A)[:2]), X),
                                       {"A": (A, "A"), "X": (X, "given")}, long="X"),
    "MultiHeadAttention": Target(MultiHeadAttention, {"W_Q": (W_Q, "scaled"), "W_K": (W_K, "scaled"),
                                                      "W_V": (W_V, "scaled"), "W_O": (W_O, "scaled"),
                                                      "causal": (True, "bool"), "kernel": ("softmax", "choice")}),
    "Convolution": Target(Convolution, {"kernel": (CONV_K, "scaled")}),
    "PositionwiseLinear": Target(PositionwiseLinear, {"W": (POS_W, "scaled")}),
    "Convolution.forward": Target(lambda X: Convolution(CONV_K).forward(X), {"X": (X, "scaled")}, {"X": 1}),
    "Convolution.interaction": Target(lambda X: Convolution(CONV_K).interaction(X), {"X": (X, "scaled")},
                                      {"X": 0}),
    "PositionwiseLinear.forward": Target(lambda X: PositionwiseLinear(POS_W).forward(X), {"X": (X, "scaled")},
                                         {"X": 1}),
    "PositionwiseLinear.interaction": Target(lambda X: PositionwiseLinear(POS_W).interaction(X),
                                             {"X": (X, "scaled")}, {"X": 0}),
    # operator
    "apply_interaction": Target(sh.apply_interaction, {"W": (W_ATT, "scaled"), "X": (X, "scaled")},
                                {"W": 1, "X": 1}),
    "toeplitz_operator": Target(sh.toeplitz_operator, {"K": (K, "scaled"), "n": (6, "size")}, {"K": 1}),
    "block_norms": Target(sh.block_norms, {"W": (W_ATT, "scaled"), "ord": ("fro", "choice")}, {"W": 1}),
    "block_norms(spectral)": Target(lambda W: sh.block_norms(W, "spectral"), {"W": (W_ATT, "scaled")}, {"W": 1}),
    "causality_violation": Target(sh.causality_violation, {"W": (W_ATT, "scaled")}, {"W": 1}),
    "toeplitz_deviation": Target(sh.toeplitz_deviation, {"W": (W_ATT, "scaled")}, {"W": 1}),
    "operator_of_linear_map": Target(sh.operator_of_linear_map, {"f": (_linear_map, "callable"),
                                                                 "n": (4, "size"), "d": (2, "size")}),
    "trivial_interaction_form": Target(sh.trivial_interaction_form, {"Y": (X[:, :1] * 2, "scaled"),
                                                                     "X": (X, "scaled")}, {"Y": 1, "X": -1}),
    "two_route_gap": Target(sh.two_route_gap, {"layer": (ATT, "object"), "X": (X, "scaled")}),
    # span
    "default_rtol": Target(span.default_rtol, {"m": (8, "size"), "p": (2, "size"), "d": (2, "size")}),
    "singular_values": Target(sh.singular_values, {"mats": (K, "scaled")}, {"mats": 1}),
    "interaction_rank": Target(sh.interaction_rank, {"mats": (K, "scaled"), "rtol": (None, "rtol")}, {"mats": 0}),
    "span_basis": Target(sh.span_basis, {"mats": (K, "scaled"), "rtol": (None, "rtol")}),
    "lag_span_dimension": Target(sh.lag_span_dimension, {"A": (A, "A"), "B": (B, "scaled"), "C": (C, "scaled"),
                                                         "n": (8, "size"), "rtol": (None, "rtol")},
                                 {"B": 0, "C": 0}, long="n"),
    "lag_span_profile": Target(sh.lag_span_profile, {"A": (A, "A"), "B": (B, "scaled"), "C": (C, "scaled"),
                                                     "n": (8, "size"), "rtol": (None, "rtol")},
                               {"B": 0, "C": 0}, long="n"),
    "minimal_polynomial_degree": Target(sh.minimal_polynomial_degree, {"A": (A, "matrix"), "rtol": (None, "rtol")},
                                        {"A": 0}),
    "lag_span_bound": Target(sh.lag_span_bound, {"A": (A, "A"), "B": (B, "scaled"), "C": (C, "scaled"),
                                                 "n": (8, "size"), "rtol": (None, "rtol")}, {"B": 0, "C": 0},
                             long="n"),
    # heads
    "FactorizedHeads": Target(heads.FactorizedHeads, {"coefficients": (FH.coefficients, "scaled"),
                                                      "values": (FH.values, "scaled")}),
    "FactorizedHeads.lag_operators": Target(lambda n: FH.lag_operators(n), {"n": (5, "size")}),
    "FactorizedHeads.forward": Target(lambda X: FH.forward(X), {"X": (X, "scaled")}, {"X": 1}),
    "FactorizedHeads.interaction": Target(FH.interaction, {"n_or_X": (X, "seq")}, {"n_or_X": 0}),
    "optimal_heads": Target(sh.optimal_heads, {"K": (K, "scaled"), "H": (1, "count"), "weights": (None, "weights")}),
    "head_count_curve": Target(sh.head_count_curve, {"K": (K, "scaled"), "H_max": (3, "count"),
                                                     "weights": (None, "weights")}),
    "exact_heads": Target(sh.exact_heads, {"A": (A, "A"), "B": (B, "scaled"), "C": (C, "scaled"),
                                           "n": (8, "size"), "rtol": (None, "rtol")}, long="n"),
    "fit_heads": Target(sh.fit_heads, {"K": (K, "scaled"), "H": (1, "size"), "steps": (2, "size"),
                                       "batch": (2, "size"), "lr": (0.03, "scale"), "final_lr": (0.0005, "scale"),
                                       "seed": (0, "seed"), "record_every": (1, "size")}),
    "is_pointed": Target(sh.is_pointed, {"K": (K, "scaled"), "rtol": (None, "rtol")}, {"K": 0}),
    "nonnegative_head_count": Target(sh.nonnegative_head_count, {"K": (K, "scaled"), "rtol": (None, "rtol")},
                                     {"K": 0}),
    "nonnegative_heads": Target(sh.nonnegative_heads, {"K": (K, "scaled"), "rtol": (None, "rtol"),
                                                       "strict": (False, "bool")}),
    "softmax_heads": Target(sh.softmax_heads, {"K": (K, "scaled"), "rtol": (None, "rtol")}),
    "white_noise_weights": Target(heads.white_noise_weights, {"n": (8, "size")}),
    "stationary_residual": Target(heads.stationary_residual, {"A": (A, "A"), "B": (B, "scaled"),
                                                              "C": (C, "scaled"), "H_max": (2, "count")}),
    "SoftmaxSinkHeads": Target(heads.SoftmaxSinkHeads, {"scores": (SINK.scores, "scaled"),
                                                        "values": (SINK.values, "scaled")}),
    "SoftmaxSinkHeads.weights": Target(lambda n: SINK.weights(n), {"n": (4, "size")}),
    "SoftmaxSinkHeads.forward": Target(lambda X: SINK.forward(X), {"X": (X, "scaled")}, {"X": 1}),
    "SoftmaxSinkHeads.interaction": Target(lambda X: SINK.interaction(X), {"X": (X, "scaled")}, {"X": 0}),
    # gradients
    "jacobian": Target(sh.jacobian, {"model": (ATT, "object"), "X": (X, "scaled")}),
    "jacobian(LinearSSM)": Target(lambda A, X: sh.jacobian(LinearSSM(A, *_bc(A)[:2]), X),
                                  {"A": (A, "A"), "X": (X, "given")}, long="X"),
    "jacobian_row": Target(sh.jacobian_row, {"model": (ATT, "object"), "X": (X, "scaled"), "i": (-1, "index")}),
    "finite_difference_jacobian": Target(sh.finite_difference_jacobian, {"f": (_quadratic, "callable"),
                                                                         "X": (X, "array"), "eps": (1e-6, "scale")}),
    "gradient_profile": Target(sh.gradient_profile, {"model": (SSM, "object"), "X": (X, "scaled"),
                                                     "i": (-1, "index")}),
    "gradient_profile(LinearSSM)": Target(lambda A, X: sh.gradient_profile(LinearSSM(A, *_bc(A)[:2]), X),
                                          {"A": (A, "A"), "X": (X, "given")}, long="X"),
    "highway_input": Target(sh.highway_input, {"attention": (systems.random_attention(1, 4, seed=1), "object"),
                                               "n": (6, "size"), "a": (0.9, "real"), "key": (0, "index"),
                                               "head": (0, "index")}),
    "gelfand_constant": Target(gradients.gelfand_constant, {"A": (A, "stableA"), "rho_bar": (0.95, "real"),
                                                            "max_lag": (1000, "size")}),
    "decay_bound": Target(sh.decay_bound, {"A": (A, "stableA"), "B": (B, "scaled"), "C": (C, "scaled"),
                                           "lags": (np.arange(5), "ints"), "rho_bar": (None, "rtol")}),
    "diagonal_ssm_kernel": Target(gradients.diagonal_ssm_kernel, {
        "nu": (np.array([-1.0, -2.0]), "array"), "theta": (np.array([0.3, 1.0]), "array"),
        "b": (np.ones((2, 2)), "scaled"), "c": (np.ones((2, 2)), "scaled"), "n": (8, "size")}, {"b": 1, "c": 1}),
    "delay_task_loss": Target(gradients.delay_task_loss, {
        "nu": (np.array([-1.0, -2.0]), "array"), "theta": (np.array([0.3, 1.0]), "array"),
        "b": (np.ones((2, 2)), "array"), "c": (np.ones((2, 2)), "array"), "L": (2, "size"), "n": (8, "size")}),
    "train_diagonal_ssm": Target(gradients.train_diagonal_ssm, {"L": (2, "size"), "n": (8, "size"),
                                                                "modes": (2, "size"), "radius": ((0.9, 0.99), "fixed"),
                                                                "steps": (2, "size"), "lr": (0.02, "scale"),
                                                                "seed": (0, "seed")}),
    "delay_task_sweep": Target(gradients.delay_task_sweep, {"Ls": ([2], "fixed"), "n": (8, "size"),
                                                            "radii": ([(0.9, 0.99)], "fixed"), "seeds": ([0], "fixed"),
                                                            "modes": (2, "size"), "steps": (2, "size"),
                                                            "lr": (0.02, "scale")}),
    "train_recall_head": Target(gradients.train_recall_head, {"n": (6, "size"), "steps": (2, "size"),
                                                              "lr": (0.1, "scale"), "batch": (4, "size"),
                                                              "d_k": (4, "size"), "d_v": (2, "size"),
                                                              "position": ("learned", "choice"),
                                                              "seed": (0, "seed")}),
    "recall_loss": Target(gradients.recall_loss, {
        "W": (rng.standard_normal((3, 3)), "scaled"), "bias": (np.zeros(4), "array"),
        "queries": (rng.standard_normal((2, 3)), "scaled"), "keys": (rng.standard_normal((2, 4, 3)), "scaled"),
        "values": (rng.standard_normal((2, 4, 2)), "scaled"), "match": (np.array([1, 3]), "ints")}),
    "recall_eval": Target(gradients.recall_eval, {"result": (RECALL, "object"), "distances": (np.array([1, 2]), "ints"),
                                                  "batch": (4, "size"), "seed": (1, "seed")}),
    # systems
    "rotation_matrix": Target(systems.rotation_matrix, {"theta": (0.5, "real")}),
    "rotation": Target(systems.rotation, {"theta": (0.5, "real"), "rho": (0.9, "real")}),
    "diagonal": Target(systems.diagonal, {"eigenvalues": (np.array([0.5, -0.3]), "array"), "B": (B, "scaled"),
                                          "C": (C, "scaled")}),
    "random_stable": Target(systems.random_stable, {"N": (3, "size"), "d": (2, "size"), "p": (2, "size"),
                                                    "rho": (0.9, "real"), "seed": (0, "seed")}),
    "random_attention": Target(systems.random_attention, {"H": (2, "size"), "d": (3, "size"), "seed": (0, "seed"),
                                                          "causal": (True, "bool"), "kernel": ("softmax", "choice"),
                                                          "scale": (1.0, "scale")}),
    "jordan": Target(systems.jordan, {"blocks": ([(0.5, 2), (-0.2, 1)], "fixed")}),
    "random_with_lag_rank": Target(systems.random_with_lag_rank, {"k": (2, "size"), "d": (2, "size"),
                                                                  "p": (2, "size"), "rho": (0.9, "real"),
                                                                  "seed": (0, "seed")}),
    "gallery": Target(systems.gallery, {"d": (2, "size"), "seed": (0, "seed")}),
    # numerics
    "relative_gap": Target(sh.relative_gap, {"a": (K, "scaled"), "b": (K * 1.5, "scaled")}),
    "close": Target(sh.close, {"a": (K, "scaled"), "b": (K, "scaled"), "tol": (1e-12, "scale")}),
    # source (the listings the chapters show): anything but a function of ssmheads is refused
    "show_source": Target(sh.show_source, {"obj": (heads.optimal_heads, "callable")}),
    # plotting
    "operator_heatmap": Target(plotting.operator_heatmap, {"W": (W_ATT, "scaled"), "title": ("t", "text"),
                                                           "vmax": (None, "rtol"), "colorbar": (True, "bool"),
                                                           "ax": (None, "axes")}),
    "operator_gallery": Target(plotting.operator_gallery, {"operators": ({"a": W_ATT, "b": W_SSM}, "mapping"),
                                                           "ncols": (2, "size"), "suptitle": ("s", "text"),
                                                           "colorbar": ("none", "choice")}),
    # widgets
    "operator_explorer_figure": Target(widgets.operator_explorer_figure, {"layer": ("softmax attention, 4 heads",
                                                                                    "choice"),
                                                                          "n": (6, "size"), "seed": (0, "seed")}),
    "family_system": Target(widgets.family_system, {"family": ("rotation", "choice"), "theta": (1.0, "real"),
                                                    "rho": (0.9, "real"), "k": (3, "size"), "seed": (0, "seed")}),
    "rank_explorer_figure": Target(widgets.rank_explorer_figure, {"family": ("rotation", "choice"), "n": (6, "size"),
                                                                  "rho": (0.9, "real"), "k": (3, "size")}),
    "head_explorer_figure": Target(widgets.head_explorer_figure, {"n": (8, "size"), "H": (2, "size"),
                                                                  "rho": (0.9, "real"), "k": (3, "size")}),
    "highway_explorer_figure": Target(widgets.highway_explorer_figure, {"rho": (0.9, "real"), "n": (16, "size"),
                                                                        "a": (0.9, "real"), "seed": (0, "seed")}),
}
# architectures (Chapter 5): small instances, d = 2
AQ, AK, AV = rng.standard_normal((4, 2)), rng.standard_normal((4, 2)), rng.standard_normal((2, 2))
LAMBDA = -np.array([[0.5, 1.0, 2.0], [0.3, 0.7, 1.5]])
LA = architectures.LinearAttention(AQ, AK, AV)
RET = architectures.Retention(AQ, AK, AV, 0.9, theta=np.array([0.3, 0.7]))
ALIBI = architectures.ALiBiAttention(AQ, AK, AV, 0.5)
ROPE = architectures.RoPEAttention(AQ, AK, AV)
S4D_ = architectures.S4D(LAMBDA, np.ones((2, 3)), rng.standard_normal((2, 3)), np.array([0.5, 1.0]))
S5_ = architectures.S5(LAMBDA[0], rng.standard_normal((3, 2)), rng.standard_normal((2, 3)), 0.5)
MAMBA_ARGS = {"W_in": rng.standard_normal((3, 2)), "W_delta": rng.standard_normal((3, 3)),
              "W_B": rng.standard_normal((2, 3)), "W_C": rng.standard_normal((2, 3)),
              "A_log": 0.5 * rng.standard_normal((3, 2)), "D": rng.standard_normal(3)}
MAMBA = architectures.Mamba(**MAMBA_ARGS)
M2_ARGS = {"W_in": rng.standard_normal((4, 2)), "W_out": rng.standard_normal((2, 4)),
           "w_a": rng.standard_normal((2, 2)), "W_B": rng.standard_normal((3, 2)), "W_C": rng.standard_normal((3, 2))}
MAMBA2 = architectures.Mamba2(**M2_ARGS, heads=2)
HYBRID = architectures.Hybrid([S4D_, PositionwiseLinear(POS_W)])
TABLE = architectures.rank_table(n=4, seed=0, inputs=1)
_PROJ = {"W_Q": (AQ, "scaled"), "W_K": (AK, "scaled"), "W_V": (AV, "scaled")}
TARGETS.update({
    "LinearAttention": Target(architectures.LinearAttention, {**_PROJ, "feature": ("elu1", "choice")}),
    "Retention": Target(architectures.Retention, {**_PROJ, "gamma": (0.9, "real"),
                                                  "theta": (np.array([0.3, 0.7]), "array")}),
    "Retention(gamma)": Target(lambda gamma: architectures.Retention(AQ, AK, AV, gamma), {"gamma": (0.9, "scale")}),
    "Retention.chunkwise_forward": Target(RET.chunkwise_forward, {"X": (X, "scaled"), "chunk": (4, "size")}),
    "ALiBiAttention": Target(architectures.ALiBiAttention, {**_PROJ, "slope": (0.5, "scale")}),
    "RoPEAttention": Target(architectures.RoPEAttention, {**_PROJ, "base": (10000.0, "scale")}),
    "S4D": Target(architectures.S4D, {"Lambda": (LAMBDA, "array"), "B": (np.ones((2, 3)), "scaled"),
                                      "C": (S4D_.C.real, "scaled"), "dt": (np.array([0.5, 1.0]), "array")}),
    "S4D.kernel": Target(S4D_.kernel, {"n": (6, "size")}),
    "S4D.lag_operators": Target(S4D_.lag_operators, {"n": (6, "size")}),
    "S5": Target(architectures.S5, {"Lambda": (LAMBDA[0], "array"), "B": (S5_.B.real, "scaled"),
                                    "C": (S5_.C.real, "scaled"), "dt": (0.5, "scale")}),
    "S5.lag_operators": Target(S5_.lag_operators, {"n": (6, "size")}),
    "S5.heads_needed": Target(S5_.heads_needed, {"n": (6, "size")}),
    "Mamba": Target(architectures.Mamba, {name: (value, "array") for name, value in MAMBA_ARGS.items()}),
    "Mamba2": Target(architectures.Mamba2, {**{name: (value, "scaled") for name, value in M2_ARGS.items()},
                                            "heads": (2, "count")}),
    "Mamba2.ssd_forward": Target(MAMBA2.ssd_forward, {"X": (X, "scaled"), "chunk": (4, "size")}),
    "Hybrid": Target(architectures.Hybrid, {"layers": ([S4D_, PositionwiseLinear(POS_W)], "object")}),
    "architecture_gallery": Target(widgets.architecture_gallery, {"d": (2, "size"), "seed": (0, "seed")}),
    "architecture_explorer_figure": Target(widgets.architecture_explorer_figure, {
        "architecture": ("Mamba", "choice"), "n": (6, "size"), "seed": (0, "seed")}),
    "rank_table": Target(architectures.rank_table, {"n": (4, "size"), "seed": (0, "seed"), "inputs": (1, "count")}),
})
for _layer, _methods, _deg in (
        (LA, ("forward", "recurrent_forward", "interaction", "coefficients"), {}),
        (RET, ("forward", "recurrent_forward", "interaction", "coefficients"), {}),
        (ALIBI, ("forward", "interaction", "coefficients"), {}),
        (ROPE, ("forward", "interaction", "coefficients"), {}),
        (S4D_, ("forward", "convolution_forward", "interaction"), {"forward": 1, "convolution_forward": 1,
                                                                 "interaction": 0}),
        (S5_, ("forward", "interaction"), {"forward": 1, "interaction": 0}),
        (MAMBA, ("forward", "interaction", "coefficients", "jacobian"), {}),
        (MAMBA2, ("forward", "interaction", "coefficients", "steps"), {}),
        (HYBRID, ("forward", "interaction"), {"forward": 1, "interaction": 0})):
    for _method in _methods:
        TARGETS[f"{type(_layer).__name__}.{_method}"] = Target(
            getattr(_layer, _method), {"X": (X, "scaled")}, {"X": _deg[_method]} if _method in _deg else {})
for _kernel in ("softmax", "linear"):
    for _causal in (True, False):
        _att = MultiHeadAttention(W_Q, W_K, W_V, W_O, causal=_causal, kernel=_kernel)
        for _method in ("forward", "interaction", "coefficients"):
            TARGETS[f"MultiHeadAttention({_kernel}, causal={_causal}).{_method}"] = Target(
                getattr(_att, _method), {"X": (X, "scaled")})
for _name in exercises.__all__:
    if _name.startswith("check_"):
        _check = getattr(exercises, _name)
        _param = list(__import__("inspect").signature(_check).parameters)[0]
        TARGETS[f"exercises.{_name}"] = Target(_check, {_param: (None, "callable")})
TARGETS["exercises.CheckResult"] = Target(exercises.CheckResult, {"exercise": ("1.1", "text"),
                                                                  "status": ("passed", "text"),
                                                                  "message": ("ok", "text")})

# Chapter 1's nonlinear layers (their own generator, so the draws above are unchanged)
_g1 = np.random.default_rng(101)
RNN_ARGS = {"W_h": 0.5 * _g1.standard_normal((3, 3)), "W_x": _g1.standard_normal((3, 2)),
            "W_y": _g1.standard_normal((2, 3))}
KAN_ARGS = {"coef": _g1.standard_normal((2, 2, 6)), "base": _g1.standard_normal((2, 2))}
RNN, KAN = ElmanRNN(**RNN_ARGS), KANLayer(**KAN_ARGS, grid=(-2.0, 2.0))
TARGETS.update({
    "ElmanRNN": Target(ElmanRNN, {name: (value, "scaled") for name, value in RNN_ARGS.items()}),
    "KANLayer": Target(KANLayer, {**{name: (value, "scaled") for name, value in KAN_ARGS.items()},
                                  "grid": (np.array([-2.0, 2.0]), "array")}),
})
for _layer, _methods in ((RNN, ("forward", "interaction")), (KAN, ("forward", "interaction", "phi"))):
    for _method in _methods:
        TARGETS[f"{type(_layer).__name__}.{_method}"] = Target(getattr(_layer, _method), {"X": (X, "scaled")})

# Sizes (issue 22): sequences X and stacks of lags get long versions (_mutations' "seq" and "lags")
for _target in TARGETS.values():
    for _param, (_value, _kind) in list(_target.args.items()):
        if _param == "X" and _kind == "scaled" and np.ndim(_value) == 2:
            _target.args[_param] = (_value, "seq")
        elif _param in ("K", "mats") and _kind == "scaled" and np.ndim(_value) == 3:
            _target.args[_param] = (_value, "lags")
# a chunk as long as a long sequence (the within-chunk arrays), and the product of a hybrid's operators
TARGETS.update({
    "Retention.chunkwise_forward(n=20000)": Target(
        lambda chunk: RET.chunkwise_forward(np.ones((20000, 2)), chunk), {"chunk": (4, "size")}, only=("huge",)),
    "Mamba2.ssd_forward(n=8000)": Target(
        lambda chunk: MAMBA2.ssd_forward(np.ones((8000, 2)), chunk), {"chunk": (4, "size")}, only=("huge",)),
    "Hybrid([S4D, RoPEAttention]).interaction": Target(
        architectures.Hybrid([S4D_, ROPE]).interaction, {"X": (X, "seq")}, only=tuple(LENGTHS)),
    # Chapter 6's explorer (its figure reads the committed results of ssmheads.bench)
    "tradeoff_explorer_figure": Target(widgets.tradeoff_explorer_figure, {
        "architecture": ("s4d", "choice"), "task": ("delay", "choice"), "results": (None, "fixed")}),
})

# no-argument callables: one call each, the result must be finite
NO_ARGS = {"use_book_style": plotting.use_book_style, "plateau": systems.plateau,
           "operator_explorer": widgets.operator_explorer, "rank_explorer": widgets.rank_explorer,
           "head_explorer": widgets.head_explorer, "highway_explorer": widgets.highway_explorer,
           "MultiHeadAttention.value_maps": ATT.value_maps, "LinearSSM.spectral_radius": lambda: SSM.spectral_radius,
           "S5.as_linear_ssm": S5_.as_linear_ssm,
           "S4D.as_linear_ssm": S4D_.as_linear_ssm, "Mamba2.value_maps": MAMBA2.value_maps,
           "RankTable.to_markdown": TABLE.to_markdown, "architecture_explorer": widgets.architecture_explorer, "RankRow": lambda: TABLE.rows[0],
           "tradeoff_explorer": widgets.tradeoff_explorer}

for _name in widgets.ARCHITECTURE_NAMES:  # every choice of the Chapter 5 explorer draws
    NO_ARGS[f"architecture_explorer_figure({_name})"] = (
        lambda _name=_name: widgets.architecture_explorer_figure(_name, n=6, seed=1))

# ----------------------------------------------------------------------------------------------
# Mutations of one argument


def _bad_callable_none(*args, **kwargs):
    return None


def _bad_callable_raises(*args, **kwargs):
    raise RuntimeError("a student's bug")


def _array_mutations(v, scaled):
    v = np.asarray(v, dtype=float)
    out = {"None": None, "str": "abc", "ndim+1": v[None], "complex": v + 1j * v}
    if v.size:
        for label, bad in (("nan", np.nan), ("inf", np.inf), ("-inf", -np.inf)):
            w = v.copy()
            w.flat[0] = bad
            out[label] = w
    if v.ndim >= 1:
        out["ndim-1"] = v[0]
        out["empty-first"] = v[:0]
        out["shape-first"] = v[:-1] if v.shape[0] > 1 else np.concatenate([v, v])
    if v.ndim >= 2:
        out["empty-last"] = v[..., :0]
        out["shape-last"] = v[..., :-1] if v.shape[-1] > 1 else np.concatenate([v, v], axis=-1)
    if scaled:
        out["huge"] = v * HUGE
        out["tiny"] = v * TINY
    return out


def _longer(v, n):
    """``v`` repeated along its first axis to length ``n``."""
    v = np.asarray(v, dtype=float)
    return np.resize(v, (n,) + v.shape[1:])


def _mutations(value, kind):
    """``{label: bad value}`` for one argument of the given kind."""
    if kind in ("array", "scaled"):
        return _array_mutations(value, kind == "scaled")
    if kind == "seq":  # a sequence X (n, d): also long ones
        return {**_array_mutations(value, True), **{label: _longer(value, n) for label, n in LENGTHS.items()}}
    if kind == "lags":  # a stack of lags or matrices (n, p, d): also a long one
        return {**_array_mutations(value, True), "n4096": _longer(value, 4096)}
    if kind == "matrix":  # a square matrix: also large ones
        return {**_array_mutations(value, True), **SIZED_A}
    if kind == "stableA":  # a stable state matrix: also large ones (B and C resized)
        return {**_array_mutations(value, False), **SIZED_A}
    if kind == "A":
        return {"None": None, "str": "abc", "nan": np.full((2, 2), np.nan), "shape": np.eye(3),
                "complex": A + 1j, "unstable": UNSTABLE, **SIZED_A}
    if kind in ("size", "count"):
        out = {"None": None, "str": "3", "bool": True, "negative": -1, "float": 2.5, "huge": 10**7,
               "numpy-int": np.int64(value), "4096": 4096}
        if kind == "size":
            out["zero"] = 0
        return out
    if kind == "index":
        return {"None": None, "str": "0", "bool": True, "huge": 10**7, "negative-huge": -10**7, "float": 0.5}
    if kind == "seed":
        return {"None-or-int": None, "str": "0", "bool": True, "negative": -1, "float": 0.5, "huge": 2**70}
    if kind == "scale":
        return {"None": None, "str": "x", "nan": np.nan, "inf": np.inf, "-inf": -np.inf, "zero": 0.0,
                "negative": -1.0, "huge": HUGE, "tiny": TINY, "complex": 1j}
    if kind == "real":
        return {"None": None, "str": "x", "nan": np.nan, "inf": np.inf, "-inf": -np.inf, "complex": 1j,
                "array": np.ones(3)}
    if kind == "rtol":
        return {"str": "x", "nan": np.nan, "inf": np.inf, "-inf": -np.inf, "negative": -1.0, "one": 1.0,
                "complex": 1j, "tiny": TINY}
    if kind == "choice":
        return {"None": None, "int": 5, "bogus": "bogus", "empty": ""}
    if kind == "bool":
        return {"None": None, "str": "yes", "int": 2, "numpy-bool": np.bool_(True)}
    if kind == "callable":
        return {"int": 5, "str": "f", "None": None, "returns-None": _bad_callable_none,
                "raises": _bad_callable_raises}
    if kind == "object":
        return {"None": None, "int": 5, "str": "x", "array": X}
    if kind == "mapping":
        return {"None": None, "empty": {}, "list": [W_ATT], "bad-value": {"a": "x"}, "bad-shape": {"a": X}}
    if kind == "text":
        return {"int": 5, "array": X}
    if kind == "axes":
        return {"str": "x", "int": 5}
    if kind == "weights":
        return {"str": "x", "nan": np.r_[np.nan, np.ones(7)], "negative": -np.ones(8), "zero": np.zeros(8),
                "short": np.ones(3), "complex": np.ones(8) + 1j, "huge": np.full(8, HUGE), "tiny": np.full(8, TINY)}
    if kind == "ints":
        return {"None": None, "str": "x", "float": np.array([0.5, 1.5]), "negative": np.array([-1]),
                "2d": np.zeros((2, 2), dtype=int), "huge": np.array([10**12])}
    if kind == "fixed":
        return {"None": None, "str": "x"}
    if kind == "given":  # held fixed: its bad values are fuzzed in another target
        return {}
    raise AssertionError(kind)


def _labels(target, param):
    value, kind = target.args[param]
    return [label for label in _mutations(value, kind) if (target.only is None or label in target.only)
            and (label != "4096" or param in FAST_PARAMS)]  # 4096 steps or heads: not the n


def _cases():
    cases = []
    for name, target in TARGETS.items():
        for param in target.args:
            for label in _labels(target, param):
                cases.append((name, param, label))
    return cases


CASES = _cases()

# Known defects: (target, parameter, mutation) -> "owner file: the fix". Each runs as
# xfail(strict=True), so a fixed defect fails until its entry is removed.
KNOWN: dict = {}


# ----------------------------------------------------------------------------------------------
# Running one call in a child


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout()


def _finite(obj, depth=0) -> bool:
    """True when no number inside ``obj`` is NaN or infinite (arrays, numbers, containers, dataclasses)."""
    if depth > 4:
        return True
    if isinstance(obj, np.ndarray):
        return obj.dtype.kind not in "fc" or bool(np.all(np.isfinite(obj)))
    if isinstance(obj, (float, complex, np.floating, np.complexfloating)):
        return bool(np.isfinite(obj))
    if isinstance(obj, (list, tuple)):
        return all(_finite(item, depth + 1) for item in obj)
    if isinstance(obj, dict):
        return all(_finite(item, depth + 1) for item in obj.values())
    module = type(obj).__module__ or ""
    if module.startswith("ssmheads"):
        return all(_finite(item, depth + 1) for item in vars(obj).values()) if hasattr(obj, "__dict__") else True
    return True


def _numbers(obj):
    """The array or number a homogeneity check compares, or None."""
    if isinstance(obj, (np.ndarray, float, int, np.floating, np.integer)) and not isinstance(obj, bool):
        return np.asarray(obj, dtype=float)
    if isinstance(obj, (bool, np.bool_)):
        return np.asarray(obj, dtype=float)
    if isinstance(obj, tuple) and obj and isinstance(obj[0], np.ndarray):
        return obj[0]
    return None


def _verdict(target, param, label, baseline):
    """Run the mutated call here (in the child) and return what happened as plain strings."""
    kwargs = target.kwargs()
    _, kind = target.args[param]
    if kind == "A" and label == "unstable":
        kwargs["A"] = UNSTABLE
        if target.long in kwargs:
            kwargs[target.long] = LONG if target.long == "X" else 3000
        elif target.long == "X":
            kwargs["X"] = LONG
    else:
        kwargs[param] = _mutations(target.args[param][0], kind)[label]
    if label in SIZED_A:  # the system's B and C follow A's size
        N = kwargs[param].shape[0]
        if "B" in kwargs:
            kwargs["B"] = np.ones((N, np.shape(kwargs["B"])[1])) / np.sqrt(N)
        if "C" in kwargs:
            kwargs["C"] = np.ones((np.shape(kwargs["C"])[0], N)) / np.sqrt(N)
    try:
        result = target.call(**kwargs)
    except _Timeout:
        return ("hang", "no answer within the time limit")
    except (ValueError, TypeError) as exc:
        return ("error", type(exc).__name__, str(exc))
    except BaseException as exc:  # noqa: BLE001 - every other outcome is a finding
        return ("wrong-exception", type(exc).__name__, str(exc)[:300])
    finally:
        import matplotlib.pyplot as plt
        plt.close("all")
    if not _finite(result):
        return ("non-finite", repr(result)[:300])
    degree = target.degree.get(param)
    if label in ("huge", "tiny") and kind in ("scaled", "seq", "lags", "matrix"):
        got, ref = _numbers(result), _numbers(baseline)
        if got is not None and ref is not None:
            if got.shape != ref.shape:
                return ("wrong", f"shape {got.shape}, baseline {ref.shape}")
            if degree is not None:
                s = HUGE if label == "huge" else TINY
                expect = ref if degree == 0 else None
                if degree == 0:
                    ok = numerics.relative_gap(got, expect) <= 1e-8 * max(1.0, float(np.max(np.abs(ref))))
                else:
                    unit = got / s if degree == 1 else got * s
                    ok = numerics.relative_gap(unit, ref) <= 1e-8 * max(1.0, float(np.max(np.abs(ref))))
                if not ok:
                    return ("wrong", f"f(s x) != s^{degree} f(x) at s = {label}: got {got.ravel()[:4]}, "
                                     f"baseline {ref.ravel()[:4]}")
    return ("ok",)


def _address_space() -> int:
    """This process's virtual memory size, in bytes."""
    for line in open("/proc/self/status"):
        if line.startswith("VmSize:"):
            return int(line.split()[1]) * 1024
    return 0


def _child(conn, name, param, plan):
    """Run the cases ``plan = [(label, cpu seconds), ...]`` of one argument, sending each verdict as it comes,
    with the case's CPU time and the peak of the memory it allocated appended."""
    limit = _address_space() + EXTRA_ADDRESS_SPACE
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    one_blas_thread()
    signal.signal(signal.SIGALRM, _alarm)
    signal.signal(signal.SIGVTALRM, _alarm)
    warnings.simplefilter("ignore")
    baseline = _BASELINES.get(name)
    for label, seconds in plan:
        tracemalloc.start()
        start = resource.getrusage(resource.RUSAGE_SELF).ru_utime
        try:
            signal.alarm(WALL_SECONDS)
            signal.setitimer(signal.ITIMER_VIRTUAL, seconds)
            verdict = _verdict(TARGETS[name], param, label, baseline)
        except BaseException as exc:  # noqa: BLE001 - e.g. the alarm outside the call itself
            verdict = ("crash", type(exc).__name__, str(exc)[:300])
        finally:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
            signal.alarm(0)
        cpu = resource.getrusage(resource.RUSAGE_SELF).ru_utime - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        conn.send((label, verdict + (cpu, peak)))
    conn.close()


_BASELINES: dict = {}
_VERDICTS: dict = {}  # (name, param) -> {label: verdict}, filled one child per argument


def _baseline(name):
    if name not in _BASELINES:
        import matplotlib.pyplot as plt
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _BASELINES[name] = TARGETS[name].call(**TARGETS[name].kwargs())
        plt.close("all")
    return _BASELINES[name]


def _seconds(label, param) -> float:
    """The CPU time a case may take: :data:`FAST_SECONDS` within the issue's budget, else :data:`SLOW_SECONDS`."""
    return FAST_SECONDS if label in FAST_LABELS else SLOW_SECONDS


def _run(name, param, label):
    """The verdict of one case, its CPU time and peak memory last. All cases of one argument run in one forked
    child (one fork, not one per case); each has its own CPU-time alarm (twice its limit, so that a slow case
    is reported with its time; 1 s for a known defect) and a wall-clock safety alarm."""
    if (name, param) not in _VERDICTS:
        _baseline(name)
        target = TARGETS[name]
        plan = [(lab, 1 if _known(name, param, lab) else 2 * _seconds(lab, param))
                for lab in _labels(target, param)]
        ctx = multiprocessing.get_context("fork")
        receive, send = ctx.Pipe(duplex=False)
        child = ctx.Process(target=_child, args=(send, name, param, plan))
        child.start()
        send.close()
        got = {}
        for lab, seconds in plan:
            if not receive.poll(WALL_SECONDS + 10):
                break
            try:
                done, verdict = receive.recv()
            except EOFError:  # the child died (a crash, or killed by the kernel)
                break
            got[done] = verdict
        child.join(5)
        if child.is_alive():
            child.kill()
            child.join()
        for lab, _ in plan:
            got.setdefault(lab, ("crash-or-hang", f"no verdict; the child ended with exit code {child.exitcode}",
                                 float("nan"), float("nan")))
        _VERDICTS[(name, param)] = got
        if os.environ.get("SSMHEADS_FUZZ_LOG"):  # a record of every case's CPU time and peak memory
            with open(os.environ["SSMHEADS_FUZZ_LOG"], "a") as log:
                for lab, verdict in got.items():
                    log.write(f"{verdict[-2]:.3f}\t{verdict[-1] / 2**20:.1f}\t{verdict[0]}\t{name}\t{param}\t{lab}\n")
    return _VERDICTS[(name, param)][label]


def _expected_pattern(target, param, label):
    if target.args[param][1] == "A" and label == "unstable":
        return r"spectral radius"
    if label in SIZED_A and param == "A" and {"B", "C"} & set(target.args):
        return r"(?<![A-Za-z0-9_])(A|B|C|B and C)(?![A-Za-z0-9_])"  # the system's size
    return rf"(?<![A-Za-z0-9_]){re.escape(param)}(?![A-Za-z0-9_])"


def _known(name, param, label):
    return KNOWN.get((name, param, label)) or KNOWN.get((name, param, "*")) or KNOWN.get((name, "*", "*"))


def _case_params():
    params = []
    for name, param, label in CASES:
        marks = []
        reason = _known(name, param, label)
        if reason:
            marks.append(pytest.mark.xfail(strict=True, reason=reason))
        params.append(pytest.param(name, param, label, marks=marks, id=f"{name}-{param}-{label}"))
    return params


@pytest.mark.parametrize("name, param, label", _case_params())
def test_bad_input_gives_a_clear_error_or_a_right_answer(name, param, label):
    *answer, cpu, peak = _run(name, param, label)
    assert not peak > MAX_BYTES, (f"{name}({param}={label}) held {peak / 2**30:.2f} GiB, above the limit of "
                                  f"{MAX_BYTES / 2**30:.0f} GiB: {answer}")
    limit = FAST_SECONDS if answer[0] == "error" else _seconds(label, param)
    assert not cpu > limit, (f"{name}({param}={label}) took {cpu:.2f} s of CPU, above {limit:g} s "
                             f"({'a refusal must come at once' if answer[0] == 'error' else 'its budget'}): "
                             f"{str(answer)[:300]}")
    if answer[0] == "ok":
        return
    if answer[0] == "error":
        _, kind, message = answer
        pattern = _expected_pattern(TARGETS[name], param, label)
        assert re.search(pattern, message), f"{kind} does not name {pattern!r}: {message}"
        return
    pytest.fail(f"{name}({param}={label}): {answer}")


@pytest.mark.parametrize("name", sorted(NO_ARGS))
def test_callables_without_arguments_give_finite_results(name):
    import matplotlib.pyplot as plt
    result = NO_ARGS[name]()
    plt.close("all")
    assert _finite(result)


def test_every_public_callable_is_fuzzed():
    """Each public function, class and public method has a baseline here (by name)."""
    import inspect
    covered = " ".join(TARGETS) + " " + " ".join(NO_ARGS)
    missing = []
    for module in (sh, sh.models, operator, span, heads, gradients, systems, plotting, widgets, exercises, numerics,
                   architectures, sh.source):
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            if dataclasses.is_dataclass(obj) and obj.__name__.endswith("Result") or obj.__name__ in ("DecayBound",
                                                                                                  "Listing"):
                continue  # records returned by other functions; built by them
            if not re.search(rf"\b{re.escape(attr)}\b", covered):
                missing.append(f"{module.__name__}.{attr}")
            if inspect.isclass(obj):
                for meth, member in vars(obj).items():
                    if not meth.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)) \
                            and f"{attr}.{meth}" not in covered and f"{attr}(" not in covered:
                        missing.append(f"{module.__name__}.{attr}.{meth}")
    assert not missing, f"public callables without a fuzz baseline: {missing}"
