#!/usr/bin/env python3
"""Alt text, caption and label of the chapters' figures, from the "What to notice" the reader sees.

Usage: python tools/figure_alt.py [--check] [NOTEBOOK ...]   (default: chapters/*.ipynb)

Every figure of a chapter is drawn by a code cell (it calls ``plt.show()`` or stores an
image output). The nearest markdown cell above it holds one block that starts with
``**What to notice.**``: a paragraph, or that line followed by a list. That block is the
single source, and its first sentence is a one-line summary of the figure. From it this
tool writes three entries of the figure cell's metadata (myst-nb reads them):

* ``mystnb.image.alt``: the whole block as plain text (Markdown emphasis and code marks
  dropped, the little TeX it may contain written in Unicode: ``$\\rho^L$`` -> ``ρ^L``),
  the ``alt`` of the figure's ``<img>`` on the site;
* ``mystnb.figure.caption``: the block's first sentence, as Markdown on one line (its
  math stays math). myst-nb wraps the cell's image in a figure with this caption, which
  Sphinx numbers per chapter like the theorems: "Figure 3.2" on the site, in the PDF
  (the LaTeX writer's numbered ``\\caption``) and, through tools/portable.py, in the
  portable notebooks;
* ``mystnb.figure.name``: the figure's label, ``fig-<chapter>-<slug>`` (``fig-03-heads-
  trained-gradient-descent``), made once from the chapter's number and the caption's
  first words and then kept, so that ``{numref}`fig-03-...``` in the text stays valid
  when the caption is reworded. A label written by hand is kept too, if it is
  well formed and unique.

Without ``--check`` it updates the notebooks' cell metadata (sources and outputs are
untouched). With ``--check`` it changes nothing and exits 1 if an alt text or caption is
missing or differs from its source, or a label is missing, malformed or used twice
(tests/test_figures_a11y.py runs the same check). A "What to notice" block that is
missing, appears twice, or holds markup that has no plain-text form (a cross-reference
role, an unknown TeX command) is an error naming the cell, and so is a figure cell
whose outputs hold more or fewer than one image (one caption, one number). Both modes
print a note, not an error, for a caption longer than CAPTION_NOTE characters.

What a figure cell is, where its "What to notice" block is and what the block holds are
the book's model (tools/bookkit/core.py: ``draws_figure``, ``figure_notice``,
``notice_block``, ``figure_metadata``); this module turns the block into the three entries.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

from bookkit import core

ROOT = Path(__file__).resolve().parent.parent
MARKER = core.NOTICE
#: A figure label: fig-<chapter>-<slug>, lower-case words joined by hyphens.
NAME = re.compile(r"^fig-[a-z0-9]+(?:-[a-z0-9]+)+$")
#: Captions longer than this (in characters of Markdown) are reported as a note: a caption
#: should read as one line under the figure.
CAPTION_NOTE = 200
#: Words that end in a period without ending a sentence.
_ABBREVIATIONS = ("e.g.", "i.e.", "cf.", "vs.", "etc.", "al.", "Fig.", "Figs.", "Eq.", "Eqs.",
                  "resp.", "approx.", "No.", "Sec.", "Ch.")
#: Words left out of a label's slug.
_SLUG_STOPWORDS = {"a", "an", "the", "of", "and", "or", "to", "in", "on", "at", "for", "by", "with",
                   "its", "it", "is", "are", "be", "from", "as", "each", "every", "that", "than",
                   "this", "these", "their", "both", "same", "which", "what", "how", "s", "one",
                   "against", "across", "per", "into", "over", "left", "right", "top", "bottom"}

# TeX commands a "What to notice" block may use, and their plain-text form.
_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "Delta": "Δ", "epsilon": "ε",
    "varepsilon": "ε", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "pi": "π",
    "rho": "ρ", "sigma": "σ", "Sigma": "Σ", "phi": "φ", "omega": "ω",
    "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "approx": "≈", "sim": "~",
    "times": "×", "cdot": "·", "to": "→", "infty": "∞", "in": "∈", "pm": "±", "|": "‖",
    "dots": "…", "ldots": "…", "log": "log", "min": "min", "max": "max", "sum": "Σ",
    ",": " ", ";": " ", " ": " ", "quad": " ",
}


class AltTextError(ValueError):
    """A figure whose "What to notice" is missing, ambiguous or not expressible as plain text."""


_source = core.cell_source
is_figure_cell = core.draws_figure      # a code cell that calls plt.show() or has a stored image output


def notice_block(markdown: str, where: str = "cell") -> str:
    """The ``**What to notice.**`` block of a markdown cell, without the marker (:func:`bookkit.core.notice_block`)."""
    return core.notice_block(markdown, where, AltTextError)


def _group(text: str) -> str:
    """``text`` as a subscript, superscript or fraction part: in parentheses unless one word."""
    return text if text.isalnum() else f"({text})"


def _tex(math: str, where: str) -> str:
    """Plain text for the small TeX subset a "What to notice" block may use."""
    out = math
    for _ in range(4):  # nested \frac / \operatorname / \mathrm, innermost first
        out = re.sub(r"\\(?:operatorname|mathrm|text|mathbf|mathcal)\{([^{}]*)\}\s*", r"\1 ", out)
        out = re.sub(r"\\frac\{([^{}]*)\}\{([^{}]*)\}", lambda m: f"{_group(m[1])}/{_group(m[2])}", out)
        out = re.sub(r"\\sqrt\{([^{}]*)\}", lambda m: f"√{_group(m[1])}", out)

    def symbol(m):
        name = m.group(1)
        if name not in _SYMBOLS:
            raise AltTextError(f"{where}: TeX command \\{name} has no plain-text form here; "
                               f"write it in words or add it to tools/figure_alt.py")
        return _SYMBOLS[name]

    out = re.sub(r"\\([A-Za-z]+)", symbol, out)
    out = re.sub(r"\\([|,; ])", symbol, out)
    out = re.sub(r"([_^])\{([^{}]*)\}", lambda m: m[1] + _group(m[2]), out)
    return re.sub(r"\s*([≤≥≠≈→∈×·±])\s*", r"\1", out)  # relations unspaced, as in H=k


def plain_text(block: str, where: str = "cell") -> str:
    """The alt text of a "What to notice" block: one line of plain text."""
    if re.search(r"\{[\w:-]+\}`", block):
        raise AltTextError(f"{where}: a role ({{ref}}, {{cite}}, ...) in the {MARKER!r} block has no "
                           "plain-text form; move it out of the block")
    items = []
    for part in re.split(r"\n\s*[-*+]\s+|^\s*[-*+]\s+", block):
        part = " ".join(part.split())
        if part:
            items.append(part if part[-1] in ".!?:;" else part + ".")
    pieces = re.split(r"(\$\$.+?\$\$|\$.+?\$)", " ".join(items))
    for k, piece in enumerate(pieces):
        if k % 2:  # math
            pieces[k] = _tex(piece.strip("$"), where)
        else:  # prose: emphasis and code marks go
            piece = re.sub(r"\*\*(.+?)\*\*|\*(.+?)\*|(?<!\w)_(.+?)_(?!\w)",
                           lambda m: m.group(1) or m.group(2) or m.group(3), piece)
            pieces[k] = piece.replace("`", "")
    text = " ".join("".join(pieces).split())
    leftover = re.search(r"[\\${}]", text)
    if leftover:
        raise AltTextError(f"{where}: markup left in the alt text at {text[max(0, leftover.start() - 30):]!r}")
    return text


def first_sentence(block: str) -> str:
    """The first sentence of a "What to notice" block, as Markdown on one line (its caption).

    A list block gives the first sentence of its first item. A sentence ends at ``.``,
    ``!`` or ``?`` followed by a space and a character that is not a lower-case letter,
    outside math (``$...$``) and code spans, and not after an abbreviation (e.g., i.e.,
    et al., ...) or a single capital initial.
    """
    text = " ".join(re.sub(r"^\s*([-*+]|\d+\.)\s+", "", block.strip()).split())
    text = re.split(r"\s(?:[-*+]|\d+\.)\s", text)[0] if re.match(r"\s*([-*+]|\d+\.)\s", block) else text
    i, n, math, code = 0, len(text), False, False
    while i < n:
        ch = text[i]
        if ch == "\\":
            i += 2
            continue
        if ch == "`" and not math:
            code = not code
        elif ch == "$" and not code:
            math = not math
        elif ch in ".!?" and not math and not code and i + 2 < n and text[i + 1] == " " \
                and not text[i + 2].islower():
            word = text[:i + 1].rsplit(" ", 1)[-1].lstrip("(")
            if word not in _ABBREVIATIONS and not re.fullmatch(r"[A-Z]\.", word):
                return text[:i + 1]
        i += 1
    return text


def figure_slug(caption: str, words: int = 4) -> str:
    """Up to ``words`` words of a caption's prose (no math), lower case, joined by hyphens."""
    prose = re.sub(r"\$[^$]*\$|`[^`]*`", " ", caption)
    prose = prose.lower().replace("\u2019", "'")
    found = [w for w in re.findall(r"[a-z0-9]+", re.sub(r"'s\b", "", prose)) if w not in _SLUG_STOPWORDS]
    return "-".join(found[:words]) or "figure"


