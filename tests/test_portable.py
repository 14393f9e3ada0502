"""Portable notebooks (tools/portable.py): MyST rendered to plain Markdown and LaTeX.

For every chapter, in its reader version (solutions kept, outputs kept) and its
student version (as tools/make_assignments.py writes it): no MyST syntax is left in
the markdown, every cross-reference and citation is resolved, the works cited are
listed, solutions are collapsible in the reader version and absent in the student
one, and code cells and outputs are those of the source. The numbers are compared
with a built site's HTML when one exists (``make test-build`` runs that test after
building; elsewhere it is skipped when no fresh build is there). The committed
notebooks/ must equal a fresh rendering.
"""

from __future__ import annotations

import copy
import os
import re
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import make_assignments  # noqa: E402  (tools/ is not a package)
import portable  # noqa: E402

BOOK = portable.Book(ROOT)
CHAPTERS = [page.path for page in BOOK.chapters()]
by_chapter = pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
by_version = pytest.mark.parametrize("version", ["reader", "student"])

# --------------------------------------------------------------------------- the detector

# Each kind of MyST syntax that must not be left in a portable notebook's markdown.
# ``[ \t>]*`` lets a pattern match inside a quote block too.
LEFTOVER = {
    "directive fence": re.compile(r"^[ \t>]*(`{3,}|~{3,}|:{3,})[ \t]*\{[^}\n]*\}", re.M),
    "role": re.compile(r"\{[A-Za-z][\w:+-]*\}`"),
    "target": re.compile(r"^[ \t>]*\([^()\s]+\)=[ \t]*$", re.M),
    "option line": re.compile(r"^[ \t>]*:[A-Za-z][\w-]*:([ \t]|$)", re.M),
    "gated solution": re.compile(r"\{(solution|exercise)-(start|end)\}"),
    "labelled equation": re.compile(r"\$\$[ \t]*\([^()\s]+\)[ \t]*$", re.M),
    "substitution": re.compile(r"\{\{[^{}\n]*\}\}"),
    # A TeX label: MathJax in a notebook would number or link it on its own terms.
    "tex label": re.compile(r"\\label\{"),
    # An unstarred amsmath environment is numbered (the site may number it, sphinx-style,
    # and JupyterLab's MathJax its own way): the book's numbers come from \tag only.
    "numbered environment": re.compile(r"\\begin\{(?:%s)\}" % "|".join(portable.AMS_ENVIRONMENTS)),
    # Not MyST, but not portable either: jupyterlab-myst shows the math in a <details> as raw TeX.
    "details block": re.compile(r"<(?:details|summary)\b", re.I),
}


def leftovers(text: str) -> list[tuple[str, str]]:
    """``(kind, matched text)`` for every piece of MyST syntax in markdown ``text``."""
    return [(kind, m.group(0)) for kind, pattern in LEFTOVER.items() for m in pattern.finditer(text)]


PLANTED = {
    "directive fence": "Text.\n\n```{prf:theorem} Title\nBody.\n```",
    "role": "As {prf:ref}`thm-x` shows.",
    "target": "(sec-x)=\n## A section",
    "option line": "> **Theorem**\n> :label: thm-x",
    "gated solution": "{solution-start} ex-x",
    "labelled equation": "$$\nx = 1\n$$ (eq-x)",
    "substitution": "The value is {{ value }}.",
    "tex label": "$$ x = 1 \\label{eq-x} $$",
    "numbered environment": "$$\n\\begin{align}\nx &= 1\n\\end{align}\n$$",
    "details block": "<details>\n<summary>Solution</summary>\n\nText.\n\n</details>",
}


@pytest.mark.parametrize("kind", list(PLANTED))
def test_the_detector_finds_each_kind_of_leftover(kind):
    assert kind in {k for k, _ in leftovers(PLANTED[kind])}


def test_the_detector_finds_leftovers_inside_quote_blocks_and_colon_fences():
    assert leftovers("> ```{prf:proof}\n> x\n> ```")
    assert leftovers(":::{note}\nx\n:::")
    assert leftovers("> (lem-x)=")
    assert leftovers("> \\begin{equation} x \\end{equation}")      # bare, outside $$
    assert leftovers("> $$ \\begin{gather} x \\end{gather} $$")    # wrapped in $$
    assert leftovers("\\begin{eqnarray}\nx\n\\end{eqnarray}")


def test_the_detector_passes_plain_markdown_and_latex():
    text = textwrap.dedent("""\
        ## 3.1. The theorem

        > **Theorem 3.1** (Head-count theorem)
        >
        > $$ \\operatorname{span}\\{K_0\\} \\tag{3.1} $$

        A set $\\{x\\}$, code `{}` and `f(x)`, a [link](https://example.org/a.html#thm-x), a time 10:30.

        $$ \\begin{align*} x &= 1 \\end{align*} \\quad \\begin{aligned} y &= 2 \\end{aligned} \\tag{3.2} $$

        A citation [Press *et al.*, 2022] and the details of a proof.

        ```python
        d = {"a": 1}
        ```""")
    assert leftovers(text) == []


# --------------------------------------------------------------------------- the notebooks


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("portable-students")
    make_assignments.make_student_notebooks(ROOT / "chapters", out, verbose=False)
    return out


_READER: dict[Path, object] = {}


def reader(chapter: Path):
    if chapter not in _READER:
        _READER[chapter] = portable.portable_notebook(chapter, BOOK)
    return _READER[chapter]


def rendered(chapter: Path, version: str, student_dir: Path):
    if version == "reader":
        return reader(chapter)
    return nbformat.read(student_dir / chapter.name, as_version=4)


