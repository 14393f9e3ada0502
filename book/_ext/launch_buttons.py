"""Launch buttons (Binder, Colab) on the chapter pages only, each opening a notebook it can read.

sphinx-book-theme 1.3.0 puts a launch-button group on every page that is a notebook
(its ``html-page-context`` handler ``add_launch_buttons``, priority 501), built from the
``launch_buttons`` and ``repository`` sections of _config.yml:

    Binder  {binderhub_url}/v2/gh/ORG/REPO/BRANCH?urlpath=lab/tree/chapters/NAME.ipynb
    Colab   {colab_url}/github/ORG/REPO/blob/BRANCH/chapters/NAME.ipynb

This extension runs after it (priority 600) and edits that group in the page context:

* on a page that is not a chapter it removes the group. book/instructors.md is a MyST
  notebook (the theme gives it buttons), but Colab cannot open a ``.md`` file and the
  guide is not meant to be run by readers; the other pages are not notebooks.
* Colab and Binder open the *portable* notebook ``notebooks/NAME.ipynb`` (MyST rendered
  to plain Markdown and LaTeX by tools/portable.py), not ``chapters/NAME.ipynb``: Colab
  shows MyST directives as raw code, and under jupyterlab-myst the source chapter numbers
  its own theorems ("Theorem 1") and leaves references to other chapters as raw labels,
  while the portable notebook has the site's numbers ("Theorem 3.1"), links and
  citations in any Jupyter front end. Binder opens it in JupyterLab
  (``launch_buttons.notebook_interface: jupyterlab``); the source chapter is one folder
  away there.

Anything unexpected is a Sphinx warning, so an error under ``-W``: a portable notebook
missing from the repository (run ``make portable``), or buttons not in the form above
(a theme upgrade, or a ``notebook_interface`` other than ``jupyterlab``). The students'
site (tools/make_assignments.py) turns the launch buttons off; then there is nothing to do.
"""
from __future__ import annotations

from pathlib import Path

from sphinx.util import logging

LOGGER = logging.getLogger(__name__)

GROUP_LABEL = "launch-buttons"   # the theme's label of the launch-button group
CHAPTERS = "chapters"            # the folder of the chapter notebooks (the pages that get buttons)
PORTABLE = "notebooks"           # the folder of the portable notebooks (what Colab and Binder open)
PRIORITY = 600                   # after sphinx-book-theme's add_launch_buttons (501)


def is_chapter(pagename: str) -> bool:
    """A chapter page: ``chapters/NAME``, one level deep."""
    folder, _, name = pagename.partition("/")
    return folder == CHAPTERS and bool(name) and "/" not in name


def edit_launch_buttons(header_buttons: list, pagename: str, book_root: Path,
                        path_to_book: str = "") -> list[str]:
    """Edit the theme's header buttons of one page in place; return the problems found.

    ``book_root`` is the folder of _config.yml; ``path_to_book`` the book's folder
    relative to the repository root (``repository.path_to_book``), as in the URLs.
    """
    groups = [b for b in header_buttons if b.get("label") == GROUP_LABEL]
    if not groups:
        return []
    if not is_chapter(pagename):
        for group in groups:
            header_buttons.remove(group)
        return []
    problems = []
    prefix = path_to_book.strip("/") + "/" if path_to_book.strip("/") else ""
    name = pagename.split("/", 1)[1]
    source = f"{prefix}{CHAPTERS}/{name}.ipynb"
    portable = f"{prefix}{PORTABLE}/{name}.ipynb"
    missing = not (book_root / PORTABLE / f"{name}.ipynb").is_file()
    for group in groups:
        for button in group.get("buttons", []):
            url, kind = button.get("url", ""), button.get("text")
            if kind == "Colab":
                if not url.endswith("/" + source):
                    problems.append(f"the Colab button of {pagename} does not open {source}: {url}")
                    continue
                button["url"] = url[: -len(source)] + portable
            elif kind == "Binder":
                if not url.endswith(f"?urlpath=lab/tree/{source}"):
                    problems.append(f"the Binder button of {pagename} does not open {source} in "
                                    f"JupyterLab (launch_buttons.notebook_interface: jupyterlab): {url}")
                    continue
                button["url"] = url[: -len(source)] + portable
            else:
                continue
            if missing:
                problems.append(f"the {kind} button of {pagename} opens {portable}, which is "
                                "not in the repository (run `make portable`)")
    return problems


def adjust_launch_buttons(app, pagename, templatename, context, doctree):
    header_buttons = context.get("header_buttons")
    if not header_buttons:
        return
    options = app.config.html_theme_options or {}
    for problem in edit_launch_buttons(header_buttons, pagename, Path(app.srcdir),
                                       options.get("path_to_docs", "")):
        LOGGER.warning("launch buttons: %s", problem, type="launch_buttons", location=pagename)


def setup(app):
    app.connect("html-page-context", adjust_launch_buttons, priority=PRIORITY)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