def chapter_tag(name: str) -> str:
    """The chapter part of a figure label: the notebook's leading number (03_head_count -> 03)."""
    stem = Path(name).stem
    return core.chapter_file_number(name) or re.sub(r"[^a-z0-9]+", "", stem.lower()) or "nb"


def _notice_of(nb, index: int, name: str) -> str:
    """The "What to notice" block (Markdown) of the figure cell ``index``."""
    return core.figure_notice(nb["cells"], index, f"{name}, figure cell {index}", AltTextError)


_images = core.image_outputs


def captions(nb, name: str = "notebook") -> dict[int, str]:
    """``{index of a figure cell: its caption}``: the first sentence of its "What to notice"."""
    found = {}
    for index, cell in enumerate(nb["cells"]):
        if not is_figure_cell(cell):
            continue
        where = f"{name}, figure cell {index}"
        images = _images(cell)
        if images != 1:
            raise AltTextError(f"{where}: {images} image outputs; a captioned figure cell shows exactly one "
                               "(one caption, one number): split the cell or run it again")
        caption = first_sentence(_notice_of(nb, index, name))
        plain_text(caption, where)      # the same markup rules as the alt text
        found[index] = caption
    return found


stored_figure = core.figure_metadata      # the mystnb.figure options of a cell (empty if none)


