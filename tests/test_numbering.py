"""One numbering: readers meet theorems and exercises only under the numbers the book renders.

The specification of the mathematics (``math.md``, outside the book) numbers its results
Theorem 5, Corollary 7, Lemma 6a, ...; the site numbers them per chapter and per kind
(Theorem 3.1, Corollary 3.1, Lemma 2.2). Everything a reader sees must use the site's
numbers, or the result's title: the library's docstrings and comments (the API page is
generated from them), the chapters (markdown, code that draws legends and titles, cell
metadata such as the exercise topics of the instructors' table, stored text outputs),
and the pages in ``book/``.

Two checks: no *bare* number (a theorem-like word followed by a number without a
chapter dot), and every dotted number names a result that exists, with the numbers
computed from the chapters' directives the way sphinx-proof and sphinx-exercise number
them: by the book's model (tools/bookkit/core.py, ``Book``: each chapter's ``numbered``
results, exercises and figures), which every product numbers with. When a built site is
present, those computed numbers are compared with the rendered ones. A third check, for the library's docstrings: the sentence of a reference
names the result it cites (a word of its title). That catches an existing number put for
the wrong result unless the sentence happens to share a word with the wrong result's title.
"""

from __future__ import annotations

from helpers import built_chapter_pages

import ast
import functools
import html
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bookkit.core import PRF_KINDS, Book  # noqa: E402  (tools/ is not a package)

CHAPTERS = sorted((ROOT / "chapters").glob("*.ipynb"))
BUILT = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))

# Words that introduce a numbered result, and their abbreviations.
KINDS = ("Theorem", "Lemma", "Proposition", "Corollary", "Remark", "Definition", "Example",
         "Exercise", "Assumption", "Claim", "Conjecture", "Algorithm", "Observation", "Property")
ABBREVIATIONS = ("Thm", "Prop", "Lem", "Cor", "Rem", "Def", "Defn", "Ex")
_WORD = r"\b(?P<kind>" + "|".join(KINDS + ABBREVIATIONS) + r")(?:s|es|ies)?\b\.?"
# A bare number: the word, then a number that is not followed by ".<digit>" (Theorem 5,
# Prop. 10, Lemma 6a, Proposition 2(e), "Remark 1:"), in any letter case.
BARE = re.compile(_WORD + r"[ \t~]*\(?(?P<number>\d+)(?!\d|\.\d)", re.I)
# A book number: Theorem 3.1 (the kind spelled out, as the site renders it).
DOTTED = re.compile(r"\b(?P<kind>" + "|".join(KINDS) + r")[ \t~]+(?P<chapter>\d+)\.(?P<index>\d+)\b")

# (file relative to the repository, the matched text) -> why it may stay. Empty: nothing
# is exempt. An entry must say why; a stale entry fails test_allow_list_is_needed.
ALLOWED: dict[tuple[str, str], str] = {
    ("book/running.md", "Theorem 1"):
        "quotes what jupyterlab-myst shows for Theorem 3.1 (its numbering restarts in each "
        "notebook), to warn Binder readers; not a reference to a result",
}

# sphinx-proof kinds (the directive names), numbered per kind within each chapter.
PROOF_KINDS = PRF_KINDS


@functools.lru_cache(maxsize=None)
def _book() -> Book:
    return Book(ROOT)


def _texts_of_notebook(path: Path) -> list[str]:
    """Everything a notebook shows or carries as text: sources, metadata, text outputs (no images)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    texts = [json.dumps(nb.get("metadata", {}), ensure_ascii=False)]
    for cell in nb["cells"]:
        source = cell.get("source", "")
        texts.append("".join(source) if isinstance(source, list) else source)
        texts.append(json.dumps(cell.get("metadata", {}), ensure_ascii=False))
        for out in cell.get("outputs", []):
            text = out.get("text", "")
            texts.append("".join(text) if isinstance(text, list) else text)
            for mime, data in out.get("data", {}).items():
                if mime.startswith("text/"):
                    texts.append("".join(data) if isinstance(data, list) else str(data))
    return texts


def reader_facing_texts() -> list[tuple[str, str]]:
    """``(file, text)`` for every file a reader sees, directly or through the API page."""
    found = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
             for p in sorted((ROOT / "lib").rglob("*.py"))]
    found += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
              for p in sorted((ROOT / "book").glob("*.md"))]
    found += [("README.md", (ROOT / "README.md").read_text(encoding="utf-8"))]
    for path in CHAPTERS:
        found += [(str(path.relative_to(ROOT)), text) for text in _texts_of_notebook(path)]
    return found


def bare_numbers(text: str) -> list[str]:
    """The spec-style references in ``text``: a theorem-like word and a number with no chapter dot."""
    return [m.group(0) for m in BARE.finditer(text)]


def chapter_numbers() -> dict[str, int]:
    """``{notebook stem: chapter number}``: positions in the numbered part of _toc.yml."""
    found = {page.path.stem: page.number[0] for page in _book().chapters() if page.number}
    assert found, "_toc.yml lists no chapters"
    return found


def _numbered(kinds: tuple[str, ...]) -> list[tuple[str, str, str, str]]:
    """``(number, label, title, notebook)`` for the chapters' numbered things of ``kinds``, in book order."""
    return [(f"{t.kind.capitalize()} {t.numbered}", t.label, t.title, page.path.stem)
            for page in _book().chapters() if page.number for t in page.numbered if t.kind in kinds]


