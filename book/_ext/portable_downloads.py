"""Sphinx extension: the download button gives the portable notebook.

sphinx-book-theme's download button (.ipynb) links to the page's source as Sphinx
copied it, ``_sources/<docname>.ipynb``: the MyST notebook, which shows raw directives
and roles in any Jupyter front end without extensions. On ``build-finished`` this
extension overwrites each such file with the portable rendering of the notebook that
was built (tools/portable.py, from the book's source folder):

* ``portable_notebooks = "reader"`` (the default): the notebook with its stored
  outputs and solutions (collapsible);
* ``portable_notebooks = "student"`` (set by tools/make_assignments.py for the
  students' site): the student notebook, as ``make assignments`` writes it (solutions
  removed, each exercise's stub in a code cell, outputs cleared);
* ``portable_notebooks = "otter"`` (set by tools/make_assignments.py when ``make otter``
  has written current Otter assignments): the Otter student notebook of each chapter,
  copied from ``otter_notebooks/<chapter>/student/<chapter>.ipynb``, the very file the
  instructor hands out and grades.

A page that is a notebook but not a chapter (book/instructors.md, a MyST text
notebook that builds the instructors' tables) has no portable rendering: its
``.ipynb`` entry is removed from the download menu, and the copy of the MyST notebook
that sphinx-book-theme puts in ``_sources/`` is deleted. Its ``.md`` entry stays.

``portable_site_url`` (default: the book's own site) is the site the notebooks link
to; tools/make_assignments.py sets it to the students' site's address (``--site-url``).

It also compares the numbers of the book's model (tools/bookkit/core.py: theorems,
exercises, figures, labelled equations, sections; the portable notebooks and every other
product number with it) with the ones Sphinx gave them, and warns on any difference, so
a ``-W`` build fails if the portable notebooks would number anything differently from
the site.

What it takes from where: the chapters, their labels and numbers come from the core
(``bookkit.core.Book``), which knows the book and nothing of its products; only the
downloads themselves, which are renderings, come from the product that renders them
(tools/portable.py: ``render_notebook``, ``student_version``). Both are loaded from the
``tools/`` folder of the book being built (:func:`_load`).
"""
from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from sphinx.util import logging

logger = logging.getLogger(__name__)


def _load(srcdir: Path, name: str):
    """tools/<name>.py of the book being built (or of this repository).

    A dotted name is a module of a package in tools/ (``"bookkit.core"``): it is imported
    under its own name, with that tools/ folder first on ``sys.path``, so that it is the
    very module the products loaded here import (one ``Book`` class, one ``BookError``).
    """
    for tools in (srcdir / "tools", Path(__file__).resolve().parents[2] / "tools"):
        if "." in name:
            if not (tools / (name.replace(".", "/") + ".py")).exists():
                continue
            sys.path.insert(0, str(tools))
            try:
                return importlib.import_module(name)
            finally:
                sys.path.remove(str(tools))
        path = tools / f"{name}.py"
        if path.exists():
            key = f"_portable_downloads_{name}"
            if key in sys.modules and getattr(sys.modules[key], "__file__", None) == str(path):
                return sys.modules[key]
            sys.path.insert(0, str(tools))
            try:
                spec = importlib.util.spec_from_file_location(key, path)
                module = importlib.util.module_from_spec(spec)
                sys.modules[key] = module
                spec.loader.exec_module(module)
            finally:
                sys.path.remove(str(tools))
            return module
    raise ImportError(f"tools/{name.replace('.', '/')}.py not found next to {srcdir}")


def number_differences(book, env) -> list[str]:
    """Where the book model's numbers differ from Sphinx's (``env.toc_fignumbers``, ``toc_secnumbers``)."""
    problems = []
    kinds = {"equation": "displaymath"}
    for label, target in book.labels.items():
        if target.number is None or target.kind in ("section", "target", "solution"):
            continue
        figtype = kinds.get(target.kind, target.kind)
        key = target.anchor
        sphinx = env.toc_fignumbers.get(target.docname, {}).get(figtype, {}).get(key)
        if sphinx is None:
            problems.append(f"{target.docname}: {label} is {target.kind} {target.numbered} in "
                            "the book's model (tools/bookkit/core.py), but Sphinx gave it no number")
        elif tuple(sphinx) != tuple(target.number):
            problems.append(f"{target.docname}: {label} is {target.kind} {target.numbered} in "
                            f"the book's model, {'.'.join(map(str, sphinx))} on the site")
    known = {(t.docname, kinds.get(t.kind, t.kind), t.anchor) for t in book.labels.values() if t.number}
    for docname, page in book.pages.items():
        if page.path.suffix != ".ipynb":
            continue
        for figtype, numbers in env.toc_fignumbers.get(docname, {}).items():
            for key, number in numbers.items():
                if (docname, figtype, key) not in known:
                    problems.append(f"{docname}: the site numbers {figtype} {key} as "
                                    f"{'.'.join(map(str, number))}, and the book's model does not know it")
        if page.number is None:
            continue
        ours = [number for _, number, _ in page.sections if number]
        theirs = sorted(tuple(n) for n in env.toc_secnumbers.get(docname, {}).values())
        if [tuple(n) for n in ours] != theirs:
            problems.append(f"{docname}: section numbers differ: the book's model "
                            f"{['.'.join(map(str, n)) for n in ours]}, the site "
                            f"{['.'.join(map(str, n)) for n in theirs]}")
    return problems


