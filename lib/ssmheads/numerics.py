"""Comparisons at rounding level, used by the chapters' verification cells."""

from __future__ import annotations

import numpy as np

__all__ = ["relative_gap", "close"]


def _numeric(name: str, value) -> np.ndarray:
    """``value`` as a finite real or complex array, or a ValueError naming ``name``."""
    try:
        arr = np.asarray(value)
        if not np.iscomplexobj(arr):
            arr = arr.astype(float, copy=False)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a numeric array; got {type(value).__name__}") from None
    if arr.dtype.kind not in "fc":
        raise ValueError(f"{name} must be a numeric array; got dtype {arr.dtype}")
    if arr.size and not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must contain only finite numbers; got NaN or infinity")
    return arr


def relative_gap(a, b) -> float:
    """``max |a - b| / max(1, max |b|)``: the discrepancy of ``a`` from the reference ``b``.

    Used in Chapter 3.

    The denominator keeps the measure relative for large arrays and absolute
    for arrays of size below one, so that exact zeros compare sensibly. Complex
    arrays are compared by the modulus of the difference (the imaginary part
    counts); the difference is formed after scaling, so entries near the
    overflow threshold give a finite gap.

    Parameters
    ----------
    a, b : array_like, same shape, real or complex, finite

    Returns
    -------
    float

    Raises
    ------
    ValueError
        If the shapes differ or an entry is NaN or infinite.
    """
    a, b = _numeric("a", a), _numeric("b", b)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape; got {a.shape} and {b.shape}")
    return _relative_gap(a, b)


def _relative_gap(a: np.ndarray, b: np.ndarray) -> float:
    """Core of :func:`relative_gap` on checked arrays of one shape."""
    if a.size == 0:
        return 0.0
    scale = max(1.0, float(np.max(np.abs(a))), float(np.max(np.abs(b))))
    gap = float(np.max(np.abs(a / scale - b / scale)))
    return gap * (scale / max(1.0, float(np.max(np.abs(b)))))


def close(a, b, tol: float = 1e-12) -> bool:
    """True when ``relative_gap(a, b) <= tol``: ``a`` equals ``b`` up to rounding.

    Used in Chapter 2, Chapter 3 and Chapter 4.

    Parameters
    ----------
    a, b : array_like, same shape, real or complex, finite
    tol : float
        Default ``1e-12``, rounding level for the sizes used in the book; a
        non-negative finite number.

    Returns
    -------
    bool
        False when the shapes differ.
    """
    if isinstance(tol, (bool, np.bool_)) or not isinstance(tol, (int, float, np.integer, np.floating)) \
            or not np.isfinite(tol) or tol < 0:
        raise ValueError(f"tol must be a finite number >= 0; got {tol!r}")
    a, b = _numeric("a", a), _numeric("b", b)
    if a.shape != b.shape:
        return False
    return _relative_gap(a, b) <= tol
