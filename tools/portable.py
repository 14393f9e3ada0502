#!/usr/bin/env python3
"""Render the book's MyST notebooks as portable notebooks: plain Markdown and LaTeX.

Usage:
    python tools/portable.py --all                    # every chapter -> notebooks/<chapter>.ipynb
    python tools/portable.py chapters/03_head_count.ipynb -o /tmp/ch3.ipynb [--student]
    python tools/portable.py --check                  # fail if notebooks/ is not a fresh rendering

The chapters are written in MyST (Jupyter Book). Opened in JupyterLab, Colab, VS Code
or as a downloaded .ipynb, their theorems, proofs, exercises and cross-references
would show as raw directive blocks and roles. A *portable* notebook is the same
notebook with its markdown rendered to what every Jupyter front end shows without
extensions; code cells and their outputs are copied unchanged (the notebook is still
checkable with nbval):

* ``{prf:theorem}`` (and lemma, definition, proposition, corollary, example, remark,
  ...) becomes a bold numbered title, "**Theorem 3.1** (Head-count theorem)", with the
  body in a quote block; ``{prf:proof}`` becomes "*Proof.* ... ∎";
* ``{exercise}`` becomes a heading one level below the section's, "### Exercise 3.1
  (Title)", followed by the prompt; its solution (a ``{solution}`` directive, cut out
  into a cell of its own, or a gated solution: ``{solution-start}`` ... code cells ...
  ``{solution-end}``) becomes a heading one level lower, "#### Solution to Exercise
  3.1", whose cell starts folded: JupyterLab's ``jp-MarkdownHeadingCollapsed`` cell
  metadata hides the solution's cells up to the next heading of its level or higher,
  and Colab's ``collapsed_sections`` (notebook metadata, naming cells by
  ``metadata.id``) does the same there. No ``<details>`` block: jupyterlab-myst (Binder's
  front end) shows the math inside one as raw TeX;
* admonitions (``{admonition}``, ``{note}``, ``{tip}``, dropdowns, ...) become quote
  blocks with a bold title; one with the class ``site-only`` (e.g. "This explorer needs
  a live kernel") is left out;
* a cell tagged ``source-only`` (cell 1 of each chapter: the note that points a reader of
  the source to its portable notebook) is left out, as by every product
  (:func:`bookkit.core.gated_cells`);
* ``{prf:ref}``, ``{ref}``, ``{numref}``, ``{eq}`` and ``{doc}`` become the text the site
  shows ("Lemma 2.1", "Exercise 3.2", a section's title, "(2.1)", a page's title),
  linked to that page and anchor on the site; citations read as the site's author_year
  style prints them, in square brackets: ``{cite}`` "[Press et al., 2022]" (several works
  in the bibliography's order, separated by commas), ``{cite:t}`` "Press et al. [2022]";
  the works cited are listed at the end;
* a figure (a code cell whose metadata holds myst-nb's ``mystnb.figure`` caption and
  name, written by tools/figure_alt.py) is followed by a markdown cell with its number
  and caption, "**Figure 3.2.** Heads trained by gradient descent reach ...", the
  number the site's ``<figcaption>`` shows; ``{numref}`` to its label reads "Figure 3.2";
* labelled equations get the site's number as ``\\tag{2.1}``; bare amsmath
  environments and ``{math}`` directives are wrapped in ``$$``; ``{math}`` roles become
  ``$...$``; ``(label)=`` targets are dropped; headings get the site's section numbers.

Numbers are computed by the book's model (tools/bookkit/core.py), not read from a build:
chapter N is the N-th entry of the
numbered part of _toc.yml, and theorems (per kind), exercises, figures, labelled equations
and sections are counted in document order within each chapter, as sphinx-proof,
sphinx-exercise and Sphinx number them. ``book/_ext/portable_downloads.py`` compares
these numbers with Sphinx's own on every site build (a mismatch is a build warning),
and tests/test_portable.py compares them with a built site's HTML.

The site's address comes from _config.yml: ``html.baseurl`` if set, else the GitHub
Pages address of ``repository.url`` (github.com/ORG/REPO -> https://ORG.github.io/REPO/);
``Book(root, base_url=...)`` links to another site (the students', for
tools/make_assignments.py --site-url).

A *student* rendering (``--student``) is made from the student version of a chapter
(tools/bookkit/student.py: solutions removed, a code cell after each exercise (its stub,
or an empty one), outputs cleared); any solution left is dropped. Importable: ``Book``, ``render_notebook``,
``portable_notebook``, ``write_all``. Needs nbformat, PyYAML and pybtex.
"""
from __future__ import annotations

import argparse
import copy
import functools
import posixpath
import re
import sys
import time
from pathlib import Path

import nbformat

