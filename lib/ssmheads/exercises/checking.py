"""Checking an answer: call the student's function safely, read its result, compare it to a reference.

What the visible checks (the ``check_*`` functions, through ``ssmheads.exercises._common``) and
the instructors' hidden tests (``instructors/hidden_tests.py``) share:

* :func:`require_function` -- the answer is defined and is a function;
* :func:`call` -- the answer called on one case; an exception it raises, a stub (``None``,
  ``...``) it returns, become a message that names the call;
* :func:`real_array` -- its result as a finite float64 array of the expected shape (complex,
  non-numeric, lower precision than float64, a wrong shape, NaN or infinity and where);
* :func:`number` -- its result as one finite float;
* :func:`linear_system` -- its result as the matrices ``(A, B, C)`` of a stable linear SSM;
* :func:`compare` -- an array against the reference: the first wrong entry (index, expected,
  got, with 17 digits when 6 agree), the tolerance, and the exercise's own hints;
* :func:`near` and :func:`is_stub`, small predicates for those hints.

Each failure raises ``error`` with the message: ``AssertionError`` unless told otherwise, so
that a hidden test fails as an ``assert`` does (Otter records the message of each failed
case); the visible checks pass their own exception type. ``ssmheads.exercises`` re-exports
these names.

The module imports only NumPy and the standard library, holds no state, and reads nothing of
the rest of the package, so that a hidden test can load a fresh copy of it from this file
(``importlib.util.spec_from_file_location``): a student's notebook runs in the grading kernel
before the hidden tests, and a copy made that way is out of reach of anything it assigned to
this module's names. To switch library routines off while the answer runs, pass
``within=reference_routines_off(routines)`` from ``ssmheads.exercises._common`` (that
module's own, as the grading sandbox recognises the switched-off routines by its code).
"""

from __future__ import annotations

import contextlib
import types
import warnings
from typing import Any, Callable, Iterable, Mapping

import numpy as np

__all__ = ["is_stub", "require_function", "call", "real_array", "number", "linear_system", "compare", "near"]

#: The messages of :func:`real_array`, by failure (read-only); fields ``what``, ``shape`` (the expected one),
#: ``kind`` (the answer's type), ``dtype`` and ``digits`` (its precision), ``got`` (its shape),
#: ``index`` (the first entry that is NaN or infinite).
ARRAY_MESSAGES: Mapping[str, str] = types.MappingProxyType({
    "complex": "{what}: expected a real array of shape {shape}; got a complex array",
    "type": "{what}: expected a real array of shape {shape}; got {kind}",
    "precision": ("{what}: your array holds {dtype}, and the test compares entries to 1e-9 (relative to the "
                  "largest entry when that exceeds 1): compute in float64, NumPy's default"),
    "shape": "{what}: expected shape {shape}; got shape {got}",
    "nonfinite": "{what}: expected finite numbers; your array has NaN or infinity, first at index {index}",
})


def is_stub(value: Any) -> bool:
    """Whether ``value`` is what an untouched stub gives: ``None`` or ``...`` (Ellipsis).

    Used in Chapter 1, Section 1.10 (and by the checks of every chapter).
    """
    return value is None or value is Ellipsis


def require_function(answer: Any, name: str, *, error: type[Exception] = AssertionError) -> None:
    """Refuse an answer that is not defined (``None``) or is not a function.

    Used in Chapter 1, Section 1.10 (and by the checks of every chapter).

    Parameters
    ----------
    answer : object
        What the student's notebook defines under ``name`` (``None`` when nothing).
    name : str
        The function's name, as the exercise's stub spells it.
    error : type
        The exception raised, with the message.
    """
    if answer is None:
        raise error(f"{name} is not defined: run the cell that defines it (keep its name {name}) before you submit")
    if not callable(answer):
        raise error(f"{name} should be a function; got {type(answer).__name__}")


