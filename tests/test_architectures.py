"""Tests of ssmheads.architectures (Chapter 5): every form of every layer, ranks, errors."""

from __future__ import annotations

import numpy as np
import pytest

from ssmheads import architectures as ar
from ssmheads import apply_interaction, finite_difference_jacobian, interaction_rank, lag_span_dimension
from ssmheads.models import MultiHeadAttention, PositionwiseLinear
from ssmheads.numerics import relative_gap

NS = (1, 2, 7, 256)


def _att(rng, d=3, dk=4, p=2):
    return rng.standard_normal((dk, d)), rng.standard_normal((dk, d)), rng.standard_normal((p, d))


def _s4d(rng, d=3, N=4, dt=None):
    return ar.S4D(-np.exp(rng.standard_normal((d, N))) + 1j * rng.standard_normal((d, N)),
                  rng.standard_normal((d, N)), rng.standard_normal((d, N)) + 1j * rng.standard_normal((d, N)),
                  np.exp(rng.standard_normal(d) - 1) if dt is None else dt)


def _s5(rng, N=4, d=3, p=2, dt=0.5):
    lam = -np.exp(rng.standard_normal(N)) + 1j * rng.standard_normal(N)
    return ar.S5(lam, rng.standard_normal((N, d)) + 1j * rng.standard_normal((N, d)),
                 rng.standard_normal((p, N)) + 1j * rng.standard_normal((p, N)), dt)


def _mamba(rng, d=3, e=4, N=4, D=True):
    g = rng.standard_normal
    return ar.Mamba(g((e, d)), g((e, e)) / 2, g((N, e)), g((N, e)), 0.5 * g((e, N)), g(e) if D else None)


def _mamba2(rng, d=3, e=6, N=4, p=2, heads=3):
    g = rng.standard_normal
    return ar.Mamba2(g((e, d)), g((p, e)), g((heads, d)), g((N, d)), g((N, d)), heads)


def _layers(rng):
    """(name, layer, {form name: method}) for every layer class."""
    la = ar.LinearAttention(*_att(rng))
    las = ar.LinearAttention(*_att(rng), feature="softplus")
    ret = ar.Retention(*_att(rng), gamma=0.95, theta=rng.uniform(0, 1, 2))
    ret0 = ar.Retention(*_att(rng), gamma=1.0)
    s4d, s5 = _s4d(rng), _s5(rng)
    m2 = _mamba2(rng)
    chunked = {f"chunk{c}": (lambda c, L: (lambda X: L.chunkwise_forward(X, c)))(c, ret) for c in (1, 3, 4, 300)}
    ssd = {f"ssd{c}": (lambda c, L: (lambda X: L.ssd_forward(X, c)))(c, m2) for c in (1, 3, 4, 300)}
    return [
        ("linear", la, {"recurrent": la.recurrent_forward}),
        ("linear-softplus", las, {"recurrent": las.recurrent_forward}),
        ("retention", ret, {"recurrent": ret.recurrent_forward, **chunked}),
        ("retention-gamma1", ret0, {"recurrent": ret0.recurrent_forward,
                                    "chunk5": lambda X: ret0.chunkwise_forward(X, 5)}),
        ("alibi", ar.ALiBiAttention(*_att(rng), slope=0.3), {}),
        ("rope", ar.RoPEAttention(*_att(rng)), {}),
        ("s4d", s4d, {"convolution": s4d.convolution_forward}),
        ("s5", s5, {"linear-ssm": s5.as_linear_ssm().forward}),
        ("mamba", _mamba(rng), {}),
        ("mamba-noD", _mamba(rng, D=False), {}),
        ("mamba2", m2, ssd),
        ("hybrid", ar.Hybrid([_s4d(rng, d=3), ar.RoPEAttention(*_att(rng, d=3, p=3))]), {}),
    ]


LAYERS = _layers(np.random.default_rng(0))
GAPS: dict = {}


@pytest.mark.parametrize("n", NS)
@pytest.mark.parametrize("name, layer, forms", LAYERS, ids=[row[0] for row in LAYERS])
def test_forward_equals_interaction_and_every_form(name, layer, forms, n):
    X = np.random.default_rng(n).standard_normal((n, layer.d))
    Y = layer.forward(X)
    assert Y.shape == (n, layer.p)
    W = layer.interaction(X)
    assert W.shape == (n, n, layer.p, layer.d)
    assert np.all(W[np.triu_indices(n, 1)] == 0), "causal"
    gap = relative_gap(apply_interaction(W, X), Y)
    assert gap <= 1e-10, gap
    for form, f in forms.items():
        g = relative_gap(f(X), Y)
        assert g <= 1e-10, (form, g)
        GAPS[(name, form, n)] = g
    GAPS[(name, "interaction", n)] = gap


