"""instructors/hidden_tests.py: the hidden Otter tests of the 19 auto-checked exercises.

Otter copies each hidden test function's source alone into a test cell and calls it
with the student's function, so every test here runs a hidden test the same way:
its source, dedented, exec'd in a fresh namespace ``{}``. For every label:

* the book's answer (the function its solution cell defines, via
  ``make_otter.reference_answer``) passes, in well under 0.5 s;
* the untouched stub, a missing function (None), a function that raises, and one
  planted plausible mistake fail with an AssertionError naming the student's function;
* for several exercises, a wrong answer that PASSES the library's visible check
  fails the hidden test (the hidden cases add something);
* the hidden cases are not the visible ones, and the hidden tests' expected values
  agree with the library (checked here, outside the hidden tests).
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import inspect
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

import ssmheads as sh
from ssmheads import exercises
from ssmheads.exercises import _common

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import exercise_catalogue as catalogue  # noqa: E402  (tools/ is not a package)
import make_otter  # noqa: E402

_spec = importlib.util.spec_from_file_location("hidden_tests", ROOT / "instructors" / "hidden_tests.py")
hidden_tests = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(hidden_tests)

HIDDEN = hidden_tests.HIDDEN_TESTS
LABELS = list(HIDDEN)
PAIRS = [(label, fn) for label, fns in HIDDEN.items() for fn in fns]
PAIR_IDS = [f"{label}:{fn.__name__}" for label, fn in PAIRS]

_REFERENCES: dict = {}


def reference(label):
    """The book's answer to ``label`` (cached: reading the chapters takes a moment)."""
    if label not in _REFERENCES:
        _REFERENCES[label] = make_otter.reference_answer(label)
    return _REFERENCES[label]


def fresh(fn):
    """The hidden test as Otter runs it: its source alone, exec'd in an empty namespace."""
    namespace = {}
    exec(compile(textwrap.dedent(inspect.getsource(fn)), f"<hidden test {fn.__name__}>", "exec"), namespace)
    return namespace[fn.__name__]


def student_name(fn) -> str:
    (name,) = inspect.signature(fn).parameters
    return name


def fails(fn, answer) -> str:
    """Run the exec'd hidden test on ``answer``; return its assertion message (the test must fail)."""
    with pytest.raises(AssertionError) as info:
        fresh(fn)(answer)
    return str(info.value)


# ------------------------------------------------------------------ the registry


def test_the_registry_has_exactly_the_auto_checked_exercises():
    checked = [e.label for e in catalogue.read_exercises(ROOT / "chapters") if e.checked]
    assert len(checked) == 19
    assert sorted(HIDDEN) == sorted(checked)
    assert all(isinstance(fns, list) and fns for fns in HIDDEN.values())


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_each_test_takes_the_students_function_by_its_name_and_says_which_exercise(label, fn):
    assert student_name(fn) == reference(label).__name__
    assert fn.__doc__ and fn.__doc__.lstrip().startswith(label)


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_each_test_stands_alone_and_never_calls_a_check(label, fn):
    source = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(source)
    assert len(tree.body) == 1 and isinstance(tree.body[0], ast.FunctionDef)
    assert "check_" not in source
    # every module it uses is imported inside its body: the exec'd source alone defines it
    assert callable(fresh(fn))


# ------------------------------------------------------------------ the book's answer passes, fast


# CPU seconds of this process (a loaded machine stretches the wall time, not the work). Exercise
# 5.1's last case runs the answer on 40,000 tokens, long enough that an n x n matrix or a
# quadratic loop cannot finish (measured: 0.47-0.62 s CPU for the book's loop and the reference).
CPU_BUDGET = {"ex-retention-recurrent": 1.0}


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_the_books_answer_passes_in_well_under_half_a_second(label, fn):
    test, answer = fresh(fn), reference(label)
    test(answer)                      # a first run imports what the test needs
    budget = CPU_BUDGET.get(label, 0.5)
    start = time.process_time()
    test(answer)
    elapsed = time.process_time() - start
    assert elapsed < 2 * budget, (f"{fn.__name__} took {elapsed:.2f} s of CPU (budget {budget} s, asserted "
                                  "with a 2x margin)")


# ------------------------------------------------------------------ stubs, missing functions, errors


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_the_untouched_stub_fails_with_a_clear_message(label, fn):
    message = fails(fn, lambda *args: None)
    assert student_name(fn) in message and "returned None" in message


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_a_missing_function_fails_with_a_clear_message(label, fn):
    message = fails(fn, None)
    assert student_name(fn) in message and "not defined" in message


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_an_answer_that_raises_is_reported_not_a_traceback(label, fn):
    def broken(*args):
        raise ValueError("boom")

    message = fails(fn, broken)
    assert student_name(fn) in message and "raised ValueError: boom" in message


ARRAY_LABELS = ["ex-ema", "ex-mlp", "ex-residual", "ex-head-jacobian", "ex-build-highway", "ex-ssm-profile",
                "ex-retention-recurrent", "ex-rope-rank", "ex-ssd-rank"]


@pytest.mark.parametrize("label", ARRAY_LABELS)
def test_a_wrong_shape_or_nan_is_reported(label):
    right = reference(label)

    def with_nan(*args):
        out = np.array(right(*args), dtype=float)
        out.flat[-1] = np.nan
        return out

    def with_an_extra_axis(*args):
        return np.asarray(right(*args))[..., None]

    for fn in HIDDEN[label]:
        message = fails(fn, with_nan)
        assert student_name(fn) in message and "NaN" in message and "index" in message
        message = fails(fn, with_an_extra_axis)
        assert student_name(fn) in message and "expected shape" in message


# ------------------------------------------------------------------ planted mistakes

def _ema_without_factor(n, d, gamma):
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    return np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0)[:, :, None, None] * np.eye(d)


def _mlp_gate_at_zero(W1, W2, X):
    """D(x) with 1[W1 x >= 0]: differs only where a preactivation is exactly 0."""
    n = X.shape[0]
    W = np.zeros((n, n, W2.shape[0], W1.shape[1]))
    W[np.arange(n), np.arange(n)] = np.einsum("ph,ih,hd->ipd", W2, (X @ W1.T >= 0).astype(float), W1)
    return W


def _residual_forgotten(mha, X):
    return mha.interaction(X)


def _lag_span_off_by_one(A, B, C, n):
    """Lags C A^l B for l = 1, ..., n instead of l = 0, ..., n-1."""
    lags, M = [], np.asarray(A, float) @ np.asarray(B, float)
    for _ in range(n):
        lags.append((C @ M).ravel())
        M = A @ M
    s = np.linalg.svd(np.array(lags), compute_uv=False)
    return 0 if s[0] == 0 else int(np.sum(s > 1e-10 * s[0]))


def _four_dimensional_system():
    A = np.diag([0.9, 0.5, -0.3, 0.1])
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]])   # the fourth direction e_1 e_2^T
    C = np.array([[1.0, 0.0, 1.0, 1.0], [0.0, 1.0, 1.0, 0.0]])
    return A, B, C


def _short_plateau_system():
    """Chapter 2's plateau, k = 1, 1, 2: one step too short."""
    s = sh.systems.plateau()
    return s.A, s.B, s.C


def _heads_inconsistent_vec(K):
    """vec column-major, unvec row-major: wrong entries when p, d > 1."""
    n, p, d = K.shape
    G = K.transpose(0, 2, 1).reshape(n, p * d).T
    U, s, _ = np.linalg.svd(G, full_matrices=False)
    k = int(np.sum(s > 1e-10 * s[0]))
    values = U[:, :k].T.reshape(k, p, d)
    return np.einsum("hpd,lpd->hl", values, K), values


