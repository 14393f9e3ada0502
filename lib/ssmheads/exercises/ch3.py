"""Checks of the Chapter 3 exercises (the head count).

These exercises ask the student to write a routine the library already has
(``optimal_heads``, ``nonnegative_head_count``, ...). So that an answer cannot
pass by calling the library's own version, every check computes its reference
values first and then runs the answer inside :func:`reference_routines_off`,
a window in which those routines raise ``RuntimeError("... write it yourself
...")``. The window switches the function objects themselves off (not only the
module attributes), so a name imported before the check is caught too, and it
restores them when the answer returns or raises.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._common import CheckResult, _compare, _Fail, _numeric, _run
from ._common import _on_its_own as _guarded
from ._common import reference_routines_off as _routines_off

#: The library routines an answer to a Chapter 3 exercise may not call: (module, name).
REFERENCE_ROUTINES = (
    ("heads", "exact_heads"), ("heads", "optimal_heads"), ("heads", "head_count_curve"),
    ("heads", "stationary_residual"), ("heads", "fit_heads"), ("heads", "is_pointed"),
    ("heads", "nonnegative_head_count"), ("heads", "nonnegative_heads"), ("heads", "softmax_heads"),
    ("span", "interaction_rank"), ("span", "span_basis"), ("span", "singular_values"),
    ("span", "lag_span_dimension"), ("span", "lag_span_profile"),
)


def reference_routines_off():
    """Within the block, every routine of :data:`REFERENCE_ROUTINES` raises ``RuntimeError``.

    Chapter 3's use of :func:`ssmheads.exercises._common.reference_routines_off`: the
    function objects keep their identity and only their code is swapped, so
    ``ssmheads.optimal_heads``, ``ssmheads.heads.optimal_heads`` and a name bound
    earlier by ``from ssmheads import optimal_heads`` are all switched off, and all
    work again after the block, also when it raises.

    Used in Chapter 3, Section 3.9 (by every check of the chapter's exercises).
    """
    return _routines_off(REFERENCE_ROUTINES)


def _on_its_own(answer):
    """``answer`` wrapped so that each call runs inside :func:`reference_routines_off`."""
    return _guarded(answer, REFERENCE_ROUTINES)


def _chapter3_targets():
    """(label, K) pairs: lag operators of small SSMs with known structure."""
    from ..models import lag_operators
    from ..systems import diagonal, random_with_lag_rank, rotation

    targets = []
    for label, s, n in (("rotation(1.0, rho=0.9), n=10", rotation(1.0, 0.9), 10),
                        ("diagonal([0.9, 0.5, -0.3]), n=8", diagonal([0.9, 0.5, -0.3]), 8),
                        ("random_with_lag_rank(4, 2, 3), n=12", random_with_lag_rank(4, 2, 3, seed=1), 12)):
        targets.append((label, lag_operators(s.A, s.B, s.C, n)))
    return targets


def _build_heads_targets():
    """Chapter 3's targets plus three whose rank a careless tolerance gets wrong.

    ``A = diag(0.9, 0.5)``, ``B = I``, ``C = diag(1, 3e-4)`` and ``C = diag(1, 3e-8)``: the
    lag span is exactly two-dimensional, with ``sigma_2 / sigma_1`` about ``1e-4`` and
    ``1e-8``, so a relative tolerance of ``1e-3`` (first) or ``1e-5`` (second) sees one
    direction. And ``diagonal([0.9, 0.5, -0.3])``'s lags times ``1e-12`` (``k = 3``, largest
    singular value ``2e-12``): an absolute tolerance such as ``1e-10`` sees none.
    """
    from ..models import lag_operators
    from ..systems import diagonal

    targets = _chapter3_targets()
    for c2, name in ((3e-4, "3e-4"), (3e-8, "3e-8")):
        K = lag_operators(np.diag([0.9, 0.5]), np.eye(2), np.diag([1.0, c2]), 9)
        s = np.linalg.svd(K.reshape(9, -1), compute_uv=False)
        targets.append((f"diagonal([0.9, 0.5]), C = diag(1, {name}), n=9 "
                        f"(sigma_2 / sigma_1 = {s[1] / s[0]:.1e})", K))
    tiny = diagonal([0.9, 0.5, -0.3])
    targets.append(("diagonal([0.9, 0.5, -0.3]) times 1e-12 (tiny lags), n=8",
                    1e-12 * lag_operators(tiny.A, tiny.B, tiny.C, 8)))
    return targets


#: The two ways of mixing up vec and its inverse, each undone: (what the answer did, the map that undoes it).
#: Column-major vec of a p x d matrix M is ``M.reshape(-1, order="F")``, row-major ``M.reshape(-1)``.
_VEC_MIXES = (
    ("a row-major vec (K.reshape(n, p * d)) with a column-major inverse",
     lambda M: M.reshape(-1, order="F").reshape(M.shape)),
    ("a column-major vec (K.transpose(0, 2, 1).reshape(n, p * d)) with a row-major inverse",
     lambda M: M.reshape(-1).reshape(M.shape, order="F")),
)


def _spans(values: np.ndarray, K: np.ndarray) -> bool:
    """Whether every lag K_l lies in span{values_h} (to 1e-8 of max |K_l|)."""
    basis = values.reshape(values.shape[0], -1).T
    lags = K.reshape(K.shape[0], -1).T
    if not basis.size:
        return not np.any(lags)
    fit = basis @ np.linalg.lstsq(basis, lags, rcond=None)[0]
    return bool(np.abs(fit - lags).max() <= 1e-8 * max(float(np.abs(lags).max()), 1e-300))


def _vec_order_hint(c: np.ndarray, V: np.ndarray, K: np.ndarray) -> str:
    """A hint when the answer's vec and its inverse use different orders (one row-major, one column-major).

    Such an answer's value maps are the right ones with their entries reordered: read back
    in the other order, they reproduce the lags with the answer's own coefficients (when
    those are the SVD's ``S Q^T``), or they span the lags while the maps as returned do not
    (when the coefficients were projected onto the reordered maps). Where the lag span is
    closed under that reordering (``p = 1``, ``d = 1``, or e.g. span{I, J} under transposition)
    the mixed answer is right, and it passes; the hint is only for a case that fails.
    """
    p, d = K.shape[1:]
    if p == 1 or d == 1:  # both orders are the same for a row or a column
        return ""
    for what, undo in _VEC_MIXES:  # for p = d both undo a transposition
        fixed = np.stack([undo(v) for v in V]) if V.shape[0] else V
        rebuilt = np.einsum("hl,hpd->lpd", c, fixed)
        if (np.abs(rebuilt - K).max() <= 1e-8 * max(float(np.abs(K).max()), 1e-300)
                or (_spans(fixed, K) and not _spans(V, K))):
            detail = f" ({what})" if p != d else ""
            return (f"; your vec and its inverse use different orders, one row-major and one column-major"
                    f"{detail}: read back in the other order, your value maps span the lags. Use one order "
                    "both ways: column-major "
                    "G = K.transpose(0, 2, 1).reshape(n, p * d).T and values = U[:, :k].T.reshape(k, d, p)"
                    ".transpose(0, 2, 1), or row-major G = K.reshape(n, p * d).T and values = "
                    "U[:, :k].T.reshape(k, p, d)")
    return ""


def _reshape_hint(got: np.ndarray, K: np.ndarray) -> str:
    """A hint when the reconstructed lags are a reordering of the right ones (same singular values)."""
    n = K.shape[0]
    s_got = np.linalg.svd(got.reshape(n, -1), compute_uv=False)
    s_ref = np.linalg.svd(K.reshape(n, -1), compute_uv=False)
    if np.allclose(s_got, s_ref, rtol=1e-8, atol=1e-10 * max(s_ref[0], 1e-300)):
        return ("; your lags have the right singular values but misplaced entries: check that the inverse "
                "of your vec (the reshape back to p x d) uses the same order as vec itself "
                "(column-major: K.transpose(0, 2, 1).reshape(n, p * d) and back)")
    return ""


#: Singular values below this fraction of the largest are rounding noise of the stacked lags.
ROUNDING_NOISE = 1e-12


#: A dropped direction above this fraction of the largest is no tolerance's doing: the count is off.
NOT_A_TOLERANCE = 1e-2
#: Lags whose largest singular value is below this are "tiny": an absolute tolerance sees nothing.
TINY_LAGS = 1e-6


def _tolerance_hint(K: np.ndarray, k: int, heads: int) -> str:
    """What the answer's head count says about its rank tolerance, with the singular values that show it.

    More heads than ``k`` whose extra singular values are below ``ROUNDING_NOISE`` of the
    largest: the tolerance counts rounding noise (one head too many may also be a
    miscount). Fewer heads than ``k``: none at all, or lags whose largest singular value is
    below ``TINY_LAGS``, point to an absolute tolerance; a dropped direction above
    ``NOT_A_TOLERANCE`` of the largest to a miscount (off by one); otherwise the
    tolerance is too loose (the dropped direction's relative size is printed).
    """
    n = K.shape[0]
    s = np.linalg.svd(K.reshape(n, -1), compute_uv=False)
    if not s.size or s[0] == 0.0:
        return ""
    ratios = s / s[0]
    if heads > k and heads <= s.size and ratios[heads - 1] < ROUNDING_NOISE:
        if heads == k + 1:
            which = f"singular value {heads} of the stacked lags is below {ROUNDING_NOISE:.0e} of the largest"
            size = f"({ratios[heads - 1]:.1e})"
            miscount = ("; if your tolerance is already relative and above rounding, check how you count "
                        "(off by one?)")
        else:
            which = (f"singular values {k + 1} to {heads} of the stacked lags are below {ROUNDING_NOISE:.0e} "
                     "of the largest")
            size, miscount = f"(down to {ratios[heads - 1]:.1e})", ""
        return (f"; your tolerance counts rounding noise: {which} {size}. Use a tolerance relative to the "
                f"largest singular value, above rounding (e.g. max(n, pd) * machine epsilon){miscount}")
    if 0 <= heads < k and (heads == 0 or s[0] < TINY_LAGS):
        dropped = ("your tolerance drops even that one" if heads == 0 else
                   f"you dropped singular value {heads + 1}, {ratios[heads]:.1e} of the largest")
        return (f"; is your tolerance absolute? The largest singular value of the stacked lags is {s[0]:.1e} "
                f"here, and {dropped}. Make the tolerance relative to the largest singular value sigma_1 "
                "(e.g. max(n, pd) * machine epsilon * sigma_1)")
    if 0 <= heads < k and ratios[heads] > NOT_A_TOLERANCE:
        return (f"; no rank tolerance drops a direction this large: singular value {heads + 1} of the stacked "
                f"lags is {ratios[heads]:.1e} of the largest. Check how you count (off by one?)")
    if 0 <= heads < k:
        return (f"; your tolerance is too loose: singular value {heads + 1} of the stacked lags is "
                f"{ratios[heads]:.1e} of the largest, a real direction, not rounding. Choose a tolerance below "
                "the smallest nonzero one and above rounding (e.g. max(n, pd) * machine epsilon)")
    return ""


def check_exact_heads(exact_head_construction: Callable) -> CheckResult:
    """Chapter 3, exercise "build the heads": the head-count theorem's construction (Theorem 3.1).

    Used in Chapter 3, Exercise 3.1 (build the heads).

    The answer is a function ``exact_head_construction(K)`` taking lags ``K (n, p, d)``
    and returning ``(coefficients (H, n), values (H, p, d))`` with
    ``sum_h coefficients[h, l] * values[h] == K[l]`` and the fewest heads, ``H = k``.
    Two cases have ``sigma_2 / sigma_1`` about ``1e-4`` and ``1e-8`` and one has lags of size
    ``1e-12``, so a loose or an absolute rank tolerance fails; the message says which, or
    that the count is off by one, from the singular values. Either order
    of ``vec`` (column-major, or NumPy's row-major) is right if its inverse uses the same
    order; an answer that mixes them (row-major ``vec``, column-major inverse, or the
    reverse) is recognised and its message says so. It passes the cases where mixing
    does no harm (the rotation's span{I, J} and diagonal lags are closed under
    transposition) and fails the others. When the entries are wrong in another way but
    their singular values are right, the message points at the reshape. The library's
    own routines are switched off while the answer runs (to help you test your own
    code, not as a security boundary).
    """
    from ..span import interaction_rank

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
                raise _Fail(f"{label}: the lags span k = {k} dimensions, so use exactly {k} heads; you used "
                            f"{V.shape[0]}" + _tolerance_hint(K, k, V.shape[0]))
            got = np.einsum("hl,hpd->lpd", c, V)
            scale = float(np.abs(K).max()) or 1.0   # relative, so that tiny lags count
            bad = np.abs(got - K) > 1e-9 * scale
            if bad.any():
                where = tuple(int(i) for i in np.argwhere(bad)[0])
                size = f" (tolerance 1e-9 of max |K| = {scale:.1e})" if scale < 1e-3 else ""
                raise _Fail(f"{label}: sum_h c_h(l) V_h against K_l: entry {where} should be {K[where]:.6g}; "
                            f"got {got[where]:.6g}{size}" + (_vec_order_hint(c, V, K) or _reshape_hint(got, K)))
        return test

    cases = [(f"exact_head_construction on {label}", (K,), expect(K)) for label, K in _build_heads_targets()]
    return _run("Chapter 3: build the heads", _on_its_own(exact_head_construction), cases,
                f"k heads reproduce every lag exactly on {len(cases)} systems")


_ASCENDING = ("the eigenvalues (of G_w G_w^T or G_w^T G_w) in ascending order, as np.linalg.eigvalsh returns "
              "them: sort them in decreasing order before summing from index H")


def _tail_mistakes(K: np.ndarray, H: int, weights: np.ndarray) -> list[tuple[str, float]]:
    """(what went wrong, the value it gives) for common wrong answers to the Eckart-Young tail.

    Each value is computed from ``K``, ``H`` and ``weights`` the way the mistake computes it:
    weights ``w_l`` instead of ``sqrt(w_l)`` on the columns, weights ignored, singular values
    not squared, the kept part instead of the tail, only ``sigma_(H+1)^2``, the eigenvalues of
    ``G_w G_w^T`` (or ``G_w^T G_w``) summed from index ``H`` in ``eigvalsh``'s ascending
    order, an index off by one either way, the
    minimum divided by ``n`` or by the total, its square root, and value maps taken from
    the unweighted SVD.
    """
    n = K.shape[0]
    rows = K.reshape(n, -1)
    G_w = rows.T * np.sqrt(weights)
    s = np.linalg.svd(G_w, compute_uv=False)
    tail = float(np.sum(s[H:] ** 2))
    total = float(np.sum(s**2))
    s_w = np.linalg.svd(rows.T * weights, compute_uv=False)
    U1, s_1, _ = np.linalg.svd(rows.T, full_matrices=False)
    missed = rows.T - U1[:, :H] @ (U1[:, :H].T @ rows.T)   # what the unweighted basis misses
    mistakes = [
        ("w_l instead of sqrt(w_l) on the columns of G_w (its squared singular values must carry w_l, "
         "so each column gets sqrt(w_l))", float(np.sum(s_w[H:] ** 2))),
        ("the weights ignored: that is the unweighted tail", float(np.sum(s_1[H:] ** 2))),
        ("singular values not squared: the loss is a sum of squares, so the tail is sum_{r>H} sigma_r^2",
         float(np.sum(s[H:]))),
        ("the part the H heads keep, sum_{r<=H} sigma_r^2, not the tail sum_{r>H} sigma_r^2",
         float(np.sum(s[:H] ** 2))),
        ("only sigma_{H+1}^2: the error of H heads is the whole tail sum_{r>H} sigma_r^2 (it is sigma_k^2 "
         "alone only for H = k - 1, where one nonzero singular value is left)",
         float(s[H] ** 2) if H < s.size else np.nan),
        (_ASCENDING, float(np.sum(np.linalg.eigvalsh(G_w @ G_w.T)[H:]))),
        (_ASCENDING, float(np.sum(np.linalg.eigvalsh(G_w.T @ G_w)[H:]))),
        ("the tail from index H + 1 on: with H heads the first H singular values are kept (s[H:], 0-based)",
         float(np.sum(s[H + 1:] ** 2))),
        ("the tail from index H - 1 on: with H heads the first H singular values are kept (s[H:], 0-based)",
         float(np.sum(s[max(H - 1, 0):] ** 2)) if H >= 1 else np.nan),
        ("the minimum divided by n: the exercise asks for the total weighted error, not a mean", tail / n),
        ("the minimum divided by sum_l w_l ||K_l||^2: the exercise asks for the error, not a fraction",
         tail / total if total > 0 else np.nan),
        ("the square root of the minimum: the loss is squared", float(np.sqrt(tail))),
        ("value maps from the SVD of the unweighted G: with weights, the best maps are the left singular "
         "vectors of G_w", float(np.sum(weights * np.sum(missed**2, axis=0)))),
    ]
    return mistakes


#: A wrong tail within this fraction of the total weighted energy agrees to single precision (float32).
SINGLE_PRECISION = 1e-5


def _tail_hint(got: float, value: float, mistakes: list[tuple[str, float]]) -> str:
    """``"; your value is what ... gives"``, naming every mistake whose value is ``got`` (and not the right value)."""
    named = []
    for what, wrong in mistakes:
        if what in named:
            continue
        if not np.isfinite(wrong) or abs(wrong - value) <= 1e-6 * max(1.0, abs(value)):
            continue  # this mistake gives the right value here: not a sign of it
        if abs(got - wrong) <= 1e-8 * max(1.0, abs(wrong)):
            named.append(what)
    return "; your value is what a common mistake gives: " + "; or ".join(named) if named else ""


def check_optimal_error(optimal_error: Callable) -> CheckResult:
    """Chapter 3, exercise "the Eckart-Young tail".

    Used in Chapter 3, Exercise 3.2 (the Eckart-Young tail).

    The answer is a function ``optimal_error(K, H, weights)`` returning the minimum of
    ``sum_l w_l ||K_l - sum_h c_h(l) V_h||_F^2`` over ``H`` heads: a number (a float, a
    NumPy scalar or an array with one entry). A wrong value that a common mistake gives
    (``w_l`` instead of ``sqrt(w_l)``, weights ignored, singular values not squared, the
    kept part instead of the tail, only ``sigma_(H+1)^2``, ``eigvalsh``'s ascending order,
    an index off by one, divided by ``n`` or by the total, its square root, value maps
    from the unweighted SVD) is named in the message, which prints both values to 10
    digits with their difference; a value within ``SINGLE_PRECISION`` of the total that no
    mistake explains is asked whether it was computed in float32.
    The library's own routines are switched off while the answer runs.
    """
    from ..heads import head_count_curve, white_noise_weights

    def expect(value, total, mistakes):
        def test(out, label):
            raw = out
            if isinstance(out, np.ndarray) and out.size == 1:
                raw = out.reshape(()).item()
            try:
                if isinstance(raw, np.ndarray) or np.iscomplexobj(raw):
                    raise TypeError
                got = float(raw)
            except (TypeError, ValueError, OverflowError):
                shape = f" of shape {out.shape}" if isinstance(out, np.ndarray) else ""
                raise _Fail(f"{label}: expected a number; got {type(out).__name__}{shape}") from None
            if not np.isfinite(got):
                raise _Fail(f"{label}: the minimum is {value:.10g}; got {got}")
            if abs(got - value) > 1e-8 * max(1.0, abs(value)):
                gap = abs(got - value) / total if total > 0 else np.inf
                hint = _tail_hint(got, value, mistakes)
                if not hint and gap <= SINGLE_PRECISION:
                    hint = ("; they agree only to single precision: computed in float32? Compute in float64, "
                            "NumPy's default")
                raise _Fail(f"{label}: the minimum is {value:.10g}; got {got:.10g} (a difference of "
                            f"{got - value:.1e}, {gap:.1e} of the total weighted energy sum_l w_l ||K_l||_F^2)"
                            + hint)
        return test

    cases = []
    for label, K in _chapter3_targets():
        n = K.shape[0]
        for H, weights, wname in ((1, np.ones(n), "ones"), (2, white_noise_weights(n), "n - l")):
            curve = head_count_curve(K, H, weights)    # curve[0]: the total weighted energy
            cases.append((f"optimal_error on {label}, H={H}, weights {wname}", (K, H, weights),
                          expect(float(curve[H]), float(curve[0]), _tail_mistakes(K, H, weights))))
    return _run("Chapter 3: the Eckart-Young tail", _on_its_own(optimal_error), cases,
                f"the optimal error is right on {len(cases)} cases (plain and white-noise weights)")


def check_nonnegative_head_count(nonnegative_head_count: Callable) -> CheckResult:
    """Chapter 3, exercise "count nonnegative heads": ``H+ = k`` if the cone is pointed, else ``k + 1``.

    Used in Chapter 3, Exercise 3.3.

    The answer is a function ``nonnegative_head_count(K)`` returning an integer (a float
    with an integer value, such as ``2.0``, is accepted as that integer, and so is an
    array with one entry, such as ``np.array([2])``). The cases
    include ``k = 3`` with a pointed and a non-pointed cone, lags that are exactly zero
    (which a pointing functional must ignore), and three cases that catch plausible
    wrong rules: the rotation with ``(n - 1) theta = 3 < pi`` (``phi = sum_l K_l`` as the
    pointing functional says 3, the answer is 2), a cone containing a line on which a
    non-strict program (``phi(K_l) >= 0``, ``sum_l phi(K_l) >= 1``) is feasible (it says 2,
    the answer is 3), and a scalar SSM whose lags are all negative (``linprog`` with its
    default bounds ``phi >= 0`` says 2, the answer is 1). The library's own routines are
    switched off while the answer runs (to help you test your own code, not as a
    security boundary).
    """
    from ..heads import nonnegative_head_count as reference
    from ..models import lag_operators
    from ..systems import diagonal, rotation

    def scalar(a, n):
        return lag_operators([[a]], [[1.0]], [[1.0]], n)

    shift = np.diag([1.0, 1.0], -1)  # nilpotent: e1 -> e2 -> e3 -> 0, so K_l = 0 for l >= 3
    targets = [("scalar a = 0.5, n=8", scalar(0.5, 8)), ("scalar a = -0.5, n=8", scalar(-0.5, 8)),
               ("rotation(0.5), n=6 ((n-1) theta < pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 6)),
               ("rotation(0.5), n=8 ((n-1) theta > pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 8)),
               ("diagonal([0.9, 0.5, 0.2]), n=8 (k = 3)", lag_operators(*_rot(diagonal([0.9, 0.5, 0.2])), 8)),
               ("diagonal([-0.9, -0.5, -0.2]), n=8 (k = 3, signs alternate)",
                lag_operators(*_rot(diagonal([-0.9, -0.5, -0.2])), 8)),
               ("nilpotent shift, B = C = I_3, n=6 (K_3 = K_4 = K_5 = 0)",
                lag_operators(shift, np.eye(3), np.eye(3), 6)),
               # (n-1) theta = 3 < pi: pointed (H+ = 2), but phi = sum_l K_l is not positive on every lag
               ("rotation(0.5), n=7 ((n-1) theta = 3 < pi)", lag_operators(*_rot(rotation(0.5, 0.9)), 7)),
               # K_l = diag((-0.5)^l, [l == 1]): the (1, 1) entries make a line, the (2, 2) entry is
               # >= 0 on every lag; phi(K_l) >= 0 with sum phi(K_l) >= 1 is feasible, yet H+ = k + 1
               ("[-0.5] (+) 2-step nilpotent shift, B = [I_2; 0], C = [e_1^T; e_3^T], n=8 (a line in the cone)",
                lag_operators(np.diag([-0.5, 0.0, 0.0]) + np.diag([0.0, 1.0], -1),
                              np.eye(3)[:, :2], np.eye(3)[[0, 2]], 8)),
               # every lag is negative: pointed, H+ = 1; a functional restricted to phi >= 0 finds no witness
               ("scalar a = 0.5, C = -1, n=8 (all lags negative)",
                lag_operators([[0.5]], [[1.0]], [[-1.0]], 8))]

    def expect(value):
        def test(out, label):
            if isinstance(out, np.ndarray) and out.size == 1:
                out = out.reshape(()).item()   # a one-entry array is its entry, as in Exercise 3.2
            if isinstance(out, (float, np.floating)) and float(out).is_integer():
                out = int(out)  # 2.0 is the integer 2
            if isinstance(out, (bool, np.bool_)) or not isinstance(out, (int, np.integer)):
                raise _Fail(f"{label}: expected an integer; got {out!r}")
            if out != value:
                raise _Fail(f"{label}: H+ should be {value}; got {out}")
        return test

    cases = [(f"nonnegative_head_count on {label}", (K,), expect(reference(K))) for label, K in targets]
    return _run("Chapter 3: count nonnegative heads", _on_its_own(nonnegative_head_count), cases,
                f"H+ is right on {len(cases)} systems: signs, rotations before and after half a\n"
                "  turn, k = 3, zero lags, a line in the cone, all lags negative")


def _rot(ssm):
    return ssm.A, ssm.B, ssm.C




def _quaternion_cases():
    """(label, K, X) for the quaternion exercise: SSMs with p = d = 4 and inputs to run them on."""
    from ..models import LinearSSM, lag_operators
    from ..systems import random_stable, rotation_matrix

    cases = []
    big = random_stable(16, 4, 4, rho=0.9, seed=3)  # N = 16: k = 16 lag operators for n >= 16
    for n, seed in ((20, 0), (6, 1)):
        X = np.random.default_rng(seed).standard_normal((n, 4))
        cases.append((f"random_stable(16, 4, 4, rho=0.9, seed=3), n={n}", lag_operators(big.A, big.B, big.C, n), X))
    X = np.random.default_rng(2).standard_normal((8, 4))
    X[2] = 0.0  # a zero token: any finite coefficients are right for it
    X[5] = X[4]
    cases.append(("random_stable(16, 4, 4, rho=0.9, seed=3), n=8, token 2 is zero",
                  lag_operators(big.A, big.B, big.C, 8), X))
    Z = np.zeros((2, 2))
    two = LinearSSM(np.block([[0.9 * rotation_matrix(0.7), Z], [Z, 0.6 * rotation_matrix(2.0)]]),
                    np.eye(4), np.eye(4))
    cases.append(("two rotations, B = C = I_4, n=10", lag_operators(two.A, two.B, two.C, 10),
                  np.random.default_rng(4).standard_normal((10, 4))))
    return cases


#: A token x is "degenerate" for four value maps when sigma_min([V_1 x .. V_4 x]) / (||x|| max_h ||V_h||_2)
#: falls below this: the maps then fail to span R^4 there (up to rounding).
DEGENERATE_TOKEN = 1e-6


def _spanning_ratio(V: np.ndarray, x: np.ndarray) -> float:
    """``sigma_min([V_1 x, ..., V_4 x]) / (||x|| max_h ||V_h||_2)``; 0 when the maps miss a direction at ``x``."""
    scale = max(float(np.linalg.norm(V, ord=2, axis=(1, 2)).max()), 1e-300) * max(float(np.linalg.norm(x)), 1e-300)
    return float(np.linalg.svd(np.einsum("hpd,d->ph", V, x), compute_uv=False)[-1]) / scale


def _worst_token(V: np.ndarray, samples: int = 2000, seed: int = 0) -> np.ndarray:
    """A unit token at which ``V_1 x, ..., V_4 x`` come closest to failing to span R^4.

    Samples ``samples`` unit tokens; if ``det[V_1 x .. V_4 x]`` takes both signs, bisects
    along the arc between a positive and a negative sample to a token where it vanishes
    (it is continuous on the connected sphere); otherwise polishes the sampled token with
    the smallest spanning ratio by Nelder-Mead. Deterministic (seeded).
    """
    from scipy.optimize import minimize

    rng = np.random.default_rng(seed)
    xs = rng.standard_normal((samples, 4))
    xs /= np.linalg.norm(xs, axis=1, keepdims=True)
    M = np.einsum("hpd,sd->sph", V, xs)
    det = np.linalg.det(M)
    ratios = np.linalg.svd(M, compute_uv=False)[:, -1]
    if det.max() > 0 > det.min():
        a, b = xs[np.argmax(det)], xs[np.argmin(det)]
        for _ in range(80):  # det(M(a)) > 0 > det(M(b)) throughout
            mid = (a + b) / np.linalg.norm(a + b)
            if np.linalg.det(np.einsum("hpd,d->ph", V, mid)) > 0:
                a = mid
            else:
                b = mid
        return a
    start = xs[np.argmin(ratios)]
    best = minimize(lambda y: _spanning_ratio(V, y), start, method="Nelder-Mead",
                    options={"xatol": 1e-12, "fatol": 1e-14, "maxiter": 800}).x
    best = best / np.linalg.norm(best)
    return best if _spanning_ratio(V, best) < _spanning_ratio(V, start) else start


def _pair_target(K: np.ndarray, X: np.ndarray) -> np.ndarray:
    """``K_(i-j) x_j`` for ``j <= i`` and zero otherwise, shape ``(n, n, p)``."""
    n = K.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]
    return np.where((lag >= 0)[..., None], np.einsum("ijpd,jd->ijp", K[np.clip(lag, 0, None)], X), 0.0)


def check_quaternion_heads(quaternion_heads: Callable) -> CheckResult:
    """Chapter 3, exercise "four heads on R^4": token-dependent coefficients for four fixed heads.

    Used in Chapter 3, Exercise 3.6.

    The answer is a function ``quaternion_heads(K, X)`` taking lags ``K (n, 4, 4)`` and
    an input ``X (n, 4)`` and returning ``(alpha (4, n, n), values (4, 4, 4))``: four
    value maps ``V_h`` that do not depend on ``K`` or ``X``, and causal coefficients
    with ``sum_h alpha[h, i, j] V_h x_j = K_{i-j} x_j`` for every pair ``j <= i``
    (so the heads reproduce the SSM's output on ``X``, pair by pair).

    The point of the exercise is that ``V_1 x, ..., V_4 x`` span ``R^4`` for **every**
    ``x != 0``. So after the fixed cases the check takes the answer's value maps,
    searches for the token where they come closest to failing (sign changes of
    ``det[V_1 x .. V_4 x]`` are bisected to a zero), and runs the answer once more on an
    input made of ``e_1, ..., e_4``, that token and random tokens; value maps whose
    spanning ratio (below ``DEGENERATE_TOKEN``) vanishes at one of these tokens fail with
    a message naming it. The library's own routines are switched off while the answer
    runs (to help you test your own code, not as a security boundary).
    """
    first_values = []

    def structure(V, X, label):
        for r, x in enumerate(X):
            if np.any(x) and _spanning_ratio(V, x) < DEGENERATE_TOKEN:
                token = "[" + ", ".join(f"{v:.6g}" for v in x) + "]"
                raise _Fail(f"{label}: at token {r}, x = {token}, your value maps V_h x span fewer than four "
                            f"dimensions (sigma_min([V_1 x .. V_4 x]) / (|x| max |V_h|) = "
                            f"{_spanning_ratio(V, x):.1e}), so no coefficients give K x there; four heads must "
                            "span R^4 at every nonzero token")

    def expect(K, X, probe=False):
        n = K.shape[0]
        lag = np.arange(n)[:, None] - np.arange(n)[None, :]
        target = _pair_target(K, X)

        def test(out, label):
            try:
                alpha, V = out
            except (TypeError, ValueError):
                raise _Fail(f"{label}: expected a pair (alpha, values); got {type(out).__name__}") from None
            if np.ndim(V) == 3 and np.shape(V)[0] != 4:
                raise _Fail(f"{label}: use exactly four heads; you returned {np.shape(V)[0]} value maps")
            V = _numeric(V, (4, 4, 4), f"{label}: values")
            if probe:
                structure(V, X, label)
            alpha = _numeric(alpha, (4, n, n), f"{label}: alpha")
            if not first_values:
                first_values.append(V)
            elif np.abs(V - first_values[0]).max() > 1e-12 * max(1.0, np.abs(V).max()):
                raise _Fail(f"{label}: the value maps changed from the first case; a head's value map is "
                            "fixed, only the coefficients may depend on the input")
            scale = max(1.0, float(np.abs(alpha).max()))
            if np.abs(alpha[:, lag < 0]).max(initial=0.0) > 1e-12 * scale:
                i, j = np.argwhere((np.abs(alpha).max(axis=0) > 1e-12 * scale) & (lag < 0))[0]
                raise _Fail(f"{label}: alpha must be causal, zero for j > i; alpha[:, {i}, {j}] is not")
            got = np.einsum("hij,hpd,jd->ijp", alpha, V, X)  # what each pair (i, j) contributes
            _compare(got, target, f"{label}: sum_h alpha[h, i, j] V_h x_j against K_(i-j) x_j, entry (i, j, row)")
        return test

    def cases():
        for label, K, X in _quaternion_cases():
            yield f"quaternion_heads on {label}", (K, X), expect(K, X)
        if not first_values:  # no case reached its test: nothing to probe
            return
        from ..models import lag_operators
        from ..systems import random_stable

        worst = _worst_token(first_values[0])
        X = np.vstack([np.eye(4), worst, np.random.default_rng(5).standard_normal((3, 4))])
        big = random_stable(16, 4, 4, rho=0.9, seed=3)
        K = lag_operators(big.A, big.B, big.C, X.shape[0])
        token = "[" + ", ".join(f"{v:.6g}" for v in worst) + "]"
        yield (f"quaternion_heads on tokens e_1, e_2, e_3, e_4, x = {token} (where your value maps come closest "
               "to failing) and 3 random tokens", (K, X), expect(K, X, probe=True))

    return _run("Chapter 3: four heads on R^4", _on_its_own(quaternion_heads), cases(),
                f"four fixed heads reproduce every pair K_(i-j) x_j on {len(_quaternion_cases()) + 1} inputs,\n"
                "  including a k = 16 SSM, a zero token, e_1..e_4 and the token where your\n"
                "  value maps come closest to failing to span R^4")