def source_of(chapter: Path, version: str):
    """The MyST notebook that the portable one is rendered from."""
    nb = nbformat.read(chapter, as_version=4)
    if version == "student":
        nb, _ = make_assignments.student_notebook(nb, where=chapter.name,
                                                  numbers=make_assignments.exercise_numbers(BOOK))
    return nb


def markdown(nb) -> list[str]:
    return [c.source for c in nb.cells if c.cell_type == "markdown"]


def without_links(text: str) -> str:
    return re.sub(r"\]\([^)\s]*\)", "]", text)


@by_version
@by_chapter
def test_no_myst_is_left(chapter, version, student_dir):
    nb = rendered(chapter, version, student_dir)
    found = [(i, kind, text) for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
             for kind, text in leftovers(cell.source)]
    assert found == [], f"{chapter.name} ({version}): MyST left in cells {found[:5]}"
    assert leftovers("\n".join(markdown(source_of(chapter, version)))), "the source has MyST to render"


@by_version
@by_chapter
def test_every_display_is_an_unnumbered_equation(chapter, version, student_dir):
    """``$$ \\begin{equation*} ... \\end{equation*} $$``: jupyterlab-myst numbers a bare ``$$``
    display on its own (1, 2, ... next to the site's \\tag); equation* it leaves alone."""
    text = "\n".join(markdown(rendered(chapter, version, student_dir)))
    displays = re.findall(r"\$\$(.+?)\$\$", text, re.S)
    assert len(displays) >= 5
    for body in displays:
        body = re.sub(r"(?m)^[ \t>]*", " ", body)      # quote markers of multi-line displays
        assert re.fullmatch(r"\s*\\begin\{equation\*\}.*\\end\{equation\*\}\s*", body, re.S), body[:120]


@by_version
@by_chapter
def test_every_reference_is_resolved(chapter, version, student_dir):
    source = "\n".join(markdown(source_of(chapter, version)))
    text = without_links("\n".join(markdown(rendered(chapter, version, student_dir))))
    referenced = {m.group(2).split("<")[-1].strip(" >") for m in
                  re.finditer(r"\{(prf:ref|ref|numref|eq)\}`([^`]+)`", source)}
    assert referenced, f"{chapter.name}: no references found in the source"
    for label in sorted(BOOK.labels):
        assert not re.search(rf"(?<![\w-]){re.escape(label)}(?![\w-])", text), \
            f"{chapter.name} ({version}): the label {label} is left in the text"
    links = re.findall(r"\]\((https?://[^)\s]+)\)", "\n".join(markdown(rendered(chapter, version, student_dir))))
    anchors = {url.split("#", 1)[1] for url in links if "#" in url}
    expected = {BOOK.labels[label].anchor for label in referenced}
    assert expected <= anchors, f"{chapter.name}: references without a link: {sorted(expected - anchors)}"
    assert all(url.startswith(BOOK.base_url) for url in links if "#" in url)


def test_links_use_the_repository_address_from_the_configuration(tmp_path):
    assert BOOK.base_url == portable.site_base_url(BOOK.config)
    assert portable.site_base_url({"repository": {"url": "https://github.com/Some-Org/my-book"}}) == \
        "https://some-org.github.io/my-book/"
    assert portable.site_base_url({"repository": {"url": "https://github.com/o/r.git"},
                                   "html": {"baseurl": "https://books.example.org/heads"}}) == \
        "https://books.example.org/heads/"
    assert portable.site_base_url({"repository": {"url": "https://gitlab.com/o/r"}}) is None


def cited_keys(source: str) -> list[str]:
    keys = []
    for m in re.finditer(r"\{cite(?::\w+)?\}`([^`]+)`", source):
        keys += [k.strip() for k in m.group(1).split(",") if k.strip() not in keys]
    return list(dict.fromkeys(keys))


def first_author_and_year(key: str) -> tuple[str, str]:
    entry = BOOK.bibliography()[key]
    person = (entry.persons.get("author") or entry.persons.get("editor"))[0]
    last = portable._latex_text(" ".join(person.prelast_names + person.last_names))
    return last, entry.fields["year"]


@by_version
@by_chapter
def test_every_citation_is_resolved_and_listed(chapter, version, student_dir):
    keys = cited_keys("\n".join(markdown(source_of(chapter, version))))
    assert keys, f"{chapter.name}: no citations in the source"
    nb = rendered(chapter, version, student_dir)
    listing = nb.cells[-1].source
    assert nb.cells[-1].cell_type == "markdown" and "- **" in listing
    items = [line for line in listing.split("\n") if line.startswith("- ")]
    assert len(items) == len(keys), f"{chapter.name}: {len(items)} works listed, {len(keys)} cited"
    body = "\n".join(markdown(nb)[:-1])
    for key in keys:
        last, year = first_author_and_year(key)
        assert any(last in item and year in item for item in items), f"{key} is not in the list"
        # "[Press et al., 2022]", "[Gu et al., 2022, Press et al., 2022]" or "Press et al. [2022]"
        assert re.search(rf"{re.escape(last)}[^\[\]()\n]*?(?:, | \[){year}(?:\]|, )", body), \
            f"{key} is not cited in the text"


def heading_levels(cell) -> list[int]:
    """The levels of a markdown cell's headings (what JupyterLab folds by), none for code."""
    if cell.cell_type != "markdown":
        return []
    return portable._heading_levels(cell.source)


def folded_cells(nb) -> dict[int, list[int]]:
    """``{index of a folded heading cell: indices of the cells it hides}``, as JupyterLab 4 does.

    A markdown cell with ``jp-MarkdownHeadingCollapsed`` hides the cells after it up to
    the next cell whose highest heading is of the same level or higher (a lower number).
    """
    folds = {}
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown" and cell.metadata.get(portable.COLLAPSED):
            level = min(heading_levels(cell))
            j = i + 1
            while j < len(nb.cells) and not any(h <= level for h in heading_levels(nb.cells[j])):
                j += 1
            folds[i] = list(range(i + 1, j))
    return folds


