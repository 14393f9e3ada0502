"""Tests of the Chapter 5 exercise checks in ``ssmheads.exercises``.

For each check: a reference solution written here from the exercise text (loops, not
the vectorised formulas of ``ssmheads.exercises.ch5``) passes; stubs are "not attempted
yet"; plausible wrong answers fail, never raise, and say what was wrong; and an answer
that calls the library's own routine (when ``ssmheads.architectures`` exists) fails.
"""

import importlib.util

import numpy as np
import pytest

from ssmheads.exercises import check_retention_recurrent, check_rope_operator, check_ssd_operator
from ssmheads.exercises._common import reference_routines_off as _methods_off

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"
HAVE_ARCH = importlib.util.find_spec("ssmheads.architectures") is not None


# ------------------------------------------------------------ reference solutions, by loops
def retention_recurrent(Q, K, V, gamma, decay_new=False, decay=True, read_first=False):
    S = np.zeros((Q.shape[1], V.shape[1]))
    Y = np.zeros((Q.shape[0], V.shape[1]))
    g = gamma if decay else 1.0
    for t in range(Q.shape[0]):
        if read_first:
            Y[t] = S.T @ Q[t]
        S = g * (S + np.outer(K[t], V[t])) if decay_new else g * S + np.outer(K[t], V[t])
        if not read_first:
            Y[t] = S.T @ Q[t]
    return Y


def _rot(z, t, base):
    out = z.copy()
    dk = z.shape[0]
    for m in range(dk // 2):
        ang = t * base ** (-2 * m / dk)
        c, s = np.cos(ang), np.sin(ang)
        out[2 * m], out[2 * m + 1] = c * z[2 * m] - s * z[2 * m + 1], s * z[2 * m] + c * z[2 * m + 1]
    return out


def _rot_half(z, t, base):
    """GPT-NeoX / LLaMA's pairing (m, m + d_k/2)."""
    out = z.copy()
    dk = z.shape[0]
    h = dk // 2
    for m in range(h):
        ang = t * base ** (-2 * m / dk)
        c, s = np.cos(ang), np.sin(ang)
        out[m], out[m + h] = c * z[m] - s * z[m + h], s * z[m] + c * z[m + h]
    return out


def rope_interaction(W_Q, W_K, W_V, X, base, causal=True, rotate=True, scale=True, rotate_keys_only=False,
                     rotate_queries_only=False, rot=None):
    rot = rot or _rot
    n, dk = X.shape[0], W_Q.shape[0]
    W = np.zeros((n, n) + W_V.shape)
    for i in range(n):
        q = W_Q @ X[i]
        q = rot(q, i, base) if rotate and not rotate_keys_only else q
        js = range(i + 1) if causal else range(n)
        s = np.array([q @ (rot(W_K @ X[j], j, base) if rotate and not rotate_queries_only else W_K @ X[j])
                      for j in js])
        s = s / np.sqrt(dk) if scale else s
        a = np.exp(s - s.max())
        a /= a.sum()
        for j, aj in zip(js, a):
            W[i, j] = aj * W_V
    return W


def ssd_operator(a, dt, B, C, V, early=False, causal=True, dt_at="s", shifted=False, swap=False):
    H, n = a.shape
    W = np.zeros((n, n) + V.shape[1:])
    for t in range(n):
        for s in range(n if not causal else t + 1):
            for h in range(H):
                if shifted:
                    L = np.prod(a[h, s:t]) if s <= t else 1.0
                else:
                    L = np.prod(a[h, s + (0 if early else 1): t + 1]) if s <= t else 1.0
                step = {"s": dt[h, s], "t": dt[h, t], None: 1.0}[dt_at]
                score = C[s] @ B[t] if swap else C[t] @ B[s]
                W[t, s] += L * step * score * V[h]
    return W


# ------------------------------------------------------------ right answers pass
@pytest.mark.parametrize("check,answer", [(check_retention_recurrent, retention_recurrent),
                                          (check_rope_operator, rope_interaction),
                                          (check_ssd_operator, ssd_operator)])
def test_reference_passes(check, answer):
    result = check(answer)
    assert result, str(result)
    assert result.status == PASSED and "Chapter 5" in str(result)


@pytest.mark.parametrize("check", [check_retention_recurrent, check_rope_operator, check_ssd_operator])
def test_stubs_are_not_attempted(check):
    def stub(*args):
        ...
    assert check(None).status == NOT_ATTEMPTED
    assert check(stub).status == NOT_ATTEMPTED
    assert check(42).status == FAILED


# ------------------------------------------------------------ plausible wrong answers fail, with a hint
def _retention_rescaled(Q, K, V, gamma, python_floats=False):
    """S'_t = S'_(t-1) + gamma^(-t) k_t v_t^T, y_t = gamma^t S'_t^T q_t: right on short sequences."""
    S = np.zeros((Q.shape[1], V.shape[1]))
    Y = np.zeros((Q.shape[0], V.shape[1]))
    with np.errstate(all="ignore"):
        for t in range(Q.shape[0]):
            up = gamma ** (-t) if python_floats else np.float64(gamma) ** (-t)
            S = S + up * np.outer(K[t], V[t])
            Y[t] = (gamma ** t) * (S.T @ Q[t])
    return Y


def _retention_state_transposed_read(Q, K, V, gamma):
    """y_t = S_t q_t with S_t = gamma S_(t-1) + k_t v_t^T (d_k x p): a shape error when d_k != p."""
    S = np.zeros((Q.shape[1], V.shape[1]))
    Y = np.zeros((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        S = gamma * S + np.outer(K[t], V[t])
        Y[t] = S @ Q[t]
    return Y


def _retention_state_p_by_dk(Q, K, V, gamma):
    """A state started p x d_k: k_t v_t^T (d_k x p) broadcasts it to d_k x d_k when p = 1, and the
    error comes only when y_t is written."""
    S = np.zeros((V.shape[1], Q.shape[1]))
    Y = np.zeros((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        S = gamma * S + np.outer(K[t], V[t])
        Y[t] = S.T @ Q[t]
    return Y


def test_retention_rescaled_form_passes_short_cases_only():
    """The gamma^(-t) rescaling is right algebra: it fails only on the long case, with a hint."""
    result = check_retention_recurrent(_retention_rescaled)
    assert result.status == FAILED and "n=1100" in result.message and "overflows" in result.message, str(result)


@pytest.mark.parametrize("wrong,hint", [
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g, decay_new=True), "current token is decayed"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g, decay=False), "no decay"),
    (lambda Q, K, V, g: (Q @ K.T) @ V, "causal"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g, read_first=True), "read before the update"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g)[:, :1], "expected"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g) + 1e-6, "differ"),
    (lambda Q, K, V, g: (1 - g) * retention_recurrent(Q, K, V, g), "moving average"),
    (lambda Q, K, V, g: retention_recurrent(Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32),
                                            np.float32(g)).astype(np.float32), "float32"),
    (lambda Q, K, V, g: _retention_rescaled(Q, K, V, g), "gamma^(-t) overflows"),
    (lambda Q, K, V, g: _retention_rescaled(Q, K, V, float(g), python_floats=True), "gamma^(-t) overflows"),
    (lambda Q, K, V, g: _retention_state_transposed_read(Q, K, V, g), "d_k x p"),
    (_retention_state_p_by_dk, "d_k x p"),
])
def test_retention_wrong_answers(wrong, hint):
    result = check_retention_recurrent(wrong)
    assert result.status == FAILED and hint in result.message, str(result)


