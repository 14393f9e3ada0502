"""The core of the book's tooling: one model of the book, read from its sources once.

What every product (portable notebooks, student notebooks and site, Otter assignments,
the PDF, the Sphinx extensions' checks) needs to know about the book lives here, and
nothing here knows about the products:

* the MyST of a markdown cell, split into blocks (:func:`parse`: directives with their
  options and bodies, code, display math, targets, text), and the directive blocks of a
  cell by line (:func:`directive_blocks`);
* the book (:class:`Book`): its pages from _toc.yml, chapter numbers, titles, sections,
  and every label with the number the site shows (theorems per kind, exercises, figures,
  equations, sections), in document order as Sphinx numbers them; each page's numbered
  things, labelled or not (``Page.numbered``); a chapter by number (:meth:`Book.chapter`)
  and targets by kind, page and number (:meth:`Book.targets`); the site's address;
* cells and chapter files (:func:`cell_source`, :func:`has_tag`, :func:`chapter_files`,
  :func:`chapter_file_number`: the chapters are ``chapters/NN_name.ipynb``, and ``NN`` is the
  number the table of contents gives them);
* the chapters' figures: a cell that draws one (:func:`draws_figure`), its "What to notice"
  block (:func:`notice_block`, :func:`figure_notice`: the nearest markdown cell above it),
  and its caption and label (:func:`figure_options`: myst-nb's ``mystnb.figure`` metadata);
* exercises: their ``{exercise}`` blocks with options and body (:func:`exercise_blocks`),
  the mark of an auto-checked one (:data:`CHECKED_MARK`), a chapter's title
  (:func:`first_heading`);
* the gated solutions (``{solution-start}`` ... ``{solution-end}``), walked once for every
  product by :func:`gated_cells`, which also checks their layout and leaves out the cells
  tagged ``source-only`` (:data:`SOURCE_ONLY`: for readers of the source only).

Imports point one way: ``bookkit`` <- the products and checks (tools/portable.py,
tools/make_assignments.py, tools/make_otter.py, tools/exercise_catalogue.py,
tools/figure_alt.py, ...) <- the command line (tools/bookcli). Importing it needs the standard library only (tools/exercise_catalogue.py
runs in any kernel); loading a :class:`Book` needs nbformat and PyYAML, and
:meth:`Book.bibliography` pybtex.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[2]

# sphinx-proof's directives with a numbered, titled box (all but proof).
PRF_KINDS = ("axiom", "theorem", "lemma", "algorithm", "definition", "remark", "conjecture",
             "corollary", "criterion", "example", "property", "observation", "proposition",
             "assumption", "notation")
# Display-math environments of amsmath (a bare one is a display equation of its own).
AMS_ENVIRONMENTS = ("equation", "multline", "gather", "align", "alignat", "flalign",
                    "eqnarray")

# ```{name} argument   or   :::{name} argument
DIRECTIVE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|:{3,})\{(?P<name>[A-Za-z][\w:-]*)\}(?P<arg>.*)$")
CODE_FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`]*)$")
OPTION = re.compile(r"^:(?P<key>[A-Za-z][\w-]*):(?:\s+(?P<value>.*?))?\s*$")
TARGET = re.compile(r"^ {0,3}\((?P<label>[^()\s]+)\)=\s*$")
HEADING = re.compile(r"^ {0,3}(?P<hashes>#{1,6})\s+(?P<text>.*?)(?:\s+#+)?\s*$")
MATH_LABEL = re.compile(r"^\$\$\s*\((?P<label>[^()\s]+)\)\s*$")
ONE_LINE_MATH = re.compile(r"^\$\$(?P<body>.+?)\$\$\s*(?:\((?P<label>[^()\s]+)\))?\s*$")
BARE_ENV = re.compile(r"^\s*\\begin\{(?P<env>(?:%s)\*?)\}" % "|".join(AMS_ENVIRONMENTS))
# An opening directive fence as the student versions read it (names without a colon).
DIRECTIVE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|:{3,})\{(?P<name>[A-Za-z][\w-]*)\}(?P<arg>.*)$")


# A chapter cell for readers of the source notebook only: the pointer, right after the set-up
# cell, to the chapter's portable notebook (notebooks/NN_name.ipynb). Every product drops it:
# the site and the PDF because it is also tagged remove-cell, the portable, student and Otter
# notebooks (and the students' site) because :func:`gated_cells` leaves it out.
SOURCE_ONLY = "source-only"


def source_only(cell) -> bool:
    """Is ``cell`` tagged :data:`SOURCE_ONLY` (for readers of the source notebook only)?"""
    return has_tag(cell, SOURCE_ONLY)


def cell_tags(cell) -> list[str]:
    """The tags of a cell (``metadata.tags``; none if it has no metadata)."""
    return (cell.get("metadata", {}) or {}).get("tags", []) or []


def has_tag(cell, tag: str) -> bool:
    """Is ``cell`` tagged ``tag`` (``remove-cell``, ``source-listing``, ...)?"""
    return tag in cell_tags(cell)


def cell_source(cell) -> str:
    """A cell's source as one string (a notebook read as JSON may store it as a list of lines)."""
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


