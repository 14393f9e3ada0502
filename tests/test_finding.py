"""Finding things and folded code (book/_ext/finding.py, book/_ext/code_toggles.py).

A small book is built with Sphinx in a subprocess (its warnings go to a file, so that
they are read, not raised): two numbered chapters, one Markdown with theorem-like
statements, an exercise and its solution and links to sections, one a notebook whose
code cells are folded in each of the ways the chapters fold them; a list of theorems
and one of exercises. Then the pages and the search index are read back:

* each list has every numbered statement (only those of its kind), chapter by chapter,
  in the order of the table of contents, with the number the book renders ("Theorem
  1.1"), its title, a link to it, and for an exercise a link to its solution;
* the search index has the numbered titles ("Theorem 1.1", "Theorem 1.1 (Big result)"),
  pointing at the statement, and the page does not show them;
* ``{book-section}`` reads "Section 1.1" and links to the heading; a missing anchor is a
  warning;
* a folded cell that draws a figure says "Show the plotting code", other folded code
  "Show the code", a folded output "Show the output"; a label the cell chose stays;
  the summaries carry no ``aria-label`` that would hide their text; a cell that draws a
  figure is folded without a tag (its outputs stay in view), unless tagged ``show-input``.
"""
from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXT = ROOT / "book" / "_ext"
sys.path.insert(0, str(EXT))

# The smallest valid PNG: 1 x 1 pixel.
PNG = base64.b64encode(bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d4944415478da63f8ffff3f0005fe02fea7d6a4e8000000"
    "0049454e44ae426082")).decode()

CONF = f"""
import sys
sys.path.insert(0, {str(EXT)!r})
project = "small"
extensions = ["myst_nb", "sphinx_proof", "sphinx_exercise", "finding", "code_toggles"]
myst_enable_extensions = ["dollarmath", "colon_fence"]
nb_execution_mode = "off"
numfig = True
html_theme = "basic"
"""

INDEX = """
# Small book

```{toctree}
:numbered:
ch1
ch2
```

```{toctree}
theorems
exercises
```
"""

CH1 = """
# Chapter one

## A section

```{prf:theorem} Big result
:label: thm-big

Every $x$ is fine.
```

```{prf:definition} A thing
:label: def-thing

A thing is $y$.
```

```{exercise} Try it
:label: ex-try

Do it.
```

```{solution} ex-try
:label: sol-try

Done.
```

See {book-section}`ch1#a-section` and {book-section}`ch2#second-section`.
"""

THEOREMS = """
# Theorems

```{numbered-list} theorems
```
"""

EXERCISES = """
# Exercises

```{numbered-list} exercises
```
"""


def code_cell(source: str, tags=(), outputs=(), mystnb=None) -> dict:
    metadata = {"tags": list(tags)}
    if mystnb:
        metadata["mystnb"] = mystnb
    return {"cell_type": "code", "execution_count": 1, "metadata": metadata,
            "source": source, "outputs": list(outputs)}


