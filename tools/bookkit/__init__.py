"""The book's tooling as one package: what the products share, read from the book once.

* :mod:`bookkit.core` — the model of the book: MyST blocks, pages, labels and the numbers
  the site shows, figures, exercises' numbers, and the one walk of the gated solutions;
* :mod:`bookkit.student` — the student version of a chapter in MyST (solutions removed,
  a code cell after each exercise), which every student product starts from.

The products import this package and never the other way round (core <- student <-
products <- command lines): tools/portable.py (portable notebooks), tools/make_assignments.py
(student notebooks and site), tools/make_otter.py (Otter assignments), tools/make_pdf.py,
and book/_ext/ through tools/portable.py. ``python tools/import_graph.py`` shows the
imports; tests/test_tool_layout.py fails on a cycle. The scripts put tools/ on
``sys.path`` (running ``python tools/NAME.py`` does), so ``import bookkit`` finds it.
"""