from bookkit import student as _student
from bookkit.core import (  # noqa: F401  (the model of the book; its names stay importable from here)
    AMS_ENVIRONMENTS, BARE_ENV, CODE_FENCE, HEADING, PRF_KINDS, Block, Book, BookError, Page, Target,
    closes, exercise_numbers, figure_options, gated_cells, gated_directive, heading_levels,
    markdown_cells, page_items, parse, shows_image, site_base_url, tidy)

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "notebooks"

# Admonition directives with a fixed title.
ADMONITIONS = {"note": "Note", "tip": "Tip", "hint": "Hint", "important": "Important",
               "warning": "Warning", "caution": "Caution", "attention": "Attention",
               "danger": "Danger", "error": "Error", "seealso": "See also"}
# Bare starred environments that become their inner form inside $$ \begin{equation*} ... $$.
INNER_ENVIRONMENTS = {"align*": "aligned", "gather*": "gathered", "alignat*": "alignedat"}
# A role, or an inline code span (left as it is).
INLINE = re.compile(r"\{(?P<role>[A-Za-z][\w:+-]*)\}(?P<ticks>`+)(?P<content>.+?)(?P=ticks)(?!`)"
                    r"|(?P<cticks>`+)(?P<code>.+?)(?P=cticks)(?!`)", re.S)
EXPLICIT = re.compile(r"^(?P<text>.*?)\s*<(?P<target>[^<>]+)>$", re.S)
# Lines the renderer puts between the cells that one markdown cell becomes (a {solution}
# directive is cut out into a folded cell of its own); they never reach a notebook.
CELL_BREAK = "\x00portable: new cell\x00"
SOLUTION_BREAK = "\x00portable: new solution heading cell\x00"
SOLUTION_BODY = "\x00portable: new solution body cell\x00"
BREAKS = {CELL_BREAK: "text", SOLUTION_BREAK: "solution", SOLUTION_BODY: "solution-body"}
# JupyterLab 4's cell metadata for a folded heading (@jupyterlab/cells, MarkdownCell
# headingCollapsed: the cell and the cells after it, up to the next heading of the same
# or a higher level, are hidden until the heading's arrow is clicked).
COLLAPSED = "jp-MarkdownHeadingCollapsed"


# The error of the book's tools (bookkit.core.BookError), by the name this module has always raised.
PortableError = BookError
# Kept for callers that used this module's helpers (they live in bookkit.core).
_heading_levels, _gated = heading_levels, gated_directive


# --------------------------------------------------------------------------- citations


def _latex_text(text: str) -> str:
    from pybtex.richtext import Text
    return str(Text.from_latex(text)).strip()


def _last_name(person) -> str:
    return _latex_text(" ".join(person.prelast_names + person.last_names))


def _persons(entry):
    return entry.persons.get("author") or entry.persons.get("editor") or []


ET_AL = "*et al.*"   # the site's author_year style prints "et al." in italics


def cite_names(entry, full: bool = False) -> str:
    """The authors as sphinxcontrib-bibtex's author_year style names them on the site.

    One or two: "Gu", "Gu and Dao"; three or more: "Press *et al.*", or, with ``full``
    (the ``s`` roles), "Bengio, Simard, and Frasconi".
    """
    people = _persons(entry)
    names = [_last_name(p) for p in people]
    others = bool(names) and names[-1].lower() == "others"
    if others:
        names = names[:-1]
    if not names:
        return _latex_text(entry.fields.get("organization", entry.fields.get("title", "Anon.")))
    if others:
        return f"{names[0]} {ET_AL}"
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"{names[0]} and {names[1]}"
    if full:
        return ", ".join(names[:-1]) + ", and " + names[-1]
    return f"{names[0]} {ET_AL}"


def cite_year(entry) -> str:
    return entry.fields.get("year", "n.d.")


@functools.lru_cache(maxsize=None)
def _pybtex_plain():
    from pybtex.plugin import find_plugin
    return find_plugin("pybtex.style.formatting", "plain")(), find_plugin("pybtex.backends", "markdown")()


def site_order(entries: list) -> list:
    """``entries`` in the site's order: its bibliography's (pybtex's plain style sorting).

    sphinxcontrib-bibtex lists the works of one citation in the order of the
    bibliography they resolve to, which the plain style sorts by author, year and title:
    {cite}`zucchet2024recurrent,orvieto2023resurrecting` shows "Orvieto et al., 2023,
    Zucchet and Orvieto, 2024".
    """
    style, _ = _pybtex_plain()
    return list(style.sort(list(entries)))


def reference_line(entry) -> str:
    """One entry of the reference list, in pybtex's plain style, as Markdown."""
    style, backend = _pybtex_plain()
    formatted = style.format_entry(entry.key, entry)
    text = " ".join(formatted.text.render(backend).split())
    # pybtex escapes every punctuation mark; inside a list item only these need it.
    return re.sub(r"\\([.()\-:!?'\"/,;=])", r"\1", text)


# --------------------------------------------------------------------------- rendering