def _tail_weights_not_square_rooted(K, H, weights):
    G = K.reshape(K.shape[0], -1).T * weights
    return float(np.sum(np.linalg.svd(G, compute_uv=False)[H:] ** 2))


def _count_with_default_bounds(K):
    """linprog's default bounds phi >= 0: misses functionals with negative entries."""
    from scipy.optimize import linprog

    G = K.reshape(K.shape[0], -1)
    norms = np.linalg.norm(G, axis=1)
    G = G[norms > 1e-12 * norms.max()]
    k = np.linalg.matrix_rank(G)
    lp = linprog(np.zeros(G.shape[1]), A_ub=-G, b_ub=-np.ones(len(G)), method="highs")
    return int(k) if lp.status == 0 else int(k) + 1


def _quaternion_nan_at_zero(K, X):
    """The book's construction without the guard for a zero token (0/0 = NaN there)."""
    V = reference("ex-quaternion-heads").__globals__["UNITS"]
    n = K.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    Kx = np.einsum("ijpd,jd->ijp", K[np.clip(lag, 0, None)], X)
    with np.errstate(all="ignore"):
        alpha = np.einsum("hpd,jd,ijp->hij", V, X, Kx) / np.einsum("jd,jd->j", X, X)
    return np.where(lag >= 0, alpha, 0.0), V


def _jacobian_without_query_path(W_Q, W_K, V, X):
    n, dk = X.shape[0], W_Q.shape[0]
    q, k = X @ W_Q.T, X @ W_K.T
    s = np.where(np.tril(np.ones((n, n), bool)), q @ k.T / np.sqrt(dk), -np.inf)
    a = np.exp(s - s.max(axis=1, keepdims=True))
    a /= a.sum(axis=1, keepdims=True)
    P = X @ V.T
    Y = a @ P
    return a[:, :, None, None] * V + (a[:, :, None] * (P[None] - Y[:, None]))[..., None] * (q @ W_K / np.sqrt(dk))[:, None, None, :]


def _highway_without_self_score(W_Q, W_K, n, a, key):
    """Theorem 4.1's input with log(n - 1) for log(n - 2 + e^(s_nn)): forgets the last token's own score."""
    M = W_K.T @ W_Q
    u = np.linalg.svd(M)[2][0]
    w, dk = M @ u, W_Q.shape[0]
    t = np.sqrt(dk) / np.linalg.norm(w) * (np.log(a / (1 - a)) + np.log(n - 1))
    X = np.zeros((n, W_Q.shape[1]))
    X[-1], X[key] = u, t * w / np.linalg.norm(w)
    return X


def _profile_frobenius(A, B, C, n):
    norms, M = [], np.asarray(B, dtype=float)
    for _ in range(n):
        norms.append(np.linalg.norm(C @ M))
        M = A @ M
    return np.array(norms)


def _delay_unweighted(K, L):
    K = np.asarray(K, float)
    return float(np.sum((K - (np.arange(K.shape[0]) == L)) ** 2))


def _retention_decays_current_token(Q, K, V, gamma):
    S = np.zeros((Q.shape[1], V.shape[1]))
    Y = np.empty((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        S = gamma * (S + np.outer(K[t], V[t]))
        Y[t] = S.T @ Q[t]
    return Y


def _rope_half_split(W_Q, W_K, W_V, X, base):
    """GPT-NeoX's pairing (m, m + d_k/2) instead of the book's (2m, 2m+1)."""
    n, dk = X.shape[0], W_Q.shape[0]
    half = dk // 2
    ang = np.arange(n)[:, None] * base ** (-np.arange(0, dk, 2) / dk)
    cos, sin = np.cos(ang), np.sin(ang)

    def rotate(Z):
        a, b = Z[:, :half], Z[:, half:]
        return np.concatenate([cos * a - sin * b, sin * a + cos * b], axis=1)

    S = rotate(X @ W_Q.T) @ rotate(X @ W_K.T).T / np.sqrt(dk)
    S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
    w = np.exp(S - S.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True))[:, :, None, None] * W_V


def _ssd_one_step_early(a, dt, B, C, V):
    """L_ts = a_s ... a_t (one decay too many): the decay of the source's own step is applied."""
    n = a.shape[1]
    cum = np.cumsum(np.log(a), axis=1)
    t, s = np.arange(n)[:, None], np.arange(n)[None, :]
    seg = np.where(t >= s, cum[:, :, None] - cum[:, None, :] + np.log(a)[:, None, :], -np.inf)
    return np.einsum("hts,ts,hpd->tspd", np.exp(seg) * dt[:, None, :], C @ B.T, V)


def _floor_equal_weights(n, L, H):
    """(4 - H)/4: every tap weighted alike (forgets that lag l is seen by n - l positions)."""
    return max(4 - H, 0) / 4


def _jacobian_norm_frobenius(forward, X, i, j, eps=1e-6):
    cols = []
    for c in range(X.shape[1]):
        step = np.zeros_like(X)
        step[j, c] = eps
        cols.append((forward(X + step)[i] - forward(X - step)[i]) / (2 * eps))
    return float(np.linalg.norm(np.stack(cols, axis=1)))


PLANTED = {  # label: (the mistake, the answer)
    "ex-ema": ("no factor 1 - gamma", _ema_without_factor),
    "ex-mlp": ("gate 1[W1 x >= 0] instead of > 0", _mlp_gate_at_zero),
    "ex-residual": ("the residual identity forgotten", _residual_forgotten),
    "ex-lag-span-by-hand": ("lags l = 1..n instead of 0..n-1", _lag_span_off_by_one),
    "ex-three-dims": ("a system with k = min(n, 4)", _four_dimensional_system),
    "ex-longer-plateau": ("Chapter 2's plateau, k = 1, 1, 2", _short_plateau_system),
    "ex-build-heads": ("vec column-major, unvec row-major", _heads_inconsistent_vec),
    "ex-tail": ("weights w_l instead of sqrt(w_l) on the rows", _tail_weights_not_square_rooted),
    "ex-count-nonneg": ("linprog's default bounds phi >= 0", _count_with_default_bounds),
    "ex-quaternion-heads": ("no guard for a zero token (NaN)", _quaternion_nan_at_zero),
    "ex-head-jacobian": ("the query path missing", _jacobian_without_query_path),
    "ex-build-highway": ("the last token's own score forgotten", _highway_without_self_score),
    "ex-ssm-profile": ("Frobenius instead of spectral norms", _profile_frobenius),
    "ex-delay-loss": ("every lag weighted alike, not normalised", _delay_unweighted),
    "ex-retention-recurrent": ("the current token decayed too", _retention_decays_current_token),
    "ex-rope-rank": ("pairs (m, m + d_k/2) instead of (2m, 2m+1)", _rope_half_split),
    "ex-ssd-rank": ("the decay product starts one step early", _ssd_one_step_early),
    "ex-delay-floor": ("every tap weighted alike", _floor_equal_weights),
    "ex-jacobian-norm": ("Frobenius instead of spectral norm", _jacobian_norm_frobenius),
}


def test_there_is_a_planted_mistake_for_every_exercise():
    assert sorted(PLANTED) == sorted(HIDDEN)


@pytest.mark.parametrize("label", LABELS)
def test_a_planted_mistake_fails(label):
    _, answer = PLANTED[label]
    for fn in HIDDEN[label]:
        message = fails(fn, answer)
        assert student_name(fn) in message


# --------------------------------------------- wrong answers that pass the visible check but not the hidden tests

def _ema_hard_coded(n, d, gamma):
    """Right on the check's four cases only (a table of them), zero elsewhere."""
    if (n, d, gamma) in ((1, 1, 0.5), (4, 2, 0.5), (7, 3, 0.9), (5, 2, -0.3)):
        return reference("ex-ema")(n, d, gamma)
    return np.zeros((n, n, d, d))


def _residual_own_causal_softmax(mha, X):
    """Rebuilds causal softmax attention by hand: ignores mha.causal and mha.kernel."""
    n, d = X.shape
    W = np.zeros((n, n, d, d))
    for h in range(mha.W_Q.shape[0]):
        q, k = X @ mha.W_Q[h].T, X @ mha.W_K[h].T
        s = np.where(np.tril(np.ones((n, n), bool)), q @ k.T / np.sqrt(q.shape[1]), -np.inf)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        W += (a / a.sum(axis=1, keepdims=True))[:, :, None, None] * (mha.W_O[h] @ mha.W_V[h])
    return W + np.eye(n)[:, :, None, None] * np.eye(d)


def _lag_span_loose_tolerance(A, B, C, n):
    """Relative tolerance 4e-3: sees the visible check's smallest direction (5e-3 of the largest), misses 3e-3."""
    lags, M = [], np.asarray(B, dtype=float)
    for _ in range(n):
        lags.append((C @ M).ravel())
        M = A @ M
    s = np.linalg.svd(np.array(lags), compute_uv=False)
    return 0 if s[0] == 0 else int(np.sum(s > 4e-3 * s[0]))


def _three_dims_fragile():
    """The book's system with the third direction scaled by 1e-9: k = 3 only by a hair."""
    A = np.diag([0.9, 0.5, -0.3])
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    C = np.array([[1.0, 0.0, 1e-9], [0.0, 1.0, 1e-9]])
    return A, B, C


def _plateau_fragile():
    """The book's plateau with K_3's new direction scaled by 1e-9."""
    A = np.eye(4, k=-1)
    B = np.array([[1.0], [0.0], [0.0], [0.0]])
    C = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1e-9]])
    return A, B, C