def test_a_broken_form_is_caught():
    """The agreement check fails when a form is wrong (a decay off by a little)."""
    rng = np.random.default_rng(1)
    ret = ar.Retention(*_att(rng), gamma=0.9)
    X = rng.standard_normal((20, 3))
    bad = ar.Retention(ret.W_Q, ret.W_K, ret.W_V, gamma=0.9 + 1e-6)
    assert relative_gap(bad.recurrent_forward(X), ret.forward(X)) > 1e-8


def _rank(layer, n=10, inputs=3, seed=0):
    rng = np.random.default_rng(seed)
    mats = [layer.interaction(rng.standard_normal((n, layer.d))).reshape(n * n, layer.p, layer.d)
            for _ in range(inputs)]
    return interaction_rank(np.concatenate(mats))


@pytest.mark.parametrize("N", [1, 4, 16])
def test_ssd_head_has_rank_one_whatever_N(N):
    rng = np.random.default_rng(N)
    assert _rank(_mamba2(rng, N=N, heads=1, e=4, p=3)) == 1
    assert _rank(_mamba2(rng, N=N, heads=3, e=6, p=3)) == 3


def test_mamba_rank_is_d_inner_generically_and_at_most_d_inner():
    rng = np.random.default_rng(3)
    assert _rank(_mamba(rng, d=3, e=4)) == 4
    assert _rank(_mamba(rng, d=6, e=2)) == 2  # d_inner < d
    # degenerate: W_in with two equal rows still gives <= d_inner
    m = _mamba(rng, d=3, e=4)
    W_in = m.W_in.copy()
    W_in[1] = 0.0
    assert _rank(ar.Mamba(W_in, m.W_delta, m.W_B, m.W_C, m.A_log, np.zeros(4))) == 3


@pytest.mark.parametrize("cls", ["linear", "retention", "alibi", "rope"])
def test_attention_like_heads_have_rank_one(cls):
    rng = np.random.default_rng(4)
    layer = {"linear": lambda: ar.LinearAttention(*_att(rng)),
             "retention": lambda: ar.Retention(*_att(rng), gamma=0.8, theta=0.7),
             "alibi": lambda: ar.ALiBiAttention(*_att(rng), slope=1.0),
             "rope": lambda: ar.RoPEAttention(*_att(rng), base=10.0)}[cls]()
    assert _rank(layer) == 1


def test_s4d_rank_at_most_min_n_d():
    rng = np.random.default_rng(5)
    layer = _s4d(rng, d=3)
    assert _rank(layer, n=10) == 3
    assert _rank(layer, n=2, inputs=1) == 2
    assert _rank(_s4d(rng, d=1), n=6) == 1


def test_s5_rank_is_k_n_and_heads_needed():
    rng = np.random.default_rng(6)
    for N, n in ((2, 10), (3, 10), (5, 3)):
        s5 = _s5(rng, N=N, d=3, p=3)
        ssm = s5.as_linear_ssm()
        k = lag_span_dimension(ssm.A, ssm.B, ssm.C, n)
        # Re(c a^l b) of one complex mode spans cos and sin: 2 real directions per unpaired mode
        assert s5.heads_needed(n) == k == min(2 * N, n)
        assert _rank(s5, n=n, inputs=1) == k
        assert relative_gap(ssm.lag_operators(n), s5.lag_operators(n)) < 1e-13
    # conjugate pairs with conjugate B and C columns: a real system, 2 real directions per pair
    lam = np.array([-0.3 + 1j, -0.5 + 2j])
    Bh = rng.standard_normal((2, 3)) + 1j * rng.standard_normal((2, 3))
    Ch = rng.standard_normal((3, 2)) + 1j * rng.standard_normal((3, 2))
    s5 = ar.S5(np.r_[lam, lam.conj()], np.vstack([Bh, Bh.conj()]), np.hstack([Ch, Ch.conj()]), 0.5)
    assert s5.heads_needed(10) == _rank(s5, n=10, inputs=1) == 4
    real = ar.S5(-np.array([0.2, 0.5, 0.9]), rng.standard_normal((3, 3)), rng.standard_normal((3, 3)), 0.5)
    assert real.heads_needed(10) == 3 and real.heads_needed(2) == 2


