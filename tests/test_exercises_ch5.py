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


def rope_interaction(W_Q, W_K, W_V, X, base, causal=True, rotate=True, scale=True, rotate_keys_only=False):
    n, dk = X.shape[0], W_Q.shape[0]
    W = np.zeros((n, n) + W_V.shape)
    for i in range(n):
        q = W_Q @ X[i]
        q = _rot(q, i, base) if rotate and not rotate_keys_only else q
        js = range(i + 1) if causal else range(n)
        s = np.array([q @ (_rot(W_K @ X[j], j, base) if rotate else W_K @ X[j]) for j in js])
        s = s / np.sqrt(dk) if scale else s
        a = np.exp(s - s.max())
        a /= a.sum()
        for j, aj in zip(js, a):
            W[i, j] = aj * W_V
    return W


def ssd_operator(a, dt, B, C, V, early=False, causal=True, dt_at="s"):
    H, n = a.shape
    W = np.zeros((n, n) + V.shape[1:])
    for t in range(n):
        for s in range(n if not causal else t + 1):
            for h in range(H):
                L = np.prod(a[h, s + (0 if early else 1): t + 1]) if s <= t else 1.0
                step = {"s": dt[h, s], "t": dt[h, t], None: 1.0}[dt_at]
                W[t, s] += L * step * (C[t] @ B[s]) * V[h]
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
@pytest.mark.parametrize("wrong,hint", [
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g, decay_new=True), "current token is decayed"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g, decay=False), "no decay"),
    (lambda Q, K, V, g: (Q @ K.T) @ V, "causal"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g, read_first=True), "read before the update"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g)[:, :1], "expected"),
    (lambda Q, K, V, g: retention_recurrent(Q, K, V, g) + 1e-6, "differ"),
])
def test_retention_wrong_answers(wrong, hint):
    result = check_retention_recurrent(wrong)
    assert result.status == FAILED and hint in result.message, str(result)


@pytest.mark.parametrize("kw,hint", [(dict(causal=False), "not causal"), (dict(rotate=False), "not rotated"),
                                     (dict(scale=False), "sqrt(d_k)"), (dict(rotate_keys_only=True), "should be")])
def test_rope_wrong_answers(kw, hint):
    result = check_rope_operator(lambda *args: rope_interaction(*args, **kw))
    assert result.status == FAILED and hint in result.message, str(result)


def test_rope_transposed_value_map_fails():
    result = check_rope_operator(lambda W_Q, W_K, W_V, X, b: rope_interaction(W_Q, W_K, W_V, X, b) * 1.001)
    assert result.status == FAILED


@pytest.mark.parametrize("kw,hint", [(dict(early=True), "one step early"), (dict(causal=False), "causal"),
                                     (dict(dt_at="t"), "read at the target"), (dict(dt_at=None), "left out")])
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


@pytest.mark.skipif(not HAVE_ARCH, reason="ssmheads.architectures not present yet")
@pytest.mark.parametrize("check,answer", [(check_retention_recurrent, _via_decay),
                                          (check_retention_recurrent, _via_operator_from_scalar),
                                          (check_rope_operator, _via_scores),
                                          (check_rope_operator, _via_causal_softmax),
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