def markdown_cell(source: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


FIGURE = {"output_type": "display_data", "metadata": {},
          "data": {"image/png": PNG, "text/plain": "<Figure>"}}
TEXT = {"output_type": "stream", "name": "stdout", "text": "42\n"}

CH2 = {
    "nbformat": 4, "nbformat_minor": 5,
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "cells": [
        markdown_cell("# Chapter two\n\n## Second section\n\n"
                      "```{prf:lemma} Small step $s$\n:label: lem-small\n\nA step.\n```\n\n"
                      "```{exercise}\n:label: ex-untitled\n\nNo title, no solution.\n```"),
        code_cell("plot_it()", tags=["hide-input"], outputs=[FIGURE]),
        code_cell("compute_it()", tags=["hide-input"], outputs=[TEXT]),
        code_cell("chosen()", tags=["hide-input"], outputs=[TEXT],
                  mystnb={"code_prompt_show": "Show my thing", "code_prompt_hide": "Hide my thing"}),
        code_cell("out()", tags=["hide-output"], outputs=[TEXT]),
        code_cell("shown()", outputs=[TEXT]),
        code_cell("plot_untagged()", outputs=[FIGURE, TEXT]),
        code_cell("plot_kept_open()", tags=["show-input"], outputs=[FIGURE]),
    ],
}

BROKEN = """
# Not in the toc's numbering

A link to {book-section}`ch1#no-such-section`.
"""


@pytest.fixture(scope="module")
def small_book(tmp_path_factory):
    src = tmp_path_factory.mktemp("small-book")
    (src / "conf.py").write_text(CONF)
    (src / "index.md").write_text(INDEX)
    (src / "ch1.md").write_text(CH1)
    (src / "ch2.ipynb").write_text(json.dumps(CH2))
    (src / "theorems.md").write_text(THEOREMS)
    (src / "exercises.md").write_text(EXERCISES)
    (src / "broken.md").write_text("---\norphan: true\n---\n" + BROKEN)
    out = src / "_build"
    warnings = src / "warnings.txt"
    run = subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-E", "-w", str(warnings),
                          str(src), str(out)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    return out, warnings.read_text()


def article(html: str) -> str:
    """The page body, without the navigation (the toctree repeats the titles)."""
    start = html.find('<div class="body"')
    return html[start:] if start >= 0 else html


def entries(page: str) -> list[tuple[str, str, str]]:
    """(chapter heading, entry text, first link) of each list entry, in order."""
    found, heading = [], None
    for m in re.finditer(r"<h2>(.*?)</h2>|<li><p>(.*?)</p></li>", article(page), re.S):
        if m.group(1) is not None:
            heading = re.sub(r"<[^>]+>", "", m.group(1)).rstrip("¶#").strip()
        else:
            href = re.search(r'href="([^"]+)"', m.group(2)).group(1)
            found.append((heading, re.sub(r"<[^>]+>", "", m.group(2)).strip(), href))
    return found


def test_the_small_book_builds_with_one_expected_warning(small_book):
    _, warnings = small_book
    lines = [line for line in warnings.splitlines() if "WARNING" in line]
    assert len(lines) == 1 and "no numbered section #no-such-section in ch1" in lines[0], warnings


def test_the_list_of_theorems(small_book):
    out, _ = small_book
    got = entries((out / "theorems.html").read_text())
    assert [(h, text) for h, text, _ in got] == [
        ("Chapter 1: Chapter one", "Theorem 1.1 (Big result)"),
        ("Chapter 1: Chapter one", "Definition 1.1 (A thing)"),
        ("Chapter 2: Chapter two", "Lemma 2.1 (Small step \\(s\\))"),
    ], got
    assert [href for *_, href in got] == ["ch1.html#thm-big", "ch1.html#def-thing", "ch2.html#lem-small"]
    # A title's formula is typeset: the page loads MathJax, though it had no math when read.
    assert "mathjax" in (out / "theorems.html").read_text().lower()


def test_the_list_of_exercises_links_the_solutions(small_book):
    out, _ = small_book
    page = (out / "exercises.html").read_text()
    got = entries(page)
    assert [text for _, text, _ in got] == ["Exercise 1.1 (Try it) · solution", "Exercise 2.1"], got
    assert [href for *_, href in got] == ["ch1.html#ex-try", "ch2.html#ex-untitled"]
    solution = re.search(r'href="(ch1\.html#[^"]+)"[^>]*>solution<', page).group(1)
    anchor = solution.split("#", 1)[1]
    ch1 = (out / "ch1.html").read_text()
    assert f'id="{anchor}"' in ch1 and "Done." in ch1.split(f'id="{anchor}"', 1)[1][:2000]


def test_the_search_finds_numbered_statements(small_book):
    out, _ = small_book
    text = (out / "searchindex.js").read_text()
    index = json.loads(text[text.index("(") + 1: text.rindex(")")])
    titles = index["alltitles"]
    docs = index["docnames"]
    for title, doc, anchor in [("Theorem 1.1", "ch1", "thm-big"),
                               ("Theorem 1.1 (Big result)", "ch1", "thm-big"),
                               ("Definition 1.1 (A thing)", "ch1", "def-thing"),
                               ("Exercise 1.1 (Try it)", "ch1", "ex-try"),
                               ("Lemma 2.1 (Small step s)", "ch2", "lem-small"),
                               ("Exercise 2.1", "ch2", "ex-untitled")]:
        assert title in titles, (title, sorted(titles))
        assert [[docs.index(doc), anchor]] == titles[title], (title, titles[title])


def test_the_search_titles_are_not_shown(small_book):
    out, _ = small_book
    body = article((out / "ch1.html").read_text())
    # sphinx-proof writes the number once, in the box's title; the search titles add none
    assert body.count("Theorem 1.1") == 1, body
    assert "Exercise 1.1" in body and body.count("Big result") == 1


def test_book_section_links_read_section_numbers(small_book):
    out, _ = small_book
    body = article((out / "ch1.html").read_text())
    assert re.search(r'<a class="reference internal" href="#a-section"[^>]*>Section 1\.1</a>', body), body
    assert re.search(r'<a class="reference internal" href="ch2\.html#second-section"[^>]*>Section 2\.1</a>',
                     body), body


def test_folded_code_says_what_it_folds(small_book):
    out, _ = small_book
    page = article((out / "ch2.html").read_text())
    cells = re.findall(r'<div class="cell (.*?)(?=<div class="cell |\Z)', page, re.S)
    labels = [re.findall(r'admonition-title">([^<]*)</p>', cell) for cell in cells]
    assert labels == [
        ["Show the plotting code", "Hide the plotting code"],
        ["Show the code", "Hide the code"],
        ["Show my thing", "Hide my thing"],
        ["Show the output", "Hide the output"],
        [],
        ["Show the plotting code", "Hide the plotting code"],  # a figure's code, folded untagged
        [],                                                      # unless tagged show-input
    ], labels
    assert "Toggle hidden content" not in page
    assert page.count('<details class="admonition hide') == 5
    assert page.count("book-code-toggle") == 4  # the cell's own label keeps its toggle as it was
    # the folded figure cell keeps its outputs in view: the figure and the printed text
    untagged = next(cell for cell in cells if "plot_untagged" in cell)
    assert untagged.index("</details>") < untagged.index("<img") and "42" in untagged.split("</details>")[1]


def test_numbered_list_rejects_an_unknown_kind(tmp_path):
    (tmp_path / "conf.py").write_text(CONF)
    (tmp_path / "index.md").write_text("# Home\n\n```{numbered-list} figures\n```\n")
    warnings = tmp_path / "warnings.txt"
    subprocess.run([sys.executable, "-m", "sphinx", "-b", "html", "-q", "-w", str(warnings),
                    str(tmp_path), str(tmp_path / "_build")], capture_output=True, text=True, timeout=300)
    assert "numbered-list: expected one of theorems, exercises, not 'figures'" in warnings.read_text()


@pytest.mark.parametrize("classes, parts, image, expected", [
    (["above-input"], ["cell_code_source"], True, "plotting"),
    (["above-input"], ["cell_code_source"], False, "code"),
    (["above-input"], ["cell_code_source", "cell_code_output"], True, "cell"),
    (["above-output"], [], True, "output"),
])
def test_what_a_toggle_folds(classes, parts, image, expected):
    from docutils import nodes

    import code_toggles

    toggle = nodes.container(classes=classes)
    for part in parts:
        toggle += nodes.container(nb_element=part)
    cell = nodes.container(nb_element="cell_code")
    cell += toggle
    if image:
        cell += nodes.image(uri="x.png")
    assert code_toggles.what_it_folds(toggle, cell) == expected
