"""The model of the book in tools/bookkit/core.py: chapters, cells, figures, exercises, numbers.

One place knows what these are; the checks (tools/figure_alt.py, tools/exercise_catalogue.py,
tools/backrefs.py, tests/test_numbering.py, ...) ask it. These tests pin what it answers, on
small planted books and on the book itself.
"""
from __future__ import annotations

import functools
import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from bookkit import core  # noqa: E402  (tools/ is not a package)


@functools.lru_cache(maxsize=None)
def book() -> core.Book:
    return core.Book(ROOT)


class Mine(ValueError):
    pass


# --------------------------------------------------------------------------- chapters and cells


def test_a_chapters_file_number_is_its_number_on_the_site():
    """The standard-library tools read the number from the file name; the site from _toc.yml."""
    chapters = book().chapters()
    assert len(chapters) >= 6
    assert [page.path for page in chapters] == core.chapter_files(ROOT / "chapters")
    for page in chapters:
        assert int(core.chapter_file_number(page.path)) == page.number[0], page.docname
    assert core.chapter_file_number("03_head_count.ipynb") == "03"
    assert core.chapter_file_number("intro.ipynb") is None and core.chapter_file_number("3x.ipynb") is None


def test_a_chapters_title_is_its_first_heading_outside_code_and_directives():
    for page in book().chapters():
        cells = json.loads(page.path.read_text(encoding="utf-8"))["cells"]
        texts = [core.cell_source(c) for c in cells if c["cell_type"] == "markdown"]
        assert core.first_heading(texts) == page.title
    assert core.first_heading(["```python\n# not a title\n```", "## Sub", ":::{note}\n# no\n:::", "# Title"]) == "Title"
    assert core.first_heading(["No heading."]) is None


def test_cells_sources_and_tags():
    assert core.cell_source({"source": ["a\n", "b"]}) == "a\nb"
    cell = nbformat.v4.new_code_cell("x", metadata={"tags": ["remove-cell", "source-only"]})
    assert core.has_tag(cell, "remove-cell") and core.source_only(cell)
    assert not core.has_tag({"metadata": {}}, "remove-cell") and not core.has_tag({}, "remove-cell")


# --------------------------------------------------------------------------- figures


def image_cell(source="plt.plot(x)", images=1):
    cell = nbformat.v4.new_code_cell(source)
    cell.outputs = [nbformat.v4.new_output("display_data", data={"image/png": "iVBOR"}) for _ in range(images)]
    return cell


def test_a_figure_is_a_code_cell_that_shows_or_stores_an_image():
    assert core.draws_figure(nbformat.v4.new_code_cell("plot(x)\nplt.show()"))
    assert core.draws_figure(image_cell())
    assert not core.draws_figure(nbformat.v4.new_code_cell("plt.show_me()"))
    assert not core.draws_figure(nbformat.v4.new_markdown_cell("plt.show()"))
    assert core.image_outputs(image_cell(images=2)) == 2


@pytest.mark.parametrize("markdown, block", [
    ("Text.\n\n**What to notice.** The gap closes. It stays closed.\nStill.\n\nAfter.",
     "The gap closes. It stays closed.\nStill."),
    ("**What to notice.**\n\n- one\n  more\n\n- two\n\nAfter the list.", "- one\n  more\n\n- two"),
])
def test_the_what_to_notice_block_is_a_paragraph_or_a_list(markdown, block):
    assert core.notice_block(markdown) == block


@pytest.mark.parametrize("markdown, message", [
    ("No block here.", "found 0"),
    ("**What to notice.** A.\n\n**What to notice.** B.", "found 2"),
    ("**What to notice.**\n\n", "is empty"),
])
def test_a_missing_twice_or_empty_block_raises_the_callers_error(markdown, message):
    with pytest.raises(Mine, match=message):
        core.notice_block(markdown, "ch.ipynb, figure cell 3", Mine)


def test_a_figures_block_is_in_the_nearest_markdown_cell_above():
    cells = [nbformat.v4.new_markdown_cell("**What to notice.** Far."), nbformat.v4.new_markdown_cell(
        "**What to notice.** Near."), nbformat.v4.new_code_cell("x = 1"), image_cell()]
    assert core.figure_notice(cells, 3) == "Near."
    with pytest.raises(Mine, match="no markdown cell above"):
        core.figure_notice([image_cell()], 0, "ch", Mine)