class Renderer:
    """Renders the markdown of one page of ``book`` (``kind``: reader or student)."""

    def __init__(self, book: Book, docname: str, kind: str = "reader"):
        if kind not in ("reader", "student"):
            raise ValueError(f"kind must be 'reader' or 'student', got {kind!r}")
        if docname not in book.pages:
            raise PortableError(f"{docname} is not a page of the book")
        self.book, self.docname, self.kind = book, docname, kind
        self.page = book.pages[docname]
        self.cited: list[str] = []
        self.headings = 0            # headings seen (to give each its number, in order)
        self.level = 1               # the level of the last heading of the page rendered
        self.exercise_level = 0      # the level of the last exercise heading (0: none yet)
        self.stats = {"directives": 0, "references": 0, "citations": 0, "solutions": 0, "figures": 0}

    # -- references

    def target(self, label: str) -> Target:
        if label not in self.book.labels:
            raise PortableError(f"{self.docname}: unknown label {label!r}")
        return self.book.labels[label]

    def link(self, text: str, docname: str, anchor: str = "") -> str:
        url = self.book.url(docname, anchor)
        self.stats["references"] += 1
        return f"[{text}]({url})" if url else text

    def ref_text(self, t: Target, role: str) -> str:
        if t.kind == "equation":
            return f"({t.numbered})" if role == "eq" else f"Equation ({t.numbered})"
        if t.kind == "section":
            if role == "numref" and t.number:
                return f"Section {t.numbered}"
            return self.inline(t.title)
        if t.kind == "solution":
            return "Solution to " + self.ref_text(self.target(t.exercise), "ref")
        if t.kind == "figure":
            # {numref} and {prf:ref}-style references give the number; {ref} the caption, as Sphinx does
            if role == "ref" or not t.number:
                return self.inline(t.title)
            return f"Figure {t.numbered}"
        if t.kind == "target":
            raise PortableError(f"{self.docname}: a reference to {t.label!r} needs explicit text "
                                "(it labels no heading)")
        name = t.kind.capitalize()
        if t.number:
            return f"{name} {t.numbered}"
        return self.inline(t.title) if t.title else name

    def reference(self, role: str, content: str) -> str:
        text, label = None, content.strip()
        if m := EXPLICIT.match(content.strip()):
            text, label = m.group("text"), m.group("target").strip()
        if role == "doc":
            here = posixpath.dirname(self.docname)
            docname = posixpath.normpath(label[1:] if label.startswith("/") else posixpath.join(here, label))
            docname = Book._docname(docname)
            if docname not in self.book.pages:
                raise PortableError(f"{self.docname}: {{doc}} to an unknown page {label!r}")
            page = self.book.pages[docname]
            return self.link(self.inline(text) if text else self.inline(page.title), docname)
        t = self.target(label)
        if role == "numref" and text:
            text = text.replace("%s", t.numbered).replace("{number}", t.numbered)
            text = text.replace("{name}", t.title)
        shown = self.inline(text) if text else self.ref_text(t, role)
        return self.link(shown, t.docname, t.anchor)

    def cite(self, role: str, content: str) -> str:
        bib = self.book.bibliography()
        keys = [k.strip() for k in content.split(",") if k.strip()]
        for key in keys:
            if key not in bib:
                raise PortableError(f"{self.docname}: {{cite}} of {key!r}, which is not in the bibliography")
            if key not in self.cited:
                self.cited.append(key)
        self.stats["citations"] += 1
        variant = role.split(":", 1)[1] if ":" in role else "p"
        full = variant.endswith("s")
        entries = site_order([bib[k] for k in keys])
        cap = variant.startswith("c")
        core = variant[1:] if cap else variant

        def names(e) -> str:
            text = cite_names(e, full)
            return text[:1].upper() + text[1:] if cap else text

        # As the site's author_year style (sphinxcontrib-bibtex) prints them: square
        # brackets, works separated by commas, in the bibliography's order.
        if core in ("p", "ps"):
            return "[" + ", ".join(f"{names(e)}, {cite_year(e)}" for e in entries) + "]"
        if core in ("t", "ts"):
            return ", ".join(f"{names(e)} [{cite_year(e)}]" for e in entries)
        if core in ("author", "authors", "authorpar", "authorpars"):
            text = ", ".join(names(e) for e in entries)
            return f"[{text}]" if "par" in core else text
        if core in ("year", "yearpar"):
            text = ", ".join(cite_year(e) for e in entries)
            return f"[{text}]" if "par" in core else text
        raise PortableError(f"{self.docname}: unknown citation role {{{role}}}")

    def role(self, role: str, content: str) -> str:
        if role in ("prf:ref", "ref", "numref", "eq", "doc"):
            return self.reference(role, content)
        if role == "cite" or role.startswith("cite:"):
            return self.cite(role, content)
        if role == "math":
            return f"${content}$"
        if role in ("code", "samp", "file", "command", "kbd"):
            return f"`{content}`"
        if role in ("abbr", "term", "dfn", "sub", "sup"):
            return EXPLICIT.match(content).group("text") if EXPLICIT.match(content) else content
        raise PortableError(f"{self.docname}: the role {{{role}}} is not supported by tools/portable.py")

    def inline(self, text: str) -> str:
        def replace(m: re.Match) -> str:
            role = m.group("role")
            if role:
                if role.startswith("cite") and text[m.end():m.end() + 1] in ("(", "["):
                    raise PortableError(f"{self.docname}: a citation directly followed by "
                                        f"{text[m.end()]!r} would read as a Markdown link: "
                                        f"{m.group(0)}{text[m.end():m.end() + 10]}")
                return self.role(role, m.group("content"))
            return m.group(0)
        return INLINE.sub(replace, text)

    # -- blocks

    def render(self, text: str) -> str:
        """The rendering of one markdown cell's ``text`` (a folded solution as its own paragraphs)."""
        return "\n\n".join(text for _, text in self.render_cells(text))

    def render_cells(self, text: str) -> list[tuple[str, str]]:
        """The rendering of one markdown cell as ``(kind, markdown)`` pieces, one per cell.

        ``kind`` is ``"solution"`` for the heading of a ``{solution}`` directive (a cell of
        its own, to be folded: JupyterLab folds the cells after a heading's cell, not the
        rest of that cell), ``"solution-body"`` for the solution itself, else ``"text"``;
        empty pieces are left out.
        """
        pieces, kind, current = [], "text", []
        for line in self.render_lines(text.split("\n"), top=True):
            if line in BREAKS:
                if tidy(current).strip():
                    pieces.append((kind, tidy(current)))
                kind, current = BREAKS[line], []
            else:
                current.append(line)
        if tidy(current).strip():
            pieces.append((kind, tidy(current)))
        return pieces

    def render_lines(self, lines: list[str], top: bool = False) -> list[str]:
        out: list[str] = []
        paragraph: list[str] = []

        def flush():
            if paragraph:
                out.extend(self.inline("\n".join(paragraph)).split("\n"))
                paragraph.clear()

        for block in parse(lines):
            if block.kind == "text":
                line = block.lines[0]
                m = HEADING.match(line)
                if m and top:
                    flush()
                    out.append(self.heading(m))
                    continue
                paragraph.append(line)
                continue
            flush()
            if block.kind == "target":
                continue
            if block.kind == "code":
                out.extend(block.lines)
            elif block.kind == "math":
                out.extend(self.math(block))
            else:
                out.extend(self.directive(block, top))
        flush()
        return out

    def heading(self, m: re.Match) -> str:
        level, title = len(m.group("hashes")), m.group("text")
        sections = self.page.sections
        number = None
        # The next heading of the page with this level and title (a student version may
        # lack some, e.g. inside a removed solution; the order is the same).
        for k in range(self.headings, len(sections)):
            if sections[k][0] == level and sections[k][2] == title:
                number, self.headings = sections[k][1], k + 1
                break
        prefix = ".".join(map(str, number)) + ". " if number else ""
        self.level = level
        return "#" * level + " " + prefix + self.inline(title)

    def solution_heading(self, exercise_label: str) -> str:
        """"#### Solution to Exercise 3.1": one level below its exercise's heading."""
        level = min((self.exercise_level or min(self.level + 1, 6)) + 1, 6)
        return "#" * level + " " + self.solution_title(exercise_label)

    def math(self, block: Block) -> list[str]:
        """A display: ``$$ \\begin{equation*} ... \\tag{2.1} \\end{equation*} $$``.

        The ``equation*`` keeps jupyterlab-myst from numbering the display on its own
        (it numbers every ``$$`` display, 1, 2, ... per notebook, next to the site's
        ``\\tag``); MathJax and KaTeX render it as the bare display. A bare ``align*``,
        ``gather*`` or ``alignat*`` becomes the ``aligned`` (...) form inside it.
        """
        body = list(block.body)
        indent = block.indent
        if block.name == "bare":           # \begin{align*} ... outside $$: Jupyter needs the $$
            env = BARE_ENV.match(body[0]).group("env")
            inner = INNER_ENVIRONMENTS.get(env)
            if inner is None:
                return [indent + "$$"] + body + [indent + "$$"]
            body = list(body)
            body[0] = body[0].replace(f"\\begin{{{env}}}", f"\\begin{{{inner}}}", 1)
            head, _, tail = body[-1].rpartition(f"\\end{{{env}}}")
            body[-1] = head + f"\\end{{{inner}}}" + tail
        elif _top_level_break(body):
            body = ["\\begin{split}"] + body + ["\\end{split}"]
        if re.search(r"\\begin\{(?:%s)\*?\}" % "|".join(AMS_ENVIRONMENTS), "\n".join(body)):
            # A display environment of its own cannot go inside equation* (the detector of
            # tests/test_portable.py flags the unstarred ones).
            return [indent + "$$"] + [ln if ln.startswith(indent) else indent + ln for ln in body] + [indent + "$$"]
        if block.label:
            t = self.target(block.label)
            if t.number:
                body.append(f"\\tag{{{t.numbered}}}")
        body = ["\\begin{equation*}"] + body + ["\\end{equation*}"]
        return [indent + "$$"] + [ln if ln.startswith(indent) else indent + ln for ln in body] + [indent + "$$"]

    def directive(self, block: Block, top: bool = False) -> list[str]:
        """A directive block, rendered; ``top``: it is not inside another directive."""
        name, arg, options = block.name, block.arg, block.options
        self.stats["directives"] += 1
        if "site-only" in str(options.get("class", "")).split():
            return []           # e.g. "This explorer needs a live kernel": only true on the site
        kind = name.split(":", 1)[1] if name.startswith("prf:") else name
        if name.startswith("prf:") and kind in PRF_KINDS:
            label = str(options.get("label", ""))
            t = self.book.labels.get(label) if label else None
            head = f"**{kind.capitalize()}{' ' + t.numbered if t and t.number else ''}**"
            if t is None and "nonumber" not in options:
                raise PortableError(f"{self.docname}: a {{{name}}} without a :label: cannot be numbered here")
            if arg:
                head += f" ({self.inline(arg)})"
            return _quote([head, ""] + self.render_lines(block.body))
        if name == "prf:proof":
            body = self.render_lines(block.body)
            title = f"*Proof ({self.inline(arg)}).*" if arg else "*Proof.*"
            return _proof(title, body)
        if name in ("exercise", "exercise-start"):
            label = str(options.get("label", ""))
            if not label:
                raise PortableError(f"{self.docname}: an exercise without a :label:")
            t = self.target(label)
            title = f"Exercise{' ' + t.numbered if t.number else ''}"
            tail = f" ({self.inline(arg)})" if arg else ""
            if top:
                # A heading one level below the section's, so that its solution (a level
                # lower still) can be folded under it in JupyterLab and Colab.
                self.exercise_level = min(self.level + 1, 6)
                return ["#" * self.exercise_level + " " + title + tail, ""] + self.render_lines(block.body)
            return _quote([f"**{title}**{tail}", ""] + self.render_lines(block.body))
        if name == "solution":
            if self.kind == "student":
                return []
            if not top:
                raise PortableError(f"{self.docname}: a {{solution}} inside another directive cannot "
                                    "be given a folded heading of its own")
            return ([SOLUTION_BREAK, self.solution_heading(arg), SOLUTION_BODY]
                    + self.render_lines(block.body) + [CELL_BREAK])
        if name in ("admonition", "dropdown") or name in ADMONITIONS:
            title = self.inline(arg) if arg else ADMONITIONS.get(name, "")
            if name in ADMONITIONS and arg:           # {note} Some text: the argument is the body's start
                title, body = ADMONITIONS[name], [arg, ""] + block.body
            else:
                body = block.body
            # A dropdown is a plain quote too: the reader sees its text at once (a <details>
            # block would show its math as raw TeX under jupyterlab-myst).
            return _quote(([f"**{title}**", ""] if title else []) + self.render_lines(body))
        if name == "math":
            content = ([arg] if arg else []) + block.body
            label = str(options.get("label", ""))
            return self.math(Block("math", block.lines, body=content, label=label))
        if name in ("code-block", "code", "sourcecode"):
            fence = "````" if any(ln.strip().startswith("```") for ln in block.body) else "```"
            return [fence + arg] + block.body + [fence]
        if name in ("solution-start", "solution-end"):
            raise PortableError(f"{self.docname}: {{{name}}} must be the first thing in its own cell")
        raise PortableError(f"{self.docname}: the directive {{{name}}} is not supported by tools/portable.py")

    def figure_caption(self, cell) -> str | None:
        """"**Figure 3.2.** caption" for a figure cell (None for any other cell)."""
        figure = figure_options(cell)
        if figure is None:
            return None
        t = self.book.labels.get(figure[0])
        if t is None or t.kind != "figure" or t.docname != self.docname:
            if not shows_image(cell):
                return None     # a student version's figure cell whose source drew nothing
            raise PortableError(f"{self.docname}: figure {figure[0]!r} is not numbered in the book")
        number = f" {t.numbered}" if t.number else ""
        caption = self.inline(figure[1])
        return f"**Figure{number}.** {caption}"

    def solution_title(self, exercise_label: str) -> str:
        # Without the exercise's title: the solution's heading is right below the exercise's.
        return "Solution to " + self.ref_text(self.target(exercise_label.strip()), "ref")

    def references_cell(self) -> str | None:
        """A markdown list of the works cited on the page (None if none)."""
        if not self.cited:
            return None
        bib = self.book.bibliography()
        entries = site_order([bib[k] for k in self.cited])
        labels = [f"{cite_names(e)}, {cite_year(e)}" for e in entries]
        # Two works that would read alike ("Gu et al., 2022") name all their authors, as {cite:ps} does.
        labels = [f"{cite_names(e, full=True)}, {cite_year(e)}" if labels.count(label) > 1 else label
                  for e, label in zip(entries, labels)]
        return "\n".join(f"- **[{label}]** {reference_line(e)}" for e, label in zip(entries, labels))


