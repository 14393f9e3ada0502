"""Sphinx extension: the API page links each docstring's back-reference to the book.

A docstring says where the book derives a function ("Derived in Chapter 3, Theorem
3.1"); on ``autodoc-process-docstring`` this extension checks the phrase against the
book's numbering (tools/backrefs.py, with the numbers of the book's model) and replaces it
with links to the chapter and to the theorem. A phrase naming something the book does
not have is a warning, so the ``-W`` build fails.

It needs the model of the book only (chapters, labels and the numbers the site shows),
never a rendering, so it takes ``Book`` from the core, tools/bookkit/core.py, and not
from a product such as tools/portable.py.
"""
from __future__ import annotations

from pathlib import Path

from sphinx.util import logging

from portable_downloads import _load

logger = logging.getLogger(__name__)
_BOOKS: dict = {}


def _process(app, what, name, obj, options, lines):
    if not lines:
        return
    tools = _load(Path(app.srcdir), "backrefs")
    # kept here, not on app.env: the environment is pickled between builds, and the Book's
    # classes come from the book's tools/ folder, which the next build may not have on its path
    key = str(app.srcdir)
    if key not in _BOOKS:
        _BOOKS[key] = _load(Path(app.srcdir), "bookkit.core").Book(Path(app.srcdir))
    book = _BOOKS[key]
    for i, line in enumerate(lines):
        if tools.PATTERN.search(line):
            try:
                lines[i] = tools.linked(book, line)
            except tools.BackrefError as exc:
                logger.warning(f"{name}: {exc}", type="backrefs", location=name)


def setup(app):
    app.connect("autodoc-process-docstring", _process)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
