"""Checks of the Chapter 4 exercises (the gradient highway)."""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._common import CheckResult, _compare, _Fail, _numeric, _on_its_own, _run

#: The library routines that compute a Jacobian row or a gradient profile; switched off while
#: a student's ``ssm_profile`` runs (Exercise 4.3 asks for it without ``ssmheads.gradients``).
PROFILE_ROUTINES = (("gradients", "gradient_profile"), ("gradients", "jacobian_row"),
                    ("gradients", "_jacobian_row"), ("gradients", "jacobian"))


def _one_head(seed: int, d: int = 2, d_k: int = 3):
    from ..systems import random_attention

    return random_attention(1, d, d_k=d_k, seed=seed, scale=1.5)


def _compare_jacobian(out, expected: np.ndarray, label: str) -> None:
    """Like ``_compare``, with a hint that names the path: the query path lives on ``j == i`` only."""
    got = _numeric(out, expected.shape, label)
    scale = max(1.0, float(np.abs(expected).max()))
    bad = np.abs(got - expected) > 1e-7 * scale
    if not np.any(bad):
        return
    n = expected.shape[0]
    future = bad & np.triu(np.ones((n, n), bool), 1)[:, :, None, None]
    # report a block with j > i first, so that a non-causal answer gets the causal hint
    i, j, p, d = (int(v) for v in np.argwhere(future if np.any(future) else bad)[0])
    if n == 1:
        hint = ("with one token the weight is 1 and y_1 = v_1, so both score paths, which carry "
                "v_j - y_i (centred at the output), vanish: the Jacobian is V")
    elif i == j:
        hint = ("this is a diagonal block (j == i): besides the value and key paths it carries the "
                "query path sum_m a_im (v_m - y_i) (W_Q^T k_m)^T / sqrt(d_k)")
    elif j > i:
        hint = "the head is causal: y_i does not depend on x_j for j > i, so this block is zero"
    else:
        hint = ("an off-diagonal block (j < i) has the value path a_ij V and the key path "
                "a_ij (v_j - y_i) (W_K^T q_i)^T / sqrt(d_k) only")
    raise _Fail(f"{label}: entry ({i}, {j}, {p}, {d}) should be {expected[i, j, p, d]:.6g}; got "
                f"{got[i, j, p, d]:.6g}; {hint}")


def check_head_jacobian(head_jacobian: Callable) -> CheckResult:
    """Chapter 4, exercise "the Jacobian of a head": Proposition 4.1 by hand.

    Used in Chapter 4, Exercise 4.1.

    The answer is a function ``head_jacobian(W_Q, W_K, V, X)`` for one causal softmax head
    with ``W_Q, W_K (d_k, d)``, value map ``V (p, d)`` and input ``X (n, d)``, returning
    ``J (n, n, p, d)`` with ``J[i, j] = d y_i / d x_j``.
    """
    from ..gradients import jacobian

    cases = []
    for seed, n in ((0, 1), (1, 4), (2, 7)):
        head = _one_head(seed)
        X = np.random.default_rng(seed + 20).standard_normal((n, head.d))
        expected = jacobian(head, X)
        args = (head.W_Q[0], head.W_K[0], head.value_maps()[0], X)
        cases.append((f"head_jacobian on a head with n={n}", args,
                      lambda out, label, e=expected: _compare_jacobian(out, e, label)))
    return _run("Chapter 4: the Jacobian of a head", head_jacobian, cases,
                "value, key and query paths agree with the exact Jacobian on 3 inputs")