def _top_level_break(body: list[str]) -> bool:
    """Whether display math has a ``\\\\`` outside every environment (MyST wraps it in split)."""
    depth = 0
    for token in re.finditer(r"\\begin\{[^}]*\}|\\end\{[^}]*\}|\\\\", "\n".join(body)):
        s = token.group(0)
        if s.startswith("\\begin"):
            depth += 1
        elif s.startswith("\\end"):
            depth -= 1
        elif depth == 0:
            return True
    return False


def _strip_tex_comment(line: str) -> str:
    m = re.search(r"(?<!\\)%", line)
    return line[:m.start()] if m else line


def _math_safe(lines: list[str]) -> list[str]:
    """Lines in which no math span crosses a line break.

    In a quote block every line starts with ``>``; a front end that cuts math out of
    the text before parsing Markdown (JupyterLab does) would put those ``>`` inside
    the formula. So display math is joined onto one line, and a line that leaves an
    inline ``$`` open is joined with the next one.
    """
    out, i, n = [], 0, len(lines)
    fence = None
    while i < n:
        line = lines[i]
        stripped = line.strip()
        if fence:
            out.append(line)
            if closes(line, fence):
                fence = None
            i += 1
            continue
        if m := CODE_FENCE.match(line):
            fence = m.group("fence")
            out.append(line)
            i += 1
            continue
        if line.startswith("    ") and (not out or not out[-1].strip() or out[-1].startswith("    ")):
            out.append(line)        # an indented code block
            i += 1
            continue
        if stripped.startswith("$$") and stripped.count("$$") == 1:
            j = i + 1
            while j < n and "$$" not in lines[j]:
                j += 1
            parts = [_strip_tex_comment(ln).strip() for ln in lines[i:j + 1]]
            indent = line[:len(line) - len(line.lstrip())]
            out.append(indent + " ".join(p for p in parts if p))
            i = j + 1
            continue
        joined = line
        while _open_dollar(joined) and i + 1 < n and lines[i + 1].strip():
            i += 1
            joined = joined.rstrip() + " " + lines[i].strip()
        out.append(joined)
        i += 1
    return out


