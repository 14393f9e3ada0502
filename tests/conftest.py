"""Shared pytest configuration for the library tests.

* Every warning is an error: a library call that warns (overflow, a deprecated
  numpy call, a matplotlib complaint) fails the test that made it.
* Matplotlib draws with the non-interactive Agg backend, and every figure a test
  opens is closed after it, so tests neither need a display nor leak memory.
"""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
import pytest  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("filterwarnings", "error")


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


# Tests that run cases in forked children (the fuzz, limits and grading-sandbox tests) go first:
# a fork after JAX has started its threads (Chapter 6's bench tests import it) is
# unsafe, and JAX warns, which the "every warning is an error" rule makes a failure.
FORKING = ("test_fuzz.py", "test_limits.py", "test_grading_integrity.py")


def pytest_collection_modifyitems(session, config, items):
    items.sort(key=lambda item: item.path.name not in FORKING)  # stable: the rest keep their order
