"""Back-references: every public name of ssmheads says where the book derives or uses it.

The phrase is "Derived in Chapter 3, Theorem 3.1" (or "Used in Chapter 2, Section 2.4",
or "Used in Chapter 5"), on one line of the docstring, in the book's own numbering. Each
one must name a chapter, and a theorem, exercise, section or equation, that the book has
there (tools/backrefs.py checks it against tools/portable.py's numbers, which the build
compares with Sphinx's). The built API page must show them as links.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import backrefs  # noqa: E402
import portable  # noqa: E402

BOOK = portable.Book(ROOT)
MODULES = ["models", "operator", "span", "heads", "gradients", "architectures", "systems", "numerics",
           "plotting", "source", "widgets", "exercises"]


def public_objects():
    seen = {}
    for name in MODULES:
        module = importlib.import_module(f"ssmheads.{name}")
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.ismodule(obj) or not callable(obj):
                continue
            seen.setdefault(f"ssmheads.{name}.{attr}", obj)
    return seen


PUBLIC = public_objects()


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_each_public_name_says_where_the_book_derives_it(name):
    doc = inspect.getdoc(PUBLIC[name]) or ""
    refs = backrefs.references(doc)
    assert refs, (f"{name}'s docstring has no back-reference; add a line such as "
                  "'Derived in Chapter 3, Theorem 3.1.' or 'Used in Chapter 2, Section 2.4.'")
    per_line = sum(len(backrefs.references(line)) for line in doc.splitlines())
    assert per_line == len(refs), f"{name}: a back-reference is broken across lines"
    for ref in refs:
        backrefs.resolve(BOOK, ref)   # raises BackrefError if the book has no such number


def test_a_wrong_number_is_refused():
    good = backrefs.references("Derived in Chapter 3, Theorem 3.1.")[0]
    assert backrefs.resolve(BOOK, good).label
    for bad in ("Derived in Chapter 3, Theorem 3.99.", "Derived in Chapter 9.",
                "Derived in Chapter 3, Theorem 2.1.", "Derived in Chapter 2, Section 2.42.",
                "Derived in Chapter 3, Lemma 3.17.", "Used in Chapter 3, Widget 3.1."):
        with pytest.raises(backrefs.BackrefError):
            backrefs.resolve(BOOK, backrefs.references(bad)[0])


def test_the_linked_form_names_the_label():
    text = backrefs.linked(BOOK, "Derived in Chapter 3, Theorem 3.1.")
    assert re.fullmatch(r"Derived in :doc:`Chapter 3 </chapters/03_head_count>`, "
                        r":prf:ref:`Theorem 3\.1 <[\w-]+>`\.", text), text


def test_the_api_page_links_them():
    built = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
    page = built / "book" / "api.html"
    if not page.exists():
        pytest.skip(f"no built API page in {built}")
    if max(p.stat().st_mtime for p in (ROOT / "lib" / "ssmheads").rglob("*.py")) > page.stat().st_mtime:
        pytest.skip("the built API page is older than the library; rebuild it to check it")
    text = page.read_text()
    plain = " ".join(re.sub(r"<[^>]+>", "", text).split())
    for raw in (":doc:`", ":prf:ref:`", ":ref:`", ":eq:`"):
        assert raw not in plain, f"the API page shows a raw role {raw!r}: a back-reference was not rendered " \
                                 "(is it after a Returns or Raises section?)"
    expected = sum(len(backrefs.references(inspect.getdoc(o) or "")) for o in PUBLIC.values())
    linked = re.findall(r"(?:Derived|Used|Defined|Stated|Proved) in <a [^>]*href=\"[^\"]*chapters/0\d_\w+\.html"
                        r"[^\"]*\"[^>]*>(?:<span[^>]*>)?Chapter \d", text)
    shown = re.findall(r"(?:Derived|Used|Defined|Stated|Proved) in Chapter \d", plain)
    assert len(linked) == len(shown), f"{len(shown) - len(linked)} back-references on the API page are not links"
    assert len(linked) >= expected > 0, f"{len(linked)} linked back-references on the API page, " \
                                        f"{expected} in the docstrings"
