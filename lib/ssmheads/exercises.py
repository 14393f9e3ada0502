"""Checks that students call on their answers to the book's exercises.

Each ``check_*`` function takes the student's answer (usually a function they
wrote), tests it on several cases against a reference, and returns a
:class:`CheckResult`. A result is truthy only when the answer passed, so a
solution cell can end in ``assert result``. An untouched stub (a function whose
body is ``...``, or ``None``) is reported as "not attempted yet", never as a
traceback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable

import numpy as np

from .models import MultiHeadAttention
from .systems import random_attention

__all__ = [
    "CheckResult",
    "check_ema_operator",
    "check_mlp_operator",
    "check_residual_operator",
    "check_lag_span_dimension",
    "check_rank_three_system",
    "check_long_plateau",
    "check_exact_heads",
    "check_optimal_error",
    "check_nonnegative_head_count",
    "check_head_jacobian",
    "check_highway_input",
    "check_ssm_gradient_profile",
]

PASSED, FAILED, NOT_ATTEMPTED = "passed", "failed", "not attempted yet"


@dataclass(frozen=True)
class CheckResult:
    """Outcome of an exercise check.

    Attributes
    ----------
    exercise : str
        Which exercise was checked.
    status : str
        ``"passed"``, ``"failed"`` or ``"not attempted yet"``.
    message : str
        What was tested, or what was expected and what the answer gave.
    """

    exercise: str
    status: str
    message: str

    def __bool__(self) -> bool:
        return self.status == PASSED

    def __str__(self) -> str:
        mark = {PASSED: "PASSED", FAILED: "NOT YET", NOT_ATTEMPTED: "NOT ATTEMPTED YET"}[self.status]
        return f"[{self.exercise}] {mark}\n  {self.message}"

    __repr__ = __str__


class _Fail(Exception):
    """Raised inside a check to stop at the first failed case."""


def _is_stub(value: Any) -> bool:
    return value is None or value is Ellipsis


def _call(answer: Callable, label: str, *args):
    """Call the student's function; stubs and student errors become results, not tracebacks."""
    try:
        out = answer(*args)
    except NotImplementedError:
        return NOT_ATTEMPTED
    except Exception as exc:  # the student's code failed: report it as feedback
        raise _Fail(f"{label} raised {type(exc).__name__}: {exc}") from None
    return NOT_ATTEMPTED if _is_stub(out) else out


def _numeric(got, shape: tuple, what: str) -> np.ndarray:
    """The answer as a finite float array of the expected shape, or a failure saying what was expected."""
    try:
        raw = np.asarray(got)
        if np.iscomplexobj(raw):
            raise _Fail(f"{what}: expected a real array of shape {shape}; got a complex array")
        got = raw.astype(float)
    except (TypeError, ValueError):
        raise _Fail(f"{what}: expected a numeric array of shape {shape}; got {type(got).__name__}") from None
    if got.shape != shape:
        raise _Fail(f"{what}: expected shape {shape}; got shape {got.shape}")
    if not np.all(np.isfinite(got)):
        raise _Fail(f"{what}: expected finite numbers; your array contains NaN or infinity")
    return got


def _compare(got, expected: np.ndarray, what: str, rtol: float = 1e-9) -> None:
    got = _numeric(got, expected.shape, what)
    scale = max(1.0, float(np.abs(expected).max()))
    bad = np.abs(got - expected) > rtol * scale
    if np.any(bad):
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        raise _Fail(f"{what}: entry {where} should be {expected[where]:.6g}; got {got[where]:.6g}")


