"""Launch buttons: only on the chapter pages; Binder (in JupyterLab) and Colab open the
portable notebook in notebooks/, never the source chapter (book/_ext/launch_buttons.py).

Nothing is built. For every page in _toc.yml, the page context is made the way the
build makes it: _config.yml goes through jupyter-book's own translation into Sphinx
configuration, sphinx-book-theme's ``update_context_with_repository_info`` and
``add_launch_buttons`` (the functions the build calls) fill in the header buttons,
and then the book's handler edits them, as in the build, where it runs after the theme.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "book" / "_ext"))

import launch_buttons  # noqa: E402  (the book's extension)
from jupyter_book.config import get_final_config  # noqa: E402
from sphinx_book_theme.header_buttons import update_context_with_repository_info  # noqa: E402
from sphinx_book_theme.header_buttons.launch import add_launch_buttons  # noqa: E402

CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPO = CONFIG["repository"]["url"].rstrip("/")
ORG_REPO = REPO.split("github.com/", 1)[1]
BRANCH = CONFIG["repository"]["branch"]
BINDER = CONFIG["launch_buttons"]["binderhub_url"].rstrip("/")
COLAB = CONFIG["launch_buttons"]["colab_url"].rstrip("/")


def toc_pages() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]
    for part in toc.get("parts", []):
        pages += [entry["file"] for entry in part.get("chapters", [])]
    return pages


def source_of(page: str) -> Path:
    for suffix in (".ipynb", ".md"):
        if (ROOT / f"{page}{suffix}").is_file():
            return ROOT / f"{page}{suffix}"
    raise FileNotFoundError(page)


def metadata_of(path: Path) -> dict:
    """The page metadata the theme looks at (a kernelspec marks a notebook)."""
    if path.suffix == ".ipynb":
        return json.loads(path.read_text())["metadata"]
    text = path.read_text()
    if text.startswith("---\n"):
        return yaml.safe_load(text.split("---\n", 2)[1]) or {}
    return {}


class Config(SimpleNamespace):
    def __getitem__(self, key):
        return getattr(self, key)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    sphinx_config, _ = get_final_config(user_yaml=ROOT / "_config.yml", sourcedir=ROOT,
                                        cli_config={"latex_individualpages": False})
    assert sphinx_config["html_theme"] == "sphinx_book_theme"
    out = tmp_path_factory.mktemp("build")
    pages = toc_pages()
    sources = {page: source_of(page) for page in pages}
    app = SimpleNamespace(
        srcdir=str(ROOT), outdir=str(out / "html"), builder=None,
        config=Config(html_theme_options=sphinx_config["html_theme_options"], html_context={}),
        env=SimpleNamespace(doc2path=lambda page: str(sources[page]),
                            metadata={page: metadata_of(path) for page, path in sources.items()}))
    # The theme copies a MyST (.md) notebook's executed .ipynb for its download button.
    for page, path in sources.items():
        if path.suffix == ".md":
            executed = out / "jupyter_execute" / f"{page}.ipynb"
            executed.parent.mkdir(parents=True, exist_ok=True)
            executed.write_text("{}")
    update_context_with_repository_info(app)
    app.sources = sources
    return app


def page_buttons(app, page: str, *, book_handler: bool = True) -> list[dict]:
    """The launch buttons of a page: {text: url} per launch group in its header."""
    path = app.sources[page]
    context = dict(app.config.html_context, pagename=page, header_buttons=[],
                   sourcename=f"{page}{path.suffix}", page_source_suffix=path.suffix)
    add_launch_buttons(app, page, "page.html", context, None)
    if book_handler:
        launch_buttons.adjust_launch_buttons(app, page, "page.html", context, None)
    return [{b["text"]: b["url"] for b in group["buttons"]}
            for group in context["header_buttons"] if group.get("label") == "launch-buttons"]


CHAPTERS = [p for p in toc_pages() if p.startswith("chapters/")]
OTHERS = [p for p in toc_pages() if not p.startswith("chapters/")]


def test_the_toc_has_chapters_and_other_pages():
    assert len(CHAPTERS) >= 4 and "book/instructors" in OTHERS


@pytest.mark.parametrize("page", CHAPTERS)
def test_chapter_page_launches_binder_in_jupyterlab_and_colab_on_the_portable_notebook(app, page):
    name = page.split("/", 1)[1]
    assert page_buttons(app, page) == [{
        "Binder": f"{BINDER}/v2/gh/{ORG_REPO}/{BRANCH}?urlpath=lab/tree/notebooks/{name}.ipynb",
        "Colab": f"{COLAB}/github/{ORG_REPO}/blob/{BRANCH}/notebooks/{name}.ipynb",
    }]
    # The theme alone would send both to the source notebook: the handler is what changes it.
    theirs = page_buttons(app, page, book_handler=False)[0]
    assert theirs["Colab"].endswith(f"/chapters/{name}.ipynb")
    assert theirs["Binder"].endswith(f"?urlpath=lab/tree/chapters/{name}.ipynb")
    assert (ROOT / "notebooks" / f"{name}.ipynb").is_file(), \
        f"the target notebooks/{name}.ipynb is not in the repository (run `make portable`)"


@pytest.mark.parametrize("page", OTHERS)
def test_other_pages_have_no_launch_buttons(app, page):
    assert page_buttons(app, page) == []


def test_the_theme_would_give_the_instructors_guide_buttons(app):
    # book/instructors.md is a MyST notebook; without the handler it gets a Colab
    # button for the .md file, which Colab cannot open.
    [buttons] = page_buttons(app, "book/instructors", book_handler=False)
    assert buttons["Colab"].endswith("/book/instructors.md")


@pytest.mark.parametrize("page, expected", [
    ("chapters/03_head_count", True), ("chapters/x/y", False), ("chapters/", False),
    ("book/instructors", False), ("intro", False),
])
def test_is_chapter(page, expected):
    assert launch_buttons.is_chapter(page) is expected


def group(**urls):
    return {"label": "launch-buttons", "buttons": [{"text": k, "url": v} for k, v in urls.items()]}


def test_problems_are_reported(tmp_path):
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "01_a.ipynb").write_text("{}")
    ok = group(Binder="https://b/v2/gh/o/r/main?urlpath=lab/tree/chapters/01_a.ipynb",
               Colab="https://c/github/o/r/blob/main/chapters/01_a.ipynb")
    buttons = [{"label": "download"}, ok]
    assert launch_buttons.edit_launch_buttons(buttons, "chapters/01_a", tmp_path) == []
    assert ok["buttons"][0]["url"] == "https://b/v2/gh/o/r/main?urlpath=lab/tree/notebooks/01_a.ipynb"
    assert ok["buttons"][1]["url"] == "https://c/github/o/r/blob/main/notebooks/01_a.ipynb"
    assert buttons[0] == {"label": "download"}  # other header buttons untouched

    classic = group(Binder="https://b/v2/gh/o/r/main?urlpath=tree/chapters/01_a.ipynb")
    [problem] = launch_buttons.edit_launch_buttons([classic], "chapters/01_a", tmp_path)
    assert "JupyterLab" in problem

    missing = group(Colab="https://c/github/o/r/blob/main/chapters/02_b.ipynb")
    [problem] = launch_buttons.edit_launch_buttons([missing], "chapters/02_b", tmp_path)
    assert "notebooks/02_b.ipynb" in problem and "make portable" in problem
    missing = group(Binder="https://b/v2/gh/o/r/main?urlpath=lab/tree/chapters/02_b.ipynb")
    [problem] = launch_buttons.edit_launch_buttons([missing], "chapters/02_b", tmp_path)
    assert problem.startswith("the Binder button") and "notebooks/02_b.ipynb" in problem

    odd = group(Colab="https://c/github/o/r/blob/main/elsewhere/01_a.ipynb")
    [problem] = launch_buttons.edit_launch_buttons([odd], "chapters/01_a", tmp_path)
    assert "does not open chapters/01_a.ipynb" in problem

    other = [{"label": "download"}, group(Colab="https://c/x.md")]
    assert launch_buttons.edit_launch_buttons(other, "book/instructors", tmp_path) == []
    assert other == [{"label": "download"}]

    nested = group(Colab="https://c/github/o/r/blob/main/book/chapters/01_a.ipynb")
    assert launch_buttons.edit_launch_buttons([nested], "chapters/01_a", tmp_path, "book/") == []
    assert nested["buttons"][0]["url"] == "https://c/github/o/r/blob/main/book/notebooks/01_a.ipynb"


def test_the_handler_runs_after_the_themes():
    connected = []
    app = SimpleNamespace(connect=lambda event, handler, priority=500: connected.append(
        (event, handler, priority)))
    launch_buttons.setup(app)
    assert connected == [("html-page-context", launch_buttons.adjust_launch_buttons,
                          launch_buttons.PRIORITY)]
    # Sphinx calls handlers in increasing priority: the book's after the theme's.
    import inspect
    import re

    import sphinx_book_theme
    theme = re.search(r"add_launch_buttons,\s*priority=(\d+)", inspect.getsource(sphinx_book_theme.setup))
    assert theme, "sphinx-book-theme no longer connects add_launch_buttons with a priority"
    assert launch_buttons.PRIORITY > int(theme[1])