def test_hybrid_composition_and_rank_exceeds_each_layer():
    rng = np.random.default_rng(7)
    s4d = _s4d(rng, d=2)
    mha = MultiHeadAttention(rng.standard_normal((2, 3, 2)), rng.standard_normal((2, 3, 2)),
                             rng.standard_normal((2, 2, 2)), rng.standard_normal((2, 2, 2)))
    hyb = ar.Hybrid([s4d, mha])
    X = rng.standard_normal((9, 2))
    assert relative_gap(hyb.forward(X), mha.forward(s4d.forward(X))) == 0
    assert relative_gap(apply_interaction(hyb.interaction(X), X), hyb.forward(X)) < 1e-12
    r1, r2, r = _rank(s4d), _rank(mha), _rank(hyb)
    assert (r1, r2) == (2, 2) and r == 4
    three = ar.Hybrid([s4d, mha, PositionwiseLinear(rng.standard_normal((3, 2)))])
    assert relative_gap(apply_interaction(three.interaction(X), X), three.forward(X)) < 1e-12


@pytest.mark.parametrize("D", [True, False])
def test_mamba_jacobian_matches_finite_differences(D):
    rng = np.random.default_rng(8)
    m = _mamba(rng, d=3, e=4, N=3, D=D)
    X = rng.standard_normal((7, 3))
    J = m.jacobian(X)
    F = finite_difference_jacobian(m.forward, X, eps=1e-6)
    assert J.shape == (7, 7, 4, 3)
    assert np.max(np.abs(J - F)) <= 1e-6 * np.max(np.abs(F))
    # not the interaction operator: the Jacobian also differentiates Delta, B and C
    assert relative_gap(J, m.interaction(X)) > 1e-3


def test_mamba_coefficients_are_the_hidden_attention():
    rng = np.random.default_rng(9)
    m = _mamba(rng, D=False)
    X = rng.standard_normal((6, 3))
    alpha = m.coefficients(X)
    U = X @ m.W_in.T
    assert relative_gap(np.einsum("cts,sc->tc", alpha, U), m.forward(X)) < 1e-12
    assert np.all(alpha[:, np.triu_indices(6, 1)[0], np.triu_indices(6, 1)[1]] == 0)


def test_linear_attention_rows_sum_to_one_and_retention_has_no_normalisation():
    rng = np.random.default_rng(10)
    X = rng.standard_normal((8, 3))
    assert np.allclose(ar.LinearAttention(*_att(rng)).coefficients(X).sum(axis=1), 1.0)
    assert np.allclose(ar.RoPEAttention(*_att(rng)).coefficients(X).sum(axis=1), 1.0)
    ret = ar.Retention(*_att(rng), gamma=0.5)
    alpha = ret.coefficients(X)
    Q, K = X @ ret.W_Q.T, X @ ret.W_K.T
    assert relative_gap(alpha[5, 2], 0.5 ** 3 * Q[5] @ K[2]) < 1e-14


def test_rope_score_depends_on_lag_only():
    rng = np.random.default_rng(11)
    rope = ar.RoPEAttention(*_att(rng), base=3.0)
    x = rng.standard_normal(3)
    X = np.tile(x, (10, 1))
    s = rope._scores(X)
    assert relative_gap(np.diagonal(s, -2), np.full(8, s[2, 0])) < 1e-13
    assert np.ptp(np.diagonal(s, -2)) < 1e-12 and abs(s[2, 0] - s[3, 0]) > 1e-6


def test_s4d_kernel_and_extreme_dt():
    rng = np.random.default_rng(12)
    for dt in (1e-8, 1.0, 1e8):
        layer = _s4d(rng, d=2, dt=np.full(2, dt))
        X = rng.standard_normal((30, 2))
        Y = layer.forward(X)
        assert np.all(np.isfinite(Y))
        assert relative_gap(layer.convolution_forward(X), Y) <= 1e-10
        assert relative_gap(apply_interaction(layer.interaction(X), X), Y) <= 1e-10
    # tiny dt: B_bar = dt B to first order, computed without cancellation
    layer = _s4d(rng, d=2, dt=np.full(2, 1e-12))
    assert relative_gap(layer.B_bar, 1e-12 * layer.B) < 1e-10 * 1e-12