def solution_openings(chapter: Path) -> list[str]:
    """The first words of each solution's text as rendered (a solution that opens with code: its code)."""
    renderer = portable.Renderer(BOOK, BOOK.docname_of(chapter))
    openings, cells = [], nbformat.read(chapter, as_version=4).cells
    for k, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        if re.match(r"\s*(?:`{3,}|:{3,})\{solution-start\}", cell.source):
            body = re.sub(r"\A\s*(`{3,}|:{3,})\{solution-start\}.*?^ {0,3}\1\s*$", "", cell.source,
                          count=1, flags=re.M | re.S)
            if not body.strip():
                nxt = cells[k + 1]
                body = nxt.source if nxt.cell_type == "markdown" else ""
            if body.strip():
                openings.append(body)
            else:
                openings.append("")
        for m in re.finditer(r"^ {0,3}(`{3,}|:{3,})\{solution\}[^\n]*\n(?::[\w-]+:[^\n]*\n)*\s*(?P<body>.*?)^ {0,3}\1\s*$",
                             cell.source, re.M | re.S):
            openings.append(m.group("body"))
    words = []
    for body in openings:
        text = " ".join(renderer.render(body).split()) if body.strip() else ""
        words.append(text[:50])
    return [w for w in words if w]


def gated_code(chapter: Path) -> list[str]:
    """The code cells of the chapter's gated solutions, in order."""
    code, inside = [], False
    for cell in nbformat.read(chapter, as_version=4).cells:
        if cell.cell_type == "markdown" and re.match(r"\s*(?:`{3,}|:{3,})\{solution-start\}", cell.source):
            inside = True
        elif cell.cell_type == "markdown" and re.match(r"\s*(?:`{3,}|:{3,})\{solution-end\}", cell.source):
            inside = False
        elif inside and cell.cell_type == "code":
            code.append(cell.source)
    return code


@by_chapter
def test_solutions_start_folded_under_a_heading_below_their_exercise(chapter, student_dir):
    exercises = BOOK.pages[BOOK.docname_of(chapter)].exercises
    numbers = [BOOK.labels[label].numbered for label in exercises]
    nb = reader(chapter)
    cells = nb.cells
    text = "\n".join(markdown(nb))
    assert "<details" not in text and "<summary" not in text
    folds = folded_cells(nb)
    # One folded heading per exercise, "Solution to Exercise N", one level below the
    # exercise's heading, which is one level below the section's ("## N.10. Exercises").
    solutions = {}
    for i in folds:
        m = re.match(r"^(#+) Solution to Exercise (\d+\.\d+)$", cells[i].source.split("\n", 1)[0])
        assert m, f"{chapter.name}: folded cell {i} is not a solution heading: {cells[i].source[:60]!r}"
        solutions[m.group(2)] = (i, len(m.group(1)))
    assert sorted(solutions) == sorted(numbers) and len(folds) == len(numbers)
    for number, (i, level) in solutions.items():
        exercise = [k for k in range(i) if re.search(rf"^{'#' * (level - 1)} Exercise {re.escape(number)} \(",
                                                     cells[k].get("source", ""), re.M)
                    and cells[k].cell_type == "markdown"]
        assert exercise, f"{chapter.name}: no heading of level {level - 1} for Exercise {number}"
        between = cells[exercise[-1] + 1:i]
        assert not any(heading_levels(c) for c in between), f"Exercise {number}: a heading before its solution"
        # Colab's folded sections name the same cells (by metadata.id).
        assert cells[i].metadata["id"] == cells[i].id
    assert nb.metadata["colab"]["collapsed_sections"] == [cells[i].id for i in sorted(folds)]
    # A heading's cell holds only the heading: JupyterLab folds the cells after it, and
    # would show any text in the heading's own cell.
    assert all("\n" not in cells[i].source.strip() for i in folds)
    # What the folds hide is exactly the solutions: their text and the gated code.
    hidden = [cells[j] for js in folds.values() for j in js]
    assert [c.source for c in hidden if c.cell_type == "code"] == gated_code(chapter)
    assert all(not heading_levels(c) for c in hidden)
    visible = " ".join(" ".join(c.source.split()) for j, c in enumerate(cells)
                       if c.cell_type == "markdown" and not any(j in js for js in folds.values()))
    hidden_text = " ".join(" ".join(c.source.split()) for c in hidden if c.cell_type == "markdown")
    openings = solution_openings(chapter)
    assert len(openings) == len(numbers)
    for opening in openings:
        assert opening in hidden_text and opening not in visible, f"{chapter.name}: not folded: {opening!r}"
    # The site's exercise section keeps its number; the exercises have no section numbers.
    assert re.search(r"^## \d+\.\d+\. Exercises$", text, re.M)
    student = rendered(chapter, "student", student_dir)
    stext = "\n".join(markdown(student))
    assert "Solution to Exercise" not in stext and folded_cells(student) == {}
    assert "colab" not in student.metadata
    for number in numbers:
        assert re.search(rf"^### Exercise {re.escape(number)} \(", stext, re.M)


@by_version
@by_chapter
def test_code_cells_and_outputs_are_the_sources(chapter, version, student_dir):
    source = source_of(chapter, version)
    nb = rendered(chapter, version, student_dir)
    code = [c for c in source.cells if c.cell_type == "code"]
    assert [c for c in nb.cells if c.cell_type == "code"] == code
    assert nb.cells[0] == source.cells[0] and "remove-cell" in nb.cells[0].metadata["tags"]
    assert "SSMHEADS_SOURCE" in nb.cells[0].source, "the set-up cell must stay the first cell"
    assert nb.metadata["kernelspec"] == source.metadata["kernelspec"]
    nbformat.validate(nb)