def _numbered_directives() -> list[tuple[str, str, str, str]]:
    """``(number, label, title, notebook)`` for every numbered result and exercise, in book order."""
    return _numbered(PROOF_KINDS + ("exercise",))


def figure_numbers() -> dict[str, tuple[str, str]]:
    """``{"Figure 3.1": (label, notebook)}``: the chapters' figures, numbered as Sphinx numbers them.

    A figure is a code cell with a caption and a label in its myst-nb metadata
    (``mystnb.figure``, written by tools/figure_alt.py) and an image output; they are
    counted in document order within each chapter.
    """
    return {number: (label, stem) for number, label, _, stem in _numbered(("figure",))}


FIGURE = re.compile(r"\bFigure[ \t~]+(?P<chapter>\d+)\.(?P<index>\d+)\b")


def book_numbers() -> dict[str, tuple[str, str]]:
    """``{"Theorem 3.1": (label, notebook)}`` for every numbered result and exercise of the book."""
    return {number: (label, stem) for number, label, _, stem in _numbered_directives()}


# --------------------------------------------------------------------------- the detector itself


@pytest.mark.parametrize("text", [
    "Theorem 5", "by Theorem 5.", "Corollary 7(c)", "the Prop. 10 bound", "Proposition 2(e)",
    "Remark 1: an interaction form", "why Lemma 6a needs every direction", "Propositions 2 and 3",
    "theorem 12", "Thm 9", "Definition~4", "Example 1,", "Exercise 3",
])
def test_detector_finds_spec_numbers(text):
    assert bare_numbers(text), text


@pytest.mark.parametrize("text", [
    "Theorem 3.1", "Proposition 4.3's bounds", "Corollary 3.1.", "Lemma 2.2 (Pointwise collinearity)",
    "Exercise 1.2", "Chapter 3", "the theorem", "example_1", "prop8", "Examples\n--------\n>>> 1",
    "the head-count theorem (Theorem 3.1)",
])
def test_detector_passes_book_numbers_and_prose(text):
    assert not bare_numbers(text), text


# --------------------------------------------------------------------------- the book


def test_no_spec_numbers_where_readers_look():
    found = [(where, ref) for where, text in reader_facing_texts() for ref in bare_numbers(text)
             if (where, ref) not in ALLOWED]
    assert not found, ("the specification's numbers; use the book's (Theorem 3.1) or the "
                       f"result's title: {found}")


def test_allow_list_is_needed():
    present = {(where, ref) for where, text in reader_facing_texts() for ref in bare_numbers(text)}
    for entry, reason in ALLOWED.items():
        assert reason.strip(), f"{entry} is allowed without a reason"
        assert entry in present, f"{entry} is allowed but no longer occurs; remove it from ALLOWED"


def test_book_numbers_name_results_that_exist():
    """A "Theorem 3.1" in a docstring, a legend or a page names a result the book has."""
    numbers = book_numbers()
    wrong = sorted({(where, m.group(0)) for where, text in reader_facing_texts()
                    for m in DOTTED.finditer(text) if m.group(0) not in numbers})
    assert not wrong, f"no such result in the book: {wrong}"


def test_figure_numbers_name_figures_that_exist():
    """A "Figure 3.2" in the text, a docstring or a page is a figure the book has."""
    figures = figure_numbers()
    assert len(figures) >= 12, f"only {len(figures)} numbered figures: run python tools/figure_alt.py"
    wrong = sorted({(where, m.group(0)) for where, text in reader_facing_texts()
                    for m in FIGURE.finditer(text) if m.group(0) not in figures})
    assert not wrong, f"no such figure in the book: {wrong}"


def test_figure_numbers_match_the_built_site():
    """Every computed figure number is the one the built site's <figcaption> shows (when a site is built)."""
    pages = built_chapter_pages(BUILT, CHAPTERS)
    rendered = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'<figure[^>]*\bid="(?P<label>[\w-]+)"[^>]*>.*?<span class="caption-number">'
                             r'(?P<number>[^<]*)</span>', text, re.S):
            rendered[" ".join(m.group("number").split())] = m.group("label")
    assert {number: label for number, (label, _) in figure_numbers().items()} == rendered


# --------------------------------------------------------------------------- the right result
#
# A number that exists can still name the wrong result (a docstring once cited "Theorem 3.2",
# the nonnegative head count, for the softmax-with-a-sink construction that follows it). A
# docstring's reference must therefore come with a word of the result's title or label, in
# the same sentence or in the name of the documented function. Only the words that set a
# result apart count: those of at most two results' titles and labels ("head", "operator",
# "rank" are everywhere), or all of them for a result with none of its own. "after
# Corollary 3.1" points at the text that follows a result, not at the result, and is not
# checked.

