"""Sphinx extension: the chapters' figures are numbered and captioned, "Figure 3.2".

tools/figure_alt.py writes each figure cell's myst-nb options from the "What to notice"
block above it: ``mystnb.figure.caption`` (its first sentence) and ``mystnb.figure.name``
(a label such as ``fig-03-heads-trained-gradient-descent``, for ``{numref}``). myst-nb
then wraps the cell's output in a figure with that caption and label, and Sphinx numbers
it per chapter, as it numbers the theorems. This extension makes that come out right:

* figures are numbered (``numfig``) and called "Figure %s" (Sphinx's default is "Fig.
  %s"), on the site (``<figcaption>`` "Figure 3.2 ...") and in the PDF (the LaTeX writer
  sets ``\\figurename`` from it), unless ``numfig_format`` in _config.yml names figures
  otherwise;
* myst-nb wraps *every* display output of a cell with figure options in a figure of its
  own, with the same caption and label. A figure cell that also displays a table (a
  Markdown output before or after its image) would give two numbered figures and a
  "Duplicate explicit target name" warning, which fails the ``-W`` build. Here only an
  output that holds an image becomes the figure; the others are shown as they are.
  (myst-nb 1.x: its ``create_figure_context``, which ``myst_nb.sphinx_`` looks up at
  each output, is replaced by a wrapper that calls it for image outputs only. If
  myst-nb's layout changes, the build says so.)

book/_ext/pdf_book.py loads it, so it works with the _config.yml of today; it may also
be listed in ``local_extensions`` itself.
"""
from __future__ import annotations

from contextlib import contextmanager

from docutils import nodes
from sphinx.util import logging

logger = logging.getLogger(__name__)

FIGURE_FORMAT = "Figure %s"
SPHINX_DEFAULT = "Fig. %s"


def has_image(node: nodes.Element) -> bool:
    """Whether a (myst-nb) output holds an image: a mime container ``image/...`` or an image node."""
    for sub in node.findall(nodes.Element):
        if isinstance(sub, nodes.image) or str(sub.get("mime_type", "")).startswith("image/"):
            return True
    return False


def images_only(original):
    """myst-nb's figure context, applied only to the outputs that hold an image."""

    @contextmanager
    def figure_context(renderer, figure_options, line):
        if not isinstance(figure_options, dict) or not figure_options:
            with original(renderer, figure_options, line):
                yield
            return
        holder = nodes.Element()
        with renderer.current_node_context(holder):
            yield
        if has_image(holder):
            with original(renderer, figure_options, line):
                renderer.current_node.extend(holder.children)
        else:
            renderer.current_node.extend(holder.children)

    figure_context.book_figures = True
    return figure_context


def patch_myst_nb() -> bool:
    """Install the wrapper in myst_nb.sphinx_ (once); False if myst-nb's layout is not the known one."""
    try:
        import myst_nb.sphinx_ as nb_sphinx
    except ImportError:
        return False
    original = getattr(nb_sphinx, "create_figure_context", None)
    if original is None:
        return False
    if not getattr(original, "book_figures", False):
        nb_sphinx.create_figure_context = images_only(original)
    return True


def name_figures(app, config):
    """Number the figures and call them "Figure" (after Sphinx fills in numfig_format's defaults)."""
    config.numfig = True
    formats = dict(config.numfig_format or {})
    if formats.get("figure", SPHINX_DEFAULT) == SPHINX_DEFAULT:
        formats["figure"] = FIGURE_FORMAT
        config.numfig_format = formats


def setup(app):
    if not patch_myst_nb():
        logger.warning("book_figures: myst_nb.sphinx_.create_figure_context not found; a figure cell "
                       "that also displays a table gets two figures (see book/_ext/book_figures.py)")
    # Sphinx's init_numfig_format runs at priority 800 and replaces numfig_format by its
    # defaults updated with _config.yml's: name the figures after it
    app.connect("config-inited", name_figures, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