def _run(exercise: str, answer: Any, cases: Iterable[tuple[str, tuple, Callable[[Any, str], None]]],
         summary: str) -> CheckResult:
    """Run ``answer(*args)`` on each ``(label, args, test)`` case and apply ``test(output, label)``."""
    if _is_stub(answer):
        return CheckResult(exercise, NOT_ATTEMPTED, "replace the stub with your answer, then run this cell again")
    if not callable(answer):
        return CheckResult(exercise, FAILED, f"expected a function; got {type(answer).__name__}")
    try:
        for label, args, test in cases:
            out = _call(answer, label, *args)
            if out is NOT_ATTEMPTED:
                return CheckResult(exercise, NOT_ATTEMPTED, "your function returns nothing yet; fill in its body")
            test(out, label)
    except _Fail as failure:
        return CheckResult(exercise, FAILED, str(failure))
    return CheckResult(exercise, PASSED, summary)


# ---------------------------------------------------------------- Chapter 1

def _ema_reference(n: int, d: int, gamma: float) -> np.ndarray:
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    coeff = np.where(lag >= 0, (1 - gamma) * gamma ** np.maximum(lag, 0), 0.0)
    return coeff[:, :, None, None] * np.eye(d)


def check_ema_operator(ema_operator: Callable[[int, int, float], np.ndarray]) -> CheckResult:
    """Chapter 1, exercise "EMA operator": the operator of the exponential moving average.

    The layer is ``y_i = (1 - gamma) sum_{j <= i} gamma^(i-j) x_j``. The answer is a
    function ``ema_operator(n, d, gamma)`` returning its operator, shape ``(n, n, d, d)``.
    """
    cases = [(f"ema_operator({n}, {d}, {g})", (n, d, g),
              lambda out, label, n=n, d=d, g=g: _compare(out, _ema_reference(n, d, g), label))
             for n, d, g in ((1, 1, 0.5), (4, 2, 0.5), (7, 3, 0.9), (5, 2, -0.3))]
    return _run("Chapter 1: EMA operator", ema_operator, cases,
                "blocks (1 - gamma) gamma^(i-j) I for j <= i and 0 above, on 4 cases")


def _mlp_case(seed: int, n: int, d: int, h: int, p: int):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((h, d)), rng.standard_normal((p, h)), rng.standard_normal((n, d))


def check_mlp_operator(mlp_operator: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]) -> CheckResult:
    """Chapter 1, exercise "MLP operator": an interaction form of the ReLU MLP ``y_i = W2 relu(W1 x_i)``.

    The answer is a function ``mlp_operator(W1, W2, X)`` with ``W1 (h, d)``,
    ``W2 (p, h)``, ``X (n, d)``, returning ``W (n, n, p, d)`` with
    ``W_ii = W2 diag(1[W1 x_i > 0]) W1`` and zero blocks off the diagonal.
    """
    def test(args):
        W1, W2, X = args
        gate = (X @ W1.T > 0).astype(float)  # (n, h)
        expected = np.zeros((X.shape[0], X.shape[0], W2.shape[0], W1.shape[1]))
        idx = np.arange(X.shape[0])
        expected[idx, idx] = np.einsum("ph,ih,hd->ipd", W2, gate, W1)

        def check(out, label):
            got = _numeric(out, expected.shape, label)
            y = np.maximum(X @ W1.T, 0) @ W2.T
            if not np.allclose(np.einsum("ijpd,jd->ip", got, X), y, rtol=1e-9, atol=1e-9):
                raise _Fail(f"{label}: applying your operator to X does not give the MLP's output "
                            "W2 relu(W1 x_i)")
            _compare(got, expected, label)
        return check

    cases = []
    for seed, (n, d, h, p) in ((0, (3, 2, 4, 2)), (1, (6, 3, 5, 2)), (2, (5, 4, 8, 3))):
        args = _mlp_case(seed, n, d, h, p)
        cases.append((f"mlp_operator(W1, W2, X) with n={n}, d={d}, h={h}, p={p}", args, test(args)))
    return _run("Chapter 1: MLP operator", mlp_operator, cases,
                "blocks W2 D(x_i) W1 on the diagonal; reproduces the MLP on 3 cases")