_STOPWORDS = {"with", "that", "then", "from", "this", "every", "have", "into", "over", "their"}
_STOPWORDS |= {kind.lower() for kind in KINDS}


def _stems(text: str) -> set[str]:
    """The words of ``text`` of four letters or more, cut to their first five (heads ~ head)."""
    return {w[:5] for w in re.findall(r"[a-z]{4,}", text.lower()) if w not in _STOPWORDS}


def result_words() -> dict[str, set[str]]:
    """``{"Theorem 3.2": {"nonne", "count"}}``: the distinctive words of each result's title and label."""
    words = {number: _stems(title + " " + label.split("-", 1)[-1])
             for number, label, title, _ in _numbered_directives()}
    spread = Counter(w for number, ws in words.items() if not number.startswith("Exercise") for w in ws)
    # A result with no word of its own ("Rank bound") is named by any word of its title.
    return {number: {w for w in ws if spread[w] <= 2} or ws for number, ws in words.items()}


def unnamed_references(docstring: str, name: str, words: dict[str, set[str]]) -> list[str]:
    """The references in ``docstring`` (of the object ``name``) whose sentence names no word of the result."""
    bad = []
    for paragraph in re.split(r"\n\s*\n|\n\s*[*-] ", docstring):
        for sentence in re.split(r"(?<=[.;])\s+", paragraph):
            for m in DOTTED.finditer(sentence):
                if re.search(r"\b(?:after|before)\s+$", sentence[:m.start()]):
                    continue
                context = sentence[:m.start()] + " " + sentence[m.end():] + " " + name.replace("_", " ")
                if not words.get(m.group(0), set()) & _stems(context):
                    bad.append(" ".join(sentence.split()))
    return bad


def library_docstrings() -> list[tuple[str, str, str]]:
    """``(file, documented name, docstring)`` for the modules, classes and functions of ``lib``."""
    found = []
    for path in sorted((ROOT / "lib").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                doc = ast.get_docstring(node, clean=False)
                if doc:
                    found.append((str(path.relative_to(ROOT)), getattr(node, "name", path.stem), doc))
    return found


@pytest.mark.parametrize("doc, name, ok", [
    # the mistake this check is for, and its correction
    ("Genuine softmax heads with a sink that reproduce the lags ``K`` exactly (Theorem 3.2).",
     "softmax_heads", False),
    ('Genuine softmax heads with a sink (Chapter 3, "Softmax, with a sink").', "softmax_heads", True),
    ("The fewest heads with nonnegative coefficients (Theorem 3.2).", "count", True),
    # the right number under the wrong title; a word in the function's name counts
    ("The bound on the decay (Proposition 4.2).", "bound", False),
    ("The bound on the decay (Proposition 4.3).", "bound", True),
    ("Theorem 4.1's input.", "highway_input", True),
    ("Theorem 4.1's input.", "make_input", False),
    # a word of another sentence does not count; a pointer to the text after a result is not checked
    ("Nonnegative weights. Softmax weights (Theorem 3.2).", "f", False),
    ("The weights (Chapter 3, after Corollary 3.1).", "weights", True),
])
def test_detector_of_unnamed_references(doc, name, ok):
    assert (not unnamed_references(doc, name, result_words())) == ok


def test_every_result_has_words():
    empty = [number for number, ws in result_words().items() if not ws]
    assert not empty, f"results whose title and label have no word to check a reference by: {empty}"


def test_library_references_name_their_result():
    """A docstring that cites "Theorem 3.2" says what Theorem 3.2 is about, in the same sentence."""
    words = result_words()
    bad = [(where, name, sentence) for where, name, doc in library_docstrings()
           for sentence in unnamed_references(doc, name, words)]
    titles = {number: title for number, _, title, _ in _numbered_directives()}
    assert not bad, ("a reference whose sentence names nothing of the result (is it the right "
                     "result? name it, e.g. 'the head-count theorem (Theorem 3.1)'; titles: "
                     f"{titles}): {bad}")


def test_computed_numbers_cover_the_book():
    numbers = book_numbers()
    assert numbers["Theorem 3.1"][0] == "thm-head-count"
    assert numbers["Lemma 2.2"][0] == "lem-collinear"
    assert numbers["Proposition 4.3"][0] == "prop-decay"
    assert numbers["Exercise 3.1"][0] == "ex-build-heads"
    assert all(label for label, _ in numbers.values()), "a numbered result without a label"


def test_computed_numbers_match_the_built_site():
    """Every computed number is the one the built site renders for that label (when a site is built)."""
    pages = built_chapter_pages(BUILT, CHAPTERS)
    rendered = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        for m in re.finditer(r'id="(?P<label>[\w-]+)"[^>]*>\s*<p class="admonition-title">(?P<title>.*?)</p>',
                             text, re.S):
            title = html.unescape(re.sub(r"<[^>]+>", "", m.group("title")))
            number = re.match(r"(\w+ \d+\.\d+)", " ".join(title.split()))
            if number:
                rendered[number.group(1)] = m.group("label")
    numbers = book_numbers()
    assert rendered, f"no numbered results found in {BUILT}/chapters"
    assert {k: label for k, (label, _) in numbers.items()} == rendered
