"""Checks of the Chapter 5 exercises (the architectures people use).

The reference values are computed here from the formulas of Chapter 5, in a few
lines of numpy each, so that the checks do not depend on
``ssmheads.architectures``; while the student's answer runs, the library's own
routines for the same quantity, and the private helpers they are built from, are
switched off (``_common.reference_routines_off``).
"""

from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ._common import CheckResult, _Fail, _is_stub, _numeric, _on_its_own, _run
from .checking import compare

# (module, dotted name) of the library routines that would compute the answers, public
# methods and the private helpers they are built from (a student could call those too).
# The single heads share the block-by-block parallel form: ``_head_coefficients`` and
# ``_head_forward`` loop over the blocks that each head's ``_block`` fills.
_OPERATOR_HELPERS = (("architectures", "_operator_from_scalar"), ("architectures", "_scalar_head_operator"),
                     ("architectures", "_head_coefficients"), ("architectures", "_head_forward"),
                     ("architectures", "_head_blocks"))
RETENTION_ROUTINES = (("architectures", "Retention.forward"), ("architectures", "Retention.recurrent_forward"),
                      ("architectures", "Retention.chunkwise_forward"), ("architectures", "Retention.interaction"),
                      ("architectures", "Retention.coefficients"), ("architectures", "Retention._coefficients"),
                      ("architectures", "Retention._decay"), ("architectures", "Retention._block"),
                      *_OPERATOR_HELPERS)
ROPE_ROUTINES = (("architectures", "RoPEAttention.forward"), ("architectures", "RoPEAttention.interaction"),
                 ("architectures", "RoPEAttention.coefficients"), ("architectures", "RoPEAttention._coefficients"),
                 ("architectures", "RoPEAttention._scores"), ("architectures", "RoPEAttention._queries_keys"),
                 ("architectures", "RoPEAttention._parts"), ("architectures", "RoPEAttention._block"),
                 ("architectures", "_causal_softmax"), ("architectures", "_masked_softmax"),
                 ("architectures", "_rotate"), *_OPERATOR_HELPERS)
SSD_ROUTINES = (("architectures", "Mamba2.forward"), ("architectures", "Mamba2.ssd_forward"),
                ("architectures", "Mamba2.interaction"), ("architectures", "Mamba2.coefficients"),
                ("architectures", "Mamba2._coefficients"), ("architectures", "_ssd_chunked"),
                ("architectures", "_segsum"), *_OPERATOR_HELPERS)


# ---------------------------------------------------------------- retention
def _retention_parallel(Q, K, V, gamma, read_first=False):
    """(D * Q K^T) V with D_ts = gamma^(t-s), s <= t; ``read_first``: y_t read before the update
    (D_ts = gamma^(t-1-s) for s < t, the current token missing)."""
    n = Q.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :] - (1 if read_first else 0)
    D = np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0)
    return (D * (Q @ K.T)) @ V


def _with_retention_hints(answer):
    """``answer`` with a hint added to two errors it may raise: a state rescaled by ``gamma^(-t)``
    that overflows (Python floats raise ``OverflowError``), and a state used with the wrong shape."""
    if _is_stub(answer) or not callable(answer):
        return answer

    @functools.wraps(answer)
    def hinted(*args):
        try:
            return answer(*args)
        except OverflowError as exc:
            raise OverflowError(f"{exc}; on a long sequence gamma^(-t) overflows (0.5^(-1100) is beyond the "
                                "largest float): run S_t = gamma S_(t-1) + k_t v_t^T as it stands") from None
        except ValueError as exc:
            # "broadcast": a p x d_k state updated by k_t v_t^T broadcasts to d_k x d_k and fails
            # only when y_t is written
            if any(word in str(exc) for word in ("mismatch", "shapes", "aligned", "broadcast")):
                raise ValueError(f"{exc} (the state S_t = gamma S_(t-1) + k_t v_t^T is d_k x p, and "
                                 "y_t = S_t^T q_t has p entries)") from None
            raise

    return hinted