def figure_names(nb, name: str = "notebook") -> dict[int, str]:
    """``{index of a figure cell: its label}``: the stored one, or a new ``fig-<chapter>-<slug>``."""
    tag = chapter_tag(name)
    found, used = {}, set()
    caps = captions(nb, name)
    for index in caps:                  # the labels already given are kept
        stored = stored_figure(nb["cells"][index]).get("name")
        if stored and NAME.match(str(stored)) and stored not in used:
            found[index] = str(stored)
            used.add(str(stored))
    for index, caption in caps.items():
        if index in found:
            continue
        base = f"fig-{tag}-{figure_slug(caption)}"
        label, k = base, 2
        while label in used:
            label, k = f"{base}-{k}", k + 1
        found[index] = label
        used.add(label)
    return found


def alt_texts(nb, name: str = "notebook") -> dict[int, str]:
    """``{index of a figure cell: its alt text}`` from the notebook's "What to notice" blocks."""
    found = {}
    for index, cell in enumerate(nb["cells"]):
        if not is_figure_cell(cell):
            continue
        where = f"{name}, figure cell {index}"
        found[index] = plain_text(_notice_of(nb, index, name), where)
    return found


def stored_alt(cell) -> str | None:
    """The alt text stored in a cell's metadata, or None."""
    return cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")