# A chapter's file: chapters/NN_name.ipynb, NN its number in the table of contents.
CHAPTER_FILE = re.compile(r"^(?P<number>\d+)_")


def chapter_files(chapters: Path = ROOT / "chapters") -> list[Path]:
    """The chapters' notebooks, ``chapters/*.ipynb``, in order (their names start with their number)."""
    return sorted(Path(chapters).glob("*.ipynb"))


def chapter_file_number(path) -> str | None:
    """The number a chapter's file name starts with, as written (``03_head_count.ipynb`` -> ``"03"``), else None.

    It is the chapter's number on the site (its place in the numbered part of _toc.yml);
    tests/test_bookkit.py checks that the two agree. The tools that must run on the
    standard library alone (tools/exercise_catalogue.py, tools/problem_set_length.py)
    read it instead of the table of contents.
    """
    m = CHAPTER_FILE.match(Path(path).name)
    return m.group("number") if m else None


class BookError(ValueError):
    """The book's source uses MyST, a reference or a layout that the tools cannot handle."""


# --------------------------------------------------------------------------- parsing


@dataclass
class Block:
    """One top-level element of a markdown text."""
    kind: str                          # directive | code | math | target | text
    lines: list[str]                   # the source lines (text: one line)
    name: str = ""                     # directive name
    arg: str = ""                      # directive argument
    options: dict = field(default_factory=dict)
    body: list[str] = field(default_factory=list)   # directive body, math content
    label: str = ""                    # target, labelled math
    indent: str = ""                   # math: the indentation of its $$ lines


def closes(line: str, fence: str) -> bool:
    s = line.strip()
    return len(s) >= len(fence) and set(s) == {fence[0]}


def _options(body: list[str]) -> tuple[dict, list[str]]:
    """A directive's options (``:key: value`` lines or a ``---`` YAML block) and the rest of its body."""
    options, k = {}, 0
    if body and body[0].strip() == "---":
        import yaml
        end = next((j for j in range(1, len(body)) if body[j].strip() == "---"), None)
        if end is None:
            raise BookError("a directive's YAML options block has no closing ---")
        options = yaml.safe_load("\n".join(body[1:end])) or {}
        k = end + 1
    else:
        while k < len(body) and (m := OPTION.match(body[k])):
            options[m.group("key")] = (m.group("value") or "").strip()
            k += 1
    rest = body[k:]
    while rest and not rest[0].strip():
        rest = rest[1:]
    while rest and not rest[-1].strip():
        rest = rest[:-1]
    return options, rest