def check_residual_operator(residual_operator: Callable[[MultiHeadAttention, np.ndarray], np.ndarray]) -> CheckResult:
    """Chapter 1, exercise "residual attention operator": the operator of attention with a residual connection, ``y = MHA(X) + X``.

    The answer is a function ``residual_operator(mha, X)`` returning ``(n, n, d, d)``;
    the layer must have ``p = d``.
    """
    cases = []
    for seed, (H, d, n) in enumerate(((1, 2, 3), (2, 3, 6), (4, 2, 9))):
        mha = random_attention(H, d, seed=seed)
        X = np.random.default_rng(seed + 10).standard_normal((n, d))
        expected = mha.interaction(X) + np.eye(n)[:, :, None, None] * np.eye(d)
        cases.append((f"residual_operator(mha, X) with {H} head(s), d={d}, n={n}", (mha, X),
                      lambda out, label, e=expected: _compare(out, e, label)))
    return _run("Chapter 1: residual attention operator", residual_operator, cases,
                "equals sum_h alpha^h_ij V_h + delta_ij I on 3 layers")


# ---------------------------------------------------------------- Chapter 2

def _lag_span_cases():
    """(label, (A, B, C, n), expected k) for the lag-span exercise; answers are exact integers."""
    from .systems import diagonal, plateau, random_stable, random_with_lag_rank, rotation

    cases = []
    for theta, n, k in ((1.0, 1, 1), (1.0, 5, 2), (np.pi, 5, 1)):
        s = rotation(theta, rho=0.9)
        cases.append((f"rotation(theta={theta:.4g}), n={n}", (s.A, s.B, s.C, n), k))
    s = diagonal([0.9, 0.5, 0.5, -0.3])
    cases.append(("diagonal([0.9, 0.5, 0.5, -0.3]), n=6", (s.A, s.B, s.C, 6), 3))
    s = plateau()
    for n, k in ((2, 1), (3, 2)):
        cases.append((f"plateau(), n={n}", (s.A, s.B, s.C, n), k))
    s = random_stable(5, 1, 1, seed=1)
    cases.append(("a random SISO system, n=8", (s.A, s.B, s.C, 8), 1))
    cases.append(("B = 0, n=4", (s.A, np.zeros((5, 2)), np.ones((3, 5)), 4), 0))
    s = random_with_lag_rank(5, 3, 2, seed=2)
    cases.append(("random_with_lag_rank(5, 3, 2), n=9", (s.A, s.B, s.C, 9), 5))
    return cases


def check_lag_span_dimension(lag_span_dimension: Callable) -> CheckResult:
    """Chapter 2, exercise "lag span by hand": compute ``k(n)`` yourself.

    The answer is a function ``lag_span_dimension(A, B, C, n)`` returning the
    integer ``dim span{C A^l B : l < n}``.
    """
    def expect(k):
        def test(out, label):
            try:
                value = int(out)
            except (TypeError, ValueError, OverflowError):
                raise _Fail(f"{label}: expected an integer; got {type(out).__name__}") from None
            if value != out or value != k:
                raise _Fail(f"{label}: k(n) should be {k}; got {out!r}")
        return test

    cases = [(f"lag_span_dimension on {label}", args, expect(k)) for label, args, k in _lag_span_cases()]
    return _run("Chapter 2: lag span by hand", lag_span_dimension, cases,
                f"correct k(n) on {len(cases)} systems (rotations, repeats, plateau, SISO, B = 0)")