def check_highway_input(make_input: Callable) -> CheckResult:
    """Chapter 4, exercise "build the highway": Theorem 4.1's input by hand.

    Used in Chapter 4, Exercise 4.2.

    The answer is a function ``make_input(W_Q, W_K, n, a, key)`` returning ``X (n, d)`` on
    which a causal softmax head with these query and key maps gives the last position
    weight ``a`` on position ``key``. When every case passes, the message also reports the
    smallest ratio ``||d y_n / d x_key|| / (a sigma_2(V))`` on the answer's inputs (with the
    heads' value maps ``V``): the theorem says it is at least 1.
    """
    from ..gradients import jacobian_row

    ratios = []

    def expect(head, n, a, key):
        def test(out, label):
            X = _numeric(out, (n, head.d), label)
            with np.errstate(all="ignore"):
                weight = float(head.coefficients(X)[0, n - 1, key])
            if not np.isfinite(weight) or abs(weight - a) > 1e-8:
                raise _Fail(f"{label}: the weight of the last position on position {key} should be {a}; "
                            f"on your input it is {weight:.6g} (the last position's softmax runs over all n "
                            "tokens, itself included: each zero token adds e^0 = 1 to the denominator, the "
                            "query adds e^(s_nn), and the key's score is its q^T k / sqrt(d_k))")
            try:
                J = jacobian_row(head, X)[key]
            except ValueError:  # an input too large for the Jacobian: report no ratio
                return
            s2 = np.linalg.svd(head.value_maps()[0], compute_uv=False)[1]
            ratios.append(float(np.linalg.norm(J, 2) / (a * s2)))
        return test

    cases = []
    for seed, n, a, key in ((3, 2, 0.3, 0), (4, 16, 0.9, 0), (5, 64, 0.5, 40), (6, 300, 0.99, 7)):
        head = _one_head(seed)
        cases.append((f"make_input(n={n}, a={a}, key={key})", (head.W_Q[0], head.W_K[0], n, a, key),
                      expect(head, n, a, key)))
    result = _run("Chapter 4: build the highway", make_input, cases,
                  "the key gets exactly weight a on 4 heads, lengths and positions")
    if result and len(ratios) == len(cases):
        result = CheckResult(result.exercise, result.status,
                             result.message + f";\n  on your inputs ||dy_n/dx_key|| / (a sigma_2(V)) >= "
                             f"{min(ratios):.2f} (Theorem 4.1: 1)")
    return result


def _profile_test(expected: np.ndarray, frobenius: np.ndarray, shifted: np.ndarray):
    """The comparison of Exercise 4.3, with hints for three common slips."""
    def test(out, label):
        got = _numeric(out, expected.shape, label)
        scale = max(1.0, float(np.abs(expected).max()))

        def near(other):
            return float(np.abs(got - other).max()) <= 1e-9 * scale

        if near(expected):
            return
        hint = ""
        if near(expected[::-1]):
            hint = "; your profile is reversed: entry l is for the token l steps back, ||K_l|| = ||C A^l B||"
        elif near(frobenius):
            hint = "; that is the Frobenius norm: the exercise asks for the spectral norm (ord=2)"
        elif near(shifted):
            hint = "; your lags are off by one: lag 0 is K_0 = C B (start from B, not A B)"
        try:
            _compare(got, expected, label, rtol=1e-9)
        except _Fail as failure:
            raise _Fail(f"{failure}{hint}") from None
    return test


def check_ssm_gradient_profile(ssm_profile: Callable) -> CheckResult:
    """Chapter 4, exercise "an SSM's gradient profile".

    Used in Chapter 4, Exercise 4.3.

    The answer is a function ``ssm_profile(A, B, C, n)`` returning the spectral norms
    ``||d y_n / d x_{n-l}||`` for ``l = 0, ..., n-1`` (positions ``1..n``; in code, row
    ``n - 1`` and column ``n - 1 - l`` of the Jacobian): shape ``(n,)``. The library's
    Jacobian and profile routines (``PROFILE_ROUTINES``) are switched off while it runs.
    """
    from ..models import lag_operators
    from ..systems import jordan, random_stable, rotation

    cases = []
    for label, s, n in (("rotation(1.0, rho=0.9)", rotation(1.0, 0.9), 12),
                        ("jordan([(0.9, 3)])", jordan([(0.9, 3)]), 20),
                        ("random_stable(5, 2, 3)", random_stable(5, 2, 3, seed=2), 9)):
        lags = lag_operators(s.A, s.B, s.C, n + 1)
        expected = np.linalg.norm(lags[:n], ord=2, axis=(1, 2))
        frobenius = np.linalg.norm(lags[:n], axis=(1, 2))
        shifted = np.linalg.norm(lags[1:], ord=2, axis=(1, 2))
        cases.append((f"ssm_profile on {label}, n={n}", (s.A, s.B, s.C, n),
                      _profile_test(expected, frobenius, shifted)))
    return _run("Chapter 4: an SSM's gradient profile", _on_its_own(ssm_profile, PROFILE_ROUTINES), cases,
                "the norms ||C A^l B|| are right on 3 systems, including a Jordan block")