def parse(lines: list[str]) -> list[Block]:
    """Split markdown ``lines`` into top-level blocks (directive bodies are not parsed here)."""
    blocks, i, n = [], 0, len(lines)
    while i < n:
        line = lines[i]
        if m := DIRECTIVE.match(line):
            fence = m.group("fence")
            j = i + 1
            while j < n and not closes(lines[j], fence):
                j += 1
            options, body = _options(lines[i + 1:j])
            blocks.append(Block("directive", lines[i:j + 1], name=m.group("name"),
                                arg=m.group("arg").strip(), options=options, body=body))
            i = j + 1
            continue
        if (m := CODE_FENCE.match(line)) and not (m.group("fence")[0] == "`" and "`" in m.group("info")):
            fence = m.group("fence")
            j = i + 1
            while j < n and not closes(lines[j], fence):
                j += 1
            blocks.append(Block("code", lines[i:j + 1]))
            i = j + 1
            continue
        stripped = line.strip()
        if stripped.startswith("$$"):
            indent = line[:len(line) - len(line.lstrip())]
            if m := ONE_LINE_MATH.match(stripped):
                blocks.append(Block("math", [line], body=[m.group("body").strip()],
                                    label=m.group("label") or "", indent=indent))
                i += 1
                continue
            first = stripped[2:].strip()
            j = i + 1
            while j < n and "$$" not in lines[j]:
                j += 1
            if j == n:
                raise BookError(f"a $$ display equation is not closed: {line!r}")
            last = lines[j].strip()
            before, _, after = last.partition("$$")
            label = ""
            if after.strip():
                lm = re.fullmatch(r"\s*\((?P<label>[^()\s]+)\)\s*", after)
                if not lm:
                    raise BookError(f"text after a closing $$: {lines[j]!r}")
                label = lm.group("label")
            body = ([first] if first else []) + [ln for ln in lines[i + 1:j]] + ([before] if before.strip() else [])
            blocks.append(Block("math", lines[i:j + 1], body=body, label=label, indent=indent))
            i = j + 1
            continue
        if m := TARGET.match(line):
            blocks.append(Block("target", [line], label=m.group("label")))
            i += 1
            continue
        if BARE_ENV.match(line):
            env = BARE_ENV.match(line).group("env")
            j = i
            while j < n and f"\\end{{{env}}}" not in lines[j]:
                j += 1
            if j == n:
                raise BookError(f"\\begin{{{env}}} is not closed")
            indent = line[:len(line) - len(line.lstrip())]
            blocks.append(Block("math", lines[i:j + 1], body=lines[i:j + 1], indent=indent,
                                name="bare"))
            i = j + 1
            continue
        blocks.append(Block("text", [line]))
        i += 1
    return blocks


# --------------------------------------------------------------------------- the book


@dataclass
class Target:
    """Something a reference can point to, with the number and title the site shows."""
    label: str
    kind: str            # a PRF kind, exercise, solution, equation, section, target
    docname: str
    number: tuple | None
    title: str = ""
    anchor: str = ""
    exercise: str = ""   # solution: the label of its exercise

    @property
    def numbered(self) -> str:
        return ".".join(map(str, self.number)) if self.number else ""


@dataclass
class Page:
    docname: str
    path: Path
    number: tuple | None          # chapter number, e.g. (3,), None if not numbered
    title: str = ""
    sections: list = field(default_factory=list)  # (level, number or None, title) in order
    exercises: list = field(default_factory=list)  # labels of exercises, in order
    # every numbered theorem-like box, exercise, figure and labelled equation, in document
    # order, as a Target (its label '' when it has none: numbered on the site, not linkable)
    numbered: list = field(default_factory=list)


def _strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:].lstrip("\n")
    return text


def figure_metadata(cell) -> dict:
    """The ``mystnb.figure`` options stored in a cell's metadata (``caption``, ``name``; empty if none)."""
    return dict((cell.get("metadata", {}).get("mystnb", {}) or {}).get("figure") or {})


def figure_options(cell) -> tuple[str, str] | None:
    """``(label, caption)`` of a figure cell (myst-nb's ``mystnb.figure`` metadata), else None.

    Sphinx numbers a figure that has both a caption and a label; book/_ext/book_figures.py
    makes the cell's image output that figure (a cell without an image has none, unless
    it is a student version, whose outputs are cleared).
    """
    if cell.get("cell_type") != "code":
        return None
    figure = figure_metadata(cell)
    name, caption = str(figure.get("name", "")).strip(), str(figure.get("caption", "")).strip()
    return (name, caption) if name and caption else None


