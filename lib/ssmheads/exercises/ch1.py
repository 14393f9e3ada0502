"""Checks of the Chapter 1 exercises (the unified operator)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..models import MultiHeadAttention
from ..systems import random_attention
from ._common import CheckResult, _Fail, _numeric, _run
from .checking import compare


def _ema_reference(n: int, d: int, gamma: float) -> np.ndarray:
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    coeff = np.where(lag >= 0, (1 - gamma) * gamma ** np.maximum(lag, 0), 0.0)
    return coeff[:, :, None, None] * np.eye(d)


_INDICES = ("indices (i, j, row, col), 0-based: output position i, source position j, "
           "then the entry of the block W_ij")


def _float64(got, shape: tuple, what: str, **options) -> np.ndarray:
    """``_numeric``, after refusing a float array with fewer digits than float64 (float32, float16)."""
    precision = ("{what}: your array holds {dtype} (about {digits} digits), and the check compares entries to 1e-9 "
                 "(relative to the largest entry when that exceeds 1): build it in float64, NumPy's default")
    return _numeric(got, shape, what, float64=True, messages={"precision": precision}, **options)


def _entry_message(got: np.ndarray, expected: np.ndarray, where: tuple) -> str:
    """The text "entry ... should be X; got Y", with enough digits to show the difference."""
    want, have = float(expected[where]), float(got[where])
    if f"{want:.6g}" != f"{have:.6g}":
        return f"entry {where} should be {want:.6g}; got {have:.6g}"
    return f"entry {where} should be {want:.17g}; got {have:.17g} (a difference of {have - want:.2g})"


def _compare_ema(got, expected: np.ndarray, what: str, gamma: float, rtol: float = 1e-9) -> None:
    """Like ``_compare``, but says how entries are indexed and insists on causality."""
    negative = (f"; gamma = {gamma} is negative here (any real gamma is allowed): gamma ** (i - j) with an integer "
                "power is fine, but log(gamma) or a fractional power is not") if gamma < 0 else ""
    got = _float64(got, expected.shape, what, nonfinite_hint=negative)
    n = expected.shape[0]
    compare(got, expected, what, rtol=rtol, note=f" ({_INDICES})", error=_Fail,
            first=np.triu(np.ones((n, n), bool), 1)[:, :, None, None],  # source j after output i
            hints=[(lambda got, where: where[1] > where[0],
                    "; this block lies above the diagonal (j > i): the EMA never reads later tokens, so its "
                    "operator must be causal, with W_ij = 0 for j > i")])


def check_ema_operator(ema_operator: Callable[[int, int, float], np.ndarray]) -> CheckResult:
    """Chapter 1, exercise "EMA operator": the operator of the exponential moving average.

    Used in Chapter 1, Exercise 1.1 (exponential moving average).

    The layer is ``y_i = (1 - gamma) sum_{j <= i} gamma^(i-j) x_j``. The answer is a
    function ``ema_operator(n, d, gamma)`` returning its operator, shape ``(n, n, d, d)``.
    ``gamma`` may be any real number; one case is negative. A wrong entry is reported
    with its 0-based index ``(i, j, row, col)``; a wrong block above the diagonal is
    reported first, with the reminder that the operator is causal. An answer in float32
    is told that the check needs float64.
    """
    cases = [(f"ema_operator({n}, {d}, {g})", (n, d, g),
              lambda out, label, n=n, d=d, g=g: _compare_ema(out, _ema_reference(n, d, g), label, g))
             for n, d, g in ((1, 1, 0.5), (4, 2, 0.5), (7, 3, 0.9), (5, 2, -0.3))]
    return _run("Chapter 1: EMA operator", ema_operator, cases,
                "blocks (1 - gamma) gamma^(i-j) I for j <= i and 0 above, on 4 cases")


def _mlp_case(seed: int, n: int, d: int, h: int, p: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((h, d)), rng.standard_normal((p, h)), rng.standard_normal((n, d))


def check_mlp_operator(mlp_operator: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> CheckResult:
    """Chapter 1, exercise "MLP operator": an interaction form of the ReLU MLP ``y_i = W2 relu(W1 x_i)``.

    Used in Chapter 1, Exercise 1.2.

    The answer is a function ``mlp_operator(W1, W2, X)`` with ``W1 (h, d)``,
    ``W2 (p, h)``, ``X (n, d)``, returning ``W (n, n, p, d)`` with
    ``W_ii = W2 diag(1[W1 x_i > 0]) W1`` and zero blocks off the diagonal. An answer
    that reproduces the output with nonzero off-diagonal blocks (another interaction
    form of the same map) is told that it is not the token-local form, and a
    token-local answer that reproduces the output with other diagonal blocks is told
    that its blocks are not the gate form.
    """
    def test(args):
        W1, W2, X = args
        gate = (X @ W1.T > 0).astype(float)  # (n, h)
        expected = np.zeros((X.shape[0], X.shape[0], W2.shape[0], W1.shape[1]))
        idx = np.arange(X.shape[0])
        expected[idx, idx] = np.einsum("ph,ih,hd->ipd", W2, gate, W1)

        def check(out, label):
            got = _float64(out, expected.shape, label)
            y = np.maximum(X @ W1.T, 0) @ W2.T
            if not np.allclose(np.einsum("ijpd,jd->ip", got, X), y, rtol=1e-9, atol=1e-9):
                raise _Fail(f"{label}: applying your operator to X does not give the MLP's output "
                            "W2 relu(W1 x_i)")
            n = X.shape[0]
            off = ~np.eye(n, dtype=bool)
            off_norms = np.where(off, np.sqrt(np.einsum("ijpd,ijpd->ij", got, got)), 0.0)
            if off_norms.max() > 1e-9 * max(1.0, float(np.abs(expected).max())):
                i, j = (int(k) for k in np.unravel_index(np.argmax(off_norms), off_norms.shape))
                raise _Fail(f"{label}: your operator reproduces the MLP's output on X, but it is not "
                            f"the token-local form W_ii = W2 D(x_i) W1 with zero blocks off the diagonal: "
                            f"block ({i}, {j}) (0-based, i != j) has norm {off_norms[i, j]:.3g}. Any map "
                            "with F(0) = 0 has many interaction forms; the exercise asks for this one")
            scale = max(1.0, float(np.abs(expected).max()))
            bad = np.abs(got - expected) > 1e-9 * scale
            if np.any(bad):
                where = tuple(int(k) for k in np.argwhere(bad)[0])
                raise _Fail(f"{label}: your operator reproduces the MLP's output on X and is token-local, but "
                            f"its diagonal block W_{where[0]}{where[0]} is not W2 D(x_i) W1 "
                            f"({_entry_message(got, expected, where)}; {_INDICES}). Adding to "
                            "W_ii any matrix N_i with N_i x_i = 0 keeps the output; the exercise asks for the "
                            "gate form, D(x_i) = diag(1[W1 x_i > 0])")
        return check

    cases = []
    for seed, (n, d, h, p) in ((0, (3, 2, 4, 2)), (1, (6, 3, 5, 2)), (2, (5, 4, 8, 3))):
        args = _mlp_case(seed, n, d, h, p)
        cases.append((f"mlp_operator(W1, W2, X) with n={n}, d={d}, h={h}, p={p}", args, test(args)))
    return _run("Chapter 1: MLP operator", mlp_operator, cases,
                "blocks W2 D(x_i) W1 on the diagonal; reproduces the MLP on 3 cases")


def _compare_residual(out, mha: MultiHeadAttention, X: np.ndarray, expected: np.ndarray, label: str) -> None:
    """The natural operator of ``MHA(X) + X``, with a hint for each usual slip."""
    got = _float64(out, expected.shape, label)
    n, d = X.shape
    identity = np.eye(n)[:, :, None, None] * np.eye(d)
    scale = max(1.0, float(np.abs(expected).max()))

    def close(a, b):
        return float(np.abs(a - b).max()) <= 1e-9 * scale

    if close(got, expected):
        return
    if close(got + identity, expected):
        raise _Fail(f"{label}: your operator is off by delta_ij I, the residual connection's own operator: "
                    "add the identity to the diagonal blocks W_ii")
    if close(got, expected - identity + np.eye(d)):
        raise _Fail(f"{label}: the identity is added to every block W_ij; the residual connection "
                    "y_i = ... + x_i adds it to the diagonal blocks (i == j) only")
    if close(got, expected - identity + np.tril(np.ones((n, n)))[:, :, None, None] * np.eye(d)):
        raise _Fail(f"{label}: the identity is added to every block W_ij with j <= i; the residual "
                    "connection y_i = ... + x_i adds it to the diagonal blocks (i == j) only")
    where = tuple(int(k) for k in np.argwhere(np.abs(got - expected) > 1e-9 * scale)[0])
    entry = f"{label}: {_entry_message(got, expected, where)} ({_INDICES})"
    y = mha.forward(X) + X
    if np.allclose(np.einsum("ijpd,jd->ip", got, X), y, rtol=1e-9, atol=1e-9 * scale):
        raise _Fail(f"{entry}. Your operator reproduces MHA(X) + X on X, but it is another interaction "
                    "form of that map, not its natural operator sum_h alpha^h_ij V_h + delta_ij I "
                    "(mha.interaction(X) plus the residual's identity on the diagonal blocks)")
    raise _Fail(f"{entry}. Applying your operator to X does not give MHA(X) + X: check the "
                "attention part (mha.interaction(X)) and the residual's identity, delta_ij I")


def check_residual_operator(residual_operator: Callable[[MultiHeadAttention, np.ndarray], np.ndarray]) -> CheckResult:
    """Chapter 1, exercise "residual attention operator": the operator of attention with a residual connection, ``y = MHA(X) + X``.

    Used in Chapter 1, Exercise 1.3.

    The answer is a function ``residual_operator(mha, X)`` returning ``(n, n, d, d)``,
    the natural operator ``sum_h alpha^h_ij V_h + delta_ij I``; the layer must have
    ``p = d``. A missing identity, one added to every block or to every block with
    ``j <= i``, and another interaction form of the same map each get their own
    message.
    """
    cases = []
    for seed, (H, d, n) in enumerate(((1, 2, 3), (2, 3, 6), (4, 2, 9))):
        mha = random_attention(H, d, seed=seed)
        X = np.random.default_rng(seed + 10).standard_normal((n, d))
        expected = mha.interaction(X) + np.eye(n)[:, :, None, None] * np.eye(d)
        cases.append((f"residual_operator(mha, X) with {H} head(s), d={d}, n={n}", (mha, X),
                      lambda out, label, m=mha, X=X, e=expected: _compare_residual(out, m, X, e, label)))
    return _run("Chapter 1: residual attention operator", residual_operator, cases,
                "equals sum_h alpha^h_ij V_h + delta_ij I on 3 layers")


