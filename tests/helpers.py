"""Small helpers shared by the test modules (imported as ``from helpers import ...``)."""

from __future__ import annotations

import numpy as np


def rel_gap(got, expected) -> float:
    """``max |got - expected| / max |expected|`` (denominator 1 when ``expected`` is zero)."""
    got, expected = np.asarray(got, dtype=float), np.asarray(expected, dtype=float)
    assert got.shape == expected.shape, f"shape {got.shape} != expected shape {expected.shape}"
    scale = float(np.max(np.abs(expected))) if expected.size else 0.0
    return float(np.max(np.abs(got - expected), initial=0.0)) / (scale if scale > 0 else 1.0)


def assert_rel_close(got, expected, tol: float = 1e-12) -> None:
    """Assert ``rel_gap(got, expected) <= tol`` with a message that prints the gap."""
    gap = rel_gap(got, expected)
    assert gap <= tol, f"relative gap {gap:.3e} exceeds {tol:.0e}"


def rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


# ---------------------------------------------------------------- exercise checks


def assert_printed(result, mark):
    """What a student sees (the cell's last expression): exercise, verdict and message."""
    text = str(result)
    assert f"[{result.exercise}] {mark}" in text
    assert result.message in text
    assert repr(result) == text


def stub_ellipsis(*args):
    ...


def stub_pass(*args):
    pass


def stub_not_implemented(*args):
    raise NotImplementedError("fill me in")


def stub_returns_ellipsis(*args):
    return ...


#: Untouched answers a student may hand in; every check must say "not attempted yet".
STUBS = [None, ..., stub_ellipsis, stub_pass, stub_not_implemented, stub_returns_ellipsis]
STUB_IDS = ["None", "Ellipsis", "body ...", "body pass", "NotImplementedError", "returns ..."]


def raises_type_error(*args):
    raise TypeError("unsupported operand")


# ---------------------------------------------------------------- the built site


def built_chapter_pages(built, chapters):
    """The built chapter pages under ``built`` (a site's html folder), newest build only.

    Skips the calling test when no site is built there or when it is older than any of
    ``chapters`` (the source notebooks): a stale site would check yesterday's book."""
    import pytest

    pages = sorted((built / "chapters").glob("*.html"))
    if not pages:
        pytest.skip(f"no built site in {built} (make book builds one; BOOK_HTML names another)")
    if max(p.stat().st_mtime for p in chapters) > min(p.stat().st_mtime for p in pages):
        pytest.skip(f"the site in {built} is older than the chapters; rebuild it to check it")
    return pages