def image_outputs(cell) -> int:
    """How many outputs of a cell hold an image."""
    return sum(any(m.startswith("image/") for m in out.get("data", {})) for out in cell.get("outputs", []))


def shows_image(cell) -> bool:
    return any(m.startswith("image/") for out in cell.get("outputs", []) for m in out.get("data", {}))


def draws_figure(cell) -> bool:
    """A code cell that draws a figure: it calls ``plt.show()`` or has a stored image output."""
    if cell.get("cell_type") != "code":
        return False
    return bool(re.search(r"\bplt\.show\(\)", cell_source(cell))) or shows_image(cell)


# The block that says what a figure shows, in the markdown cell above it: the single source of
# its caption (the first sentence) and its alt text (tools/figure_alt.py writes both).
NOTICE = "**What to notice.**"


def notice_block(markdown: str, where: str = "cell", error: type[Exception] = BookError) -> str:
    """The ``**What to notice.**`` block of a markdown cell, without the marker (Markdown source).

    The block is the rest of the marker's paragraph, or, when the marker stands alone
    on its line, the list that follows it (up to the first line after a blank line that
    is neither a list item nor indented). ``error`` (naming ``where``) is raised when the
    cell has no such line or more than one, or the block is empty.
    """
    lines = markdown.split("\n")
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(NOTICE)]
    if len(starts) != 1:
        raise error(f"{where}: expected one line starting with {NOTICE!r} in the markdown cell "
                    f"above the figure, found {len(starts)}")
    first = lines[starts[0]].lstrip()[len(NOTICE):].strip()
    block = [first] if first else []
    i = starts[0] + 1
    if first:  # a paragraph: up to the next blank line
        while i < len(lines) and lines[i].strip():
            block.append(lines[i])
            i += 1
    else:  # a list: items, their continuation lines, blank lines between items
        while i < len(lines) and not lines[i].strip():
            i += 1
        while i < len(lines):
            line = lines[i]
            if not line.strip():
                following = next((ln for ln in lines[i + 1:] if ln.strip()), "")
                if not re.match(r"\s*([-*+]|\d+\.)\s|\s{2,}\S", following):
                    break
            elif not re.match(r"\s*([-*+]|\d+\.)\s|\s+\S", line):
                break
            block.append(line)
            i += 1
    text = "\n".join(block).strip()
    if not text:
        raise error(f"{where}: the {NOTICE!r} block is empty")
    return text


def figure_notice(cells, index: int, where: str = "cell", error: type[Exception] = BookError) -> str:
    """The "What to notice" block (Markdown) of the figure drawn by ``cells[index]``: the nearest markdown cell above."""
    above = next((j for j in range(index - 1, -1, -1) if cells[j]["cell_type"] == "markdown"), None)
    if above is None:
        raise error(f"{where}: no markdown cell above it")
    return notice_block(cell_source(cells[above]), where, error)


def page_items(path: Path) -> list[tuple[str, object]]:
    """A page's markdown and figures in document order: ``("markdown", text)``, ``("figure", (label, caption))``."""
    import nbformat

    if path.suffix != ".ipynb":
        return [("markdown", text) for text in markdown_cells(path)]
    items = []
    for cell in nbformat.read(path, as_version=4).cells:
        if cell.cell_type == "markdown":
            items.append(("markdown", cell.source))
        elif (figure := figure_options(cell)) and shows_image(cell):
            items.append(("figure", figure))
    return items


def markdown_cells(path: Path) -> list[str]:
    """The markdown of a page: its markdown cells (a notebook) or its text (a .md file)."""
    if path.suffix == ".ipynb":
        import nbformat

        nb = nbformat.read(path, as_version=4)
        return [c.source for c in nb.cells if c.cell_type == "markdown"]
    return [_strip_front_matter(path.read_text())]


def site_base_url(config: dict) -> str | None:
    """The site's address: html.baseurl, else the GitHub Pages address of repository.url."""
    base = (config.get("html") or {}).get("baseurl")
    if base:
        return base.rstrip("/") + "/"
    url = (config.get("repository") or {}).get("url") or ""
    m = re.match(r"^(?:https?://)?(?:www\.)?github\.com/(?P<org>[^/\s]+)/(?P<repo>[^/\s]+?)(?:\.git)?/?$", url)
    if m:
        return f"https://{m.group('org').lower()}.github.io/{m.group('repo')}/"
    return None


