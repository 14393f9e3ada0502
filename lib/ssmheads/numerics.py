"""Comparisons at rounding level, used by the chapters' verification cells."""

from __future__ import annotations

import numpy as np

__all__ = ["relative_gap", "close"]


def relative_gap(a, b) -> float:
    """``max |a - b| / max(1, max |b|)``: the discrepancy of ``a`` from the reference ``b``.

    The denominator keeps the measure relative for large arrays and absolute
    for arrays of size below one, so that exact zeros compare sensibly.

    Parameters
    ----------
    a, b : array_like, same shape

    Returns
    -------
    float
    """
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"a and b must have the same shape; got {a.shape} and {b.shape}")
    if a.size == 0:
        return 0.0
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))


def close(a, b, tol: float = 1e-12) -> bool:
    """True when ``relative_gap(a, b) <= tol``: ``a`` equals ``b`` up to rounding.

    Parameters
    ----------
    a, b : array_like, same shape
    tol : float
        Default ``1e-12``, rounding level for the sizes used in the book.

    Returns
    -------
    bool
    """
    if np.shape(a) != np.shape(b):
        return False
    return relative_gap(a, b) <= tol