@pytest.mark.parametrize("scale", [1e-8, 1e8])
def test_extreme_input_scales(scale):
    rng = np.random.default_rng(13)
    X = rng.standard_normal((12, 3))
    degree = {"s4d": 1, "s5": 1, "retention": 3, "retention-gamma1": 3}  # f(s X) = s^degree f(X)
    for name, layer, _ in LAYERS:
        if name in degree:
            Y, Ys = layer.forward(X), layer.forward(scale * X)
            assert relative_gap(Ys / scale ** degree[name], Y) < 1e-10, name
    for name, layer, _ in LAYERS:
        try:
            Ys = layer.forward(1e8 * X)
        except ValueError as exc:
            assert "X" in str(exc)
        else:
            assert np.all(np.isfinite(Ys)), name


def test_rank_table():
    import time
    t0 = time.process_time()  # CPU time: other jobs on the machine do not count
    table = ar.rank_table(n=16, seed=0)
    assert time.process_time() - t0 < 3.0
    rows = {r.architecture: r for r in table.rows}
    assert rows["Mamba-2 SSD, 1 head"].rank == 1 and rows["Mamba-2 SSD, 3 heads"].rank == 3
    assert rows["Mamba-1 selective scan"].rank == 4
    for name in ("linear attention", "retention (RetNet)", "ALiBi softmax head", "RoPE softmax head"):
        assert rows[name].rank == 1 and rows[name].heads is None
    assert rows["LTI SSM (S5, MIMO)"].rank == rows["LTI SSM (S5, MIMO)"].heads
    assert rows["S4D (SISO per channel)"].rank == rows["S4D (SISO per channel)"].heads == 4
    assert rows["hybrid: S4D then 2-head MHA"].rank == 4
    assert rows["position-wise linear"].gradient_ratio == 0
    assert all(r.gap < 1e-12 for r in table.rows)
    text = str(table)
    assert text == str(ar.rank_table(n=16, seed=0)) and text.count("\n") == len(table.rows) + 1
    assert str(ar.rank_table(n=16, seed=1)) != text


def test_reprs():
    for name, layer, _ in LAYERS:
        assert type(layer).__name__ in repr(layer)


# ---------------------------------------------------------------------------------------------- errors

R = np.random.default_rng(20)
WQ, WK, WV = _att(R)


def _raises(pattern, f, *args, **kw):
    with pytest.raises(ValueError, match=pattern):
        f(*args, **kw)


def test_projection_errors():
    for cls, extra in ((ar.LinearAttention, {}), (ar.Retention, {"gamma": 0.5}), (ar.ALiBiAttention, {"slope": 1}),
                       (ar.RoPEAttention, {})):
        _raises("W_Q", cls, WQ[:, :, None], WK, WV, **extra)
        _raises("W_K", cls, WQ, WK[:2], WV, **extra)
        _raises("W_K", cls, WQ, WK[:, :2], WV, **extra)
        _raises("W_V", cls, WQ, WK, WV[:, :2], **extra)
        _raises("W_Q", cls, WQ + np.nan, WK, WV, **extra)
        _raises("W_V", cls, WQ, WK, WV + 1j, **extra)
        _raises("W_Q", cls, "abc", WK, WV, **extra)
        layer = cls(WQ, WK, WV, **extra)
        _raises("X", layer.forward, np.ones((4, 2)))
        _raises("X", layer.forward, np.full((4, 3), np.inf))
        _raises("X", layer.interaction, np.ones((0, 3)))
        _raises("X", layer.interaction, np.ones((20000, 3)))  # allocation guard
    _raises("feature", ar.LinearAttention, WQ, WK, WV, feature="relu")
    for g in (0, -0.1, 1.5, np.nan, "x", True):
        _raises("gamma", ar.Retention, WQ, WK, WV, gamma=g)
    _raises("theta", ar.Retention, WQ, WK, WV, gamma=0.5, theta=np.ones(3))
    _raises("theta", ar.Retention, WQ, WK, WV, gamma=0.5, theta=np.nan)
    _raises("theta", ar.Retention, WQ[:3], WK[:3], WV, gamma=0.5, theta=0.1)
    _raises("slope", ar.ALiBiAttention, WQ, WK, WV, slope=-1)
    _raises("slope", ar.ALiBiAttention, WQ, WK, WV, slope=np.inf)
    _raises("base", ar.RoPEAttention, WQ, WK, WV, base=0)
    _raises("W_Q", ar.RoPEAttention, WQ[:3], WK[:3], WV)
    ret = ar.Retention(WQ, WK, WV, gamma=0.5)
    for c in (0, -1, 2.5, None, True):
        _raises("chunk", ret.chunkwise_forward, np.ones((4, 3)), c)
    _raises("X", ar.LinearAttention(WQ, WK, WV).forward, np.full((4, 3), 1e307))
    _raises("X", ar.RoPEAttention(WQ, WK, WV).forward, np.full((4, 3), 1e200))