def call(answer: Callable, what: str, *args, todo: str = "fill in its body and return its result",
         within: Any = None, raised: Callable[[Exception], str | None] | None = None,
         not_attempted: Any = None, error: type[Exception] = AssertionError) -> Any:
    """``answer(*args)``, or a failure whose message names the call ``what``.

    Used in Chapter 1, Section 1.10 (and by the checks of every chapter).

    Parameters
    ----------
    answer : callable
        The student's function.
    what : str
        The call as the message names it, e.g. ``"ema_operator(6, 3, 0.25)"``.
    *args
        Its arguments (pass copies when the reference reads them afterwards).
    todo : str
        What the stub still has to do, for the message when it returns ``None`` or ``...``:
        ``"{what} returned None: your function returns nothing yet ({todo})"``.
    within : context manager or sequence of them, optional
        Entered around the call only, e.g. ``reference_routines_off(routines)`` or
        ``np.errstate(all="ignore")``.
    raised : callable, optional
        ``raised(exc)`` -> the text that follows ``what`` in the message when the answer raised
        ``exc`` (``None`` or ``""``: the default, ``"raised TypeError: ..."``). For an
        exercise that explains an exception (an overflow, a time limit).
    not_attempted : object, optional
        When given, returned (instead of failing) when the answer raises ``NotImplementedError``
        or returns ``None`` or ``...``: a visible check reports such an answer as not attempted.
    error : type
        The exception raised, with the message.

    Returns
    -------
    object
        What the answer returned.
    """
    text = None
    try:
        with contextlib.ExitStack() as stack:
            for context in (() if within is None else within if isinstance(within, (tuple, list)) else (within,)):
                stack.enter_context(context)
            out = answer(*args)
    except Exception as exc:  # the student's code failed: report it, not a traceback
        if not_attempted is not None and isinstance(exc, NotImplementedError):
            return not_attempted
        text = (raised(exc) if raised is not None else None) or f"raised {type(exc).__name__}: {exc}"
    if text is not None:
        raise error(f"{what} {text}")
    if is_stub(out):
        if not_attempted is not None:
            return not_attempted
        raise error(f"{what} returned None: your function returns nothing yet ({todo})")
    return out


def real_array(out: Any, shape: tuple, what: str, *, float64: bool = False, nonfinite_hint: str = "",
               messages: Mapping[str, str] | None = None, error: type[Exception] = AssertionError) -> np.ndarray:
    """The answer's result as a finite float64 array of shape ``shape``, or a failure saying what is wrong.

    Used in Chapter 1, Section 1.10 (and by the checks of every chapter).

    Refused, in this order: a complex array; anything NumPy cannot read as numbers (the
    message names its type); with ``float64``, a float array of lower precision (float32,
    float16), which cannot meet a tolerance of 1e-9; a wrong shape; NaN or infinity (the
    message names the first such index).

    Parameters
    ----------
    out : object
        What the answer returned (an array, a nested list, ...).
    shape : tuple of int
        The expected shape.
    what : str
        The call, to start the message with.
    float64 : bool
        Refuse float arrays of lower precision than float64.
    nonfinite_hint : str
        Appended to the message about NaN or infinity (e.g. the exercise's likely cause).
    messages : mapping, optional
        Replacements for the module's ``ARRAY_MESSAGES``, by failure (``"complex"``, ``"type"``,
        ``"precision"``, ``"shape"``, ``"nonfinite"``).
    error : type
        The exception raised, with the message.

    Returns
    -------
    ndarray, shape ``shape``
        The result as float64.
    """
    say = {**ARRAY_MESSAGES, **(messages or {})}
    try:
        raw = np.asarray(out)
        got = None if np.iscomplexobj(raw) else raw.astype(float)
    except (TypeError, ValueError):
        raw, got = None, None
    if got is None:
        complex_ = raw is not None and np.iscomplexobj(raw)
        raise error(say["complex" if complex_ else "type"].format(what=what, shape=shape, kind=type(out).__name__))
    if float64 and np.issubdtype(raw.dtype, np.floating) and np.finfo(raw.dtype).eps > 1e-10:
        raise error(say["precision"].format(what=what, shape=shape, dtype=raw.dtype,
                                            digits=np.finfo(raw.dtype).precision))
    if got.shape != tuple(shape):
        raise error(say["shape"].format(what=what, shape=shape, got=got.shape))
    bad = ~np.isfinite(got)
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise error(say["nonfinite"].format(what=what, shape=shape, index=index) + nonfinite_hint)
    return got