def _heads_normalised_lags(K):
    """The lags scaled to unit norm before the SVD (so small lags count): the same span, 0/0 on a zero lag."""
    n, p, d = K.shape
    G = K.transpose(0, 2, 1).reshape(n, p * d).T
    with np.errstate(invalid="ignore", divide="ignore"):
        G = G / np.linalg.norm(G, axis=0)
    U, s, _ = np.linalg.svd(G, full_matrices=False)
    k = int(np.sum(s > max(n, p * d) * np.finfo(float).eps * s[0]))
    values = U[:, :k].T.reshape(k, d, p).transpose(0, 2, 1)
    return np.einsum("hpd,lpd->hl", values, K), values


def _heads_loose_tolerance(K):
    """Rank tolerance 1e-5 relative: sees sigma_2 / sigma_1 ~ 1e-4, misses 1e-8 (both in the check) and 4e-8."""
    n, p, d = K.shape
    G = K.transpose(0, 2, 1).reshape(n, p * d).T
    U, s, _ = np.linalg.svd(G, full_matrices=False)
    k = int(np.sum(s > 1e-5 * s[0]))
    values = U[:, :k].T.reshape(k, d, p).transpose(0, 2, 1)
    return np.einsum("hpd,lpd->hl", values, K), values


_TAIL_TABLE: dict = {}


def _tail_hard_coded(K, H, weights):
    """The check's twelve answers from a table (keyed by the lags' energy); the total energy elsewhere."""
    key = (round(float(np.sum(K ** 2)), 9), H, round(float(np.sum(weights)), 9))
    return _TAIL_TABLE.get(key, float(np.sum(K ** 2)))


def _fill_tail_table():
    """Computed before the check runs (the library is switched off while the answer runs)."""
    from ssmheads.exercises.ch3 import _chapter3_targets

    for _, target in _chapter3_targets():
        n = target.shape[0]
        for h, w in ((1, np.ones(n)), (2, sh.heads.white_noise_weights(n))):
            key = (round(float(np.sum(target ** 2)), 9), h, round(float(np.sum(w)), 9))
            _TAIL_TABLE[key] = float(sh.head_count_curve(target, h, w)[h])


def _quaternion_absolute_cutoff(K, X):
    """Treats tokens with |x|^2 < 1e-12 as zero: right on O(1) tokens, wrong on a tiny one."""
    V = reference("ex-quaternion-heads").__globals__["UNITS"]
    n = K.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    Kx = np.einsum("ijpd,jd->ijp", K[np.clip(lag, 0, None)], X)
    norm2 = np.einsum("jd,jd->j", X, X)
    alpha = np.einsum("hpd,jd,ijp->hij", V, X, Kx) / np.where(norm2 > 1e-12, norm2, np.inf)
    return np.where(lag >= 0, alpha, 0.0), V


def _ssd_cumulative_products(a, dt, B, C, V):
    """L_ts = P_t / P_s with P = cumprod(a): right for mild decays, 0/0 once the products underflow."""
    n = a.shape[1]
    P = np.cumprod(a, axis=1)
    t, s = np.arange(n)[:, None], np.arange(n)[None, :]
    with np.errstate(all="ignore"):
        L = np.where(t >= s, P[:, :, None] / P[:, None, :], 0.0)
    return np.einsum("hts,ts,hpd->tspd", L * dt[:, None, :], C @ B.T, V)


PASSES_VISIBLE = {  # label: (check, the wrong answer, words the hidden message must contain)
    "ex-ema": (exercises.check_ema_operator, _ema_hard_coded, "ema_operator(6, 3, 0.25)"),
    "ex-mlp": (exercises.check_mlp_operator, _mlp_gate_at_zero, "strictly positive"),
    "ex-residual": (exercises.check_residual_operator, _residual_own_causal_softmax, "not causal"),
    "ex-lag-span-by-hand": (exercises.check_lag_span_dimension, _lag_span_loose_tolerance, "should be 6"),
    "ex-three-dims": (exercises.check_rank_three_system, _three_dims_fragile, "depends on the tolerance"),
    "ex-longer-plateau": (exercises.check_long_plateau, _plateau_fragile, "depends on the tolerance"),
    "ex-build-heads": (exercises.check_exact_heads, _heads_normalised_lags, "nilpotent shift"),
    "ex-tail": (exercises.check_optimal_error, _tail_hard_coded, "the minimum is"),
    "ex-quaternion-heads": (exercises.check_quaternion_heads, _quaternion_absolute_cutoff, "whatever its size"),
    "ex-ssd-rank": (exercises.check_ssd_operator, _ssd_cumulative_products, "NaN or infinity"),
}


def _heads_orders(vec_order, unvec_order):
    """The SVD construction with vec and its inverse in the given orders ("C" row-major, "F" column-major)."""
    def exact_head_construction(K):
        n, p, d = K.shape
        G = np.stack([M.reshape(-1, order=vec_order) for M in K], axis=1)
        U, s, _ = np.linalg.svd(G, full_matrices=False)
        k = int(np.sum(s > 1e-10 * s[0]))
        V = np.stack([U[:, h].reshape(p, d, order=unvec_order) for h in range(k)])
        return np.einsum("hpd,lpd->hl", V, K), V
    return exact_head_construction


def test_build_heads_either_vec_order_passes_and_mixed_orders_are_named():
    """Row-major or column-major vec with the same order back passes the hidden test; a mix is told so."""
    (fn,) = HIDDEN["ex-build-heads"]
    for order in ("C", "F"):
        fresh(fn)(_heads_orders(order, order))
    for vec_order, unvec_order in (("C", "F"), ("F", "C")):
        message = fails(fn, _heads_orders(vec_order, unvec_order))
        assert "your vec and its inverse use different orders, one row-major and one column-major" in message
    assert "different orders" in fails(fn, _heads_inconsistent_vec)