def test_linear_attention_normaliser_underflow_names_X():
    W = np.ones((1, 1))
    la = ar.LinearAttention(W, W, W)
    _raises("X", la.forward, np.array([[-800.0]]))
    _raises("X", la.recurrent_forward, np.array([[-800.0]]))


def test_ssm_errors():
    rng = np.random.default_rng(21)
    lam = -np.ones((2, 3)) + 1j
    B, C, dt = np.ones((2, 3)), np.ones((2, 3)), np.ones(2)
    _raises("Lambda", ar.S4D, lam * 0 + 1, B, C, dt)
    _raises("Lambda", ar.S4D, 1j * np.ones((2, 3)), B, C, dt)  # Re = 0
    _raises("Lambda", ar.S4D, lam[0], B, C, dt)
    _raises("Lambda", ar.S4D, np.full((2, 3), np.nan), B, C, dt)
    _raises("Lambda", ar.S4D, np.full((2, 3), "a"), B, C, dt)
    _raises("B", ar.S4D, lam, B[:, :2], C, dt)
    _raises("C", ar.S4D, lam, B, C[:1], dt)
    _raises("dt", ar.S4D, lam, B, C, np.zeros(2))
    _raises("dt", ar.S4D, lam, B, C, -np.ones(2))
    _raises("dt", ar.S4D, lam, B, C, np.ones(3))
    _raises("dt", ar.S4D, lam * 1e200, B, C, np.full(2, 1e200))
    s4d = ar.S4D(lam, B, C, dt)
    _raises("n", s4d.kernel, 0)
    _raises("n", s4d.kernel, 10**9)
    _raises("X", s4d.forward, np.ones((3, 3)))
    _raises("X", s4d.interaction, np.ones((10**5, 2)))
    _raises("X", s4d.convolution_forward, np.ones((3, 2)) * np.nan)
    _raises("Lambda", ar.S5, np.ones(2), np.ones((2, 3)), np.ones((1, 2)), 0.1)
    _raises("B", ar.S5, -np.ones(2), np.ones((3, 3)), np.ones((1, 2)), 0.1)
    _raises("C", ar.S5, -np.ones(2), np.ones((2, 3)), np.ones((1, 3)), 0.1)
    for bad in (0.0, -1.0, np.nan, np.ones(3), "x"):
        _raises("dt", ar.S5, -np.ones(2), np.ones((2, 3)), np.ones((1, 2)), bad)
    s5 = ar.S5(-np.ones(2), np.ones((2, 3)), np.ones((1, 2)), 0.1)
    _raises("n", s5.lag_operators, 0)
    _raises("n", s5.heads_needed, -1)
    _raises("n", s5.lag_operators, 10**9)
    _raises("X", s5.forward, np.ones((3, 2)))
    assert rng is not None


