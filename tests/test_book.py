"""Checks of the book's sources that need no kernel: configuration and notebook conventions."""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))


def _notebook(path: Path) -> dict:
    return json.loads(path.read_text())


def test_there_are_chapters():
    assert CHAPTERS, "chapters/ holds no notebooks"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_first_cell_installs_ssmheads_when_it_is_missing(path):
    """The hidden set-up cell installs the library from the repository (which URL:
    tests/test_repository_url.py checks that it is repository.url of _config.yml)."""
    first = _notebook(path)["cells"][0]
    source = "".join(first["source"])
    assert first["cell_type"] == "code" and "remove-cell" in first["metadata"].get("tags", [])
    assert 'find_spec("ssmheads") is None' in source and "git+https://" in source
    assert first.get("outputs") == [], "the set-up cell must print nothing when ssmheads is installed"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_notebook_is_listed_in_the_toc(path):
    toc = (ROOT / "_toc.yml").read_text()
    assert f"file: chapters/{path.stem}" in toc


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_widget_cells_are_ignored_by_nbval(path):
    """A widget has no stable text form and is dead without a kernel: ignored by nbval, hidden on the site."""
    for cell in _notebook(path)["cells"]:
        if cell["cell_type"] == "code" and "_explorer()" in "".join(cell["source"]):
            tags = cell["metadata"].get("tags", [])
            assert "nbval-ignore-output" in tags and "remove-output" in tags, "".join(cell["source"])
            assert cell["outputs"] == [], "widget views are not stored (tools/run_notebooks.py)"


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_solutions_are_gated_and_balanced(path):
    """Every solution-start has its solution-end, so student versions can strip solutions."""
    text = "".join("".join(c["source"]) for c in _notebook(path)["cells"] if c["cell_type"] == "markdown")
    starts, ends = text.count("{solution-start}"), text.count("{solution-end}")
    assert starts == ends, (starts, ends)
    exercises, solutions = text.count("{exercise}"), starts + text.count("{solution}")
    assert exercises >= 6 and solutions == exercises, (exercises, solutions)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_explorer_is_preceded_by_its_static_figure_and_a_live_note(path):
    """On the static site a widget cannot run: the figure before it and a note carry the page."""
    cells = _notebook(path)["cells"]
    idx = [i for i, c in enumerate(cells)
           if c["cell_type"] == "code" and "_explorer()" in "".join(c["source"])
           and "figure" not in "".join(c["source"])]
    assert len(idx) == 1
    note, figure = "".join(cells[idx[0] - 1]["source"]), cells[idx[0] - 2]
    assert "needs a live kernel" in note and "{doc}`../book/running`" in note
    assert "_explorer_figure(" in "".join(figure["source"])
    assert any("image/png" in out.get("data", {}) for out in figure["outputs"])


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_no_mention_of_buttons_that_are_not_there(path):
    """The students' site has no launch buttons; a chapter read there (or in Colab, or as a
    download) must not send its reader to one, or to "the rocket icon"."""
    text = "".join("".join(c["source"]) for c in _notebook(path)["cells"] if c["cell_type"] == "markdown")
    for phrase in ("rocket", "launch button", "launch icon", "button at the top"):
        assert phrase not in text.lower(), phrase


def test_api_page_documents_every_public_module():
    """Every module of ssmheads has __all__ and an automodule entry in book/api.md."""
    import importlib
    import pkgutil

    import ssmheads

    api = (ROOT / "book" / "api.md").read_text()
    modules = [m.name for m in pkgutil.iter_modules(ssmheads.__path__) if not m.name.startswith("_")]
    assert len(modules) >= 9
    for name in modules:
        module = importlib.import_module(f"ssmheads.{name}")
        assert hasattr(module, "__all__"), name
        assert f".. automodule:: ssmheads.{name}\n   :members:" in api, name
    for name in ssmheads.__all__:  # every top-level name is defined in a documented module
        obj = getattr(ssmheads, name)
        home = getattr(obj, "__module__", getattr(obj, "__name__", ""))
        assert home.split(".")[-1] in modules, (name, home)


@pytest.mark.parametrize("path", CHAPTERS, ids=lambda p: p.name)
def test_every_markdown_fence_is_closed(path):
    """MyST would close an open fence at the end of the cell; the source should not rely on it."""
    for cell in _notebook(path)["cells"]:
        if cell["cell_type"] == "markdown":
            assert "".join(cell["source"]).count("```") % 2 == 0, "".join(cell["source"])[:80]
