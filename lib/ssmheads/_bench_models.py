"""The trainable twins of the book's layers, for :mod:`ssmheads.bench` (private module).

Each architecture is three functions of one parameter dictionary (numpy arrays of
float64, every entry trained):

* ``init(rng, shape)``: the parameters at initialisation, drawn from ``rng`` as the
  architecture's paper does (the docstring of each says how, and what is simplified);
* ``forward(params, X)``: the layer in JAX, ``X`` of shape ``(B, n, d1)``, output
  ``(B, n, p)``;
* ``layer(params, shape)``: the same layer built from the book's numpy classes
  (:mod:`ssmheads.architectures`, :mod:`ssmheads.models`, :mod:`ssmheads.heads`), whose
  ``forward`` on one sequence ``(n, d1)`` must equal the JAX forward (``tests/test_bench.py``
  checks it to 1e-10 relative in float64).

Every model reads the token with a constant 1 appended (``d1 = d + 1``): that gives each
projection a bias without a separate parameter, and keeps each layer exactly the book's
bias-free layer, applied to the augmented tokens.

JAX is imported by :func:`ssmheads.bench._jax` only (``import ssmheads`` must not need it).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Callable

import numpy as np

from . import architectures as arch
from .heads import SoftmaxSinkHeads
from .models import MultiHeadAttention, PositionwiseLinear


@dataclasses.dataclass(frozen=True)
class Shape:
    """Widths of one task: ``d1`` input features (the constant included), ``p`` outputs, length ``n``."""

    d1: int
    p: int
    n: int


@dataclasses.dataclass(frozen=True)
class Architecture:
    """One architecture of the bench: its family, its size knobs and its three functions."""

    name: str
    family: str
    heads: int | None  # the interaction rank bound its structure gives (heads, or rank-one channels), if any
    time_invariant: bool
    init: Callable
    forward: Callable
    layer: Callable
    description: str


def _jnp():
    from .bench import _jax

    return _jax()[1]


def _glorot(rng, shape):
    """Glorot/Xavier normal: variance 2 / (fan_in + fan_out) over the last two axes."""
    fan_out, fan_in = shape[-2], shape[-1]
    return rng.standard_normal(shape) * math.sqrt(2.0 / (fan_in + fan_out))


def _inv_softplus(y):
    return np.log(np.expm1(y))


def _log_uniform(rng, low, high, size):
    return np.exp(rng.uniform(math.log(low), math.log(high), size))


# ----------------------------------------------------------------------------------------------
# Softmax attention: content scores, a learned relative-position bias, a sink


_DK = 4  # key width of every attention-like head
_DV = 2  # value width of each softmax head


def _attention_init(H):
    def init(rng, shape):
        d1, p, n = shape.d1, shape.p, shape.n
        return {
            "W_Q": _glorot(rng, (H, _DK, d1)),
            "W_K": _glorot(rng, (H, _DK, d1)),
            "W_V": _glorot(rng, (H, _DV, d1)),
            "W_O": _glorot(rng, (H, p, _DV)),
            "bias": np.zeros((H, n)),  # beta_h(l), l = 0..n-1 (a T5-style table, no buckets)
            "sink": np.zeros(H),  # the sink's score
        }

    return init


def _lag_one_hot(n):
    """``E[i, j, l] = 1`` if ``i - j = l``: the bias table ``beta (H, n)`` becomes ``beta_h(i - j)`` by a product."""
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (lag[:, :, None] == np.arange(n)[None, None, :]).astype(float)


def _attention_forward(P, X):
    """Scores ``q_i . k_j / sqrt(d_k) + beta_h(i - j)`` over ``j <= i``,
    and a sink of score ``sigma_h`` and value 0:
    ``a_ij = e^{s_ij} / (sum_{m<=i} e^{s_im} + e^{sigma_h})``;
    ``y_i = sum_h W_O^h sum_j a_ij W_V^h x_j``."""
    jnp = _jnp()
    H, dk, _ = P["W_Q"].shape
    n = X.shape[1]
    q = jnp.einsum("hkd,bnd->bhnk", P["W_Q"], X)
    k = jnp.einsum("hkd,bnd->bhnk", P["W_K"], X)
    content = jnp.einsum("bhik,bhjk->bhij", q, k) / math.sqrt(dk)
    bias = jnp.einsum("ijl,hl->hij", _lag_one_hot(n), P["bias"])
    s = content + bias[None]
    causal = np.tril(np.ones((n, n), dtype=bool))
    sink = P["sink"][None, :, None, None]
    masked = jnp.where(causal, s, -jnp.inf)
    row_max = jnp.max(masked, axis=-1, keepdims=True)
    top = _stop_gradient(jnp.maximum(row_max, sink))
    e = jnp.where(causal, jnp.exp(s - top), 0.0)
    a = e / (jnp.sum(e, axis=-1, keepdims=True) + jnp.exp(sink - top))
    v = jnp.einsum("hqd,bnd->bhnq", P["W_V"], X)
    heads = jnp.einsum("bhij,bhjq->bhiq", a, v)
    return jnp.einsum("hpq,bhiq->bip", P["W_O"], heads)


def _stop_gradient(x):
    """``x`` with no gradient through it (the max subtracted before a softmax)."""
    from .bench import _jax

    return _jax()[0].lax.stop_gradient(x)


def _attention_layer(P, shape):
    """The numpy twin of the content part (bias 0, no sink): :class:`~ssmheads.models.MultiHeadAttention`.

    The two other parts have their own twins: :func:`attention_positional_layer` (scores from
    the bias, and the sink: :class:`~ssmheads.heads.SoftmaxSinkHeads`) and
    :func:`attention_alibi_layer` (content plus a linear bias: :class:`~ssmheads.architectures.ALiBiAttention`).
    """
    return MultiHeadAttention(P["W_Q"], P["W_K"], P["W_V"], P["W_O"])


def attention_positional_layer(P, n):
    """Heads with ``W_Q = W_K = 0``: softmax of the bias table and the sink, values ``W_O^h W_V^h``."""
    H = P["bias"].shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    scores = np.concatenate([P["bias"][:, np.clip(lag, 0, n - 1)],
                             np.broadcast_to(P["sink"][:, None, None], (H, n, 1))], axis=2)
    return SoftmaxSinkHeads(scores, np.einsum("hpq,hqd->hpd", P["W_O"], P["W_V"]))


def attention_alibi_layer(P, slope):
    """One head with the bias ``-slope * l`` and no sink: :class:`~ssmheads.architectures.ALiBiAttention`."""
    return arch.ALiBiAttention(P["W_Q"][0], P["W_K"][0], P["W_O"][0] @ P["W_V"][0], slope)


# ----------------------------------------------------------------------------------------------
# Linear attention and retention (sums of single heads)


def _linear_init(H):
    def init(rng, shape):
        return {"W_Q": _glorot(rng, (H, _DK, shape.d1)), "W_K": _glorot(rng, (H, _DK, shape.d1)),
                "W_V": _glorot(rng, (H, shape.p, shape.d1))}

    return init


def _elu1(u):
    jnp = _jnp()
    return jnp.where(u > 0, u + 1.0, jnp.exp(jnp.minimum(u, 0.0)))


def _linear_forward(P, X):
    jnp = _jnp()
    n = X.shape[1]
    fq = _elu1(jnp.einsum("hkd,bnd->bhnk", P["W_Q"], X))
    fk = _elu1(jnp.einsum("hkd,bnd->bhnk", P["W_K"], X))
    raw = jnp.einsum("bhik,bhjk->bhij", fq, fk) * np.tril(np.ones((n, n)))
    alpha = raw / jnp.sum(raw, axis=-1, keepdims=True)
    return jnp.einsum("bhij,hpd,bjd->bip", alpha, P["W_V"], X)


class _Sum:
    """The sum of single-head layers (``forward`` only): ``y = sum_h layer_h(X)``."""

    def __init__(self, layers):
        self.layers = tuple(layers)
        self.d, self.p = self.layers[0].d, self.layers[0].p

    def forward(self, X):
        return sum(layer.forward(X) for layer in self.layers)


def _linear_layer(P, shape):
    return _Sum(arch.LinearAttention(P["W_Q"][h], P["W_K"][h], P["W_V"][h]) for h in range(P["W_Q"].shape[0]))


def _retention_constants(H):
    """RetNet's fixed decays ``gamma_h = 1 - 2^(-5-h)`` and xPos angles ``10000^(-linspace(0, 1, d_k/2))``."""
    gamma = 1.0 - 2.0 ** (-5.0 - np.arange(H))
    theta = 1.0 / 10000.0 ** np.linspace(0.0, 1.0, _DK // 2)
    return gamma, theta


def _retention_init(H):
    def init(rng, shape):
        # RetNet: Xavier normal with gain 2^-2.5 for the query, key and value maps
        g = 2.0 ** -2.5
        return {"W_Q": g * _glorot(rng, (H, _DK, shape.d1)), "W_K": g * _glorot(rng, (H, _DK, shape.d1)),
                "W_V": g * _glorot(rng, (H, shape.p, shape.d1))}

    return init


def _rotate(Z, angles):
    jnp = _jnp()
    c, s = np.cos(angles), np.sin(angles)
    even, odd = Z[..., 0::2], Z[..., 1::2]
    return jnp.stack([c * even - s * odd, s * even + c * odd], axis=-1).reshape(Z.shape)


def _retention_forward(P, X):
    jnp = _jnp()
    H = P["W_Q"].shape[0]
    n = X.shape[1]
    gamma, theta = _retention_constants(H)
    angles = np.arange(n)[:, None] * theta[None, :]
    q = _rotate(jnp.einsum("hkd,bnd->bhnk", P["W_Q"], X), angles)
    k = _rotate(jnp.einsum("hkd,bnd->bhnk", P["W_K"], X), angles)
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    decay = np.where(lag >= 0, gamma[:, None, None] ** np.maximum(lag, 0), 0.0)
    alpha = jnp.einsum("bhik,bhjk->bhij", q, k) * decay[None]
    return jnp.einsum("bhij,hpd,bjd->bip", alpha, P["W_V"], X)


def _retention_layer(P, shape):
    gamma, theta = _retention_constants(P["W_Q"].shape[0])
    return _Sum(arch.Retention(P["W_Q"][h], P["W_K"][h], P["W_V"][h], gamma[h], theta)
                for h in range(P["W_Q"].shape[0]))


# ----------------------------------------------------------------------------------------------
# Time-invariant diagonal SSMs: S4D (SISO per channel, mixed by linear maps) and S5 (MIMO)


def _zoh(log_neg_re, im, log_dt):
    """``Lambda = -exp(log_neg_re) + i im``, ``dt = exp(log_dt)``; returns ``z = dt Lambda``, ``Lambda`` and the
    zero-order-hold gain ``(exp(z) - 1) / Lambda`` (``exp(z) - 1`` written to stay accurate for small ``|z|``)."""
    jnp = _jnp()
    lam = -jnp.exp(log_neg_re) + 1j * im
    z = jnp.exp(log_dt) * lam
    x, y = z.real, z.imag
    expm1 = jnp.expm1(x) * jnp.cos(y) - 2.0 * jnp.sin(y / 2.0) ** 2 + 1j * (jnp.exp(x) * jnp.sin(y))
    return z, lam, expm1 / lam


def _causal_conv(K, X):
    """``y_i = sum_l K_l x_{i-l}``: ``K (n, p, d)``, ``X (B, n, d)`` (the Toeplitz operator applied)."""
    jnp = _jnp()
    n = X.shape[1]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    T = jnp.where((lag >= 0)[:, :, None, None], K[np.clip(lag, 0, n - 1)], 0.0)
    return jnp.einsum("ijpd,bjd->bip", T, X)


_S4D_CHANNELS, _S4D_MODES = 4, 32


def _s4d_init(rng, shape):
    m, N = _S4D_CHANNELS, _S4D_MODES
    # S4D-Lin: Lambda = -1/2 + i pi n, B = 1, C ~ CN(0, 1), dt log-uniform on [1e-3, 1e-1]
    return {
        "W_in": _glorot(rng, (m, shape.d1)),
        "log_neg_re": np.full((m, N), math.log(0.5)),
        "im": np.broadcast_to(math.pi * np.arange(N), (m, N)).copy(),
        "B_re": np.ones((m, N)), "B_im": np.zeros((m, N)),
        "C_re": rng.standard_normal((m, N)) * math.sqrt(0.5), "C_im": rng.standard_normal((m, N)) * math.sqrt(0.5),
        "log_dt": np.log(_log_uniform(rng, 1e-3, 1e-1, m)),
        "W_out": _glorot(rng, (shape.p, m)),
    }


#: The step size of the controlled S4D run (``"s4d-dt32"``): every channel's step 1/32 instead of a
#: log-uniform draw (the modes keep S4D-Lin's ``Im Lambda = pi m``; Chapter 6 shows that with
#: ``Im Lambda = pi (m + 1/2)`` instead they span all real kernels on 64 lags, and that the
#: trained control learns the delay).
S4D_CONTROL_DT = 1.0 / 32


def _s4d_control_init(rng, shape):
    """S4D as :func:`_s4d_init` (the same draws), with every step size set to :data:`S4D_CONTROL_DT`."""
    P = _s4d_init(rng, shape)
    P["log_dt"] = np.full_like(P["log_dt"], math.log(S4D_CONTROL_DT))
    return P


def _s4d_kernel(P, n):
    jnp = _jnp()
    z, _, gain = _zoh(P["log_neg_re"], P["im"], P["log_dt"][:, None])
    coef = (P["C_re"] + 1j * P["C_im"]) * gain * (P["B_re"] + 1j * P["B_im"])
    powers = jnp.exp(np.arange(n)[:, None, None] * z[None])
    return 2.0 * jnp.einsum("cm,lcm->lc", coef, powers).real  # (n, channels)


def _s4d_forward(P, X):
    jnp = _jnp()
    n = X.shape[1]
    U = jnp.einsum("md,bnd->bnm", P["W_in"], X)
    K = _s4d_kernel(P, n)
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    T = jnp.where((lag >= 0)[:, :, None], K[np.clip(lag, 0, n - 1)], 0.0)  # (n, n, channels)
    Y = jnp.einsum("ijc,bjc->bic", T, U)
    return jnp.einsum("pc,bnc->bnp", P["W_out"], Y)


def _s4d_layer(P, shape):
    lam = -np.exp(P["log_neg_re"]) + 1j * P["im"]
    ssm = arch.S4D(lam, P["B_re"] + 1j * P["B_im"], P["C_re"] + 1j * P["C_im"], np.exp(P["log_dt"]))
    return arch.Hybrid([PositionwiseLinear(P["W_in"]), ssm, PositionwiseLinear(P["W_out"])])


def _hippo_n(N):
    """The ``N`` eigenvalues with positive imaginary part of HiPPO-N (size ``2N``), as S5 initialises ``Lambda``.

    HiPPO-LegS ``A_nk = -sqrt(2n+1) sqrt(2k+1)`` below the diagonal, ``-(n+1)`` on it; its
    normal part (S5, Smith et al. 2023) adds ``sqrt(n + 1/2) sqrt(k + 1/2)``, which leaves
    ``-1/2`` on the diagonal and a skew-symmetric rest, so the eigenvalues are ``-1/2 + i omega``.
    """
    P2 = 2 * N
    q = np.sqrt(np.arange(P2) + 0.5)
    S = np.tril(np.outer(q, q), -1)
    skew = S - S.T  # the normal part minus its diagonal -1/2
    omega = np.linalg.eigvalsh(1j * skew).real  # eigenvalues of skew are i * (real numbers)
    omega = np.sort(-omega[omega < 0])[:N]
    return -0.5 + 1j * omega


_S5_MODES = 32


def _s5_init_modes(rng, N, d_in, p):
    lam = _hippo_n(N)
    return {
        "log_neg_re": np.log(-lam.real), "im": lam.imag.copy(),
        "B_re": rng.standard_normal((N, d_in)) / math.sqrt(2 * d_in),
        "B_im": rng.standard_normal((N, d_in)) / math.sqrt(2 * d_in),
        "C_re": rng.standard_normal((p, N)) / math.sqrt(N), "C_im": rng.standard_normal((p, N)) / math.sqrt(N),
        "log_dt": np.log(_log_uniform(rng, 1e-3, 1e-1, N)),
    }


def _s5_init(rng, shape):
    # S5: Lambda from HiPPO-N, dt per state log-uniform on [1e-3, 1e-1], B and C Gaussian
    return _s5_init_modes(rng, _S5_MODES, shape.d1, shape.p)


def _s5_lags(P, n):
    jnp = _jnp()
    z, _, gain = _zoh(P["log_neg_re"], P["im"], P["log_dt"])
    B_bar = gain[:, None] * (P["B_re"] + 1j * P["B_im"])
    powers = jnp.exp(np.arange(n)[:, None] * z[None])  # (n, N)
    return jnp.einsum("pm,lm,md->lpd", P["C_re"] + 1j * P["C_im"], powers, B_bar).real


def _s5_forward(P, X):
    return _causal_conv(_s5_lags(P, X.shape[1]), X)


def _s5_layer(P, shape=None):
    lam = -np.exp(P["log_neg_re"]) + 1j * P["im"]
    return arch.S5(lam, P["B_re"] + 1j * P["B_im"], P["C_re"] + 1j * P["C_im"], np.exp(P["log_dt"]))


# ----------------------------------------------------------------------------------------------
# Selective SSMs: Mamba (per-channel selective scan) and Mamba-2 (SSD)


_MAMBA_INNER, _MAMBA_STATE = 4, 16


def _mamba_init(rng, shape):
    """Mamba's initialisation: ``A = -(1, ..., N)`` per channel (S4D-Real), ``Delta`` near log-uniform
    on [1e-3, 1e-1] (through the constant inner channel), ``D = 1``.

    The layer is :class:`~ssmheads.architectures.Mamba` with one extra inner channel that
    carries the constant 1 (its row of ``W_in`` is fixed): its column of ``W_delta``, ``W_B`` and
    ``W_C`` is the bias of ``Delta``, ``B_t`` and ``C_t``. The output map ``W_out`` follows.
    """
    m, N = _MAMBA_INNER, _MAMBA_STATE
    e = m + 1
    W_delta = rng.standard_normal((e, e)) / math.sqrt(e)
    W_delta[:, m] = _inv_softplus(_log_uniform(rng, 1e-3, 1e-1, e))
    return {
        "W_in": _glorot(rng, (m, shape.d1)),
        "W_delta": W_delta,
        "W_B": rng.standard_normal((N, e)) / math.sqrt(e),
        "W_C": rng.standard_normal((N, e)) / math.sqrt(e),
        "A_log": np.log(np.broadcast_to(np.arange(1, N + 1, dtype=float), (e, N))).copy(),
        "D": np.ones(e),
        "W_out": _glorot(rng, (shape.p, e)),
    }


def _mamba_w_in(P, d1):
    """``W_in`` with the fixed last row that passes the constant feature (the last input) through."""
    jnp = _jnp()
    const = np.zeros((1, d1))
    const[0, -1] = 1.0
    return jnp.concatenate([P["W_in"], const], axis=0)


def _mamba_forward(P, X):
    jax, jnp = _jax_pair()
    U = jnp.einsum("ed,bnd->bne", _mamba_w_in(P, X.shape[2]), X)
    Delta = jax.nn.softplus(jnp.einsum("fe,bne->bnf", P["W_delta"], U))
    Bt = jnp.einsum("me,bne->bnm", P["W_B"], U)
    Ct = jnp.einsum("me,bne->bnm", P["W_C"], U)
    A = -jnp.exp(P["A_log"])  # (e, N)

    def step(h, inputs):
        u, dl, b, c = inputs  # (B, e), (B, e), (B, N), (B, N)
        h = jnp.exp(dl[:, :, None] * A[None]) * h + (dl * u)[:, :, None] * b[:, None, :]
        return h, jnp.einsum("bem,bm->be", h, c)

    h0 = jnp.zeros((X.shape[0],) + A.shape)
    _, Y = jax.lax.scan(step, h0, tuple(jnp.swapaxes(a, 0, 1) for a in (U, Delta, Bt, Ct)))
    Y = jnp.swapaxes(Y, 0, 1) + P["D"] * U
    return jnp.einsum("pe,bne->bnp", P["W_out"], Y)


def _jax_pair():
    from .bench import _jax

    return _jax()


def _mamba_layer(P, shape):
    W_in = np.vstack([P["W_in"], np.eye(shape.d1)[-1:]])
    mamba = arch.Mamba(W_in, P["W_delta"], P["W_B"], P["W_C"], P["A_log"], P["D"])
    return arch.Hybrid([mamba, PositionwiseLinear(P["W_out"])])


_SSD_HEADS, _SSD_HEAD_DIM, _SSD_STATE = 2, 2, 16


def _mamba2_init(rng, shape):
    """Mamba-2's initialisation: per head ``A_h = -exp(A_log[h])`` with ``-A_h`` uniform on [1, 16] and
    ``Delta`` at ``softplus(dt_bias)`` log-uniform on [1e-3, 1e-1]; ``w_a`` (the input's part of
    ``Delta``) small. :class:`~ssmheads.architectures.Mamba2` is the twin."""
    H, P_, N, d1 = _SSD_HEADS, _SSD_HEAD_DIM, _SSD_STATE, shape.d1
    return {
        "W_in": _glorot(rng, (H * P_, d1)), "W_out": _glorot(rng, (shape.p, H * P_)),
        "w_a": 0.1 * rng.standard_normal((H, d1)) / math.sqrt(d1),
        "W_B": rng.standard_normal((N, d1)) / math.sqrt(d1), "W_C": rng.standard_normal((N, d1)) / math.sqrt(d1),
        "A_log": np.log(rng.uniform(1.0, 16.0, H)),
        "dt_bias": _inv_softplus(_log_uniform(rng, 1e-3, 1e-1, H)),
    }


def _segsum(log_a):
    """``S[..., t, s] = sum_{r=s+1}^t log_a[..., r]`` for ``s <= t`` and ``-inf`` above (as ``_segsum`` in Chapter 5)."""
    jnp = _jnp()
    n = log_a.shape[-1]
    x = jnp.where(np.tril(np.ones((n, n), dtype=bool), -1), log_a[..., :, None], 0.0)
    return jnp.where(np.tril(np.ones((n, n), dtype=bool)), jnp.cumsum(x, axis=-2), -jnp.inf)


def _mamba2_forward(P, X):
    jax, jnp = _jax_pair()
    H = P["w_a"].shape[0]
    B_, n, _ = X.shape
    U = jnp.einsum("ed,bnd->bne", P["W_in"], X).reshape(B_, n, H, -1)
    gate = jnp.einsum("hd,bnd->bhn", P["w_a"], X)
    Delta = jax.nn.softplus(gate + P["dt_bias"][None, :, None])  # (B, H, n)
    # (B, H, t, s): the segment products a_{s+1} ... a_t
    L = jnp.exp(_segsum(-jnp.exp(P["A_log"])[None, :, None] * Delta))
    C = jnp.einsum("md,btd->btm", P["W_C"], X)
    B = jnp.einsum("md,bsd->bsm", P["W_B"], X)
    CB = jnp.einsum("btm,bsm->bts", C, B)
    Yh = jnp.einsum("bhts,bhs,bts,bshq->bthq", L, Delta, CB, U)
    return jnp.einsum("pe,bne->bnp", P["W_out"], Yh.reshape(B_, n, -1))


def _mamba2_layer(P, shape):
    return arch.Mamba2(P["W_in"], P["W_out"], P["w_a"], P["W_B"], P["W_C"], P["w_a"].shape[0],
                       A_log=P["A_log"], dt_bias=P["dt_bias"])


# ----------------------------------------------------------------------------------------------
# Hybrid: an S5 layer, then softmax attention on its outputs


_HYBRID_WIDTH, _HYBRID_MODES, _HYBRID_HEADS = 4, 16, 2


def _hybrid_init(rng, shape):
    ssm = _s5_init_modes(rng, _HYBRID_MODES, shape.d1, _HYBRID_WIDTH)
    att = _attention_init(_HYBRID_HEADS)(rng, Shape(_HYBRID_WIDTH, shape.p, shape.n))
    return {**{"ssm_" + k: v for k, v in ssm.items()}, **{"att_" + k: v for k, v in att.items()}}


def _split(P):
    return ({k[4:]: v for k, v in P.items() if k.startswith("ssm_")},
            {k[4:]: v for k, v in P.items() if k.startswith("att_")})


def _hybrid_forward(P, X):
    ssm, att = _split(P)
    return _attention_forward(att, _s5_forward(ssm, X))


def _hybrid_layer(P, shape):
    """The numpy twin with the attention's bias and sink switched off: ``Hybrid([S5, MultiHeadAttention])``."""
    ssm, att = _split(P)
    return arch.Hybrid([_s5_layer(ssm), _attention_layer(att, shape)])


# ----------------------------------------------------------------------------------------------
# The registry


def _attention(H):
    return Architecture(
        f"attention-{H}", "softmax attention", H, False, _attention_init(H), _attention_forward,
        _attention_layer,
        f"{H} causal softmax head{'s' if H > 1 else ''}: content scores q.k/sqrt(d_k) plus a learned "
        "relative-position bias per lag, and a zero-value sink")


ATTENTION_HEADS = (1, 2, 3, 4, 5)

REGISTRY = {a.name: a for a in (
    *[_attention(H) for H in ATTENTION_HEADS],
    Architecture("linear-attention", "linear attention", 2, False, _linear_init(2), _linear_forward,
                 _linear_layer, "2 linear-attention heads, feature map elu + 1 (Katharopoulos et al. 2020)"),
    Architecture("retention", "retention", 2, False, _retention_init(2), _retention_forward, _retention_layer,
                 "2 retention heads with RetNet's fixed decays 1 - 2^-5, 1 - 2^-6 and xPos angles"),
    Architecture("s4d", "LTI diagonal SSM", _S4D_CHANNELS, True, _s4d_init, _s4d_forward, _s4d_layer,
                 f"S4D: {_S4D_CHANNELS} SISO channels of {_S4D_MODES} complex modes (S4D-Lin), mixed by "
                 "linear maps in and out"),
    Architecture("s5", "LTI MIMO SSM", None, True, _s5_init, _s5_forward, _s5_layer,
                 f"S5: one MIMO diagonal SSM of {_S5_MODES} complex modes (HiPPO-N), zero-order hold"),
    Architecture("mamba", "selective SSM", _MAMBA_INNER, False, _mamba_init, _mamba_forward, _mamba_layer,
                 f"Mamba: selective scan, {_MAMBA_INNER} channels (+ a constant one) of state {_MAMBA_STATE}, "
                 "then a linear map"),
    Architecture("mamba2", "selective SSM (SSD)", _SSD_HEADS, False, _mamba2_init, _mamba2_forward,
                 _mamba2_layer,
                 f"Mamba-2: {_SSD_HEADS} SSD heads of width {_SSD_HEAD_DIM}, state {_SSD_STATE}"),
    Architecture("hybrid", "hybrid", None, False, _hybrid_init, _hybrid_forward, _hybrid_layer,
                 f"an S5 layer ({_HYBRID_MODES} modes, width {_HYBRID_WIDTH}), then {_HYBRID_HEADS} softmax "
                 "heads as in attention-H"),
)}

#: Controlled variants, trained by ``benchmarks/bench_tradeoff.py --controls`` only (not in the sweep's grid):
#: S4D with the same draws but every step size ``Delta = 1/32`` instead of log-uniform on ``[1e-3, 1e-1]``.
CONTROLS = {a.name: a for a in (
    Architecture("s4d-dt32", "LTI diagonal SSM", _S4D_CHANNELS, True, _s4d_control_init, _s4d_forward, _s4d_layer,
                 "S4D as 's4d', with every step size Delta = 1/32 at initialisation"),
)}