class Book:
    """Every page of a book (from its _toc.yml) with the numbers and titles the site shows."""

    def __init__(self, root: Path = ROOT, base_url: str | None = None):
        """``base_url``: the site the links point to, if not the book's own (e.g. the students' site)."""
        import yaml

        self.root = Path(root)
        self.config = yaml.safe_load((self.root / "_config.yml").read_text()) or {}
        self.toc = yaml.safe_load((self.root / "_toc.yml").read_text()) or {}
        self.base_url = (base_url.rstrip("/") + "/") if base_url else site_base_url(self.config)
        self.title = self.config.get("title", "")
        self.pages: dict[str, Page] = {}
        self.labels: dict[str, Target] = {}
        self.root_doc = self._docname(self.toc.get("root", "index"))
        multitoc = (self.config.get("html") or {}).get("use_multitoc_numbering", True)
        self._add(self.root_doc, None)
        counter = [0]
        for part in self.toc.get("parts", []) or [{"chapters": self.toc.get("chapters", [])}]:
            numbered = bool(part.get("numbered"))
            if numbered and not multitoc:
                counter = [0]
            for entry in part.get("chapters", []) or []:
                self._entry(entry, numbered, counter, ())
        for page in self.pages.values():
            self._index(page)
        self._bib = None

    # -- the table of contents

    @staticmethod
    def _docname(name: str) -> str:
        return re.sub(r"\.(ipynb|md)$", "", str(name)).strip("/")

    def _entry(self, entry: dict, numbered: bool, counter: list, prefix: tuple):
        if "file" not in entry:
            return
        number = None
        if numbered:
            counter[-1] += 1
            number = prefix + (counter[-1],)
        self._add(self._docname(entry["file"]), number)
        sub = [0]
        for section in entry.get("sections", []) or []:
            self._entry(section, numbered, sub, number or ())

    def _add(self, docname: str, number: tuple | None):
        for suffix in (".ipynb", ".md"):
            path = self.root / (docname + suffix)
            if path.exists():
                self.pages[docname] = Page(docname, path, number)
                return
        raise BookError(f"_toc.yml lists {docname}, which is neither a .ipynb nor a .md file")

    # -- labels and numbers, in document order

    def _index(self, page: Page):
        counts: dict[str, int] = {}
        state = {"pending": [], "levels": []}

        def count(kind: str) -> tuple | None:
            if page.number is None:
                return None
            counts[kind] = counts.get(kind, 0) + 1
            return page.number + (counts[kind],)

        def numbered(target: Target) -> Target:
            if target.number:
                page.numbered.append(target)
            return target

        def add(target: Target):
            if target.label in self.labels:
                other = self.labels[target.label]
                raise BookError(f"label {target.label!r} is defined twice ({other.docname}, {page.docname})")
            self.labels[target.label] = target

        def walk(lines: list[str], top: bool):
            for block in parse(lines):
                if block.kind == "target":
                    state["pending"].append(block.label)
                    continue
                if block.kind == "text" and not block.lines[0].strip():
                    continue
                pending, state["pending"] = state["pending"], []
                if block.kind == "text" and top and (m := HEADING.match(block.lines[0])):
                    title, level = m.group("text"), len(m.group("hashes"))
                    number = self._section_number(page, level, state["levels"])
                    if level == 1 and not page.title:
                        page.title = title
                    page.sections.append((level, number, title))
                    for label in pending:
                        add(Target(label, "section", page.docname, number, title, label))
                    continue
                for label in pending:
                    add(Target(label, "target", page.docname, None, "", label))
                if block.kind == "math" and block.label:
                    add(numbered(Target(block.label, "equation", page.docname, count("displaymath"), "",
                                        "equation-" + block.label)))
                if block.kind != "directive":
                    continue
                name, options = block.name, block.options
                label = str(options.get("label", "")).strip()
                kind = name.split(":", 1)[1] if name.startswith("prf:") else name
                if name.startswith("prf:") and kind in PRF_KINDS:
                    number = None if "nonumber" in options else count(kind)
                    target = Target(label, kind, page.docname, number, block.arg, label)
                    if label:
                        add(target)
                    if number:
                        page.numbered.append(target)
                elif name in ("exercise", "exercise-start"):
                    number = None if "nonumber" in options else count("exercise")
                    target = Target(label, "exercise", page.docname, number, block.arg, label)
                    if label:
                        add(target)
                        page.exercises.append(label)
                    if number:
                        page.numbered.append(target)
                elif name in ("solution", "solution-start"):
                    if label:
                        add(Target(label, "solution", page.docname, None, "", label, exercise=block.arg))
                elif name == "math" and label:
                    add(numbered(Target(label, "equation", page.docname, count("displaymath"), "",
                                        "equation-" + label)))
                elif name.startswith("prf:") and kind != "proof":
                    raise BookError(f"{page.docname}: unknown sphinx-proof directive {{{name}}}")
                walk(block.body, False)

        for kind, item in page_items(page.path):
            if kind == "figure":
                label, caption = item
                add(numbered(Target(label, "figure", page.docname, count("figure"), caption, label)))
            else:
                walk(item.split("\n"), True)

    @staticmethod
    def _section_number(page: Page, level: int, levels: list) -> tuple | None:
        """The site's number of a heading at ``level`` (h1 is the page; h2 is N.1, h3 N.1.1, ...)."""
        if level == 1:
            levels.clear()
            return page.number
        depth = level - 1
        while len(levels) < depth:
            levels.append(0)
        del levels[depth:]
        levels[depth - 1] += 1
        for k in range(depth - 1):
            levels[k] = max(levels[k], 1)
        return page.number + tuple(levels) if page.number else None

    # -- addresses

    def url(self, docname: str, anchor: str = "") -> str | None:
        if not self.base_url:
            return None
        return self.base_url + docname + ".html" + (f"#{anchor}" if anchor else "")

    def docname_of(self, path: Path) -> str:
        """The docname of a page's file (chapters/03_head_count.ipynb -> chapters/03_head_count)."""
        try:
            rel = Path(path).resolve().relative_to(self.root.resolve())
        except ValueError:
            rel = None
        if rel is not None and self._docname(rel.as_posix()) in self.pages:
            return self._docname(rel.as_posix())
        stem = Path(path).stem
        found = [d for d in self.pages if d.rsplit("/", 1)[-1] == stem]
        if len(found) == 1:
            return found[0]
        raise BookError(f"{path} is not a page of the book in {self.root}")

    def chapters(self) -> list[Page]:
        """The pages that are notebooks, in table-of-contents order."""
        return [p for p in self.pages.values() if p.path.suffix == ".ipynb"]

    def chapter(self, number: int) -> Page | None:
        """The page of Chapter ``number`` (the ``number``-th entry of the numbered part of _toc.yml), else None."""
        return next((p for p in self.pages.values() if p.number == (number,)), None)

    def targets(self, kind: str | None = None, docname: str | None = None,
                number: tuple | None = None) -> list[Target]:
        """The labelled targets of a ``kind`` (theorem, exercise, figure, section, ...), on a page, with a number."""
        return [t for t in self.labels.values()
                if (kind is None or t.kind == kind) and (docname is None or t.docname == docname)
                and (number is None or t.number == number)]

    # -- bibliography

    def bibliography(self):
        if self._bib is None:
            from pybtex.database import parse_file
            files = self.config.get("bibtex_bibfiles") or []
            entries = {}
            for name in files:
                entries.update(parse_file(str(self.root / name)).entries)
            self._bib = entries
        return self._bib