def _open_dollar(line: str) -> bool:
    """Whether ``line`` leaves an inline ``$...$`` open (code spans and ``\\$`` ignored)."""
    text = re.sub(r"(`+).*?\1", "", line)
    text = text.replace("\\$", "").replace("$$", "")
    return text.count("$") % 2 == 1


def _quote(lines: list[str]) -> list[str]:
    return [("> " + ln) if ln.strip() else ">" for ln in _math_safe(lines)]


def _proof(title: str, body: list[str]) -> list[str]:
    """``*Proof.* ... ∎``: the title starts the first paragraph, the ∎ ends the last one."""
    body = list(body)
    while body and not body[-1].strip():
        body.pop()
    plain = re.compile(r"^(?![ \t]*(?:[-*+]\s|\d+[.)]\s|\$\$|>|<|#|```|~~~|\|))\S")
    if body and plain.match(body[0]):
        body[0] = f"{title} {body[0]}"
    else:
        body = [title, ""] + body
    if body and plain.match(body[-1]) and not body[-1].startswith("    "):
        body[-1] = body[-1] + " ∎"
    else:
        body += ["", "∎"]
    return body


# --------------------------------------------------------------------------- notebooks

KEPT_METADATA = ("kernelspec", "language_info")



def render_notebook(nb, docname: str, book: Book, kind: str = "reader"):
    """The portable rendering of notebook ``nb`` (page ``docname`` of ``book``); ``nb`` is not changed.

    Each solution gets a heading one level below its exercise's ("#### Solution to
    Exercise 3.1"), alone in a markdown cell that starts folded (the solution follows it
    in cells of its own: a fold hides the cells after the heading's cell): JupyterLab's
    ``jp-MarkdownHeadingCollapsed`` on the cell, Colab's ``collapsed_sections`` (the
    cells' ``metadata.id``) in the notebook's metadata. A folded heading hides the cells
    after it up to the next heading of its level or higher, so what follows a solution
    must start with such a heading (the next exercise, a section), or this raises.

    ``kind="student"``: ``nb`` should be a student version (tools/make_assignments.py);
    any solution still in it is dropped.
    """
    renderer = Renderer(book, docname, kind)
    out = nbformat.v4.new_notebook()
    out.nbformat, out.nbformat_minor = nb.get("nbformat", 4), nb.get("nbformat_minor", 5)
    out.metadata = {k: copy.deepcopy(v) for k, v in nb.get("metadata", {}).items() if k in KEPT_METADATA}
    if kind == "reader" and "widgets" in nb.get("metadata", {}):
        out.metadata["widgets"] = copy.deepcopy(nb.metadata["widgets"])
    cells, folded_ids = [], []
    folded = None         # (level, title) of the solution whose fold is open
    titled = False

    def fold(cell, title: str):
        nonlocal folded
        cell.metadata[COLLAPSED] = True
        cell.metadata["id"] = cell.id           # Colab names cells by metadata.id
        folded_ids.append(cell.id)
        folded = (heading_levels(cell.source)[0], title)
        renderer.stats["solutions"] += 1

    def inside_fold(cell, index: int):
        """``cell`` is part of the open solution: a heading of its level or higher would end the fold."""
        if folded and any(h <= folded[0] for h in heading_levels(cell.source)):
            raise PortableError(f"{docname}, cell {index}: a heading inside the {folded[1]} would end its fold")

    def after_solution(cell, index: int):
        """``cell`` comes after a solution: it must end the solution's fold with a heading."""
        nonlocal folded
        if folded is None:
            return
        level, title = folded
        heads = heading_levels(cell.source) if cell.cell_type == "markdown" else []
        if not any(h <= level for h in heads):
            raise PortableError(f"{docname}, cell {index}: it follows the {title} and would be folded "
                                f"into it: start it with a heading of level {level} or higher "
                                "(an exercise, a section)")
        folded = None

    def with_caption(cell):
        """``cell``, and after a figure cell a markdown cell with the figure's number and caption."""
        caption = renderer.figure_caption(cell)
        if caption is None:
            return [cell]
        note = nbformat.v4.new_markdown_cell(caption)
        note.id = f"{cell.id}-caption"[:64]
        renderer.stats["figures"] += 1
        return [cell, note]

    for placed in gated_cells(nb.cells, docname, PortableError):
        index, cell = placed.index, copy.deepcopy(placed.cell)
        if placed.role == "end":
            continue
        if cell.cell_type != "markdown":
            if placed.role == "outside":
                after_solution(cell, index)
                cells.extend(with_caption(cell))
            elif kind == "reader":
                cells.extend(with_caption(cell))
            continue
        if placed.role == "start":
            if kind == "student":
                continue
            if "{solution}" in placed.rest:
                raise PortableError(f"{docname}, cell {index}: a {{solution}} inside a gated solution")
            head = nbformat.v4.new_markdown_cell(renderer.solution_heading(placed.label))
            head.id = f"{cell.id}-solution"[:64]
            after_solution(head, index)
            fold(head, renderer.solution_title(placed.label))
            cells.append(head)
            cell.source = renderer.render(placed.rest)
            inside_fold(cell, index)
            if cell.source.strip() or cell.get("attachments"):
                cells.append(cell)
            continue
        if placed.role == "inside":
            if kind == "reader":
                cell.source = renderer.render(cell.source)
                inside_fold(cell, index)
                if cell.source.strip() or cell.get("attachments"):
                    cells.append(cell)
            continue
        pieces = renderer.render_cells(cell.source)
        if not pieces and cell.get("attachments"):
            pieces = [("text", "")]
        for k, (piece, text) in enumerate(pieces):
            if k:
                new = nbformat.v4.new_markdown_cell(text)
                new.id = f"{cell.id}-{k}"[:64]
            else:
                new, new.source = cell, text
            if piece == "solution":
                after_solution(new, index)
                fold(new, new.source.split("\n", 1)[0].lstrip("# "))
                cells.append(new)
                continue
            if piece == "solution-body":
                inside_fold(new, index)
                cells.append(new)
                continue
            after_solution(new, index)
            if not titled and re.match(r"^# ", new.source, re.M):
                new.source = _with_origin(new.source, renderer, kind)
                titled = True
            cells.append(new)
    references = renderer.references_cell()
    if references:
        last_heading = [s for s in renderer.page.sections if s[0] > 1][-1:] or [(0, None, "")]
        if last_heading[0][2].strip().lower() == "references":
            text = "Works cited in this chapter:\n\n" + references
        else:
            text = "## References\n\n" + references
        cell = nbformat.v4.new_markdown_cell(text)
        cell.id = "portable-references"
        after_solution(cell, len(nb.cells))
        cells.append(cell)
    out.cells = cells
    if folded_ids:
        out.metadata["colab"] = {"collapsed_sections": folded_ids}
    out.metadata["portable"] = {"source": renderer.page.path.relative_to(book.root).as_posix(),
                                "kind": kind}
    return out, renderer.stats