def test_selective_errors():
    rng = np.random.default_rng(22)
    m = _mamba(rng)
    args = [m.W_in, m.W_delta, m.W_B, m.W_C, m.A_log, m.D]
    names = ["W_in", "W_delta", "W_B", "W_C", "A_log", "D"]
    for k, name in enumerate(names):
        bad = list(args)
        bad[k] = args[k][None] if name == "W_in" else args[k][..., :-1]
        _raises(name, ar.Mamba, *bad)
        bad[k] = np.full_like(args[k], np.nan)
        _raises(name, ar.Mamba, *bad)
    bad = list(args)
    bad[4] = np.full_like(m.A_log, 800.0)
    _raises("A_log", ar.Mamba, *bad)
    _raises("X", m.forward, np.ones((3, 4)))
    _raises("X", m.forward, np.full((3, 3), 1e306))
    _raises("X", m.jacobian, np.ones((3000, 3)))
    _raises("X", m.coefficients, np.ones((5000, 3)))
    m2 = _mamba2(rng)
    args = [m2.W_in, m2.W_out, m2.w_a, m2.W_B, m2.W_C]
    for k, name in enumerate(["W_in", "W_out", "w_a", "W_B", "W_C"]):
        bad = list(args)
        bad[k] = args[k][:, :-1]
        _raises(name, ar.Mamba2, *bad, 3)
    _raises("heads", ar.Mamba2, *args, 4)
    _raises("heads", ar.Mamba2, *args, 0)
    _raises("w_a", ar.Mamba2, *args, 2)
    for c in (0, -3, 1.5):
        _raises("chunk", m2.ssd_forward, np.ones((4, 3)), c)
    _raises("X", m2.interaction, np.ones((10**4, 3)))
    _raises("layers", ar.Hybrid, [])
    _raises("layers", ar.Hybrid, "abc")
    _raises("layers", ar.Hybrid, [m, 5])
    _raises("layers", ar.Hybrid, [m, m])  # widths 4 -> 3 do not chain
    for bad in (0, 1, 129, "x", True):
        _raises("n", ar.rank_table, n=bad)
    _raises("seed", ar.rank_table, seed=-1)
    _raises("inputs", ar.rank_table, inputs=0)
    _raises("inputs", ar.rank_table, inputs=9)


def _rel(a, b):
    """``max |a - b| / max |b|``: relative at any scale (relative_gap is absolute below 1)."""
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


@pytest.mark.parametrize("s", [1e-8, 1e8])
@pytest.mark.parametrize("d", [1, 3])
def test_weights_at_extreme_scales_keep_every_form_in_agreement(s, d):
    """As an outside tester: weights scaled by 1e-8 or 1e8, token width 1 or 3; every form agrees
    relative to the output's own size, or the layer refuses with a message naming X."""
    g = np.random.default_rng(30 + d).standard_normal
    X = g((9, d))

    def att():
        return s * g((2, d)), s * g((2, d)), s * g((2, d))

    la, ret = ar.LinearAttention(*att()), ar.Retention(*att(), 0.7, 0.2)
    m2 = ar.Mamba2(s * g((2, d)), s * g((2, 2)), s * g((2, d)), s * g((3, d)), s * g((3, d)), 2)
    cases = [(la, [la.recurrent_forward]), (ret, [ret.recurrent_forward, lambda Z: ret.chunkwise_forward(Z, 2)]),
             (ar.ALiBiAttention(*att(), 2.0), []), (ar.RoPEAttention(*att()), []),
             (ar.Mamba(s * g((2, d)), s * g((2, 2)), s * g((3, 2)), s * g((3, 2)), g((2, 3)), s * g(2)), []),
             (m2, [lambda Z: m2.ssd_forward(Z, 4)])]
    for layer, forms in cases:
        try:
            Y = layer.forward(X)
        except ValueError as exc:
            assert "X" in str(exc) and isinstance(layer, ar.LinearAttention) and s > 1
            continue
        assert np.all(np.isfinite(Y)) and np.max(np.abs(Y)) > 0
        assert _rel(apply_interaction(layer.interaction(X), X), Y) < 1e-12, repr(layer)
        for f in forms:
            assert _rel(f(X), Y) < 1e-12, repr(layer)


@pytest.mark.parametrize("dt", [1e-8, 1e-3, 1e3, 1e8])
def test_complex_lambda_with_tiny_and_huge_dt(dt):
    g = np.random.default_rng(31).standard_normal
    X = g((20, 2))
    lam = -np.exp(g(3)) + 10j * g(3)
    s5 = ar.S5(lam, g((3, 2)) + 1j * g((3, 2)), g((2, 3)) + 1j * g((2, 3)), dt)
    s4 = ar.S4D(-np.exp(g((2, 3))) + 100j * g((2, 3)), g((2, 3)), g((2, 3)), np.full(2, dt))
    for layer, forms in ((s5, [s5.as_linear_ssm().forward]), (s4, [s4.convolution_forward])):
        Y = layer.forward(X)
        assert np.all(np.isfinite(Y)) and np.max(np.abs(Y)) > 0
        for f in [lambda Z: apply_interaction(layer.interaction(Z), Z)] + forms:
            assert _rel(f(X), Y) < 1e-10
    if dt >= 1e3:  # every mode decays within one step (A_bar ~ 0): only the lag-0 direction is left
        assert s5.heads_needed(20) == 1
        assert np.max(np.abs(s5.lag_operators(5)[1:])) < 1e-30