# --------------------------------------------------------------------------- cells


def tidy(lines: list[str]) -> str:
    """Join lines, with runs of blank lines collapsed to one and no blank lines at either end."""
    text = "\n".join(lines)
    text = re.sub(r"\n[ \t]*(\n[ \t]*)+\n", "\n\n", text)
    return text.strip("\n")


def heading_levels(text: str) -> list[int]:
    """The levels of the Markdown headings in ``text`` (not those in fenced code)."""
    levels, fence = [], None
    for line in text.split("\n"):
        if fence:
            if closes(line, fence):
                fence = None
            continue
        if m := CODE_FENCE.match(line):
            fence = m.group("fence")
            continue
        if m := HEADING.match(line):
            levels.append(len(m.group("hashes")))
    return levels


def directive_blocks(lines: list[str], name: str | None = None) -> list[tuple[int, int, str, str]]:
    """Top-level directive blocks in markdown ``lines`` as ``(first, last, name, argument)``.

    ``first`` is the opening fence line and ``last`` the closing one (inclusive);
    for a fence left open, ``last`` is ``len(lines)``.
    Only directives at the top level of the cell are returned (nested ones are
    inside their parent's block); ``name`` filters by directive name.
    """
    blocks, i = [], 0
    while i < len(lines):
        m = DIRECTIVE_OPEN.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        j = i + 1
        while j < len(lines) and not closes(lines[j], fence):
            j += 1
        # An unclosed fence runs to the end of the cell (CommonMark, and how MyST reads it):
        # then ``last == len(lines)``, one past the final line.
        if name is None or m.group("name") == name:
            blocks.append((i, j, m.group("name"), m.group("arg").strip()))
        i = j + 1
    return blocks