@by_chapter
def test_the_title_cell_says_where_the_chapter_is_on_the_site(chapter):
    page = BOOK.pages[BOOK.docname_of(chapter)]
    title = next(c.source for c in reader(chapter).cells if c.cell_type == "markdown")
    assert title.startswith(f"# {page.number[0]}. {page.title}")
    assert f"({BOOK.base_url}{page.docname}.html)" in title


# --------------------------------------------------------------------------- notebooks/ and downloads


def test_committed_notebooks_are_a_fresh_rendering():
    problems = portable.stale(ROOT / "notebooks", BOOK)
    assert problems == [], "notebooks/ is stale, run make portable: " + "; ".join(problems)


def test_stale_notebooks_are_detected(tmp_path):
    portable.write_all(tmp_path, BOOK)
    assert portable.stale(tmp_path, BOOK) == []
    first = tmp_path / CHAPTERS[0].name
    first.write_text(first.read_text().replace("**Theorem", "**Theorem ", 1))
    (tmp_path / "99_extra.ipynb").write_text("{}")
    problems = portable.stale(tmp_path, BOOK)
    assert len(problems) == 2 and CHAPTERS[0].name in problems[0] and "99_extra" in problems[1]


def test_the_student_download_is_the_student_notebook(student_dir):
    # What book/_ext/portable_downloads.py writes for the students' site, from the
    # staged chapters (solutions stripped, outputs kept) ...
    for chapter in CHAPTERS:
        staged, _ = make_assignments.strip_solutions(nbformat.read(chapter, as_version=4))
        download = portable.student_version(staged, BOOK.docname_of(chapter), BOOK)
        # ... is what make assignments writes.
        assert portable.notebook_text(download) == (student_dir / chapter.name).read_text()


def test_one_chapter_can_be_written_to_a_given_path(tmp_path):
    target = tmp_path / "sub" / "ch.ipynb"
    assert portable.main([str(CHAPTERS[-1]), "-o", str(target)]) == 0
    assert target.read_text() == portable.notebook_text(reader(CHAPTERS[-1]))


def test_the_build_check_reports_a_number_that_differs_from_sphinx():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        import portable_downloads
    finally:
        sys.path.pop(0)
    figures, sections = {}, {}
    for t in BOOK.labels.values():
        if t.number and t.kind not in ("section", "target", "solution"):
            kind = "displaymath" if t.kind == "equation" else t.kind
            figures.setdefault(t.docname, {}).setdefault(kind, {})[t.anchor] = t.number
    for page in BOOK.chapters():
        sections[page.docname] = {f"#s{i}": n for i, (_, n, _) in enumerate(page.sections) if n}
    env = SimpleNamespace(toc_fignumbers=figures, toc_secnumbers=sections)
    assert portable_downloads.number_differences(BOOK, env) == []
    broken = copy.deepcopy(env)
    label = BOOK.pages[BOOK.docname_of(CHAPTERS[2])].exercises[0]
    docname = BOOK.labels[label].docname
    broken.toc_fignumbers[docname]["exercise"][label] = (3, 9)
    broken.toc_fignumbers[docname].setdefault("figure", {})["fig-x"] = (3, 1)
    problems = portable_downloads.number_differences(BOOK, broken)
    assert len(problems) == 2 and label in problems[0] and "fig-x" in problems[1]


# --------------------------------------------------------------------------- the renderer on every construct


CONFIG = """\
title: "A book"
repository:
  url: https://github.com/org/repo
bibtex_bibfiles: [refs.bib]
"""
TOC = """\
format: jb-book
root: intro
parts:
  - caption: Chapters
    numbered: true
    chapters:
      - file: ch/01_a
      - file: ch/02_b
"""
BIB = """\
@article{one2020, author = {One, Ann and Two, Bob and Three, Cy}, title = {A title},
  journal = {J}, year = {2020}}
@book{solo1999, author = {van Solo, Han}, title = {Alone}, publisher = {P}, year = {1999}}
"""
CHAPTER_B = [
    "# Chapter B\n\n(sec-first)=\n## First section\n\nSee {doc}`01_a` and {doc}`Home <../intro>`.",
    "```{prf:lemma} Small\n:label: lem-small\n\nIt holds.\n```\n\n```{prf:proof}\nTrivial.\n```",
    "```{prf:theorem} Big\n:label: thm-big\n\nBy {prf:ref}`lem-small`, {ref}`sec-first` and "
    "{numref}`Section %s <sec-first>`,\n\n$$\na = b\n$$ (eq-ab)\n\nand {eq}`eq-ab`. As {cite:t}`one2020` "
    "show (and schemes such as ALiBi {cite}`solo1999`),\n```",
    "```{prf:remark}\n:label: rem-x\n:nonumber:\n\nA remark.\n```\n\n"
    "````{admonition} Careful\n:class: warning\n\nNested {math}`x^2`:\n\n```{note}\nInner.\n```\n````\n\n"
    "```{admonition} Live only\n:class: tip site-only\n\nThis needs a live kernel.\n```",
    ":::{dropdown} More\nHidden {cite}`zed2001,solo1999,one2020`.\n:::\n\n"
    "\\begin{align*}\nx &= 1\\\\\ny &= 2\n\\end{align*}\n\n```{math}\n:label: eq-m\nc = d\n```",
    "## Exercises\n\n````{exercise} Do it\n:label: ex-do\n\nCompute $x +\ny$ now.\n\n    check(x)\n````\n\n"
    "````{solution} ex-do\n:class: dropdown\n\nUse {prf:ref}`thm-big`.\n\n```python\nx = 1\n```\n````",
    "```{exercise} Gated\n:label: ex-gated\n\nRun it.\n```",
    "```{solution-start} ex-gated\n:class: dropdown\n```\nThe code:",
    None,  # a code cell
    "```{solution-end}\n```",
]
BIB_ZED = "@article{zed2001, author = {Zed, Zoe and Ab, Al}, title = {Z}, journal = {J}, year = {2001}}\n"