def test_stiff_s4d_over_256_steps():
    """Eigenvalues 16 orders apart (Re -1e-8 and -1e8) in one channel."""
    s4 = ar.S4D(np.array([[-1e-8 + 1j, -1e8 + 0j]]), np.ones((1, 2)), np.ones((1, 2)), np.array([1.0]))
    X = np.random.default_rng(32).standard_normal((256, 1))
    Y = s4.forward(X)
    assert _rel(s4.convolution_forward(X), Y) < 1e-12
    assert _rel(apply_interaction(s4.interaction(X), X), Y) < 1e-12


# ---------------------------------------------------------------------------------------------- Mamba-2's step Delta

def _segsum_by_differences(x):
    """``S[..., t, s] = sum_{r=s+1}^t x[..., r]`` for ``s <= t``, ``-inf`` above (cumsum differences)."""
    n = x.shape[-1]
    c = np.cumsum(x, axis=-1)
    S = c[..., :, None] - c[..., None, :]
    return np.where(np.tril(np.ones((n, n), dtype=bool)), S, -np.inf)


def _ssd_minimal_discrete(X, A, B, C, block_len):
    """The SSD algorithm of Dao & Gu (2024), Listing 1, written here in numpy for one sequence.

    ``X (n, h, p)`` the inputs, ``A (n, h)`` the log-decays, ``B, C (n, N)``; ``n`` a multiple
    of ``block_len``. Returns ``Y (n, h, p)``. The reference calls it with ``x * dt`` and ``A * dt``.
    """
    n, h, p = X.shape
    c, l = n // block_len, block_len
    Xc, Ac = X.reshape(c, l, h, p), A.reshape(c, l, h).transpose(2, 0, 1)  # Ac: (h, c, l)
    Bc, Cc = B.reshape(c, l, -1), C.reshape(c, l, -1)
    A_cumsum = np.cumsum(Ac, axis=-1)
    L = np.exp(_segsum_by_differences(Ac))                                  # (h, c, l, l)
    Y_diag = np.einsum("cln,csn,hcls,cshp->clhp", Cc, Bc, L, Xc)
    decay_states = np.exp(A_cumsum[..., -1:] - A_cumsum)
    states = np.einsum("cln,hcl,clhp->chpn", Bc, decay_states, Xc)
    states = np.concatenate([np.zeros((1,) + states.shape[1:]), states])
    chunk_ends = np.concatenate([np.zeros((h, 1)), A_cumsum[..., -1]], axis=-1)
    decay_chunk = np.exp(_segsum_by_differences(chunk_ends))                # (h, c + 1, c + 1)
    states = np.einsum("hzc,chpn->zhpn", decay_chunk, states)[:-1]
    Y_off = np.einsum("cln,chpn,hcl->clhp", Cc, states, np.exp(A_cumsum))
    return (Y_diag + Y_off).reshape(n, h, p)


def test_mamba2_matches_the_reference_ssd_called_with_x_dt_and_a_dt():
    """Mamba-2's reference runs ssd_minimal_discrete(x * dt, A * dt, B, C), dt = softplus(dt_proj + dt_bias)."""
    rng = np.random.default_rng(40)
    g = rng.standard_normal
    heads, P, N, d, n = 3, 2, 4, 3, 12
    m2 = ar.Mamba2(g((heads * P, d)), g((2, heads * P)), g((heads, d)), g((N, d)), g((N, d)), heads,
                   A_log=g(heads), dt_bias=g(heads))
    X = g((n, d))
    dt = np.logaddexp(0.0, X @ m2.w_a.T + m2.dt_bias)                       # (n, heads)
    A = -np.exp(m2.A_log)
    U = (X @ m2.W_in.T).reshape(n, heads, P)
    for block_len in (1, 3, 4, 12):
        Yh = _ssd_minimal_discrete(U * dt[:, :, None], A * dt, X @ m2.W_B.T, X @ m2.W_C.T, block_len)
        Y_ref = Yh.reshape(n, heads * P) @ m2.W_out.T
        assert _rel(m2.forward(X), Y_ref) < 1e-12
        assert _rel(m2.ssd_forward(X, block_len), Y_ref) < 1e-12
    assert np.allclose(m2.steps(X), dt)
    # the step multiplies the source's input: alpha[h, t, t] = dt^h_t C_t . B_t
    alpha = m2.coefficients(X)
    CB = np.einsum("tm,tm->t", X @ m2.W_C.T, X @ m2.W_B.T)
    assert _rel(np.diagonal(alpha, axis1=1, axis2=2), dt.T * CB[None]) < 1e-13
    # without the step (Delta folded into nothing) the outputs differ: dt is not 1 here
    assert np.ptp(dt) > 0.1