def _system_profile(make_system: Callable, label: str, p: int | None, d: int | None, n: int):
    """Call the student's system factory and return its k(1..n), checking shapes and stability."""
    from .models import LinearSSM
    from .span import lag_span_profile

    out = _call(make_system, label)
    if out is NOT_ATTEMPTED:
        return NOT_ATTEMPTED
    try:
        A, B, C = out
        ssm = LinearSSM(A, B, C)
    except (TypeError, ValueError) as exc:
        raise _Fail(f"{label}: expected a tuple (A, B, C) of compatible real matrices ({exc})") from None
    if p is not None and (ssm.p, ssm.d) != (p, d):
        raise _Fail(f"{label}: expected p = {p} output and d = {d} input channels; got p = {ssm.p}, d = {ssm.d}")
    if not ssm.spectral_radius < 1:
        raise _Fail(f"{label}: the system must be stable (spectral radius < 1); got {ssm.spectral_radius:.3g}")
    return lag_span_profile(ssm.A, ssm.B, ssm.C, n).tolist()


def _check_design(exercise: str, make_system: Any, p, d, target: list[int], summary: str) -> CheckResult:
    if _is_stub(make_system):
        return CheckResult(exercise, NOT_ATTEMPTED, "replace the stub with your answer, then run this cell again")
    if not callable(make_system):
        return CheckResult(exercise, FAILED, f"expected a function; got {type(make_system).__name__}")
    label = f"{getattr(make_system, '__name__', 'your function')}()"
    try:
        profile = _system_profile(make_system, label, p, d, len(target))
    except _Fail as failure:
        return CheckResult(exercise, FAILED, str(failure))
    if profile is NOT_ATTEMPTED:
        return CheckResult(exercise, NOT_ATTEMPTED, "your function returns nothing yet; fill in its body")
    if profile != target:
        return CheckResult(exercise, FAILED, f"k(1..{len(target)}) should be {target}; yours is {profile}")
    return CheckResult(exercise, PASSED, summary)


def check_rank_three_system(make_system: Callable) -> CheckResult:
    """Chapter 2, exercise "three dimensions from two channels".

    The answer is a function of no arguments returning ``(A, B, C)``: a stable SSM
    with ``p = d = 2`` whose lag-span dimension is ``k(n) = min(n, 3)``.
    """
    target = [1, 2, 3, 3, 3, 3]
    return _check_design("Chapter 2: three dimensions from two channels", make_system, 2, 2, target,
                         f"stable, p = d = 2, and k(1..6) = {target}")


def check_long_plateau(make_system: Callable) -> CheckResult:
    """Chapter 2, exercise "a longer plateau".

    The answer is a function of no arguments returning ``(A, B, C)``: a stable SSM
    (any widths) whose ``k(n)`` is 1 for ``n = 1, 2, 3`` and 2 from ``n = 4`` on.
    """
    target = [1, 1, 1, 2, 2, 2, 2]
    return _check_design("Chapter 2: a longer plateau", make_system, None, None, target,
                         f"stable, and k(1..7) = {target}")


# ---------------------------------------------------------------- Chapter 3

def _chapter3_targets():
    """(label, K) pairs: lag operators of small SSMs with known structure."""
    from .models import lag_operators
    from .systems import diagonal, random_with_lag_rank, rotation

    targets = []
    for label, s, n in (("rotation(1.0, rho=0.9), n=10", rotation(1.0, 0.9), 10),
                        ("diagonal([0.9, 0.5, -0.3]), n=8", diagonal([0.9, 0.5, -0.3]), 8),
                        ("random_with_lag_rank(4, 2, 3), n=12", random_with_lag_rank(4, 2, 3, seed=1), 12)):
        targets.append((label, lag_operators(s.A, s.B, s.C, n)))
    return targets


