"""Input checks shared by the public functions (private module).

Every public function of :mod:`ssmheads` validates its arguments here, so that
bad input fails early with a ``ValueError`` that names the argument, what it
got, and what was expected.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def as_array(name: str, value: Any, ndim: int, what: str, copy: bool = False) -> np.ndarray:
    """Return ``value`` as a finite float array with ``ndim`` dimensions.

    ``what`` describes the expected shape for the message, e.g. ``"(n, d)"``;
    ``copy=True`` always returns a new array (for objects that keep their parameters).
    """
    try:
        raw = np.asarray(value)
        if np.iscomplexobj(raw):
            raise ValueError(f"{name} must be real; got a complex array (the book works over the reals)")
        if raw.dtype.kind not in "biuf":
            raise ValueError(f"{name} must be a numeric array of shape {what}; got {type(value).__name__} "
                             f"of dtype {raw.dtype} (expected bool, integer or float)")
        arr = np.array(raw, dtype=float) if copy else raw.astype(float, copy=False)
    except (TypeError, ValueError) as exc:
        if "must be real" in str(exc) or "must be a numeric array" in str(exc):
            raise
        raise ValueError(f"{name} must be a numeric array of shape {what}; got {type(value).__name__}") from exc
    if arr.ndim != ndim:
        raise ValueError(f"{name} must have shape {what} ({ndim} dimensions); got shape {arr.shape}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers; got NaN or infinity")
    return arr


def check_size(name: str, arr: np.ndarray, axis: int, expected: int, meaning: str) -> None:
    """Raise if ``arr.shape[axis] != expected``; ``meaning`` names where ``expected`` comes from."""
    if arr.shape[axis] != expected:
        raise ValueError(
            f"{name} has shape {arr.shape}, but axis {axis} must be {expected} ({meaning})"
        )


def check_positive_int(name: str, value: Any, minimum: int = 1) -> int:
    """Return ``value`` as an int, raising unless it is an integer ``>= minimum``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value}")
    return int(value)


def check_nonempty(name: str, arr: np.ndarray, axis: int, meaning: str) -> None:
    """Raise if ``arr`` has no entries along ``axis``."""
    if arr.shape[axis] < 1:
        raise ValueError(f"{name} has shape {arr.shape}; {meaning} must be at least 1")


def check_seed(value: Any) -> int:
    """Return ``value`` as a seed for ``np.random.default_rng``: a non-negative integer."""
    return check_positive_int("seed", value, minimum=0)


#: Largest array, in bytes, that a public function builds unless the caller raises the limit
#: (through a ``max_bytes=`` keyword where the function has one). 1 GiB.
MAX_ARRAY_BYTES = 2**30


def check_allocation(name: str, shape: tuple, what: str, instead: str,
                     max_bytes: int | None = None, itemsize: int = 8) -> None:
    """Refuse, before it is made, an array of ``shape`` larger than the limit.

    The limit is ``max_bytes`` if given, else :data:`MAX_ARRAY_BYTES` (1 GiB per
    array). The ``ValueError`` names the caller's argument ``name`` (the one that
    sets the size), says what the array is (``what``), how big it would be in GiB,
    the limit, and what to use instead (``instead``).
    """
    limit = MAX_ARRAY_BYTES if max_bytes is None else max_bytes
    if isinstance(limit, (bool, np.bool_)) or not isinstance(limit, (int, np.integer, float, np.floating)) \
            or not limit > 0:
        raise ValueError(f"max_bytes must be a positive number of bytes or None; got {max_bytes!r}")
    size = float(itemsize)
    for extent in shape:
        size *= float(extent)
    if size > limit:
        shown = "x".join(str(int(e)) for e in shape)
        raise ValueError(
            f"{name} would make {what} an array of shape ({shown}), {size / 2**30:.2f} GiB, above the "
            f"limit of {limit / 2**30:.2f} GiB per array (pass max_bytes= to raise it where the function "
            f"has that keyword); {instead}"
        )


#: Largest total working set, in bytes, of one call (every array it holds at once, temporaries
#: included), unless the caller passes ``max_bytes``. 2 GiB: several arrays each below the
#: per-array limit can still exhaust a small machine together.
MAX_TOTAL_BYTES = 2**31


def check_total(name: str, entries: float, what: str, instead: str,
                max_bytes: int | None = None, itemsize: int = 8) -> None:
    """Refuse a call whose arrays together hold more than ``entries`` numbers beyond the total limit.

    ``entries`` is the caller's count of the numbers it holds at once (temporaries included);
    the limit is ``max_bytes`` if given, else :data:`MAX_TOTAL_BYTES` (2 GiB). The
    ``ValueError`` names the caller's argument ``name``, what the arrays are, and what to
    use instead.
    """
    limit = MAX_TOTAL_BYTES if max_bytes is None else max_bytes
    size = float(entries) * float(itemsize)
    if size > limit:
        raise ValueError(
            f"{name} would make {what} hold {size / 2**30:.2f} GiB together, above the limit of "
            f"{limit / 2**30:.2f} GiB per call; {instead}"
        )
