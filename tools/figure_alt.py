#!/usr/bin/env python3
"""Alt text for the chapters' figures, from the "What to notice" the reader sees.

Usage: python tools/figure_alt.py [--check] [NOTEBOOK ...]   (default: chapters/*.ipynb)

Every figure of a chapter is drawn by a code cell (it calls ``plt.show()`` or stores an
image output). The nearest markdown cell above it holds one block that starts with
``**What to notice.**``: a paragraph, or that line followed by a list. That block is the
single source. This tool turns it into plain text (Markdown emphasis and code marks
dropped, the little TeX it may contain written in Unicode: ``$\\rho^L$`` -> ``ρ^L``) and
stores it in the figure cell's metadata as ``mystnb.image.alt``, which myst-nb writes
into the ``alt`` attribute of the figure's ``<img>`` on the site.

Without ``--check`` it updates the notebooks (their outputs are untouched). With
``--check`` it changes nothing and exits 1 if an alt text is missing or differs from
its source (tests/test_figures_a11y.py runs the same check). A "What to notice" block
that is missing, appears twice, or holds markup that has no plain-text form (a
cross-reference role, an unknown TeX command) is an error naming the cell.
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parent.parent
MARKER = "**What to notice.**"

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


def _source(cell) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def is_figure_cell(cell) -> bool:
    """A code cell that draws a figure: it calls ``plt.show()`` or has a stored image output."""
    if cell.get("cell_type") != "code":
        return False
    if re.search(r"\bplt\.show\(\)", _source(cell)):
        return True
    return any(mime.startswith("image/") for out in cell.get("outputs", []) for mime in out.get("data", {}))


def notice_block(markdown: str, where: str = "cell") -> str:
    """The ``**What to notice.**`` block of a markdown cell, without the marker (Markdown source).

    The block is the rest of the marker's paragraph, or, when the marker stands alone
    on its line, the list that follows it (up to the first line after a blank line that
    is neither a list item nor indented).
    """
    lines = markdown.split("\n")
    starts = [i for i, line in enumerate(lines) if line.lstrip().startswith(MARKER)]
    if len(starts) != 1:
        raise AltTextError(f"{where}: expected one line starting with {MARKER!r} in the markdown cell "
                           f"above the figure, found {len(starts)}")
    first = lines[starts[0]].lstrip()[len(MARKER):].strip()
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
        raise AltTextError(f"{where}: the {MARKER!r} block is empty")
    return text


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


def alt_texts(nb, name: str = "notebook") -> dict[int, str]:
    """``{index of a figure cell: its alt text}`` from the notebook's "What to notice" blocks."""
    found = {}
    for index, cell in enumerate(nb["cells"]):
        if not is_figure_cell(cell):
            continue
        above = next((j for j in range(index - 1, -1, -1) if nb["cells"][j]["cell_type"] == "markdown"), None)
        where = f"{name}, figure cell {index}"
        if above is None:
            raise AltTextError(f"{where}: no markdown cell above it")
        found[index] = plain_text(notice_block(_source(nb["cells"][above]), where), where)
    return found


def stored_alt(cell) -> str | None:
    """The alt text stored in a cell's metadata, or None."""
    return cell.get("metadata", {}).get("mystnb", {}).get("image", {}).get("alt")


def drift(nb, name: str = "notebook") -> list[str]:
    """What is wrong with the stored alt texts of ``nb`` (empty when all agree with their source)."""
    problems = []
    for index, text in alt_texts(nb, name).items():
        stored = stored_alt(nb["cells"][index])
        if stored is None:
            problems.append(f"{name}, figure cell {index}: no alt text (mystnb.image.alt)")
        elif stored != text:
            problems.append(f"{name}, figure cell {index}: alt text differs from its 'What to notice'")
    return problems


def update(nb, name: str = "notebook") -> int:
    """Store each figure's alt text in its cell metadata; returns how many changed."""
    changed = 0
    for index, text in alt_texts(nb, name).items():
        cell = nb["cells"][index]
        if stored_alt(cell) != text:
            cell["metadata"].setdefault("mystnb", {}).setdefault("image", {})["alt"] = text
            changed += 1
    return changed


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 on a missing or stale alt text")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "chapters").glob("*.ipynb"))
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
                print(f"{path.name}: {len(alt_texts(nb, path.name))} figures, {changed} alt texts updated")
        except AltTextError as exc:
            print(f"error: {exc}", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