def small_book(tmp_path: Path, chapter_b: list | None = None) -> Path:
    (tmp_path / "_config.yml").write_text(CONFIG)
    (tmp_path / "_toc.yml").write_text(TOC)
    (tmp_path / "refs.bib").write_text(BIB + BIB_ZED)
    (tmp_path / "intro.md").write_text("# Home\n\nWelcome.\n")
    (tmp_path / "ch").mkdir(exist_ok=True)
    a = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(
        "# Chapter A\n\n```{prf:lemma} First\n:label: lem-a\n\nA.\n```\n\n$$ x $$ (eq-a)")])
    nbformat.write(a, tmp_path / "ch" / "01_a.ipynb")
    cells = [nbformat.v4.new_code_cell("answer = 42", outputs=[nbformat.v4.new_output(
        "stream", name="stdout", text="42\n")]) if s is None else nbformat.v4.new_markdown_cell(s)
        for s in (CHAPTER_B if chapter_b is None else chapter_b)]
    b = nbformat.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nbformat.write(b, tmp_path / "ch" / "02_b.ipynb")
    return tmp_path


def test_the_renderer_on_every_construct(tmp_path):
    book = portable.Book(small_book(tmp_path))
    assert book.base_url == "https://org.github.io/repo/"
    assert book.labels["lem-small"].number == (2, 1) and book.labels["thm-big"].number == (2, 1)
    assert book.labels["eq-ab"].number == (2, 1) and book.labels["eq-m"].number == (2, 2)
    assert book.labels["ex-gated"].number == (2, 2) and book.labels["sec-first"].number == (2, 1)
    nb = portable.portable_notebook(tmp_path / "ch" / "02_b.ipynb", book)
    text = "\n\n".join(markdown(nb))
    assert leftovers(text) == [], leftovers(text)
    url = "https://org.github.io/repo/ch/02_b.html"
    for expected in [
        "# 2. Chapter B", "## 2.1. First section",
        "[Chapter A](https://org.github.io/repo/ch/01_a.html)", "[Home](https://org.github.io/repo/intro.html)",
        "> **Lemma 2.1** (Small)\n>\n> It holds.", "*Proof.* Trivial. ∎",
        "> **Theorem 2.1** (Big)", f"[Lemma 2.1]({url}#lem-small)", f"[First section]({url}#sec-first)",
        f"[Section 2.1]({url}#sec-first)", "> $$ \\begin{equation*} a = b \\tag{2.1} \\end{equation*} $$", f"[(2.1)]({url}#equation-eq-ab)",
        # Citations as the site's author_year style prints them: {cite:t} "Names [year]",
        # {cite} in square brackets (so no doubled parentheses), several works in the
        # bibliography's order (pybtex plain: by author), separated by commas.
        "As One *et al.* [2020] show (and schemes such as ALiBi [van Solo, 1999]),",
        "> **Remark**\n>\n> A remark.",
        "> **Careful**", "Nested $x^2$:", "> > **Note**\n> >\n> > Inner.",
        "> **More**\n>\n> Hidden [One *et al.*, 2020, van Solo, 1999, Zed and Ab, 2001].",
        "$$\n\\begin{equation*}\n\\begin{aligned}\nx &= 1\\\\\ny &= 2\n\\end{aligned}\n\\end{equation*}\n$$",
        "$$\n\\begin{equation*}\nc = d\n\\tag{2.2}\n\\end{equation*}\n$$",
        "## 2.2. Exercises\n\n### Exercise 2.1 (Do it)\n\nCompute $x +\ny$ now.\n\n    check(x)",
        "#### Solution to Exercise 2.1\n\nUse [Theorem 2.1]", "```python\nx = 1\n```",
        "### Exercise 2.2 (Gated)\n\nRun it.", "#### Solution to Exercise 2.2\n\nThe code:",
        "- **[One *et al.*, 2020]** Ann One, Bob Two, and Cy Three. A title. *J*, 2020.",
        "- **[van Solo, 1999]** Han van Solo. *Alone*. P, 1999.",
    ]:
        assert expected in text, f"missing:\n{expected}\n--- in ---\n{text}"
    assert "live kernel" not in text and "Live only" not in text      # a site-only admonition
    assert "End of the solution" not in text
    # The references list is in the site's order too.
    refs = nb.cells[-1].source
    assert refs.index("[One") < refs.index("[van Solo") < refs.index("[Zed")
    # Each solution is a markdown cell of its own, folded, and what it folds is the solution.
    cells = nb.cells
    folds = folded_cells(nb)
    heads = {i: cells[i].source.split("\n", 1)[0] for i in folds}
    assert list(heads.values()) == ["#### Solution to Exercise 2.1", "#### Solution to Exercise 2.2"]
    first, second = sorted(folds)
    # The heading alone in its cell (JupyterLab folds the cells after it, not the rest of its cell).
    assert all(cells[i].source == heads[i] for i in folds)
    assert [cells[j].source for j in folds[first]] == ["Use [Theorem 2.1](https://org.github.io/repo/ch/02_b.html"
                                                      "#thm-big).\n\n```python\nx = 1\n```"]
    assert cells[first - 1].source.startswith("## 2.2. Exercises")
    assert cells[first].id == cells[first - 1].id + "-1" and cells[first].metadata["id"] == cells[first].id
    assert [cells[j].source for j in folds[second]] == ["The code:", "answer = 42"]
    assert nb.metadata["colab"] == {"collapsed_sections": [cells[first].id, cells[second].id]}
    assert cells[second + 3].id == "portable-references" and len(cells) == second + 4
    assert [c.source for c in nb.cells if c.cell_type == "code"] == ["answer = 42"]
    # The student version: no solutions, each exercise followed by its code cell.
    source = nbformat.read(tmp_path / "ch" / "02_b.ipynb", as_version=4)
    student, _ = make_assignments.student_notebook(source, numbers=make_assignments.exercise_numbers(book))
    s = portable.render_notebook(student, "ch/02_b", book, "student")[0]
    stext = "\n".join(markdown(s))
    assert "Solution" not in stext and "> **More**" in stext and "### Exercise 2.2 (Gated)" in stext
    assert [c.source for c in s.cells if c.cell_type == "code"] == [
        "check(x)", "# Exercise 2.2: your work (not auto-checked)\n"]
    assert folded_cells(s) == {} and "colab" not in s.metadata
    # A student rendering drops any solution still in the notebook, gated ones with their code.
    s = portable.render_notebook(source, "ch/02_b", book, "student")[0]
    assert "Solution" not in "\n".join(markdown(s)) and "### Exercise 2.2" in "\n".join(markdown(s))
    assert [c.source for c in s.cells if c.cell_type == "code"] == []