def test_the_chapter_1_hidden_tests_give_the_visible_checks_hints():
    """Exercises 1.1-1.3: float32, a negative gamma, another form of the same map get the visible checks' hints."""
    (ema,), (mlp,), (residual,) = HIDDEN["ex-ema"], HIDDEN["ex-mlp"], HIDDEN["ex-residual"]
    right_ema, right_mlp, right_residual = reference("ex-ema"), reference("ex-mlp"), reference("ex-residual")
    assert "float64" in fails(ema, lambda n, d, g: np.asarray(right_ema(n, d, g), dtype=np.float32))

    def through_log(n, d, g):   # log(gamma): NaN for a negative gamma
        if g >= 0:
            return right_ema(n, d, g)
        lag = np.arange(n)[:, None] - np.arange(n)[None, :]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.tril((1 - g) * np.exp(lag * np.log(g)))[:, :, None, None] * np.eye(d)
    assert "is negative here" in fails(ema, through_log)
    assert "a difference of" not in fails(ema, lambda n, d, g: right_ema(n, d, g) * 2)
    message = fails(ema, lambda n, d, g: right_ema(n, d, g) * (1 + 1e-7))
    assert "got 0.7500000" in message and "a difference of" in message   # not "should be 0.75; got 0.75"

    def plus_null(W1, W2, X):   # W_ii + N_i with N_i x_i = 0: token-local, same output
        W = np.array(right_mlp(W1, W2, X), dtype=float)
        for i in range(X.shape[0]):
            x = X[i]
            if x @ x > 0 and x.size > 1:
                W[i, i] += np.outer(np.ones(W.shape[2]), np.roll(x, 1) - x * (np.roll(x, 1) @ x) / (x @ x))
        return W
    assert "N_i x_i = 0" in fails(mlp, plus_null)
    trivial = lambda mha, X: sh.trivial_interaction_form(mha.forward(X) + X, X)   # noqa: E731
    assert "another interaction form of that map" in fails(residual, trivial)
    assert "missing" in fails(residual, lambda mha, X: np.asarray(right_residual(mha, X)) - np.eye(X.shape[0])[
        :, :, None, None] * np.eye(X.shape[1]))
    assert "every block with j <= i" in fails(residual, lambda mha, X: np.asarray(right_residual(mha, X)) - np.eye(
        X.shape[0])[:, :, None, None] * np.eye(X.shape[1]) + np.tril(np.ones((X.shape[0],) * 2))[:, :, None, None]
        * np.eye(X.shape[1]))


def test_the_chapter_2_hidden_test_gives_the_visible_checks_hints():
    """Exercise 2.2: the binding bound, dependent rank-one terms, and a k above 3 get the visible check's hints;
    a symmetric system (k = 3 with m = 4) passes both."""
    (three,) = HIDDEN["ex-three-dims"]
    low = lambda: (np.diag([0.9, 0.5, -0.3]), np.ones((3, 2)), np.eye(2, 3))   # noqa: E731
    B = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    dependent = lambda: (np.diag([0.8, 0.3, -0.5]), B, B.T.copy())   # noqa: E731
    rng = np.random.default_rng(0)
    generic = (np.diag([0.9, 0.5, -0.3, 0.1]), rng.standard_normal((4, 2)), rng.standard_normal((2, 4)))
    for answer, words in ((low, "the bound min(rank B rank C, m) = 2 binds (rank B = 1, rank C = 2, m = 3)"),
                          (dependent, "are the rank-one terms c_s b_s^T of distinct eigenvalues linearly independent?"),
                          (lambda: generic, "k exceeds 3: something must cap k at 3, for instance m = 3")):
        assert words in fails(three, answer)
        assert words in exercises.check_rank_three_system(answer).message
    Bs = np.array([[1.0, 2.0], [0.0, 1.0], [3.0, -1.0], [1.0, 1.0]])
    symmetric = lambda: (np.diag([0.9, 0.5, -0.3, 0.1]), Bs, Bs.T.copy())   # noqa: E731
    fresh(three)(symmetric)
    assert exercises.check_rank_three_system(symmetric)


def test_the_chapter_2_hidden_tests_give_the_new_hints():
    """Exercise 2.2: K_0 = 0 and a third direction that comes too late; Exercise 2.3: a SISO answer, rank B rank C
    = 1, and K_3 on the line of K_0 with a later lag off it; the hidden tests say what the visible checks say."""
    (three,) = HIDDEN["ex-three-dims"]
    (plateau_test,) = HIDDEN["ex-longer-plateau"]

    def chains(*lags):
        # shift chains e1 -> ... -> e_L, input b into state 1, c reading state L: each adds c b^T to K_(L-1)
        blocks = [(np.eye(L, k=-1), np.outer(np.eye(L)[0], b), np.outer(c, np.eye(L)[-1])) for L, b, c in lags]
        N = sum(L for L, _, _ in lags)
        A = np.zeros((N, N))
        at = 0
        for block, _, _ in blocks:
            A[at:at + len(block), at:at + len(block)] = block
            at += len(block)
        return lambda: (A, np.vstack([Bc for _, Bc, _ in blocks]), np.hstack([Cc for _, _, Cc in blocks]))

    e1, e2 = np.array([1.0, 0.0]), np.array([0.0, 1.0])
    for lags, words in ((((2, e1, e1), (3, e2, e1), (4, e1, e2)), "K_0 = C B is zero, so k(1) = 0"),
                        (((1, e1, e1), (2, e1, e1), (3, e2, e1), (4, e1, e2)), "k reaches 3 only at n = 4, too late")):
        assert words in fails(three, chains(*lags))
        assert words in exercises.check_rank_three_system(chains(*lags)).message

    def shift_one_input(N, C):
        return lambda: (np.eye(N, k=-1), np.eye(N)[:, :1], np.array(C, dtype=float))

    for answer, words in (
            (shift_one_input(5, [[1, 1, 1, 2, 0]]), "with p = d = 1 every lag is a number, so k <= 1"),
            (shift_one_input(4, [[1, 1, 1, 1], [2, 2, 2, 2]]), "rank B rank C = 1 bounds k"),
            (shift_one_input(5, [[1, 1, 1, 1, 0], [0, 0, 0, 0, 1]]), None)):
        message = fails(plateau_test, answer)
        assert "K_3 should NOT be a multiple of K_0" in message
        if words is None:
            assert "yours leaves the line of K_0 only at K_4, too late" in message
            assert "too late: K_3 must leave the line of K_0" in exercises.check_long_plateau(answer).message
        else:
            assert words in message and words in exercises.check_long_plateau(answer).message


@pytest.mark.parametrize("label", list(PASSES_VISIBLE))
def test_a_wrong_answer_that_passes_the_visible_check_fails_a_hidden_test(label):
    check, answer, words = PASSES_VISIBLE[label]
    _fill_tail_table()
    assert check(answer), f"the planted answer should pass the visible check:\n{check(answer)}"
    messages = [fails(fn, answer) for fn in HIDDEN[label]]
    assert any(words in m for m in messages), messages


def test_the_retention_hidden_test_says_when_y_is_read_too_early():
    """Exercise 5.1: reading y_t before adding the current token fails with a hint (as the visible check)."""
    def read_first(Q, K, V, gamma):
        S = np.zeros((Q.shape[1], V.shape[1]))
        Y = np.empty((Q.shape[0], V.shape[1]))
        for t in range(Q.shape[0]):
            Y[t] = S.T @ Q[t]
            S = gamma * S + np.outer(K[t], V[t])
        return Y

    assert "read before the update" in fails(HIDDEN["ex-retention-recurrent"][0], read_first)
    assert "read before the update" in exercises.check_retention_recurrent(read_first).message


