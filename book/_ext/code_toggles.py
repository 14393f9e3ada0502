"""Folded code cells say what they fold, and say it to every reader (issue 25).

A code cell tagged ``hide-input`` (Jupyter Book's tag; ``hide-output`` and ``hide-cell``
likewise) is shown by myst-nb as a ``<details>`` block whose summary reads "Show code
cell source" and carries ``aria-label="Toggle hidden content"``, so a screen reader
hears neither what is folded nor whether it is open. Here:

* the label says what the cell holds: "Show the plotting code" / "Hide the plotting
  code" when the cell draws a figure (its output holds an image), "Show the code" /
  "Hide the code" otherwise; "Show the output" for a folded output, "Show the cell" for
  a folded cell. A cell's own ``mystnb: code_prompt_show`` / ``code_prompt_hide``
  metadata, or the ``nb_code_prompt_show`` / ``nb_code_prompt_hide`` options, still win;
* the summary's accessible name is its visible text (no ``aria-label``); ``<details>``
  tells assistive technology whether it is open, and the summary takes the keyboard
  focus and opens with Enter or Space, as any ``<details>`` does.

A code cell that draws a figure (an image among its outputs) is folded on the site even
without a tag, so that a figure's "What to notice" sits next to it and not after forty
lines of plotting code (issue 25): its input is folded as ``hide-input`` would fold it,
behind "Show the plotting code"; its outputs (the figure, any printed numbers) stay in
view. A cell tagged ``show-input`` is left open, and ``book_fold_figure_code = False``
turns this off.

Only the site is concerned: the notebooks keep their tags, so nbval, the portable
notebooks and the PDF are unaffected.
"""
from __future__ import annotations

from html import escape

from docutils import nodes
from sphinx.transforms.post_transforms import SphinxPostTransform

try:
    from myst_nb.sphinx_ import HideCodeCellNode
except ImportError:  # pragma: no cover - myst-nb is part of Jupyter Book
    HideCodeCellNode = None

MYSTNB_DEFAULT_SHOW = "Show code cell "   # myst-nb's nb_code_prompt_show, "{type}" filled in
MYSTNB_DEFAULT_HIDE = "Hide code cell "

LABELS = {  # the part folded -> (show, hide)
    "plotting": ("Show the plotting code", "Hide the plotting code"),
    "code": ("Show the code", "Hide the code"),
    "output": ("Show the output", "Hide the output"),
    "cell": ("Show the cell", "Hide the cell"),
}


def draws_a_figure(cell: nodes.Element) -> bool:
    return any(True for _ in cell.findall(nodes.image))


def what_it_folds(toggle: nodes.Element, cell: nodes.Element) -> str:
    classes = toggle.get("classes", [])
    has_input = any(c.get("nb_element") == "cell_code_source" for c in toggle.findall(nodes.container))
    if "above-input" in classes:
        has_output = any(c.get("nb_element") == "cell_code_output" for c in toggle.findall(nodes.container))
        if has_output:
            return "cell"
        return "plotting" if draws_a_figure(cell) else "code"
    if has_input:
        return "cell"
    return "output"


class FoldFigureCode(SphinxPostTransform):
    """Fold the input of every code cell that draws a figure, as ``hide-input`` does."""
    default_priority = 198  # before myst-nb's HideInputCells (199), which makes the toggles
    formats = ("html",)

    def run(self, **kwargs):
        if not self.config.book_fold_figure_code:
            return
        for cell in self.document.findall(nodes.container):
            if (cell.get("nb_element") != "cell_code" or cell.get("hide_mode") or not cell.children
                    or cell.children[0].get("nb_element") != "cell_code_source"
                    or "tag_show-input" in cell.get("classes", []) or not draws_a_figure(cell)):
                continue
            cell["hide_mode"] = "input"
            # myst-nb's own prompts (the book's, if it sets nb_code_prompt_*): relabelled
            # below unless the book chose its own words
            cell["prompt_show"] = getattr(self.config, "nb_code_prompt_show", MYSTNB_DEFAULT_SHOW + "{type}")
            cell["prompt_hide"] = getattr(self.config, "nb_code_prompt_hide", MYSTNB_DEFAULT_HIDE + "{type}")


class LabelCodeToggles(SphinxPostTransform):
    default_priority = 200  # after myst-nb's HideInputCells (199), which makes the toggles
    formats = ("html",)

    def run(self, **kwargs):
        if HideCodeCellNode is None:
            return
        for toggle in self.document.findall(HideCodeCellNode):
            show, hide = toggle.get("prompt_show", ""), toggle.get("prompt_hide", "")
            if not (show.startswith(MYSTNB_DEFAULT_SHOW) and hide.startswith(MYSTNB_DEFAULT_HIDE)):
                continue  # a label chosen for this cell or for the book
            cell = toggle.parent
            while cell is not None and not (isinstance(cell, nodes.container)
                                            and cell.get("nb_element") == "cell_code"):
                cell = cell.parent
            toggle["prompt_show"], toggle["prompt_hide"] = LABELS[what_it_folds(toggle, cell or toggle)]
            toggle["classes"].append("book-code-toggle")


def visit_toggle(self, node):
    classes = " ".join(node["classes"])
    self.body.append(f'<details class="admonition hide {classes}">\n<summary>\n')
    self.body.append(f'<p class="collapsed admonition-title">{escape(node["prompt_show"])}</p>\n')
    self.body.append(f'<p class="expanded admonition-title">{escape(node["prompt_hide"])}</p>\n')
    self.body.append("</summary>\n")


def depart_toggle(self, node):
    self.body.append("</details>\n")


def register(app):
    if HideCodeCellNode is not None:
        app.add_node(HideCodeCellNode, override=True, html=(visit_toggle, depart_toggle))


def setup(app):
    app.add_config_value("book_fold_figure_code", True, "env")
    app.add_post_transform(FoldFigureCode)
    app.add_post_transform(LabelCodeToggles)
    # after myst-nb has registered its own HTML visitor for the node
    app.connect("builder-inited", register)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