def test_mamba2_step_parameters_are_checked():
    rng = np.random.default_rng(41)
    m2 = _mamba2(rng)
    args = [m2.W_in, m2.W_out, m2.w_a, m2.W_B, m2.W_C, 3]
    _raises("A_log", ar.Mamba2, *args, A_log=np.zeros(2))
    _raises("A_log", ar.Mamba2, *args, A_log=np.full(3, 800.0))
    _raises("A_log", ar.Mamba2, *args, A_log=np.full(3, np.nan))
    _raises("dt_bias", ar.Mamba2, *args, dt_bias=np.zeros((3, 1)))
    _raises("dt_bias", ar.Mamba2, *args, dt_bias=np.full(3, np.inf))
    _raises("X", m2.steps, np.ones((4, 2)))


def test_shared_dynamics_give_rank_one_and_own_dynamics_rank_d_inner():
    """Rank 1 comes from channels sharing their dynamics, not from a scalar A (Chapter 5, Theorem 5.1)."""
    rng = np.random.default_rng(42)
    g = rng.standard_normal
    e, N, d = 4, 4, 3
    # channels share Delta (equal rows of W_delta) and one non-scalar diagonal A: rank 1
    shared = ar.Mamba(g((e, d)), np.repeat(g((1, e)), e, 0) / 2, g((N, e)), g((N, e)),
                      np.repeat(np.log(rng.uniform(0.5, 2.0, (1, N))), e, 0))
    assert len(set(np.round(shared.A[0], 6))) == N
    assert _rank(shared) == 1
    # a scalar A per channel, a_c I_N, with each channel's own Delta: rank d_inner
    scalar = ar.Mamba(g((e, d)), g((e, e)) / 2, g((N, e)), g((N, e)),
                      np.repeat(np.log(rng.uniform(0.5, 2.0, (e, 1))), N, 1))
    assert _rank(scalar) == e
    # the skip term D changes the rank of tied channels (it does not change the bound)
    W_delta, A_log = scalar.W_delta.copy(), scalar.A_log.copy()
    W_delta[1], A_log[1] = W_delta[0], A_log[0]
    tied = [ar.Mamba(scalar.W_in, W_delta, scalar.W_B, scalar.W_C, A_log, D)
            for D in (np.zeros(e), np.array([0.0, 1.0, 0.0, 0.0]))]
    assert [_rank(m) for m in tied] == [e - 1, e]


def test_s4d_as_linear_ssm():
    rng = np.random.default_rng(43)
    s4d = _s4d(rng, d=3, N=4)
    real = s4d.as_linear_ssm()
    assert real.A.shape == (24, 24) and real.B.shape == (24, 3) and real.C.shape == (3, 24)
    assert _rel(real.lag_operators(30), s4d.lag_operators(30)) < 1e-12
    X = rng.standard_normal((25, 3))
    assert _rel(real.forward(X), s4d.forward(X)) < 1e-12
    assert lag_span_dimension(real.A, real.B, real.C, 24) == _rank(s4d, n=24, inputs=1) == 3


def test_rank_table_markdown_parts_and_the_published_s5_row():
    table = ar.rank_table(n=16, seed=0)
    rows = {r.architecture: r for r in table.rows}
    s5 = rows["LTI SSM (S5, MIMO)"]
    assert s5.rank == s5.heads == 4  # N = 4 modes in conjugate pairs: k <= N, not 2N
    assert rows["position-wise linear"].heads == 1
    for part, header in ((None, "forms that agree"), ("ranks", "gradient ratio"), ("costs", "cost per token")):
        text = table.to_markdown(part)
        assert isinstance(text, ar.MarkdownText) and text._repr_markdown_() == text == repr(text)
        assert header in text.splitlines()[0] and text.count("\n") == len(table.rows) + 1
    assert "gradient ratio" not in table.to_markdown("costs")
    assert "NP" in rows["Mamba-2 SSD, 1 head"].cost and "d_kp" in rows["retention (RetNet)"].cost
    assert table._repr_markdown_() == str(table) == repr(table)
    _raises("part", table.to_markdown, "all")