@pytest.mark.parametrize("kw,hint", [(dict(causal=False), "not causal"), (dict(rotate=False), "not rotated"),
                                     (dict(scale=False), "sqrt(d_k)"), (dict(rotate_keys_only=True), "only the keys are rotated"),
                                     (dict(rotate_queries_only=True), "only the queries are rotated"),
                                     (dict(rot=_rot_half), "rotate-half"),
                                     (dict(rot=lambda z, t, b: _rot(z, -t, b)), "turns the wrong way"),
                                     (dict(rot=lambda z, t, b: _rot(z, t, b ** 0.5)), "not base^(-m/d_k)")])
def test_rope_wrong_answers(kw, hint):
    result = check_rope_operator(lambda *args: rope_interaction(*args, **kw))
    assert result.status == FAILED and hint in result.message, str(result)


def _in_float32(answer):
    """``answer`` returning float32 (``cast=False``), or computed in float32 and returned as float64."""
    def low(*args, cast=False):
        out = np.asarray(answer(*args), dtype=np.float32)
        return out.astype(np.float64) if cast else out
    return low


@pytest.mark.parametrize("check,answer", [(check_rope_operator, rope_interaction),
                                          (check_ssd_operator, ssd_operator)])
def test_single_precision_is_named(check, answer):
    """A float32 array is refused with the reason; float32 inside gets 17 digits and the hint."""
    low = _in_float32(answer)
    result = check(low)
    assert result.status == FAILED and "float32" in result.message and "float64" in result.message, str(result)
    result = check(lambda *args: low(*args, cast=True))
    assert result.status == FAILED and "single precision (float32)?" in result.message, str(result)
    assert "a difference of" in result.message, str(result)