def test_what_follows_a_solution_must_end_its_fold(tmp_path):
    # Text after a solution, with no heading, would be hidden in the solution's fold.
    after_gated = CHAPTER_B + ["Some closing words."]
    book = portable.Book(small_book(tmp_path, after_gated))
    with pytest.raises(portable.PortableError, match="would be folded into it"):
        portable.portable_notebook(tmp_path / "ch" / "02_b.ipynb", book)
    after_directive = CHAPTER_B[:5] + [CHAPTER_B[5] + "\n\nMore text in the cell."]
    book = portable.Book(small_book(tmp_path, after_directive))
    with pytest.raises(portable.PortableError, match="would be folded into it"):
        portable.portable_notebook(tmp_path / "ch" / "02_b.ipynb", book)
    # A heading of the solution's level or higher ends the fold.
    fine = CHAPTER_B + ["## Summary\n\nSome closing words."]
    book = portable.Book(small_book(tmp_path, fine))
    nb = portable.portable_notebook(tmp_path / "ch" / "02_b.ipynb", book)
    assert folded_cells(nb)[max(folded_cells(nb))] == [len(nb.cells) - 4, len(nb.cells) - 3]  # text, code
    # A heading inside a gated solution would end its fold early.
    inside = CHAPTER_B[:-1] + ["### Details", CHAPTER_B[-1]]
    book = portable.Book(small_book(tmp_path, inside))
    with pytest.raises(portable.PortableError, match="would end its fold"):
        portable.portable_notebook(tmp_path / "ch" / "02_b.ipynb", book)


def test_a_citation_followed_by_a_parenthesis_is_an_error(tmp_path):
    book = portable.Book(small_book(tmp_path))
    renderer = portable.Renderer(book, "ch/02_b")
    with pytest.raises(portable.PortableError, match="Markdown link"):
        renderer.render("As shown {cite}`one2020`(in part).")
    assert renderer.render("As shown {cite}`one2020` (in part).") == "As shown [One *et al.*, 2020] (in part)."
    assert renderer.render("{cite:ts}`one2020` and {cite:p}`solo1999,one2020`") == \
        "One, Two, and Three [2020] and [One *et al.*, 2020, van Solo, 1999]"


