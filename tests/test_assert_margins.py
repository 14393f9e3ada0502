"""tools/assert_margins.py measures how far inside its threshold each assert passes."""

import sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import assert_margins  # noqa: E402


def _notebook(tmp_path, *sources):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    path = tmp_path / "nb.ipynb"
    nbformat.write(nb, path)
    return path


def test_margins_of_upper_and_lower_bounds_and_close(tmp_path):
    path = _notebook(tmp_path,
                     "import numpy as np\nfrom ssmheads.numerics import close\nx = 1e-13",
                     "assert x < 1e-12\nassert 5.0 > 1.0 and x <= 4e-13",
                     "assert close(np.ones(2) + 1e-14, np.ones(2), tol=1e-12)",
                     "assert all(v < 1.0 for v in [0.25, 0.5])")
    margins = sorted(m for m, _ in assert_margins.measure(path))
    assert [round(m, 6) for m in margins[:5]] == [2.0, 4.0, 4.0, 5.0, 10.0]
    assert abs(margins[5] / 100 - 1) < 0.01  # 1e-12 / (1e-14 up to rounding of 1 + 1e-14)


def test_claims_inside_equalities_and_integer_counts_are_not_margins(tmp_path):
    path = _notebook(tmp_path, "err = 0.5\nk = 3", "assert (err < 1e-12) == False", "assert k <= 3",
                     "assert err < 1 or err > 2")
    assert assert_margins.measure(path) == []


def test_a_tight_margin_is_reported_first(tmp_path):
    path = _notebook(tmp_path, "res = 9.07e-11", "assert res < 1e-10", "assert res < 1e-6")
    rows = assert_margins.measure(path)
    assert rows[0][0] < 1.2 and "res < 1e-10" in rows[0][1]


def test_an_elementwise_array_comparison_counts_its_worst_element(tmp_path):
    path = _notebook(tmp_path, "import numpy as np\na = np.array([1.0, 2.0])\nb = np.array([4.0, 2.2])",
                     "assert np.all(2 * a < 2 * b)")
    (margin, text), = assert_margins.measure(path)
    assert abs(margin - 1.1) < 1e-9 and "2 * a < 2 * b" in text