def test_rope_transposed_value_map_fails():
    result = check_rope_operator(lambda W_Q, W_K, W_V, X, b: rope_interaction(W_Q, W_K, W_V, X, b) * 1.001)
    assert result.status == FAILED


@pytest.mark.parametrize("kw,hint", [(dict(early=True), "one step early"), (dict(causal=False), "causal"),
                                     (dict(dt_at="t"), "read at the target"), (dict(dt_at=None), "left out"),
                                     (dict(shifted=True), "run over s .. t-1"), (dict(swap=True), "C_s . B_t")])
def test_ssd_wrong_answers(kw, hint):
    result = check_ssd_operator(lambda *args: ssd_operator(*args, **kw))
    assert result.status == FAILED and hint in result.message, str(result)


def test_ssd_one_head_only_fails():
    """Summing only the first head (a plausible slip with H = 2) is caught."""
    result = check_ssd_operator(lambda a, dt, B, C, V: ssd_operator(a[:1], dt[:1], B, C, V[:1]))
    assert result.status == FAILED


def test_student_exception_is_feedback():
    def broken(*args):
        raise ZeroDivisionError("oops")
    result = check_ssd_operator(broken)
    assert result.status == FAILED and "ZeroDivisionError" in result.message


# ------------------------------------------------------------ the library's routines are off while the answer runs
@pytest.mark.skipif(not HAVE_ARCH, reason="ssmheads.architectures not present yet")
def test_library_retention_is_switched_off():
    from ssmheads import architectures as arch

    def via_library(Q, K, V, gamma):
        n, dk = Q.shape
        p = V.shape[1]
        X = np.hstack([Q, K, V])
        d = X.shape[1]
        eye = np.eye(d)
        layer = arch.Retention(eye[:dk], eye[dk:2 * dk], eye[2 * dk:], gamma)
        return layer.recurrent_forward(X)

    result = check_retention_recurrent(via_library)
    assert result.status == FAILED and "write it yourself" in result.message, str(result)
    # and the routine works again afterwards
    eye = np.eye(3)
    arch.Retention(eye[:2], eye[:2], eye, 0.9).recurrent_forward(np.ones((4, 3)))


@pytest.mark.skipif(not HAVE_ARCH, reason="ssmheads.architectures not present yet")
@pytest.mark.parametrize("method", ["interaction", "coefficients"])
def test_library_rope_is_switched_off(method):
    from ssmheads import architectures as arch

    def via_library(W_Q, W_K, W_V, X, base):
        layer = arch.RoPEAttention(W_Q, W_K, W_V, base=base)
        if method == "interaction":
            return layer.interaction(X)
        return layer.coefficients(X)[:, :, None, None] * W_V

    result = check_rope_operator(via_library)
    assert result.status == FAILED and "write it yourself" in result.message, str(result)


def test_methods_off_restores_on_error():
    import ssmheads.exercises.ch5 as ch5
    before = ch5._rotate.__code__
    with pytest.raises(RuntimeError, match="write it yourself"):
        with _methods_off([("exercises.ch5", "_rotate")]):
            ch5._rotate(np.ones((2, 2)), 10.0)
    assert ch5._rotate.__code__ is before
    ch5._rotate(np.ones((2, 2)), 10.0)


# ------------------------------------------------------------ the library's private helpers are off too
def _via_decay(Q, K, V, gamma):
    from ssmheads import architectures as arch
    eye = np.eye(Q.shape[1])
    D = arch.Retention(eye, eye, eye, gamma)._decay(Q.shape[0])
    return (D * (Q @ K.T)) @ V


def _via_operator_from_scalar(Q, K, V, gamma):
    from ssmheads import architectures as arch
    n = Q.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    D = np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0)
    W = arch._operator_from_scalar(D * (Q @ K.T), np.eye(V.shape[1]))
    return np.einsum("ijab,jb->ia", W, V)


def _via_scores(W_Q, W_K, W_V, X, base):
    from ssmheads import architectures as arch
    S = arch.RoPEAttention(W_Q, W_K, W_V, base=base)._scores(X)
    S = np.where(np.tril(np.ones(S.shape, bool)), S, -np.inf)
    a = np.exp(S - S.max(axis=1, keepdims=True))
    return (a / a.sum(axis=1, keepdims=True))[:, :, None, None] * W_V


