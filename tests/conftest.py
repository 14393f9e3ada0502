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