def check_retention_recurrent(retention_recurrent: Callable) -> CheckResult:
    """Chapter 5, exercise "retention as a recurrence".

    Used in Chapter 5, Exercise 5.1.

    The answer is a function ``retention_recurrent(Q, K, V, gamma)`` taking the (already
    rotated) queries ``Q (n, d_k)``, keys ``K (n, d_k)``, values ``V (n, p)`` and a decay
    ``0 < gamma <= 1``, and returning ``Y (n, p)`` computed by the recurrence
    ``S_t = gamma S_{t-1} + k_t v_t^T``, ``y_t = S_t^T q_t``. It must equal the parallel
    form ``(D * Q K^T) V`` with ``D_ts = gamma^(t-s)`` for ``s <= t``.

    The check compares values only, so it cannot see how they were computed. The exercise
    asks for ``n`` steps on a ``d_k x p`` state, never the ``n x n`` weights, as a matrix or
    one row at a time; its graded version adds a case of 40000 tokens, on which an answer
    that forms them runs out of memory or time.
    """
    rng = np.random.default_rng(51)
    cases = []
    for n, dk, p, gamma in ((1, 2, 1, 0.9), (6, 2, 3, 0.9), (9, 4, 2, 0.5), (7, 3, 3, 1.0), (12, 2, 2, 0.97),
                            (1100, 2, 2, 0.5)):
        Q, K, V = rng.standard_normal((n, dk)), rng.standard_normal((n, dk)), rng.standard_normal((n, p))
        expected = _retention_parallel(Q, K, V, gamma)

        def test(out, label, e=expected, g=gamma, args=(Q, K, V)):
            try:
                raw = np.asarray(out, dtype=float)
            except (TypeError, ValueError):
                raw = None
            if raw is not None and raw.shape == e.shape and not np.all(np.isfinite(raw)) and e.shape[0] > 1000:
                raise _Fail(f"{label}: your array contains NaN or infinity on this long sequence; a state "
                            "rescaled by gamma^(-t) overflows there: run S_t = gamma S_(t-1) + k_t v_t^T as it stands")
            got = _numeric(out, e.shape, label)
            scale = max(1.0, float(np.abs(e).max()))
            err = float(np.max(np.abs(got - e)))
            if err <= 1e-9 * scale:
                return
            Qa, Ka, Va = args
            hint = ""
            if g < 1 and np.max(np.abs(got - g * e)) <= 1e-9 * scale:
                hint = "; the current token is decayed too: decay the old state, then add k_t v_t^T"
            elif g < 1 and np.max(np.abs(got - (1 - g) * e)) <= 1e-9 * scale:
                hint = ("; the new token is scaled by (1 - gamma), as in a moving average: retention adds "
                        "k_t v_t^T itself, S_t = gamma S_(t-1) + k_t v_t^T")
            elif g < 1 and np.max(np.abs(got - _retention_parallel(Qa, Ka, Va, 1.0))) <= 1e-9 * scale:
                hint = "; no decay is applied: S_t = gamma S_(t-1) + k_t v_t^T"
            elif np.max(np.abs(got - (Qa @ Ka.T) @ Va)) <= 1e-9 * scale:
                hint = "; the sum runs over every s, also s > t: retention is causal"
            elif np.max(np.abs(got - _retention_parallel(Qa, Ka, Va, g, read_first=True))) <= 1e-9 * scale:
                hint = "; y_t is read before the update: add k_t v_t^T first, then y_t = S_t^T q_t"
            elif err <= 1e-4 * scale:
                hint = (f"; they agree only to {err / scale:.0e} of their size: single precision (float32)? "
                        "Compute in float64")
            raise _Fail(f"{label}: the outputs differ from the parallel form (D * QK^T) V{hint}")
        cases.append((f"retention_recurrent with n={n}, d_k={dk}, p={p}, gamma={gamma}", (Q, K, V, gamma), test))
    answer = _on_its_own(_with_retention_hints(retention_recurrent), RETENTION_ROUTINES)
    return _run("Chapter 5: retention as a recurrence", answer, cases,
                "equals the parallel form on 6 cases, including n = 1,\n  gamma = 1 and a long one "
                "(n = 1100, gamma = 0.5)")


def _float64(out, shape: tuple, what: str) -> np.ndarray:
    """``_numeric``, after refusing a float array with fewer digits than float64 (float32, float16)."""
    precision = ("{what}: your array holds {dtype} (about {digits} digits), and the check compares entries to 1e-9 "
                 "(relative to the largest entry when that exceeds 1): compute in float64, NumPy's default")
    return _numeric(out, shape, what, float64=True, messages={"precision": precision})