def label_of(body: list[str]) -> str:
    """The ``:label:`` among a directive's body lines ('' if none)."""
    return next((ln.split(":", 2)[2].strip() for ln in body if ln.startswith(":label:")), "")


def directive_label(lines: list[str], first: int, last: int) -> str:
    """The ``:label:`` of the directive block ``lines[first:last + 1]`` ('' if none)."""
    return label_of(lines[first + 1:last])


def directive_options(body: list[str]) -> tuple[dict, list[str]]:
    """A directive's options (``:key: value`` lines or a ``---`` YAML block) and the rest of its body.

    The rest has no blank lines at either end. The YAML form needs PyYAML; the other,
    the standard library only.
    """
    return _options(body)


# The first line of the body of an auto-checked exercise (its stub ends in a check_... call).
CHECKED_MARK = "✓ *Auto-checked.*"


@dataclass
class ExerciseBlock:
    """One top-level ``{exercise}`` directive of a markdown cell."""
    title: str            # the directive's argument
    body: str             # the lines between its fences (options included)
    options: dict         # :label:, :class:, ...
    text: str             # the body after its options

    @property
    def label(self) -> str:
        return str(self.options.get("label", "")).strip()

    @property
    def marked_checked(self) -> bool:
        """Does its text start with :data:`CHECKED_MARK`?"""
        return self.text.startswith(CHECKED_MARK)


def exercise_blocks(source: str) -> list[ExerciseBlock]:
    """The top-level ``{exercise}`` directives of markdown ``source``, in order.

    A fence left open runs to the end of the cell, as in CommonMark.
    """
    lines = source.split("\n")
    found = []
    for first, last, _, title in directive_blocks(lines, "exercise"):
        body = lines[first + 1:last]
        options, rest = directive_options(body)
        found.append(ExerciseBlock(title, "\n".join(body), options, "\n".join(rest)))
    return found


def first_heading(texts) -> str | None:
    """The first level-1 heading of markdown ``texts`` (a page's title), outside directives and code; else None."""
    for text in texts:
        for block in parse(text.split("\n")):
            if block.kind == "text" and (m := HEADING.match(block.lines[0])) and len(m.group("hashes")) == 1:
                return m.group("text")
    return None


def starts_with(source: str, name: str) -> bool:
    """Whether markdown ``source`` opens with a ``{name}`` directive."""
    first = source.lstrip("\n").split("\n", 1)[0]
    m = DIRECTIVE_OPEN.match(first)
    return bool(m and m.group("name") == name)


