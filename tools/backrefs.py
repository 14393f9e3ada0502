"""Back-references from the library's docstrings to the book (issue 14).

Every public function and class of ``ssmheads`` says where the book derives or uses
it, in the book's own numbering::

    Derived in Chapter 3, Theorem 3.1.
    Used in Chapter 2, Section 2.4.
    Used in Chapter 5.

``references(doc)`` finds these phrases; ``resolve`` checks each against the book's
numbering as the site shows it (the book's model, ``bookkit.core.Book``: its chapters
and labelled targets with their numbers, which the build compares with Sphinx's own)
and gives the label to link to.
``book/_ext/backrefs.py`` turns them into links on the API page, and
``tests/test_backrefs.py`` fails on a public name without one or on a number the book
does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: "Derived in Chapter 3, Theorem 3.1" / "Used in Chapter 2, Section 2.4" / "Used in Chapter 5"
PATTERN = re.compile(
    r"\b(?P<verb>Derived|Used|Defined|Stated|Proved) in Chapter (?P<chapter>\d+)"
    r"(?:, (?P<kind>[A-Z][a-z]+) (?P<number>\d+(?:\.\d+)+))?"
)
#: Kinds a back-reference may name, as the book prints them, and the kind Book records.
KINDS = {
    "Theorem": "theorem", "Lemma": "lemma", "Definition": "definition", "Proposition": "proposition",
    "Corollary": "corollary", "Remark": "remark", "Example": "example", "Algorithm": "algorithm",
    "Exercise": "exercise", "Equation": "equation", "Section": "section",
}


class BackrefError(ValueError):
    """A back-reference names a chapter, kind or number the book does not have."""


@dataclass(frozen=True)
class Backref:
    text: str            # the phrase as written, e.g. "Derived in Chapter 3, Theorem 3.1"
    verb: str
    chapter: int
    kind: str | None     # "Theorem", "Section", ... or None for the chapter alone
    number: str | None   # "3.1"
    docname: str = ""    # resolved: the chapter's page
    label: str = ""      # resolved: the label to link to ("" for a chapter or unlabelled section)
    title: str = ""      # resolved: the chapter's title


def references(doc: str | None) -> list[Backref]:
    """Every back-reference phrase in ``doc`` (unresolved)."""
    found = []
    for m in PATTERN.finditer(doc or ""):
        found.append(Backref(m.group(0), m.group("verb"), int(m.group("chapter")), m.group("kind"),
                             m.group("number")))
    return found


def chapter_page(book, chapter: int):
    page = book.chapter(chapter)
    if page is None:
        raise BackrefError(f"the book has no Chapter {chapter}")
    return page


def resolve(book, ref: Backref) -> Backref:
    """``ref`` with its page and label filled in; raises BackrefError if the book has no such thing."""
    page = chapter_page(book, ref.chapter)
    if ref.kind is None:
        return Backref(**{**ref.__dict__, "docname": page.docname, "title": page.title})
    if ref.kind not in KINDS:
        raise BackrefError(f"{ref.text!r}: the book numbers no kind called {ref.kind!r} "
                           f"(expected one of {', '.join(KINDS)})")
    number = tuple(int(x) for x in ref.number.split("."))
    if number[0] != ref.chapter:
        raise BackrefError(f"{ref.text!r}: {ref.kind} {ref.number} is not in Chapter {ref.chapter}")
    kind = KINDS[ref.kind]
    if kind == "section":
        if not any(num == number for _, num, _ in page.sections):
            raise BackrefError(f"{ref.text!r}: Chapter {ref.chapter} has no Section {ref.number}")
        labels = [t.label for t in book.targets("section", page.docname, number)]
        return Backref(**{**ref.__dict__, "docname": page.docname, "title": page.title,
                          "label": labels[0] if labels else ""})
    labels = [t.label for t in book.targets(kind, page.docname, number)]
    if not labels:
        raise BackrefError(f"{ref.text!r}: Chapter {ref.chapter} has no {ref.kind} {ref.number} "
                           "(numbers are the site's: Theorem 3.1 is the first theorem of Chapter 3)")
    return Backref(**{**ref.__dict__, "docname": page.docname, "title": page.title, "label": labels[0]})


def rst(ref: Backref) -> str:
    """The phrase as reStructuredText with links (for the API page)."""
    chapter = f":doc:`Chapter {ref.chapter} </{ref.docname}>`"
    head = f"{ref.verb} in {chapter}"
    if ref.kind is None:
        return head
    what = f"{ref.kind} {ref.number}"
    if ref.kind == "Section" and not ref.label:
        return f"{head}, {what}"
    if KINDS[ref.kind] in ("section", "exercise"):
        return f"{head}, :ref:`{what} <{ref.label}>`"
    if ref.kind == "Equation":
        return f"{head}, Equation :eq:`{ref.label}`"
    return f"{head}, :prf:ref:`{what} <{ref.label}>`"


def linked(book, doc: str) -> str:
    """``doc`` with every back-reference phrase replaced by its linked form (raises on a bad one)."""
    def sub(m: re.Match) -> str:
        ref = Backref(m.group(0), m.group("verb"), int(m.group("chapter")), m.group("kind"), m.group("number"))
        return rst(resolve(book, ref))
    return PATTERN.sub(sub, doc)