def figure_cell(label: str, caption: str, image: bool = True):
    cell = nbformat.v4.new_code_cell("plt.plot([1, 2])\nplt.show()", outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": "iVBORw0KGgo=", "text/plain": "<Figure>"})] if image else [])
    cell.metadata["mystnb"] = {"figure": {"caption": caption, "name": label}, "image": {"alt": "alt"}}
    return cell


def test_figures_are_numbered_and_captioned_under_their_cell(tmp_path):
    root = small_book(tmp_path)
    path = root / "ch" / "02_b.ipynb"
    nb = nbformat.read(path, as_version=4)
    nb.cells[1:1] = [nbformat.v4.new_markdown_cell("**What to notice.** Rising. See {numref}`fig-02-rise` "
                                                   "and {ref}`fig-02-fall`."),
                     figure_cell("fig-02-rise", "The line rises like $x^2$."),
                     figure_cell("fig-02-fall", "The line falls.")]
    nbformat.write(nb, path)
    book = portable.Book(root)
    assert book.labels["fig-02-rise"].number == (2, 1) and book.labels["fig-02-fall"].number == (2, 2)
    assert book.labels["fig-02-rise"].kind == "figure" and book.labels["fig-02-rise"].anchor == "fig-02-rise"
    out = portable.portable_notebook(path, book)
    sources = [c.source for c in out.cells]
    k = next(i for i, c in enumerate(out.cells) if c.cell_type == "code" and "plt.show()" in c.source)
    assert sources[k + 1] == "**Figure 2.1.** The line rises like $x^2$."
    assert sources[k + 3] == "**Figure 2.2.** The line falls."
    assert out.cells[k + 1].id == out.cells[k].id + "-caption"
    url = "https://org.github.io/repo/ch/02_b.html"
    assert f"See [Figure 2.1]({url}#fig-02-rise) and [The line falls.]({url}#fig-02-fall)." in sources[k - 1]
    # the code cells and their outputs are the source's
    assert [c for c in out.cells if c.cell_type == "code"][:2] == [nb.cells[2], nb.cells[3]]
    # a student version (outputs cleared) keeps the captions and the numbers
    student = portable.portable_notebook(path, book, kind="student")
    assert "**Figure 2.2.** The line falls." in [c.source for c in student.cells]
    # a cell with figure options but no image is no figure: Sphinx numbers none (book_figures.py)
    nb.cells[2].outputs = []
    nbformat.write(nb, path)
    book = portable.Book(root)
    assert "fig-02-rise" not in book.labels and book.labels["fig-02-fall"].number == (2, 1)


def test_works_that_read_alike_name_all_their_authors(tmp_path):
    """Two works whose short labels would be the same ("Gu et al., 2022") are told apart."""
    root = small_book(tmp_path)
    (root / "refs.bib").write_text(BIB + BIB_ZED + "@article{one2020b, author = {One, Ann and Four, Di "
                                   "and Five, Ed}, title = {B title}, journal = {J}, year = {2020}}\n")
    book = portable.Book(root)
    renderer = portable.Renderer(book, "ch/02_b")
    renderer.render("{cite}`one2020` and {cite}`one2020b`, {cite}`solo1999`")
    refs = renderer.references_cell()
    assert "- **[One, Two, and Three, 2020]** Ann One" in refs
    assert "- **[One, Four, and Five, 2020]** Ann One" in refs
    assert "- **[van Solo, 1999]**" in refs and "*et al.*" not in refs


def test_unknown_syntax_and_labels_are_errors(tmp_path):
    book = portable.Book(small_book(tmp_path))
    renderer = portable.Renderer(book, "ch/02_b")
    with pytest.raises(portable.PortableError, match="unknown label"):
        renderer.render("See {prf:ref}`thm-missing`.")
    with pytest.raises(portable.PortableError, match="not supported"):
        renderer.render("```{glossary}\nx\n```")
    with pytest.raises(portable.PortableError, match="not supported"):
        renderer.render("{sub-ref}`x`")
    with pytest.raises(portable.PortableError, match="not in the bibliography"):
        renderer.render("{cite}`nobody2000`")


# --------------------------------------------------------------------------- against the built site


def built_site(*inputs: Path, built: str = "{docname}.html") -> Path:
    """The built HTML to compare with, or skip (fail when PORTABLE_REQUIRE_SITE is set).

    The site's files ``built`` (one per chapter) must be newer than the chapters, _toc.yml
    and ``inputs`` (Sphinx rewrites a page only when its source changed, and the
    extension rewrites every ``_sources/<docname>.ipynb`` on each build).
    """
    html = Path(os.environ.get("PORTABLE_SITE_HTML", ROOT / "_build" / "html"))
    required = os.environ.get("PORTABLE_REQUIRE_SITE")
    pages = [html / built.format(docname=page.docname) for page in BOOK.chapters()]
    reason = None
    if not all(p.exists() for p in pages):
        reason = f"no built site in {html} (make book builds one)"
    else:
        # each page against its own chapter (Sphinx rewrites only the pages whose source
        # changed) and the inputs every page depends on
        common = max(p.stat().st_mtime for p in [ROOT / "_toc.yml", *inputs])
        if any(built_page.stat().st_mtime < max(page.path.stat().st_mtime, common)
               for built_page, page in zip(pages, BOOK.chapters())):
            reason = f"the site in {html} is older than the chapters (make book rebuilds it)"
    if reason:
        if required:
            pytest.fail(reason)
        pytest.skip(reason)
    return html


def site_numbers(html_file: Path) -> tuple[dict[str, str], list[str]]:
    """``{anchor: number shown}`` for the boxes and equations of a page, and its section numbers in order."""
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(html_file.read_text(), "html.parser")
    numbers = {}
    for box in soup.select("div.admonition[id]"):
        caption = box.select_one(".admonition-title .caption-number")
        if caption is not None:
            numbers[box["id"]] = " ".join(caption.get_text().split())
    for eq in soup.select("div.math[id]"):
        eqno = eq.select_one(".eqno")
        if eqno is not None:
            numbers[eq["id"]] = eqno.get_text().replace("#", "").strip()
    for figure in soup.select("main figure[id]"):
        caption = figure.select_one("figcaption .caption-number")
        if caption is not None:
            numbers[figure["id"]] = " ".join(caption.get_text().split())
    sections = [s.get_text().strip().rstrip(".") for h in soup.select("main h2, main h3, main h4")
                for s in h.select("span.section-number")]
    return numbers, sections


@by_chapter
def test_numbers_match_the_built_site(chapter):
    html = built_site()
    docname = BOOK.docname_of(chapter)
    page = BOOK.pages[docname]
    numbers, sections = site_numbers(html / (docname + ".html"))
    ours = {}
    for t in BOOK.labels.values():
        if t.docname != docname or not t.number or t.kind in ("section", "target", "solution"):
            continue
        ours[t.anchor] = f"({t.numbered})" if t.kind == "equation" else f"{t.kind.capitalize()} {t.numbered}"
    assert ours and ours == numbers
    assert [".".join(map(str, n)) for level, n, _ in page.sections if level > 1] == sections
    # And the portable notebook shows those numbers.
    text = "\n".join(markdown(reader(chapter)))
    for anchor, shown in ours.items():
        if shown.startswith("("):
            assert f"\\tag{{{shown[1:-1]}}}" in text
        elif shown.startswith("Exercise"):
            assert re.search(rf"^#+ {re.escape(shown)} \(", text, re.M), shown
        elif shown.startswith("Figure"):
            assert re.search(rf"^\*\*{re.escape(shown)}\.\*\* ", text, re.M), shown
        else:
            assert f"**{shown}**" in text


@by_chapter
def test_links_point_to_anchors_of_the_built_site(chapter):
    html = built_site()
    text = "\n".join(markdown(reader(chapter)))
    for url in sorted(set(re.findall(r"\]\((https?://[^)\s]+)\)", text))):
        if not url.startswith(BOOK.base_url):
            continue
        path, _, anchor = url[len(BOOK.base_url):].partition("#")
        page = html / path
        assert page.exists(), f"{chapter.name}: {url} is not a page of the site"
        if anchor:
            assert f'id="{anchor}"' in page.read_text(), f"{chapter.name}: no anchor #{anchor} in {path}"


@by_chapter
def test_the_built_site_download_button_gives_the_portable_notebook(chapter):
    html = built_site(ROOT / "tools" / "portable.py", ROOT / "tools" / "bookkit" / "core.py",
                      ROOT / "book" / "_ext" / "portable_downloads.py", built="_sources/{docname}.ipynb")
    docname = BOOK.docname_of(chapter)
    page = (html / (docname + ".html")).read_text()
    link = f"_sources/{docname}.ipynb"
    assert re.search(rf'href="(\.\./)*{re.escape(link)}"', page), f"no download link to {link}"
    assert (html / link).read_text() == portable.notebook_text(reader(chapter))


def cite_roles(chapter: Path) -> list[tuple[str, str]]:
    """``(role, keys)`` of every citation in a chapter's markdown, in document order."""
    return re.findall(r"\{(cite(?::\w+)?)\}`([^`]+)`", "\n".join(markdown(nbformat.read(chapter, as_version=4))))


@by_chapter
def test_citations_read_as_on_the_built_site(chapter):
    html = built_site(ROOT / "tools" / "portable.py", ROOT / "tools" / "bookkit" / "core.py")
    from bs4 import BeautifulSoup

    soup = BeautifulSoup((html / (BOOK.docname_of(chapter) + ".html")).read_text(), "html.parser")
    site = [" ".join(span.get_text().split()) for span in soup.select("main span.bibtex-citation")]
    renderer = portable.Renderer(BOOK, BOOK.docname_of(chapter))
    ours = [renderer.cite(role, keys).replace("*", "") for role, keys in cite_roles(chapter)]
    assert ours and ours == site


def test_the_built_site_offers_no_myst_notebook_for_other_pages():
    """The guide for instructors is a MyST notebook: no .ipynb in its download menu, no file."""
    html = built_site()
    page = html / "book" / "instructors.html"
    if page.stat().st_mtime < (ROOT / "book" / "_ext" / "portable_downloads.py").stat().st_mtime:
        pytest.skip("book/instructors.html is older than book/_ext/portable_downloads.py")
    text = page.read_text()
    assert "_sources/book/instructors.md" in text          # its source download stays
    assert "instructors.ipynb" not in text and "download-notebook-button" not in text
    assert not (html / "_sources" / "book" / "instructors.ipynb").exists()
    docname = BOOK.chapters()[0].docname
    chapter = (html / (docname + ".html")).read_text()
    assert f"_sources/{docname}.ipynb" in chapter            # a chapter's download stays


def test_the_notebook_download_is_removed_from_other_pages_only():
    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    try:
        import portable_downloads
    finally:
        sys.path.pop(0)

    def buttons():
        return [{"label": "download-buttons", "buttons": [
            {"label": "download-notebook-button", "url": "../_sources/p.ipynb"},
            {"label": "download-source-button", "url": "../_sources/p.md"}]},
            {"label": "fullscreen-button"}]

    chapters = {page.docname for page in BOOK.chapters()}
    kept = buttons()
    assert portable_downloads.drop_notebook_download(kept, BOOK.chapters()[0].docname, chapters) is None
    assert kept == buttons()
    other = buttons()
    assert portable_downloads.drop_notebook_download(other, "book/instructors", chapters) == "../_sources/p.ipynb"
    assert [b["label"] for b in other[0]["buttons"]] == ["download-source-button"] and other[1:] == buttons()[1:]


def test_links_can_point_to_another_site(tmp_path):
    other = portable.Book(ROOT, base_url="https://students.example.org/heads")
    assert other.base_url == "https://students.example.org/heads/"
    nb = portable.portable_notebook(CHAPTERS[1], other)
    links = re.findall(r"\]\((https?://[^)\s]+)\)", "\n".join(markdown(nb)))
    assert links and not any(url.startswith(BOOK.base_url) for url in links)
    assert sum(url.startswith(other.base_url) for url in links) > 10


def site_only_blocks(chapter: Path) -> list[str]:
    """The first body line of each admonition with class site-only in a chapter."""
    found = []
    for text in markdown(nbformat.read(chapter, as_version=4)):
        for m in re.finditer(r"^ {0,3}(`{3,}|:{3,})\{[\w:-]+\}.*\n(?::[\w-]+:.*\n)*?:class:[^\n]*\bsite-only\b[^\n]*\n"
                             r"(?::[\w-]+:.*\n)*\s*(?P<first>[^\n]+)", text, re.M):
            found.append(m.group("first").strip())
    return found


@by_version
@by_chapter
def test_site_only_admonitions_are_left_out(chapter, version, student_dir):
    blocks = site_only_blocks(chapter)
    assert blocks, f"{chapter.name}: no site-only admonition (the explorer's 'needs a live kernel' note)"
    text = " ".join("\n".join(markdown(rendered(chapter, version, student_dir))).split())
    for first in blocks:
        words = " ".join(portable.Renderer(BOOK, BOOK.docname_of(chapter)).inline(first).split())
        assert words[:40] not in text, f"{chapter.name} ({version}): site-only text left: {first}"