def _via_causal_softmax(W_Q, W_K, W_V, X, base):
    from ssmheads import architectures as arch
    n, dk = X.shape[0], W_Q.shape[0]
    ang = np.arange(n)[:, None] * base ** (-2.0 * np.arange(dk // 2) / dk)
    def rot(Z):
        out = np.empty_like(Z)
        out[:, 0::2] = np.cos(ang) * Z[:, 0::2] - np.sin(ang) * Z[:, 1::2]
        out[:, 1::2] = np.sin(ang) * Z[:, 0::2] + np.cos(ang) * Z[:, 1::2]
        return out
    S = rot(X @ W_Q.T) @ rot(X @ W_K.T).T / np.sqrt(dk)
    return arch._causal_softmax(S)[:, :, None, None] * W_V


def _via_segsum(a, dt, B, C, V):
    from ssmheads import architectures as arch
    L = np.exp(arch._segsum(np.log(a))) * dt[:, None, :]
    return np.einsum("hts,ts,hpd->tspd", L, C @ B.T, V)


def _via_retention_block(Q, K, V, gamma):
    """Retention's parallel block with Q, K given: alpha = gamma^(i-j) q_i.k_j."""
    from ssmheads import architectures as arch
    eye = np.eye(Q.shape[1])
    return arch.Retention(eye, eye, eye, gamma)._block((Q, K), 0, Q.shape[0]) @ V


def _via_masked_softmax(W_Q, W_K, W_V, X, base):
    from ssmheads import architectures as arch
    n, dk = X.shape[0], W_Q.shape[0]
    ang = np.arange(n)[:, None] * base ** (-2.0 * np.arange(dk // 2) / dk)
    def rot(Z):
        out = np.empty_like(Z)
        out[:, 0::2] = np.cos(ang) * Z[:, 0::2] - np.sin(ang) * Z[:, 1::2]
        out[:, 1::2] = np.sin(ang) * Z[:, 0::2] + np.cos(ang) * Z[:, 1::2]
        return out
    S = rot(X @ W_Q.T) @ rot(X @ W_K.T).T / np.sqrt(dk)
    return arch._masked_softmax(S, np.tril(np.ones((n, n), bool)))[:, :, None, None] * W_V


def _via_queries_keys(W_Q, W_K, W_V, X, base):
    from ssmheads import architectures as arch
    Q, K = arch.RoPEAttention(W_Q, W_K, W_V, base=base)._queries_keys(X)
    S = np.where(np.tril(np.ones((X.shape[0],) * 2, bool)), Q @ K.T / np.sqrt(W_Q.shape[0]), -np.inf)
    a = np.exp(S - S.max(axis=1, keepdims=True))
    return (a / a.sum(axis=1, keepdims=True))[:, :, None, None] * W_V


def _via_head_coefficients(W_Q, W_K, W_V, X, base):
    from ssmheads import architectures as arch
    return arch._head_coefficients(arch.RoPEAttention(W_Q, W_K, W_V, base=base), X)[:, :, None, None] * W_V


@pytest.mark.skipif(not HAVE_ARCH, reason="ssmheads.architectures not present yet")
@pytest.mark.parametrize("check,answer", [(check_retention_recurrent, _via_decay),
                                          (check_retention_recurrent, _via_operator_from_scalar),
                                          (check_retention_recurrent, _via_retention_block),
                                          (check_rope_operator, _via_scores),
                                          (check_rope_operator, _via_causal_softmax),
                                          (check_rope_operator, _via_masked_softmax),
                                          (check_rope_operator, _via_queries_keys),
                                          (check_rope_operator, _via_head_coefficients),
                                          (check_ssd_operator, _via_segsum)])
def test_library_private_helpers_are_switched_off(check, answer):
    result = check(answer)
    assert result.status == FAILED and "write it yourself" in result.message, str(result)
    # the same answer is right once the helpers are back: the failure came from switching them off
    import ssmheads.exercises.ch5 as mod
    saved = (mod.RETENTION_ROUTINES, mod.ROPE_ROUTINES, mod.SSD_ROUTINES)
    try:
        mod.RETENTION_ROUTINES = mod.ROPE_ROUTINES = mod.SSD_ROUTINES = ()
        assert check(answer).status == PASSED
    finally:
        mod.RETENTION_ROUTINES, mod.ROPE_ROUTINES, mod.SSD_ROUTINES = saved
