"""Shared pytest configuration for the library tests.

* Every warning is an error: a library call that warns (overflow, a deprecated
  numpy call, a matplotlib complaint) fails the test that made it.
* Tests marked ``extended`` (slow end-to-end runs whose every step the faster tests
  also reach: each chapter's student notebook run whole, the public API fuzz, the JAX
  bench's training runs, ...) run only with ``EXTENDED=1``: ``make test-extended`` runs
  them, ``make test`` (the gate before a commit) does not, and CI runs both (``make test-all``).
* Matplotlib draws with the non-interactive Agg backend, and every figure a test
  opens is closed after it, so tests neither need a display nor leak memory.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402


import os  # noqa: E402

EXTENDED = os.environ.get("EXTENDED") == "1"


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "error")
    config.addinivalue_line("markers", "extended: a slow end-to-end test, run by make test-extended (EXTENDED=1)")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# Tests that run cases in forked children (the fuzz, limits and grading-sandbox tests) go first:
# a fork after JAX has started its threads (Chapter 6's bench tests import it) is
# unsafe, and JAX warns, which the "every warning is an error" rule makes a failure.
FORKING = ("test_fuzz.py", "test_limits.py", "test_grading_integrity.py", "test_grading_sandbox.py")


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.path.name not in FORKING)  # stable: the rest keep their order
    skip = pytest.mark.skip(reason="extended: run by make test-extended (EXTENDED=1)")
    for item in items:
        if not EXTENDED and item.get_closest_marker("extended"):
            item.add_marker(skip)