def drift(nb, name: str = "notebook") -> list[str]:
    """What is wrong with the stored alt texts, captions and labels of ``nb`` (empty when all agree)."""
    problems = []
    for index, text in alt_texts(nb, name).items():
        stored = stored_alt(nb["cells"][index])
        if stored is None:
            problems.append(f"{name}, figure cell {index}: no alt text (mystnb.image.alt)")
        elif stored != text:
            problems.append(f"{name}, figure cell {index}: alt text differs from its 'What to notice'")
    seen: dict[str, int] = {}
    for index, caption in captions(nb, name).items():
        figure = stored_figure(nb["cells"][index])
        where = f"{name}, figure cell {index}"
        if "caption" not in figure:
            problems.append(f"{where}: no caption (mystnb.figure.caption)")
        elif figure["caption"] != caption:
            problems.append(f"{where}: caption differs from the first sentence of its 'What to notice'")
        label = figure.get("name")
        if not label:
            problems.append(f"{where}: no label (mystnb.figure.name)")
        elif not NAME.match(str(label)):
            problems.append(f"{where}: label {label!r} is not of the form fig-<chapter>-<words>")
        elif label in seen:
            problems.append(f"{where}: label {label!r} is also the label of figure cell {seen[label]}")
        else:
            seen[label] = index
    for index, cell in enumerate(nb["cells"]):
        if stored_figure(cell) and not is_figure_cell(cell):
            problems.append(f"{name}, cell {index}: figure options (mystnb.figure) on a cell that draws no figure")
    return problems


def update(nb, name: str = "notebook") -> int:
    """Store each figure's alt text, caption and label in its cell metadata; returns how many cells changed."""
    changed = set()
    for index, text in alt_texts(nb, name).items():
        cell = nb["cells"][index]
        if stored_alt(cell) != text:
            cell["metadata"].setdefault("mystnb", {}).setdefault("image", {})["alt"] = text
            changed.add(index)
    names = figure_names(nb, name)
    for index, caption in captions(nb, name).items():
        cell = nb["cells"][index]
        figure = cell["metadata"].setdefault("mystnb", {}).setdefault("figure", {})
        if figure.get("caption") != caption or figure.get("name") != names[index]:
            figure["caption"], figure["name"] = caption, names[index]
            changed.add(index)
    for index, cell in enumerate(nb["cells"]):
        mystnb = cell.get("metadata", {}).get("mystnb", {})
        if "figure" in mystnb and not is_figure_cell(cell):      # the cell no longer draws a figure
            del mystnb["figure"]
            changed.add(index)
    return len(changed)


def notes(nb, name: str = "notebook") -> list[str]:
    """Remarks that are not errors: captions too long to read as one line."""
    return [f"{name}, figure cell {index}: the caption has {len(caption)} characters (over {CAPTION_NOTE}); "
            f"its 'What to notice' should open with a one-line summary: {caption[:60]}..."
            for index, caption in captions(nb, name).items() if len(caption) > CAPTION_NOTE]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 on a missing or stale alt text, caption or label")
    args = parser.parse_args(argv)
    paths = args.notebooks or core.chapter_files(ROOT / "chapters")
    status = 0
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        try:
            if args.check:
                problems = drift(nb, path.name)
                for problem in problems:
                    print(problem)
                status |= bool(problems)
            else:
                changed = update(nb, path.name)
                if changed:
                    nbformat.write(nb, path)
                labels = ", ".join(figure_names(nb, path.name).values())
                print(f"{path.name}: {len(alt_texts(nb, path.name))} figures ({labels}), "
                      f"{changed} updated")
            for note in notes(nb, path.name):
                print(f"note: {note}")
        except AltTextError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