def number(out: Any, what: str, *, one_entry: bool = True, error: type[Exception] = AssertionError) -> float:
    """The answer's result as one finite float: a Python or NumPy number, a 0-d array, or a one-entry array.

    Used in Chapter 3, Exercise 3.2 (the Eckart–Young tail), and by the checks that ask for a number.

    Parameters
    ----------
    out : object
        What the answer returned.
    what : str
        The call, to start the message with.
    one_entry : bool
        Accept an array of one entry (shape ``(1,)``, ``(1, 1)``, ...) as that entry.
    error : type
        The exception raised, with the message: ``"expected a number; got ..."`` (a complex
        number, a string NumPy cannot read, an array of several entries) or ``"expected a
        finite number; got nan"``.

    Returns
    -------
    float
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            one = isinstance(out, np.ndarray) and (out.ndim == 0 or one_entry and out.size == 1)
            raw = out.reshape(()).item() if one else out
            got = None if isinstance(raw, np.ndarray) or np.iscomplexobj(raw) else float(raw)
    except (TypeError, ValueError, OverflowError):
        got = None
    if got is None:
        shape = f" of shape {out.shape}" if isinstance(out, np.ndarray) else ""
        raise error(f"{what}: expected a number; got {type(out).__name__}{shape}")
    if not np.isfinite(got):
        raise error(f"{what}: expected a finite number; got {got}")
    return got


def linear_system(out: Any, what: str, *, p: int | None = None, d: int | None = None,
                  error: type[Exception] = AssertionError) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The answer's result as the matrices of a stable linear SSM ``h_t = A h_(t-1) + B x_t, y_t = C h_t``.

    Used in Chapter 2, Exercise 2.2 (three dimensions from two channels) and Exercise 2.3 (a longer
    plateau).

    Refused, in this order: anything but three matrices; complex ones; shapes that do not
    fit together; with ``p`` and ``d``, other numbers of outputs and inputs; NaN or
    infinity; a spectral radius of ``A`` of 1 or more.

    Parameters
    ----------
    out : object
        What the answer returned, e.g. the tuple ``(A, B, C)``.
    what : str
        The call, to start the message with.
    p, d : int, optional
        The numbers of outputs and inputs the exercise asks for.
    error : type
        The exception raised, with the message.

    Returns
    -------
    A : ndarray, shape (N, N)
    B : ndarray, shape (N, d)
    C : ndarray, shape (p, N)
        As float64.
    """
    try:
        A, B, C = (np.asarray(M) for M in out)
        real = not any(np.iscomplexobj(M) for M in (A, B, C))
        A, B, C = (M.astype(float) for M in (A, B, C))
    except (TypeError, ValueError):
        raise error(f"{what}: expected a tuple (A, B, C) of three real matrices; got {type(out).__name__}") from None
    if not real:
        raise error(f"{what}: expected real matrices A, B, C; got complex ones")
    if not (A.ndim == B.ndim == C.ndim == 2 and A.shape[0] == A.shape[1] == B.shape[0] == C.shape[1]):
        raise error(f"{what}: expected A (N, N), B (N, d), C (p, N); got shapes {A.shape}, {B.shape}, {C.shape}")
    if p is not None and d is not None and (C.shape[0], B.shape[1]) != (p, d):
        raise error(f"{what}: expected p = {p} outputs and d = {d} inputs; got p = {C.shape[0]}, d = {B.shape[1]}")
    if not (np.all(np.isfinite(A)) and np.all(np.isfinite(B)) and np.all(np.isfinite(C))):
        raise error(f"{what}: A, B and C must be finite; yours contain NaN or infinity")
    radius = float(np.max(np.abs(np.linalg.eigvals(A)))) if A.shape[0] else 0.0
    if not radius < 1:
        raise error(f"{what}: the system must be stable (spectral radius < 1); got {radius:.6g}")
    return A, B, C