def _compare64(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    """``_compare``, with what a low-precision answer needs to hear: an entry whose 6 digits agree
    with the expected ones is printed with 17 digits and the difference, and a difference below
    1e-4 of the entries' size suggests single precision (as the retention check does)."""
    compare(got, expected, what, single_precision=True, note="", error=_Fail)


# ---------------------------------------------------------------- RoPE
def _rotate(Z, base, pairs="interleaved", sign=1.0, freq=2.0):
    """Rotate pairs (2m, 2m+1) of row t of Z by t * base^(-2m/d_k) (the defaults; the other values
    are plausible slips: ``pairs="half"`` pairs (m, m + d_k/2), ``sign=-1`` turns the other way,
    ``freq=1`` uses base^(-m/d_k))."""
    n, dk = Z.shape
    theta = base ** (-freq * np.arange(dk // 2) / dk)
    ang = sign * np.arange(n)[:, None] * theta[None, :]
    c, s = np.cos(ang), np.sin(ang)
    first, second = (slice(0, None, 2), slice(1, None, 2)) if pairs == "interleaved" else \
        (slice(0, dk // 2), slice(dk // 2, dk))
    out = np.empty_like(Z)
    out[:, first] = c * Z[:, first] - s * Z[:, second]
    out[:, second] = s * Z[:, first] + c * Z[:, second]
    return out


def _rope_operator(W_Q, W_K, W_V, X, base, causal=True, rotate=True, scale=True, rotate_q=True, rotate_k=True,
                   **turn):
    n, dk = X.shape[0], W_Q.shape[0]
    Q, K = X @ W_Q.T, X @ W_K.T
    if rotate:
        Q = _rotate(Q, base, **turn) if rotate_q else Q
        K = _rotate(K, base, **turn) if rotate_k else K
    S = Q @ K.T / (np.sqrt(dk) if scale else 1.0)
    if causal:
        S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    A = np.exp(S - S.max(axis=1, keepdims=True))
    A /= A.sum(axis=1, keepdims=True)
    return A[:, :, None, None] * W_V[None, None]


def check_rope_operator(rope_interaction: Callable) -> CheckResult:
    """Chapter 5, exercise "a RoPE head is one head".

    Used in Chapter 5, Exercise 5.2.

    The answer is a function ``rope_interaction(W_Q, W_K, W_V, X, base)`` returning the
    operator ``W (n, n, p, d)`` of one causal softmax head with rotary queries and keys:
    ``W_ij = a_ij W_V`` with ``a_ij = softmax_{j<=i}((R_i q_i)^T (R_j k_j) / sqrt(d_k))`` and
    ``R_t`` rotating coordinate pair ``(2m, 2m+1)`` by the angle ``t * base^(-2m/d_k)``
    (positions ``t = 0, ..., n-1``).
    """
    rng = np.random.default_rng(52)
    cases = []
    for n, d, dk, p, base in ((1, 2, 2, 1, 10000.0), (5, 3, 2, 2, 10.0), (8, 2, 4, 3, 100.0),
                              (6, 4, 4, 2, 10000.0)):
        W_Q, W_K = rng.standard_normal((dk, d)), rng.standard_normal((dk, d))
        W_V, X = rng.standard_normal((p, d)), rng.standard_normal((n, d))
        args = (W_Q, W_K, W_V, X, base)
        expected = _rope_operator(*args)
        wrongs = (("the head is not causal: position i may only attend to j <= i", dict(causal=False)),
                  ("the queries and keys are not rotated", dict(rotate=False)),
                  ("only the queries are rotated: rotate each key by its own position too", dict(rotate_k=False)),
                  ("only the keys are rotated: rotate each query by its own position too", dict(rotate_q=False)),
                  ("the scores are not divided by sqrt(d_k)", dict(scale=False)),
                  ("coordinates are paired as (m, m + d_k/2), the rotate-half convention of GPT-NeoX and LLaMA; "
                   "this exercise pairs (2m, 2m+1), as RoFormer", dict(pairs="half")),
                  ("the rotation turns the wrong way: R_t maps (x, y) to (x cos - y sin, x sin + y cos) with the "
                   "angle +t base^(-2m/d_k)", dict(sign=-1.0)),
                  ("pair m turns at the frequency base^(-2m/d_k), not base^(-m/d_k)", dict(freq=1.0)))

        def test(out, label, e=expected, args=args, wrongs=wrongs):
            got = _float64(out, e.shape, label)
            scale = max(1.0, float(np.abs(e).max()))
            if np.max(np.abs(got - e)) <= 1e-9 * scale:
                return
            for hint, kw in wrongs:
                w = _rope_operator(*args, **kw)
                if np.max(np.abs(w - e)) > 1e-9 * scale and np.max(np.abs(got - w)) <= 1e-9 * scale:
                    raise _Fail(f"{label}: {hint}")
            _compare64(got, e, label)
        cases.append((f"rope_interaction with n={n}, d={d}, d_k={dk}, p={p}, base={base:g}", args, test))
    return _run("Chapter 5: a RoPE head is one head", _on_its_own(rope_interaction, ROPE_ROUTINES), cases,
                "the operator is right on 4 heads, including n = 1")


# ---------------------------------------------------------------- SSD
def _ssd_operator(a, dt, B, C, V, start=1, dt_at="s", shifted=False, swap=False):
    """sum_h L^h_ts dt^h_s (C_t . B_s) V_h, L^h_ts = prod_{r=s+start}^{t} a^h_r (start=1, dt_at="s" is right).

    ``dt_at`` is where the step is read: "s" (the source, right), "t" (the target) or None (left out);
    ``shifted`` takes the decays a_s ... a_(t-1) instead; ``swap`` the scores C_s . B_t.
    """
    H, n = a.shape
    logs = np.log(a)
    cum = np.cumsum(logs, axis=1)                                   # (H, n)
    t, s = np.arange(n)[:, None], np.arange(n)[None, :]
    seg = cum[:, :, None] - cum[:, None, :]                         # sum_{r=s+1}^t
    if start == 0:
        seg = seg + logs[:, None, :]
    if shifted:
        seg = seg + logs[:, None, :] - logs[:, :, None]
    L = np.where(t >= s, np.exp(np.where(t >= s, seg, 0.0)), 0.0)   # (H, n, n)
    if dt_at == "s":
        L = L * dt[:, None, :]
    elif dt_at == "t":
        L = L * dt[:, :, None]
    G = B @ C.T if swap else C @ B.T                                # (n, n): C_t . B_s
    return np.einsum("hts,ts,hpd->tspd", L, G, V)


def check_ssd_operator(ssd_operator: Callable) -> CheckResult:
    """Chapter 5, exercise "the rank of a two-head SSD layer".

    Used in Chapter 5, Exercise 5.3 (the rank of a two-head SSD layer).

    The answer is a function ``ssd_operator(a, dt, B, C, V)`` taking the per-head decays
    ``a (H, n)`` in (0, 1), the per-head steps ``dt (H, n)`` (positive), the
    input-dependent ``B (n, N)`` and ``C (n, N)`` (shared by the heads) and the heads'
    value maps ``V (H, p, d)``, and returning the operator ``W (n, n, p, d)``,
    ``W_ts = sum_h (prod_{r=s+1}^t a^h_r) dt^h_s (C_t . B_s) V_h`` for ``s <= t``.
    """
    rng = np.random.default_rng(53)
    cases = []
    for H, n, N, p, d in ((1, 1, 3, 2, 2), (2, 6, 4, 2, 3), (2, 9, 1, 3, 2), (3, 7, 16, 2, 2)):
        a, dt = rng.uniform(0.3, 0.95, (H, n)), rng.uniform(0.2, 2.0, (H, n))
        B, C = rng.standard_normal((n, N)), rng.standard_normal((n, N))
        V = rng.standard_normal((H, p, d))
        args = (a, dt, B, C, V)
        expected = _ssd_operator(*args)
        wrongs = (("the decay product starts one step early: L_ts = a_(s+1) ... a_t, and L_tt = 1",
                   dict(start=0)),
                  ("the step is read at the target t: the input written at s is scaled by dt_s",
                   dict(dt_at="t")),
                  ("the step dt is left out: Mamba-2 writes dt_s B_s u_s^T into the state", dict(dt_at=None)),
                  ("the decays run over s .. t-1: L_ts = a_(s+1) ... a_t, the decays of the tokens after s up to "
                   "and including t", dict(shifted=True)),
                  ("the scores are C_s . B_t: W_ts uses C_t . B_s (C read at the target t, B written at the "
                   "source s)", dict(swap=True)))

        def test(out, label, e=expected, args=args, wrongs=wrongs):
            got = _float64(out, e.shape, label)
            scale = max(1.0, float(np.abs(e).max()))
            if np.max(np.abs(got - e)) <= 1e-9 * scale:
                return
            for hint, kw in wrongs:
                w = _ssd_operator(*args, **kw)
                if np.max(np.abs(w - e)) > 1e-9 * scale and np.max(np.abs(got - w)) <= 1e-9 * scale:
                    raise _Fail(f"{label}: {hint}")
            causal = np.tril(np.ones(e.shape[:2]))[:, :, None, None]
            if np.max(np.abs(got * causal - e)) <= 1e-9 * scale:
                raise _Fail(f"{label}: W_ts must be 0 for s > t (the layer is causal)")
            _compare64(got, e, label)
        cases.append((f"ssd_operator with H={H}, n={n}, N={N}, p={p}, d={d}", args, test))
    return _run("Chapter 5: the rank of a two-head SSD layer", _on_its_own(ssd_operator, SSD_ROUTINES), cases,
                "the operator is right on 4 layers with 1 to 3 heads and N from 1 to 16")
