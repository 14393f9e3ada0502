"""The book's tooling as one package: what the products share, read from the book once.

* :mod:`bookkit.core` — the model of the book: MyST blocks, pages, labels and the numbers
  the site shows (``Book``, each page's ``numbered`` results, exercises and figures), the
  chapters' files and cells, figures and their "What to notice" blocks, exercises and the
  auto-checked mark, and the one walk of the gated solutions;
* :mod:`bookkit.student` — the student version of a chapter in MyST (solutions removed,
  a code cell after each exercise), which every student product starts from.

The products and checks import this package and never the other way round (core <- student
<- products <- command line): tools/portable.py (portable notebooks), tools/make_assignments.py
(student notebooks and site), tools/make_otter.py (Otter assignments), tools/make_pdf.py, the
checks (tools/figure_alt.py, tools/exercise_catalogue.py, tools/backrefs.py,
tools/assert_margins.py, tools/problem_set_length.py, tests/test_numbering.py), and
book/_ext/ (the core for the model, tools/portable.py for the downloads it renders). The
command line, tools/bookcli (``python -m bookcli``), is a package of its own that imports
the products. ``python tools/import_graph.py`` shows the imports, module by module and
package by package; tests/test_tool_layout.py fails on a cycle of either kind. The scripts
put tools/ on ``sys.path`` (running ``python tools/NAME.py`` or ``python -m bookcli`` with
``PYTHONPATH=tools`` does), so ``import bookkit`` finds it.
"""
