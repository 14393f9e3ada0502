"""The grading sandbox's memory cap (tools/grading_sandbox.py): an answer that allocates far
more than the kernel holds fails with MemoryError in its own process, fast, while the same
allocation outside the sandbox would be granted (and could push the grader into the system's
out-of-memory killer on a machine with the memory to try)."""
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from grading_sandbox import sandboxed  # noqa: E402

sys.path.pop(0)

pytestmark = pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="no fork here")


def allocate(gib):
    """Reserve ``gib`` GiB without touching it (the cap is on address space, not on use)."""
    return int(np.empty(int(gib * (1 << 30)) // 8).size)


def test_an_allocation_beyond_the_headroom_fails_with_memory_error():
    with pytest.raises(MemoryError):
        sandboxed(allocate, 10.0)(6.0)   # MEMORY_HEADROOM is 4 GiB


def test_an_allocation_within_the_headroom_is_granted():
    assert sandboxed(allocate, 10.0)(1.0) == (1 << 30) // 8