def near(got: np.ndarray, other: np.ndarray, tol: float) -> bool:
    """Whether every entry of ``got`` is within ``tol`` of ``other`` (broadcast): a hint's predicate.

    Used in Chapter 1, Section 1.10 (and by the checks of every chapter).
    """
    with np.errstate(all="ignore"):
        return bool(np.all(np.abs(np.asarray(got) - np.asarray(other)) <= tol))


def compare(got: np.ndarray, expected: np.ndarray, what: str, *, rtol: float = 1e-9, scale: float | None = None,
            first: np.ndarray | None = None, says: str = "entry {where} should be {want}; got {got}",
            note: str | None = None, digits: int | None = None, single_precision: bool = False,
            hints: Callable[[np.ndarray, tuple], str] | Iterable[tuple[Callable[[np.ndarray, tuple], bool], str]] = (),
            error: type[Exception] = AssertionError) -> None:
    """Fail on the first entry where ``got`` and ``expected`` differ by more than ``rtol * scale``.

    Used in Chapter 1, Section 1.10 (and by the checks of every chapter).

    The message is ``"{what}: " + says`` with the index and both values, then, when the
    values agree to the digits shown, the difference; with ``single_precision``, when
    every entry agrees to 1e-4 of ``scale``, the suggestion that the answer computed in
    float32; then ``note`` and the first hint that applies.

    Parameters
    ----------
    got : ndarray
        The answer's result, of ``expected``'s shape (from :func:`real_array`).
    expected : ndarray
        The reference.
    what : str
        The call, to start the message with.
    rtol : float
        The tolerance, relative to ``scale``.
    scale : float, optional
        Default ``max(1, max |expected|)``: relative for large entries, absolute below 1.
    first : ndarray of bool, optional
        Entries to report first when any of them is wrong (e.g. the blocks above the
        diagonal of a causal operator); otherwise the first wrong entry in C order.
    says : str
        How the wrong entry is told; fields ``where`` (the index, a tuple), ``want``, ``got``.
    note : str, optional
        Follows the values (e.g. how the indices read). Default: the tolerance rule.
    digits : int, optional
        Significant digits of the values. Default: 6, or 17 and the difference when the 6
        agree.
    single_precision : bool
        Suggest float32 when every entry agrees to 1e-4 of ``scale``.
    hints : callable or sequence of (predicate, text)
        ``hints(got, where)`` -> the hint (``""`` for none), or pairs whose first
        ``predicate(got, where)`` that holds gives the hint; ``where`` is the index reported.
        A hint starts with its own separator (``"; ..."``).
    error : type
        The exception raised, with the message.
    """
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    if got.shape != expected.shape:
        raise ValueError(f"compare: got has shape {got.shape}, expected {expected.shape}; read it with "
                         "real_array first")
    size = max(1.0, float(np.abs(expected).max(initial=0.0))) if scale is None else float(scale)
    diff = np.abs(got - expected)
    bad = diff > rtol * size
    if not bad.any():
        return
    preferred = bad & first if first is not None else bad
    where = tuple(int(i) for i in np.argwhere(preferred if preferred.any() else bad)[0])
    want, have = float(expected[where]), float(got[where])
    shown = digits or 6
    told = says.format(where=where, want=f"{want:.{shown}g}", got=f"{have:.{shown}g}")
    if digits is None and f"{want:.6g}" == f"{have:.6g}":
        told = (says.format(where=where, want=f"{want:.17g}", got=f"{have:.17g}")
                + f" (a difference of {have - want:.2g})")
    err = float(diff.max())
    if single_precision and err <= 1e-4 * size:
        told += f"; they agree only to {err / size:.0e} of their size: single precision (float32)? Compute in float64"
    if note is None:
        note = (f" (tolerance {rtol:g} of max(1, max |expected|))" if scale is None
                else f" (tolerance {rtol:g} of {size:.3g})")
    if callable(hints):
        hint = hints(got, where) or ""
    else:
        hint = next((text for predicate, text in hints if predicate(got, where)), "")
    raise error(f"{what}: {told}{note}{hint}")