# Exercise 5.1's "never an n x n matrix", graded: the last hidden case is 40000 tokens long.
# An answer that forms the n x n weights runs out of memory there (an n x n matrix of float64
# takes 12.8 GB) or, formed one row at a time, out of time; the recurrence takes n steps.
# These tests run the hidden test in a fresh Python: grading forks the answer into
# tools/grading_sandbox.py, and no test forks pytest's own process (JAX's threads may run
# there); the n x n answers run with that Python's address space capped, so that they fail
# at once, as on a grader with little memory, without filling this machine's.

def _retention_tril(Q, K, V, gamma):
    """The parallel form with a causal mask from np.tril: n x n matrices."""
    n = Q.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (np.tril(np.ones((n, n))) * gamma ** np.maximum(lag, 0) * (Q @ K.T)) @ V


def _retention_masked_decay(Q, K, V, gamma):
    """(D * Q K^T) V with D_ts = gamma^(t-s) for s <= t, as the chapter's parallel form writes it."""
    n = Q.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    D = np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0)
    return (D * (Q @ K.T)) @ V


def _retention_row_by_row(Q, K, V, gamma):
    """One row of the weights at a time: no n x n matrix, but n^2/2 dot products (the decays precomputed)."""
    n = Q.shape[0]
    decay = gamma ** np.arange(n)[::-1]          # decay[n - 1 - l] = gamma^l
    Y = np.empty((n, V.shape[1]))
    for t in range(n):
        Y[t] = (decay[n - 1 - t:] * (K[:t + 1] @ Q[t])) @ V[:t + 1]
    return Y