def test_a_figures_options_need_a_caption_and_a_label():
    cell = image_cell()
    cell.metadata["mystnb"] = {"figure": {"name": "fig-01-a", "caption": "A."}}
    assert core.figure_metadata(cell) == {"name": "fig-01-a", "caption": "A."}
    assert core.figure_options(cell) == ("fig-01-a", "A.")
    del cell.metadata["mystnb"]["figure"]["caption"]
    assert core.figure_options(cell) is None and core.figure_metadata(image_cell()) == {}


# --------------------------------------------------------------------------- exercises


def test_exercise_blocks_give_title_label_options_and_the_checked_mark():
    source = ("Intro.\n\n```{exercise} Build the heads\n:label: ex-build\n:class: c\n\n"
              f"{core.CHECKED_MARK} Write it.\n\n    check_heads(f)\n```\n\n"
              ":::{exercise} Open\n:label: ex-open\nNo fence closes this one")
    first, second = core.exercise_blocks(source)
    assert (first.title, first.label, first.options) == ("Build the heads", "ex-build",
                                                          {"label": "ex-build", "class": "c"})
    assert first.marked_checked and first.text.startswith(core.CHECKED_MARK)
    assert ":label: ex-build" in first.body and "check_heads(f)" in first.body
    assert (second.label, second.marked_checked, second.text) == ("ex-open", False, "No fence closes this one")
    assert core.exercise_blocks("```{exercise-start} Not this\n```") == []


def test_every_exercise_of_the_book_is_read_with_its_label():
    found = [block.label for page in book().chapters()
             for cell in nbformat.read(page.path, as_version=4).cells if cell.cell_type == "markdown"
             for block in core.exercise_blocks(cell.source)]
    assert found == [label for page in book().chapters() for label in page.exercises]


# --------------------------------------------------------------------------- numbers


@pytest.fixture
def small_book(tmp_path):
    """A book of one chapter: two theorems (one without a label), an exercise, a figure."""
    (tmp_path / "_config.yml").write_text("title: T\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nparts:\n  - numbered: true\n"
                                       "    chapters:\n      - file: chapters/01_a\n")
    (tmp_path / "intro.md").write_text("# Intro\n")
    (tmp_path / "chapters").mkdir()
    nb = nbformat.v4.new_notebook()
    figure = image_cell()
    figure.metadata["mystnb"] = {"figure": {"name": "fig-01-a", "caption": "A."}}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# A\n\n## One\n\n```{prf:theorem} First\n:label: thm-a\nT.\n```\n\n"
                                      "```{prf:theorem} Unlabelled\nU.\n```"),
        figure,
        nbformat.v4.new_markdown_cell("```{exercise} E\n:label: ex-a\nDo.\n```\n\n"
                                      "```{prf:theorem} Not numbered\n:nonumber:\n:label: thm-n\nN.\n```"),
    ]
    nbformat.write(nb, tmp_path / "chapters" / "01_a.ipynb")
    return core.Book(tmp_path)


def test_numbered_holds_every_number_the_site_shows_labelled_or_not(small_book):
    page = small_book.pages["chapters/01_a"]
    assert [(t.kind, t.numbered, t.label, t.title) for t in page.numbered] == [
        ("theorem", "1.1", "thm-a", "First"), ("theorem", "1.2", "", "Unlabelled"),
        ("figure", "1.1", "fig-01-a", "A."), ("exercise", "1.1", "ex-a", "E")]
    assert small_book.labels["thm-n"].number is None          # :nonumber: has no number


def test_a_chapter_and_its_targets_by_kind_and_number(small_book):
    assert small_book.chapter(1).docname == "chapters/01_a" and small_book.chapter(2) is None
    assert [t.label for t in small_book.targets("theorem", "chapters/01_a", (1, 1))] == ["thm-a"]
    assert [t.label for t in small_book.targets("section", number=(1, 1))] == []   # no label on "One"
    assert {t.label for t in small_book.targets(docname="chapters/01_a")} == {"thm-a", "thm-n", "fig-01-a", "ex-a"}
    assert book().chapter(3).title == "The head-count theorem"
    assert [t.label for t in book().targets("theorem", "chapters/03_head_count", (3, 1))] == ["thm-head-count"]