def only_directive(source: str, name: str) -> bool:
    """Whether markdown ``source`` is one ``{name}`` directive and nothing else."""
    lines = source.split("\n")
    blocks = directive_blocks(lines)
    rest = [ln for k, ln in enumerate(lines) if not any(a <= k <= b for a, b, _, _ in blocks)]
    return len(blocks) == 1 and blocks[0][2] == name and not any(ln.strip() for ln in rest)


def mentions(source: str, name: str) -> bool:
    """Whether a line of markdown ``source`` opens a ``{name}`` directive."""
    return any((m := DIRECTIVE_OPEN.match(line)) and m.group("name") == name for line in source.split("\n"))


# --------------------------------------------------------------------------- gated solutions


def gated_directive(source: str) -> tuple[Block | None, str]:
    """The leading {solution-start}/{solution-end} directive of a cell, and the text after it."""
    lines = source.lstrip("\n").split("\n")
    blocks = parse(lines)
    if not blocks or blocks[0].kind != "directive" or blocks[0].name not in ("solution-start", "solution-end"):
        return None, source
    first = blocks[0]
    rest = lines[len(first.lines):]
    return first, "\n".join(rest)


@dataclass
class GatedCell:
    """One cell of a chapter, placed with respect to its gated solutions."""
    index: int
    cell: object
    role: str            # outside | start | inside | end
    label: str = ""      # start, inside, end: the exercise whose solution it is
    rest: str = ""       # start, end: the cell's text after the directive


def gated_cells(cells, where: str = "notebook", error: type[Exception] = BookError) -> Iterator[GatedCell]:
    """Walk a chapter's ``cells``, saying for each where it stands with respect to the gated solutions.

    A gated solution is a markdown cell that starts with ``{solution-start} <exercise
    label>`` (its text after the directive is the solution's first text), the cells after
    it, and a markdown cell that holds only the ``{solution-end}`` directive. The layout
    is checked as the walk goes (``error`` is raised, naming ``where`` and the cell): a
    ``{solution-start}`` or ``{solution-end}`` anywhere but at the start of its cell, one
    inside another, an end without a start, a solution that ends in its start cell, and
    a start without an end (raised when the walk reaches the last cell).

    Cells tagged ``source-only`` (:func:`source_only`) are left out of the walk, so no
    product built on it holds them; the others keep their index in ``cells``.
    """
    label = None          # the exercise label while inside a gated solution
    for index, cell in enumerate(cells):
        if source_only(cell):
            continue
        if cell.cell_type != "markdown":
            yield GatedCell(index, cell, "outside" if label is None else "inside", label or "")
            continue
        start, rest = gated_directive(cell.source)
        if start is not None and start.name == "solution-start":
            if label is not None:
                raise error(f"{where}, cell {index}: a {{solution-start}} inside a gated solution")
            if mentions(cell.source, "solution-end"):
                raise error(f"{where}, cell {index}: a gated solution must end in a cell of its own")
            label = start.arg.strip()
            yield GatedCell(index, cell, "start", label, rest)
            continue
        if start is not None and start.name == "solution-end":
            if label is None:
                raise error(f"{where}, cell {index}: a {{solution-end}} without a {{solution-start}}")
            if rest.strip() or not only_directive(cell.source, "solution-end"):
                raise error(f"{where}, cell {index}: the {{solution-end}} cell must hold only "
                            "the solution-end directive")
            yield GatedCell(index, cell, "end", label, rest)
            label = None
            continue
        if mentions(cell.source, "solution-start") or mentions(cell.source, "solution-end"):
            raise error(f"{where}, cell {index}: {{solution-start}} must begin its cell, and "
                        "{solution-end} must follow a {solution-start} cell")
        yield GatedCell(index, cell, "outside" if label is None else "inside", label or "")
    if label is not None:
        raise error(f"{where}: a {{solution-start}} has no {{solution-end}}")


# --------------------------------------------------------------------------- exercises, files


def exercise_numbers(book: Book) -> dict[str, str]:
    """``{label: "1.5"}`` for the numbered exercises of ``book``."""
    return {label: t.numbered for label, t in book.labels.items() if t.kind == "exercise" and t.number}


def file_hash(path: Path) -> str:
    """The SHA-256 of a file's bytes, in hex (what a product was made from)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