def _retention_state_dropped(Q, K, V, gamma, every=2000):
    """The recurrence restarted every 2000 tokens (a chunked form that forgets to carry the state)."""
    S, Y = np.zeros((Q.shape[1], V.shape[1])), np.empty((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        S = (gamma * S if t % every else 0.0) + np.outer(K[t], V[t])
        Y[t] = S.T @ Q[t]
    return Y


# The start of the scripts below, each run in a fresh process: this file loaded as a module.
_LOAD_TESTS = """\
sys.path[:0] = [os.path.join(root, "tools"), os.path.join(root, "tests")]
spec = importlib.util.spec_from_file_location("hidden_tests_module", os.path.join(root, "tests", "test_hidden_tests.py"))
tests = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tests)
import grading_sandbox
"""

_GRADE_RETENTION = """\
import importlib.util, json, os, resource, sys, time
root, runs = sys.argv[1], json.loads(sys.argv[2])
""" + _LOAD_TESTS + """\
out, limit = {}, resource.getrlimit(resource.RLIMIT_AS)
for name, seconds, capped in runs:
    answer = tests.reference("ex-retention-recurrent") if name == "book" else getattr(tests, name)
    test = tests.fresh(tests.HIDDEN["ex-retention-recurrent"][0])
    if capped:   # what this process maps now, plus 2 GB (a sandbox's child inherits the cap)
        with open("/proc/self/statm") as f:
            mapped = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        resource.setrlimit(resource.RLIMIT_AS, (mapped + (2 << 30), limit[1]))
    start = time.perf_counter()
    try:   # seconds: forked into the sandbox before the test computes anything, as grading does
        test(answer if seconds is None else grading_sandbox.sandboxed(answer, seconds))
        message = None
    except AssertionError as error:
        message = str(error)
    out[name] = {"message": message, "seconds": time.perf_counter() - start}
    resource.setrlimit(resource.RLIMIT_AS, limit)
print(json.dumps(out))
"""


def _grade_retention(runs) -> dict:
    """Exercise 5.1's hidden test on each (answer: a name here or "book", seconds: the sandbox's limit or None
    to call it directly, capped: under a memory cap), in a fresh Python; name -> {"message": the failure or
    None, "seconds": how long the hidden test took}."""
    import json
    import subprocess

    done = subprocess.run([sys.executable, "-c", _GRADE_RETENTION, str(ROOT), json.dumps(runs)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


_LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"),
                            reason="the grading sandbox forks, and the memory cap reads /proc (Linux)")
_N_BY_N = ["_retention_tril", "_retention_masked_decay"]


def _runs_out_of_memory(message):
    import otter_grade

    assert message and message.startswith(
        "retention_recurrent(Q, K, V, 0.9999) with n=40000, d_k=256, p=1 ran out of memory at n = 40000 "
        "(it raised MemoryError); at this length an n x n matrix of float64 takes 12.8 GB"), message
    assert message.endswith("form the recurrence one token at a time (S_t = gamma S_(t-1) + k_t v_t^T, "
                            "y_t = S_t^T q_t: n steps, each a few NumPy operations on the d_k x p state, not a "
                            "Python loop over its entries), never the n x n weights"), message
    assert otter_grade.hidden_summary(message).startswith("your function raised MemoryError; ")


def test_the_long_retention_case_is_the_last_and_the_only_long_one():
    """A time limit stops every later call of the test, so the long case comes last."""
    cases = loop_cases(inspect.getsource(HIDDEN["ex-retention-recurrent"][0]))
    source = make_otter.load_hidden(ROOT / "instructors" / "hidden_tests.py")["ex-retention-recurrent"][0]
    assert len(cases) == make_otter.count_cases(source) == 8
    assert [c["n"] for c in cases if c["n"] > 10000] == [cases[-1]["n"]] == [40000]
    assert cases[-1]["dk"] == 256 and cases[-1]["p"] == 1 and cases[-1]["gamma"] ** 40000 > 0.01


@_LINUX
@pytest.mark.extended   # plants the n x n and row-by-row answers (about 7 s)
def test_the_n_by_n_weights_run_out_of_memory_and_row_by_row_out_of_time_on_the_long_retention_case():
    """Planted answers (np.tril, D * QK^T, a loop over the rows) fail the long case, and say what to do."""
    import otter_grade

    graded = _grade_retention([(name, None, True) for name in _N_BY_N] + [("_retention_row_by_row", 4.0, False)])
    for name in _N_BY_N:
        _runs_out_of_memory(graded[name]["message"])
    message, seconds = graded["_retention_row_by_row"].values()
    assert message and message.startswith(
        "retention_recurrent(Q, K, V, 0.9999) with n=40000, d_k=256, p=1 did not finish within the 4 s this "
        "question allows at n = 40000 (grading stopped it); "), message
    assert "one row at a time take n^2/2 = 8e+08 dot products of length d_k = 256" in message
    assert message.endswith("never the n x n weights") and seconds < 15
    summary = otter_grade.hidden_summary(message)
    assert summary.startswith("your function did not return within the time allowed; ") and "40000" not in summary


def test_a_chunked_form_that_drops_the_state_fails_the_long_retention_case_on_its_values():
    """Right on the shorter cases (2000 tokens a chunk), wrong on the long one: gamma = 0.9999 there."""
    message = fails(HIDDEN["ex-retention-recurrent"][0], _retention_state_dropped)
    assert "with n=40000" in message and "a window of recent tokens is not enough" in message


@pytest.mark.extended
@_LINUX
def test_the_long_retention_case_graded_as_grading_runs_it():
    """Through the sandbox with grading's own limit (make_otter.QUESTION_SECONDS): the recurrence passes within
    it, the n x n answers run out of memory in the sandbox's child, the row-by-row form out of time."""
    limit = make_otter.QUESTION_SECONDS
    graded = _grade_retention([("book", limit, False), *((name, limit, True) for name in _N_BY_N),
                               ("_retention_row_by_row", limit, False)])
    assert graded["book"]["message"] is None, graded["book"]   # passed, within the limit
    for name in _N_BY_N:
        _runs_out_of_memory(graded[name]["message"])
    message = graded["_retention_row_by_row"]["message"]
    assert message and f"did not finish within the {limit:g} s this question allows at n = 40000" in message


def _ssd_step_at_target(a, dt, B, C, V):
    """The step read at the target t instead of the source s."""
    n = a.shape[1]
    cum = np.cumsum(np.log(a), axis=1)
    t, s = np.arange(n)[:, None], np.arange(n)[None, :]
    seg = np.where(t >= s, cum[:, :, None] - cum[:, None, :], -np.inf)
    return np.einsum("hts,ts,hpd->tspd", np.exp(seg) * dt[:, :, None], C @ B.T, V)


def test_the_ssd_hidden_test_says_where_the_step_belongs():
    """Exercise 5.3 (Mamba-2's step dt): a forgotten step and a step read at the target fail with a hint."""
    book = reference("ex-ssd-rank")

    def no_step(a, dt, B, C, V):
        return book(a, np.ones_like(dt), B, C, V)

    assert "the step dt is left out" in fails(HIDDEN["ex-ssd-rank"][0], no_step)
    assert "read at the source" in fails(HIDDEN["ex-ssd-rank"][0], _ssd_step_at_target)


def _rope_turned_back(W_Q, W_K, W_V, X, base):
    """Rotation by -t theta_m (R_t transposed)."""
    n, dk = X.shape[0], W_Q.shape[0]
    ang = -np.arange(n)[:, None] * base ** (-np.arange(0, dk, 2) / dk)

    def rotate(Z):
        out = np.empty_like(Z)
        out[:, 0::2] = np.cos(ang) * Z[:, 0::2] - np.sin(ang) * Z[:, 1::2]
        out[:, 1::2] = np.sin(ang) * Z[:, 0::2] + np.cos(ang) * Z[:, 1::2]
        return out

    S = np.where(np.tril(np.ones((n, n), bool)), rotate(X @ W_Q.T) @ rotate(X @ W_K.T).T / np.sqrt(dk), -np.inf)
    w = np.exp(S - S.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True))[:, :, None, None] * W_V


def _ssd_shifted_window(a, dt, B, C, V):
    """L_ts = a_s ... a_(t-1): the window of decays one step back."""
    n = a.shape[1]
    cum = np.cumsum(np.log(a), axis=1)
    t, s = np.arange(n)[:, None], np.arange(n)[None, :]
    seg = cum[:, :, None] - cum[:, None, :] + np.log(a)[:, None, :] - np.log(a)[:, :, None]
    L = np.exp(np.where(t >= s, seg, -np.inf)) * dt[:, None, :]
    return np.einsum("hts,ts,hpd->tspd", L, C @ B.T, V)


def _retention_rescaled(Q, K, V, gamma):
    """S'_t = S'_(t-1) + gamma^(-t) k_t v_t^T, y_t = gamma^t S'_t^T q_t: overflows on a long sequence."""
    S, Y = np.zeros((Q.shape[1], V.shape[1])), np.zeros((Q.shape[0], V.shape[1]))
    with np.errstate(all="ignore"):
        for t in range(Q.shape[0]):
            S = S + np.float64(gamma) ** (-t) * np.outer(K[t], V[t])
            Y[t] = gamma ** t * (S.T @ Q[t])
    return Y


def _retention_read_with_s(Q, K, V, gamma):
    """y_t = S_t q_t with S_t of shape d_k x p: a shape error when d_k != p."""
    S, Y = np.zeros((Q.shape[1], V.shape[1])), np.zeros((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        S = gamma * S + np.outer(K[t], V[t])
        Y[t] = S @ Q[t]
    return Y


def _retention_state_p_by_dk(Q, K, V, gamma):
    """A state started p x d_k: k_t v_t^T broadcasts it to d_k x d_k, and writing y_t fails."""
    S, Y = np.zeros((V.shape[1], Q.shape[1])), np.zeros((Q.shape[0], V.shape[1]))
    for t in range(Q.shape[0]):
        S = gamma * S + np.outer(K[t], V[t])
        Y[t] = S.T @ Q[t]
    return Y


def _rope_queries_unrotated(W_Q, W_K, W_V, X, base):
    """Rotary keys, plain queries."""
    n, dk = X.shape[0], W_Q.shape[0]
    ang = np.arange(n)[:, None] * base ** (-np.arange(0, dk, 2) / dk)
    K = X @ W_K.T
    R = np.empty_like(K)
    R[:, 0::2] = np.cos(ang) * K[:, 0::2] - np.sin(ang) * K[:, 1::2]
    R[:, 1::2] = np.sin(ang) * K[:, 0::2] + np.cos(ang) * K[:, 1::2]
    S = np.where(np.tril(np.ones((n, n), bool)), (X @ W_Q.T) @ R.T / np.sqrt(dk), -np.inf)
    w = np.exp(S - S.max(axis=1, keepdims=True))
    return (w / w.sum(axis=1, keepdims=True))[:, :, None, None] * W_V


def test_the_chapter_5_hidden_tests_give_the_visible_checks_hints():
    """Exercises 5.1-5.3: the slips the visible checks name get the same hint from the hidden tests."""
    (retention,), (rope,), (ssd,) = HIDDEN["ex-retention-recurrent"], HIDDEN["ex-rope-rank"], HIDDEN["ex-ssd-rank"]
    book_retention, book_ssd = reference("ex-retention-recurrent"), reference("ex-ssd-rank")

    def in_float32(Q, K, V, gamma):
        return book_retention(Q.astype(np.float32), K.astype(np.float32), V.astype(np.float32),
                              np.float32(gamma)).astype(np.float32)

    assert "moving average" in fails(retention, lambda Q, K, V, g: (1 - g) * book_retention(Q, K, V, g))
    assert "float32" in fails(retention, in_float32)
    assert "rescaled by gamma^(-t)" in fails(retention, _retention_rescaled)
    assert "d_k x p" in fails(retention, _retention_read_with_s)
    assert "rotate-half" in fails(rope, _rope_half_split)
    assert "turns the wrong way" in fails(rope, _rope_turned_back)
    assert "C_s . B_t" in fails(ssd, lambda a, dt, B, C, V: book_ssd(a, dt, C, B, V))
    assert "run over s .. t-1" in fails(ssd, _ssd_shifted_window)
    assert "d_k x p" in fails(retention, _retention_state_p_by_dk)
    assert "only the keys are rotated" in fails(rope, _rope_queries_unrotated)
    book_rope = reference("ex-rope-rank")
    for test, book in ((rope, book_rope), (ssd, book_ssd)):
        assert "float64" in fails(test, lambda *args, book=book: np.asarray(book(*args), dtype=np.float32))
        inside = fails(test, lambda *args, book=book: np.asarray(book(*args), dtype=np.float32).astype(float))
        assert "single precision (float32)?" in inside and "a difference of" in inside


# ------------------------------------------------------------------ the checking helpers are out of an answer's reach

LOADS_FRESH = 'spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))'
COMPARED = ["ex-ema", "ex-mlp", "ex-residual", "ex-build-heads", "ex-head-jacobian", "ex-ssm-profile",
            "ex-retention-recurrent", "ex-rope-rank", "ex-ssd-rank"]   # the planted mistake is caught by ck.compare


def _helpers_that_always_pass(monkeypatch):
    """What a notebook can do before the hidden tests run: every helper of ssmheads.exercises.checking (and its
    re-export in ssmheads.exercises) replaced by one that lets anything through."""
    from ssmheads.exercises import checking

    fakes = {"is_stub": lambda value: False,
             "require_function": lambda *args, **kwargs: None,
             "call": lambda answer, what, *args, **kwargs: answer(*args),
             "real_array": lambda out, *args, **kwargs: np.asarray(out, dtype=float),
             "number": lambda out, *args, **kwargs: float(np.asarray(out).reshape(-1)[0]),
             "linear_system": lambda out, *args, **kwargs: tuple(np.asarray(M, dtype=float) for M in out),
             "compare": lambda *args, **kwargs: None,
             "near": lambda *args, **kwargs: False}
    assert sorted(fakes) == sorted(checking.__all__)
    for name, fake in fakes.items():
        monkeypatch.setattr(checking, name, fake)
        monkeypatch.setattr(exercises, name, fake)
    assert checking.compare(np.zeros(2), np.ones(2), "x") is None   # the replaced module passes anything


@pytest.mark.parametrize("label, fn", PAIRS, ids=PAIR_IDS)
def test_each_test_loads_the_checking_helpers_fresh_from_their_file(label, fn):
    source = inspect.getsource(fn)
    assert source.count(LOADS_FRESH) == 1 and 'spec_from_file_location("_checking", checking)' in source
    assert "exercises.checking" not in source and "exercises import checking" not in source


@pytest.mark.parametrize("label", LABELS)
def test_helpers_replaced_by_the_notebook_do_not_pass_a_wrong_answer(label, monkeypatch):
    """Grading runs the student's notebook first, in the same kernel: an answer cell may replace
    ssmheads.exercises.checking.compare and the rest. The hidden tests load their own copy, so the planted
    mistake fails them as before, with the same message; a hidden test that imported the module would pass it."""
    _, answer = PLANTED[label]
    (fn,) = HIDDEN[label]
    before = fails(fn, answer)
    _helpers_that_always_pass(monkeypatch)
    assert fails(fn, answer) == before
    if label in COMPARED:
        source = textwrap.dedent(inspect.getsource(fn)).replace(
            LOADS_FRESH, "from ssmheads.exercises import checking as ck")
        namespace = {}
        exec(compile(source, f"<{fn.__name__} importing the module>", "exec"), namespace)
        namespace[fn.__name__](answer)   # fooled: the replaced compare lets the mistake through


def test_no_checking_helper_passes_the_grading_scan():
    """tools/otter_grade.py's scan lets an answer import the checks (``check_...``) from ssmheads.exercises and
    flags any other import from it: no helper may be named like a check."""
    import otter_grade
    from ssmheads.exercises import checking

    for name in checking.__all__:
        assert not name.startswith("check_"), name
        for code in (f"from ssmheads.exercises import {name}", f"from ssmheads.exercises.checking import {name}",
                     "import ssmheads.exercises.checking", "import ssmheads as sh\nsh.exercises.checking.call"):
            assert otter_grade.scan_code(code), code


_SANDBOXED = """\
import importlib.util, json, os, sys
root, labels = sys.argv[1], json.loads(sys.argv[2])
""" + _LOAD_TESTS + """\


def outcome(test, answer):
    try:
        test(grading_sandbox.sandboxed(answer, 20.0))
    except AssertionError as error:
        return str(error)


def uses_a_helper(*args):
    from ssmheads.exercises import checking
    return checking.number(1.0, "a helper called in the answer's process")


out = {}
for label in labels:
    test = tests.fresh(tests.HIDDEN[label][0])
    out[label] = {"book": outcome(test, tests.reference(label)), "planted": outcome(test, tests.PLANTED[label][1]),
                  "helper": outcome(test, uses_a_helper)}
print(json.dumps(out))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the grading sandbox forks (Linux)")
def test_through_the_sandbox_the_helpers_run_in_the_tests_process_only():
    """As grading runs them (tools/grading_sandbox.py, in a fresh Python: no test forks pytest's own process): the
    book's answer passes, a planted mistake fails with the message it gets in-process, and in the answer's process
    the checking helpers are switched off with the rest of ssmheads.exercises."""
    import json
    import subprocess

    labels = ["ex-ema", "ex-lag-span-by-hand", "ex-tail", "ex-ssd-rank", "ex-jacobian-norm"]
    done = subprocess.run([sys.executable, "-c", _SANDBOXED, str(ROOT), json.dumps(labels)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    graded = json.loads(done.stdout.strip().splitlines()[-1])
    for label in labels:
        assert graded[label]["book"] is None, graded[label]
        assert graded[label]["planted"] == fails(HIDDEN[label][0], PLANTED[label][1])
        assert "raised RuntimeError" in graded[label]["helper"] and "switched off" in graded[label]["helper"]


# ------------------------------------------------------------------ the hidden cases are new

VISIBLE_DEFAULTS = {  # sizes the visible check fixes outside its case loop (_one_head: d = 2, d_k = 3, p = d)
    "ex-head-jacobian": {"d": 2, "p": 2, "dk": 3},
    "ex-build-highway": {"d": 2, "dk": 3},
}
CASE_KEYS = {  # label: (the visible check, the names that make a case)
    "ex-ema": (exercises.check_ema_operator, ("n", "d", "gamma")),
    "ex-mlp": (exercises.check_mlp_operator, ("n", "d", "h", "p")),
    "ex-residual": (exercises.check_residual_operator, ("H", "d", "n")),
    "ex-head-jacobian": (exercises.check_head_jacobian, ("d", "p", "dk", "n")),
    "ex-build-highway": (exercises.check_highway_input, ("d", "dk", "n", "a", "key")),
    "ex-retention-recurrent": (exercises.check_retention_recurrent, ("n", "dk", "p", "gamma")),
    "ex-rope-rank": (exercises.check_rope_operator, ("n", "d", "dk", "p", "base")),
    "ex-ssd-rank": (exercises.check_ssd_operator, ("H", "n", "N", "p", "d")),
    "ex-delay-floor": (exercises.check_delay_floor, ("n", "L", "H")),
}
ALIASES = {"g": "gamma"}


def loop_cases(source: str) -> list[dict]:
    """The cases of every ``for <names> in <literal tuple>`` (loops and comprehensions) in ``source``.

    ``for seed, (H, d, n) in enumerate(((1, 2, 3), ...))`` counts too. Each case is a dict
    name -> value.
    """
    def bind(target, value, out):
        if isinstance(target, ast.Name):
            out[ALIASES.get(target.id, target.id)] = value
        elif isinstance(target, ast.Tuple) and isinstance(value, tuple) and len(value) == len(target.elts):
            for t, v in zip(target.elts, value):
                bind(t, v, out)

    cases = []
    for node in ast.walk(ast.parse(textwrap.dedent(source))):
        if not isinstance(node, (ast.For, ast.comprehension)):
            continue
        iterable, counted = node.iter, False
        if isinstance(iterable, ast.Call) and getattr(iterable.func, "id", "") == "enumerate" and iterable.args:
            iterable, counted = iterable.args[0], True
        try:
            values = ast.literal_eval(iterable)
        except (ValueError, SyntaxError, TypeError):
            continue
        if not isinstance(values, tuple) or not all(isinstance(v, tuple) for v in values):
            continue
        for index, value in enumerate(values):
            case = {}
            bind(node.target, (index, value) if counted else value, case)
            cases.append(case)
    return cases


@pytest.mark.parametrize("label", list(CASE_KEYS))
def test_the_hidden_cases_differ_from_the_visible_ones(label):
    check, keys = CASE_KEYS[label]
    defaults = VISIBLE_DEFAULTS.get(label, {})
    visible = {tuple({**defaults, **c}.get(k) for k in keys) for c in loop_cases(inspect.getsource(check))}
    hidden = {tuple(c.get(k) for k in keys) for fn in HIDDEN[label] for c in loop_cases(inspect.getsource(fn))}
    visible.discard(tuple(None for _ in keys))
    assert visible and all(None not in v for v in visible), visible
    assert hidden and all(None not in h for h in hidden), hidden
    assert not hidden & visible, f"hidden cases that the visible check runs too: {hidden & visible}"


# ------------------------------------------------------------------ the hidden tests' expected values agree with the library

@contextlib.contextmanager
def _library_allowed(monkeypatch):
    """Within the block a hidden test does not switch the library off, so the library itself can answer."""
    monkeypatch.setattr(_common, "reference_routines_off", lambda routines: contextlib.nullcontext())
    yield


def _library_heads(K):
    values = sh.span_basis(K)
    return np.einsum("hpd,lpd->hl", values, K), values


def _finite_difference_jacobian(W_Q, W_K, V, X):
    def head(Z):
        n, dk = Z.shape[0], W_Q.shape[0]
        s = np.where(np.tril(np.ones((n, n), bool)), (Z @ W_Q.T) @ (Z @ W_K.T).T / np.sqrt(dk), -np.inf)
        a = np.exp(s - s.max(axis=1, keepdims=True))
        return (a / a.sum(axis=1, keepdims=True)) @ (Z @ V.T)

    return sh.finite_difference_jacobian(head, X)


def _library_delay_floor(n, L, H):
    from ssmheads.bench import delay_taps

    K = np.zeros((n, 2, 2))
    K[L:L + 4] = delay_taps()
    curve = sh.head_count_curve(K, max(H, 1), sh.heads.white_noise_weights(n))
    return float(curve[H] / curve[0])


LIBRARY_ANSWERS = {  # label: the library (or finite differences) answering in the student's place
    "ex-lag-span-by-hand": lambda A, B, C, n: sh.lag_span_dimension(A, B, C, n),
    "ex-build-heads": _library_heads,
    "ex-tail": lambda K, H, weights: float(sh.head_count_curve(K, H, weights)[H]),
    "ex-count-nonneg": lambda K: sh.nonnegative_head_count(K),
    "ex-head-jacobian": _finite_difference_jacobian,
    "ex-rope-rank": lambda W_Q, W_K, W_V, X, base: sh.RoPEAttention(W_Q, W_K, W_V, base).interaction(X),
    "ex-ssm-profile": lambda A, B, C, n: np.linalg.norm(sh.lag_operators(A, B, C, n), ord=2, axis=(1, 2)),
    "ex-delay-floor": _library_delay_floor,
    "ex-jacobian-norm": lambda forward, X, i, j: float(np.linalg.norm(
        sh.finite_difference_jacobian(forward, X)[i, j], 2)),
}


@pytest.mark.parametrize("label", list(LIBRARY_ANSWERS))
def test_the_expected_values_agree_with_the_library(label, monkeypatch):
    with _library_allowed(monkeypatch):
        for fn in HIDDEN[label]:
            fresh(fn)(LIBRARY_ANSWERS[label])


@pytest.mark.parametrize("label", ["ex-lag-span-by-hand", "ex-tail", "ex-count-nonneg", "ex-delay-floor"])
def test_the_library_is_switched_off_while_the_answer_runs(label):
    message = fails(HIDDEN[label][0], LIBRARY_ANSWERS[label])
    assert "raised RuntimeError" in message and "write it yourself" in message


def test_the_chapter_3_hidden_tests_give_the_visible_checks_hints():
    """Exercises 3.1-3.3: the rank tolerance, common wrong tails, one-entry arrays and integral floats."""
    (heads,), (tail,), (count,) = HIDDEN["ex-build-heads"], HIDDEN["ex-tail"], HIDDEN["ex-count-nonneg"]
    assert "your tolerance is too loose: singular value 2 is" in fails(heads, _heads_loose_tolerance)

    def tight(K):   # counts rounding noise as directions
        n, p, d = K.shape
        G = K.transpose(0, 2, 1).reshape(n, p * d).T
        U, s, _ = np.linalg.svd(G, full_matrices=False)
        k = int(np.sum(s > 1e-30 * s[0]))
        values = U[:, :k].T.reshape(k, d, p).transpose(0, 2, 1)
        return np.einsum("hpd,lpd->hl", values, K), values
    assert "your tolerance counts rounding noise" in fails(heads, tight)
    assert not exercises.check_exact_heads(_heads_loose_tolerance)   # rtol 1e-5 fails the visible check too

    def counted(rule):
        def construction(K):
            n, p, d = K.shape
            G = K.transpose(0, 2, 1).reshape(n, p * d).T
            U, s, _ = np.linalg.svd(G, full_matrices=False)
            k = rule(s, n, p, d)
            values = U[:, :k].T.reshape(k, d, p).transpose(0, 2, 1)
            return np.einsum("hpd,lpd->hl", values, K), values
        return construction

    right = lambda s, n, p, d: int(np.sum(s > max(n, p * d) * np.finfo(float).eps * s[0]))   # noqa: E731
    for answer, words in ((counted(lambda s, *a: int(np.sum(s > 1e-10))), "is your tolerance absolute?"),
                          (counted(lambda *a: right(*a) - 1), "Check how you count (off by one?)"),
                          (counted(lambda *a: right(*a) + 1), "singular value 4 is below 1e-12")):
        assert words in fails(heads, answer)
        assert "too loose" not in fails(heads, answer)
    assert "is your tolerance absolute?" in exercises.check_exact_heads(
        counted(lambda s, *a: int(np.sum(s > 1e-10)))).message

    right_tail, right_count = reference("ex-tail"), reference("ex-count-nonneg")

    def not_squared(K, H, w):
        return float(np.sum(np.linalg.svd(K.reshape(K.shape[0], -1).T * np.sqrt(w), compute_uv=False)[H:]))
    assert "singular values not squared" in fails(tail, not_squared)
    assert "w_l instead of sqrt(w_l)" in fails(tail, _tail_weights_not_square_rooted)
    assert "the minimum divided by n" in fails(tail, lambda K, H, w: right_tail(K, H, w) / K.shape[0])
    assert "common mistake" not in fails(tail, lambda K, H, w: right_tail(K, H, w) * 1.37 + 1.0)

    def single(K, H, w):   # float32 inside: right to ~1e-7 of the total
        G = (K.reshape(K.shape[0], -1).T * np.sqrt(w)).astype(np.float32)
        return float(np.sum(np.linalg.svd(G, compute_uv=False)[H:] ** 2))
    message = fails(tail, single)
    assert "computed in float32?" in message and "with H = 0 heads" not in message   # the first case has H = 0
    assert "a difference of" in message

    def ascending(K, H, w):
        G = K.reshape(K.shape[0], -1).T * np.sqrt(w)
        return float(np.sum(np.linalg.eigvalsh(G @ G.T)[H:]))
    assert "as np.linalg.eigvalsh returns them" in fails(tail, lambda K, H, w: ascending(K, max(H, 1), w)
                                                         if H else right_tail(K, H, w))

    def only_next(K, H, w):   # sigma_(H+1)^2 alone: right whenever H >= k - 1, as in every hidden case with H > 0
        s = np.linalg.svd(K.reshape(K.shape[0], -1).T * np.sqrt(w), compute_uv=False)
        return float(s[H] ** 2) if H < s.size else 0.0
    fresh(tail)(lambda K, H, w: only_next(K, H, w) if H else right_tail(K, H, w))
    assert "only sigma_{H+1}^2" in exercises.check_optimal_error(only_next).message   # the visible check names it
    fresh(tail)(lambda K, H, w: np.array([right_tail(K, H, w)]))
    fresh(count)(lambda K: float(right_count(K)))
    fresh(count)(lambda K: np.array([right_count(K)]))   # a one-entry array, as in Exercise 3.2
    assert not exercises.check_nonnegative_head_count(lambda K: np.array([right_count(K)] * 2))
    assert "expected an integer; got 1.5" in fails(count, lambda K: right_count(K) + 0.5)