def _with_origin(source: str, renderer: Renderer, kind: str) -> str:
    """The title cell with one line saying where the notebook comes from, after the h1."""
    book, page = renderer.book, renderer.page
    where = f"Chapter {page.number[0]} of " if page.number else ""
    home = book.url(book.root_doc)
    name = f"[{book.title}]({home})" if home else book.title
    here = book.url(page.docname)
    line = f"*{where}{name}"
    if here:
        line += f"; [this chapter on the site]({here})"
    line += ". "
    if kind == "student":
        line += ("Student version: the solutions are removed, and each exercise is followed by a "
                 "code cell for your work (an auto-checked exercise's cell holds the stub to "
                 "complete and the call that checks it). ")
    elif renderer.page.exercises:
        line += ("Each solution is folded under its heading below its exercise "
                 "(in JupyterLab and Colab, click the heading's arrow to open it). ")
    line += "Numbers of theorems, exercises and equations are the site's.*"
    lines = source.split("\n")
    k = next(i for i, ln in enumerate(lines) if ln.startswith("# "))
    return "\n".join(lines[:k + 1] + ["", line] + lines[k + 1:])


def student_version(nb, docname: str, book: Book):
    """The portable student notebook of chapter notebook ``nb`` (its student version: tools/bookkit/student.py)."""
    student, _ = _student.student_notebook(nb, where=docname, numbers=exercise_numbers(book))
    return render_notebook(student, docname, book, kind="student")[0]


