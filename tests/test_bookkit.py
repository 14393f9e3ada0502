"""The core of the book's tooling (tools/bookkit/): the one walk of the gated solutions."""
from __future__ import annotations

import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bookkit import core  # noqa: E402  (tools/ is not a package)

EXERCISE = "```{exercise} E\n:label: ex-e\n\nDo.\n```"
START = "```{solution-start} ex-e\n:class: dropdown\n```\nAnswer."
END = "```{solution-end}\n```"


def cells(*sources):
    return [nbformat.v4.new_code_cell(s[5:]) if s.startswith("code:") else nbformat.v4.new_markdown_cell(s)
            for s in sources]


def test_each_cell_is_placed_once_with_its_exercise():
    walked = list(core.gated_cells(cells(EXERCISE, START, "code:x = 1", "More.", END, "code:y = 2")))
    assert [(g.index, g.role, g.label) for g in walked] == [
        (0, "outside", ""), (1, "start", "ex-e"), (2, "inside", "ex-e"), (3, "inside", "ex-e"),
        (4, "end", "ex-e"), (5, "outside", "")]
    assert walked[1].rest == "Answer."


@pytest.mark.parametrize("sources, message", [
    ((START, "code:x", START, END), "inside a gated solution"),
    ((EXERCISE, END), "without a {solution-start}"),
    ((START + "\n" + END,), "end in a cell of its own"),
    ((START, END + "\nMore."), "hold only the solution-end"),
    (("Text.\n" + START, END), "must begin its cell"),
    ((START, "code:x"), "has no {solution-end}"),
])
def test_a_layout_it_cannot_read_raises_the_callers_error(sources, message):
    class Mine(ValueError):
        pass

    with pytest.raises(Mine, match=message):
        list(core.gated_cells(cells(*sources), "ch.ipynb", Mine))