def check_exact_heads(exact_head_construction: Callable) -> CheckResult:
    """Chapter 3, exercise "build the heads": the construction of Theorem 5.

    The answer is a function ``exact_head_construction(K)`` taking lags ``K (n, p, d)``
    and returning ``(coefficients (H, n), values (H, p, d))`` with
    ``sum_h coefficients[h, l] * values[h] == K[l]`` and the fewest heads, ``H = k``.
    """
    from .span import interaction_rank

    def expect(K):
        def test(out, label):
            try:
                c, V = out
            except (TypeError, ValueError):
                raise _Fail(f"{label}: expected a pair (coefficients, values); got {type(out).__name__}") from None
            k = interaction_rank(K)
            try:
                heads = np.shape(V)[0] if np.ndim(V) == 3 else k
            except (TypeError, ValueError):  # ragged nested lists
                heads = k
            V = _numeric(V, (heads,) + K.shape[1:], f"{label}: values")
            c = _numeric(c, (heads, K.shape[0]), f"{label}: coefficients")
            if V.shape[0] != k:
                raise _Fail(f"{label}: the lags span k = {k} dimensions, so use exactly {k} heads; you used {V.shape[0]}")
            _compare(np.einsum("hl,hpd->lpd", c, V), K, f"{label}: sum_h c_h(l) V_h against K_l")
        return test

    cases = [(f"exact_head_construction on {label}", (K,), expect(K)) for label, K in _chapter3_targets()]
    return _run("Chapter 3: build the heads", exact_head_construction, cases,
                f"k heads reproduce every lag exactly on {len(cases)} systems")


def check_optimal_error(optimal_error: Callable) -> CheckResult:
    """Chapter 3, exercise "the Eckart-Young tail".

    The answer is a function ``optimal_error(K, H, weights)`` returning the minimum of
    ``sum_l w_l ||K_l - sum_h c_h(l) V_h||_F^2`` over ``H`` heads (a float).
    """
    from .heads import head_count_curve, white_noise_weights

    def expect(value):
        def test(out, label):
            try:
                got = float(out)
            except (TypeError, ValueError, OverflowError):
                raise _Fail(f"{label}: expected a number; got {type(out).__name__}") from None
            if not np.isfinite(got) or abs(got - value) > 1e-8 * max(1.0, abs(value)):
                raise _Fail(f"{label}: the minimum is {value:.6g}; got {got:.6g}")
        return test

    cases = []
    for label, K in _chapter3_targets():
        n = K.shape[0]
        for H, weights, wname in ((1, np.ones(n), "ones"), (2, white_noise_weights(n), "n - l")):
            value = float(head_count_curve(K, H, weights)[H])
            cases.append((f"optimal_error on {label}, H={H}, weights {wname}", (K, H, weights), expect(value)))
    return _run("Chapter 3: the Eckart-Young tail", optimal_error, cases,
                f"the optimal error is right on {len(cases)} cases (plain and white-noise weights)")