def portable_notebook(path: Path, book: Book | None = None, kind: str = "reader"):
    """The portable rendering of the chapter notebook at ``path`` (reader or student version)."""
    path = Path(path)
    book = book or Book(ROOT)
    docname = book.docname_of(path)
    nb = nbformat.read(path, as_version=4)
    if kind == "student":
        return student_version(nb, docname, book)
    return render_notebook(nb, docname, book, kind)[0]


def notebook_text(nb) -> str:
    """``nb`` as the text nbformat writes (what notebooks/ holds)."""
    return nbformat.writes(nb) + "\n"


def write_all(out: Path = OUT, book: Book | None = None, kind: str = "reader") -> list[Path]:
    """Write the portable rendering of every chapter of ``book`` to ``out``; return the paths."""
    book = book or Book(ROOT)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page in book.chapters():
        nb = portable_notebook(page.path, book, kind)
        nbformat.validate(nb)
        target = out / page.path.name
        text = notebook_text(nb)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
        written.append(target)
    return written


def stale(out: Path = OUT, book: Book | None = None) -> list[str]:
    """What in ``out`` differs from a fresh rendering of the chapters (empty: up to date)."""
    book = book or Book(ROOT)
    problems = []
    expected = {page.path.name: page for page in book.chapters()}
    for name, page in expected.items():
        target = out / name
        if not target.exists():
            problems.append(f"{target.relative_to(book.root) if target.is_relative_to(book.root) else target} is missing")
        elif target.read_text() != notebook_text(portable_notebook(page.path, book)):
            problems.append(f"{target.relative_to(book.root) if target.is_relative_to(book.root) else target} "
                            f"is not the rendering of {page.path.relative_to(book.root)}")
    for extra in sorted(out.glob("*.ipynb")):
        if extra.name not in expected:
            problems.append(f"{extra.name} in {out.name}/ is not a chapter of the book")
    return problems


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog="See the module docstring for what is rendered and how.")
    parser.add_argument("notebooks", nargs="*", type=Path, help="chapter notebooks to render")
    parser.add_argument("-o", "--output", type=Path,
                        help="output file (one notebook) or folder (several); default: notebooks/")
    parser.add_argument("--all", action="store_true", help="render every chapter of _toc.yml")
    parser.add_argument("--student", action="store_true", help="render the student version (no solutions)")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if notebooks/ is not the rendering of the current chapters")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root folder")
    parser.add_argument("--time", action="store_true", help="say how long it took")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    book = Book(args.root)
    kind = "student" if args.student else "reader"
    if args.check:
        problems = stale(args.output or args.root / "notebooks", book)
        for p in problems:
            print(p)
        print("notebooks/ is up to date" if not problems else "run make portable")
        return 1 if problems else 0
    if args.all:
        written = write_all(args.output or args.root / "notebooks", book, kind)
        for path in written:
            print(f"wrote {_shown(path)}")
    elif args.notebooks:
        single = len(args.notebooks) == 1 and args.output is not None and args.output.suffix == ".ipynb"
        folder = None if single else (args.output or args.root / "notebooks")
        for path in args.notebooks:
            nb = portable_notebook(path, book, kind)
            nbformat.validate(nb)
            target = args.output if single else folder / Path(path).name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(notebook_text(nb))
            print(f"wrote {_shown(target)}")
    else:
        parser.error("name notebooks, or use --all or --check")
    if args.time:
        print(f"[{time.perf_counter() - start:.2f} s]")
    return 0


def _shown(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
