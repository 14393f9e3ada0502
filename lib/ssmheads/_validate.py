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
        arr = np.array(raw, dtype=float) if copy else raw.astype(float, copy=False)
    except (TypeError, ValueError) as exc:
        if "must be real" in str(exc):
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