def check_nonnegative_head_count(nonnegative_head_count: Callable) -> CheckResult:
    """Chapter 3, exercise "count nonnegative heads": ``H+ = k`` if the cone is pointed, else ``k + 1``.

    The answer is a function ``nonnegative_head_count(K)`` returning an integer.
    """
    from .heads import nonnegative_head_count as reference
    from .models import lag_operators
    from .systems import rotation

    def scalar(a, n):
        return lag_operators([[a]], [[1.0]], [[1.0]], n)

    targets = [("scalar a = 0.5, n=8", scalar(0.5, 8)), ("scalar a = -0.5, n=8", scalar(-0.5, 8)),
               ("rotation(0.5), n=6 ((n-1) theta < pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 6)),
               ("rotation(0.5), n=8 ((n-1) theta > pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 8))]

    def expect(value):
        def test(out, label):
            if isinstance(out, (bool, np.bool_)) or not isinstance(out, (int, np.integer)):
                raise _Fail(f"{label}: expected an integer; got {out!r}")
            if out != value:
                raise _Fail(f"{label}: H+ should be {value}; got {out}")
        return test

    cases = [(f"nonnegative_head_count on {label}", (K,), expect(reference(K))) for label, K in targets]
    return _run("Chapter 3: count nonnegative heads", nonnegative_head_count, cases,
                f"H+ is right on {len(cases)} systems (signs, rotations before and after half a turn)")


def _rot(ssm):
    return ssm.A, ssm.B, ssm.C


# ---------------------------------------------------------------- Chapter 4

def _one_head(seed: int, d: int = 2, d_k: int = 3):
    from .systems import random_attention

    return random_attention(1, d, d_k=d_k, seed=seed, scale=1.5)


def check_head_jacobian(head_jacobian: Callable) -> CheckResult:
    """Chapter 4, exercise "the Jacobian of a head": Proposition 8 by hand.

    The answer is a function ``head_jacobian(W_Q, W_K, V, X)`` for one causal softmax head
    with ``W_Q, W_K (d_k, d)``, value map ``V (p, d)`` and input ``X (n, d)``, returning
    ``J (n, n, p, d)`` with ``J[i, j] = d y_i / d x_j``.
    """
    from .gradients import jacobian

    cases = []
    for seed, n in ((0, 1), (1, 4), (2, 7)):
        head = _one_head(seed)
        X = np.random.default_rng(seed + 20).standard_normal((n, head.d))
        expected = jacobian(head, X)
        args = (head.W_Q[0], head.W_K[0], head.value_maps()[0], X)
        cases.append((f"head_jacobian on a head with n={n}", args,
                      lambda out, label, e=expected: _compare(out, e, label, rtol=1e-7)))
    return _run("Chapter 4: the Jacobian of a head", head_jacobian, cases,
                "value, key and query paths agree with the exact Jacobian on 3 inputs")


def check_highway_input(make_input: Callable) -> CheckResult:
    """Chapter 4, exercise "build the highway": Theorem 9's input by hand.

    The answer is a function ``make_input(W_Q, W_K, n, a, key)`` returning ``X (n, d)`` on
    which a causal softmax head with these query and key maps gives the last position
    weight ``a`` on position ``key``.
    """
    def expect(head, n, a, key):
        def test(out, label):
            X = _numeric(out, (n, head.d), label)
            with np.errstate(all="ignore"):
                weight = float(head.coefficients(X)[0, n - 1, key])
            if not np.isfinite(weight) or abs(weight - a) > 1e-8:
                raise _Fail(f"{label}: the weight of the last position on position {key} should be {a}; "
                            f"on your input it is {weight:.6g}")
        return test

    cases = []
    for seed, n, a, key in ((3, 2, 0.3, 0), (4, 16, 0.9, 0), (5, 64, 0.5, 40), (6, 300, 0.99, 7)):
        head = _one_head(seed)
        cases.append((f"make_input(n={n}, a={a}, key={key})", (head.W_Q[0], head.W_K[0], n, a, key),
                      expect(head, n, a, key)))
    return _run("Chapter 4: build the highway", make_input, cases,
                "the key gets exactly weight a on 4 heads, lengths and positions")


def check_ssm_gradient_profile(ssm_profile: Callable) -> CheckResult:
    """Chapter 4, exercise "an SSM's gradient profile".

    The answer is a function ``ssm_profile(A, B, C, n)`` returning the spectral norms
    ``||d y_{n-1} / d x_{n-1-l}||`` for ``l = 0, ..., n-1``: shape ``(n,)``.
    """
    from .models import lag_operators
    from .systems import jordan, random_stable, rotation

    cases = []
    for label, s, n in (("rotation(1.0, rho=0.9)", rotation(1.0, 0.9), 12),
                        ("jordan([(0.9, 3)])", jordan([(0.9, 3)]), 20),
                        ("random_stable(5, 2, 3)", random_stable(5, 2, 3, seed=2), 9)):
        expected = np.linalg.norm(lag_operators(s.A, s.B, s.C, n), ord=2, axis=(1, 2))
        cases.append((f"ssm_profile on {label}, n={n}", (s.A, s.B, s.C, n),
                      lambda out, lab, e=expected: _compare(out, e, lab, rtol=1e-9)))
    return _run("Chapter 4: an SSM's gradient profile", ssm_profile, cases,
                "the norms ||C A^l B|| are right on 3 systems, including a Jordan block")