def check_delay_loss(delay_loss: Callable) -> CheckResult:
    """Chapter 4, exercise "the exact loss of the delay task".

    Used in Chapter 4, Exercise 4.8.

    The answer is a function ``delay_loss(K, L)`` taking an impulse response ``K (n,)`` and
    a delay ``0 <= L < n`` and returning the expected squared error of ``y_i = x_{i-L}`` on a
    white-noise sequence of length ``n``, divided by its value for ``K = 0``: a float (its
    derivation is the exercise).
    """
    from ..gradients import _check_delay

    def expected(K, L):
        n = K.shape[0]
        _check_delay(L, n)
        lags = np.arange(n)
        return np.array(np.sum((n - lags) * (K - (lags == L)) ** 2) / (n - L))

    def test(K, L):
        n = K.shape[0]
        lags = np.arange(n)
        right = float(expected(K, L))
        unweighted = float(np.sum((K - (lags == L)) ** 2))  # no weights n - l, no normalisation
        sq = (K - (lags == L)) ** 2
        off_by_one = [float(np.sum((n - lags + s) * sq) / norm)   # weights n - l +- 1
                      for s in (1, -1) for norm in (n - L + s, n - L) if norm != 0]

        def check(out, label):
            got = float(_numeric(out, (), label))
            if abs(got - right) <= 1e-9 * max(1.0, abs(right)):
                return
            hint = ""
            if abs(right - unweighted) > 1e-9 * max(1.0, abs(right)) and (
                    abs(got - unweighted) <= 1e-9 * max(1.0, unweighted)
                    or abs(got - unweighted * (n - L) / n) <= 1e-9 * max(1.0, unweighted)):
                hint = ("; your answer treats every lag alike: lag l is seen by the n - l positions "
                        "i >= l, so it carries the weight n - l (and K = 0 gives n - L)")
            elif abs(got - right * (n - L)) <= 1e-9 * max(1.0, abs(right * (n - L))):
                hint = "; divide by the value for K = 0, which is n - L"
            elif any(abs(got - value) <= 1e-9 * max(1.0, abs(value)) for value in off_by_one):
                hint = ("; your weights are off by one: position i (0-based) sees the lags 0..i, so lag l "
                        "is seen by the n - l positions i = l, ..., n - 1")
            raise _Fail(f"{label}: the loss should be {right:.6g}; got {got:.6g}{hint}")
        return check

    rng = np.random.default_rng(7)
    cases = []
    for label, K, L in (("no model, n=10, L=3", np.zeros(10), 3),
                        ("an exact delay, n=6, L=2", np.eye(6)[2], 2),
                        ("a random kernel, n=9, L=0", rng.standard_normal(9), 0),
                        ("a random kernel, n=12, L=11", rng.standard_normal(12), 11),
                        ("a decaying kernel, n=20, L=5", 0.8 ** np.arange(20), 5)):
        cases.append((f"delay_loss({label})", (K.copy(), L), test(K, L)))
    return _run("Chapter 4: the exact loss of the delay task", delay_loss, cases,
                "weights n - l and normalisation by n - L right on 5 kernels,\n  including no model and an "
                "exact delay")