def write_portable_sources(app, exception):
    if exception is not None or app.builder.format != "html":
        return
    srcdir, outdir = Path(app.srcdir), Path(app.outdir)
    core = _load(srcdir, "bookkit.core")
    portable = _load(srcdir, "portable")
    kind = app.config.portable_notebooks
    if kind not in ("reader", "student", "otter"):
        logger.warning(f"portable_notebooks must be 'reader', 'student' or 'otter', not {kind!r}")
        return
    import nbformat

    written = 0
    try:
        book = core.Book(srcdir, base_url=app.config.portable_site_url or None)
        for problem in number_differences(book, app.env):
            logger.warning(f"portable notebooks: {problem}")
        for page in book.chapters():
            target = outdir / "_sources" / (page.docname + page.path.suffix)
            if not target.exists():
                continue
            if kind == "otter":
                otter = Path(app.config.otter_notebooks) / page.path.stem / "student" / page.path.name
                if not otter.exists():
                    logger.warning(f"portable notebooks: no Otter student notebook {otter}; the download of "
                                   f"{page.docname} is removed")
                    target.unlink()
                    continue
                target.write_bytes(otter.read_bytes())
                written += 1
                continue
            nb = nbformat.read(page.path, as_version=4)
            if kind == "student":
                rendered = portable.student_version(nb, page.docname, book)
            else:
                rendered = portable.render_notebook(nb, page.docname, book, "reader")[0]
            nbformat.validate(rendered)
            target.write_text(portable.notebook_text(rendered))
            written += 1
    except core.BookError as exc:
        # A chapter uses MyST that tools/portable.py cannot render: the download would
        # show raw markup, so say so (a -W build fails).
        logger.warning(f"portable notebooks: {exc} (downloads not yet written keep the MyST source)")
        return
    logger.info(f"portable notebooks: {written} downloads ({kind}) written to _sources/")


DOWNLOADS = "download-buttons"            # sphinx-book-theme's download menu ...
NOTEBOOK_ENTRY = "download-notebook-button"  # ... and its .ipynb entry
PRIORITY = 600                            # after the theme's add_header_buttons (501)


def _chapters(app) -> set[str]:
    """The docnames of the chapters (the notebooks of _toc.yml), read once per build."""
    found = getattr(app, "_portable_chapters", None)
    if found is None:
        book = _load(Path(app.srcdir), "bookkit.core").Book(Path(app.srcdir))
        found = {page.docname for page in book.chapters()}
        app._portable_chapters = found
    return found


def drop_notebook_download(header_buttons: list, pagename: str, chapters: set[str]) -> str | None:
    """Remove the .ipynb entry of a non-chapter page's download menu; return its file (``_sources/...``)."""
    if pagename in chapters:
        return None
    dropped = None
    for group in header_buttons:
        if group.get("label") != DOWNLOADS:
            continue
        for button in list(group.get("buttons", [])):
            if button.get("label") == NOTEBOOK_ENTRY:
                group["buttons"].remove(button)
                dropped = button.get("url", "")
    return dropped


def no_notebook_download(app, pagename, templatename, context, doctree):
    header_buttons = context.get("header_buttons")
    if not header_buttons or not context.get("ipynb_source"):
        return
    if drop_notebook_download(header_buttons, pagename, _chapters(app)) is not None:
        copied = Path(app.outdir) / "_sources" / context["ipynb_source"]
        copied.unlink(missing_ok=True)
        context.pop("ipynb_source")


def setup(app):
    app.connect("html-page-context", no_notebook_download, priority=PRIORITY)
    app.add_config_value("portable_notebooks", "reader", "html")
    # The site the notebooks link to, if not the book's (the students' site: make_assignments --site-url).
    app.add_config_value("portable_site_url", "", "html")
    # The folder of `make otter`'s assignments, for portable_notebooks = "otter".
    app.add_config_value("otter_notebooks", "", "html")
    app.connect("build-finished", write_portable_sources)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
