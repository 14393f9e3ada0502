"""Sphinx extension for the book's PDF (``make pdf``, tools/make_pdf.py): LaTeX builder only.

* Solutions leave the text: each chapter's ``{solution}`` blocks move, in order, to a
  section "Solutions to the exercises of Chapter N" at the end of that chapter, so a
  printed exercise does not show its answer under it, and each exercise ends in a line
  that says where it is: "Solution: end of Chapter 3, p. 112" (the page a ``\\pageref``
  to a label at the start of the solution, a link). With ``hide_solutions = True``
  (sphinx-exercise's own option, set for the student edition) they are gone already,
  and so is that line.
* Explorer cells (a cell whose code is only ``something_explorer()``) are dropped: a
  widget needs a live kernel, and the static figure drawn just before each explorer is
  what a printed page can show. Notes with the class ``site-only`` go too, and so does the
  code that builds the tables of the pages that are not chapters (glue, the catalogue).

For the HTML builder it only links the PDFs that ``make pdf`` built from the introduction
(the marker comment in book/intro.md) and copies them into the site, the chapters' own
PDFs (``make pdf-chapters``) next to their pages (``chapters/03_head_count.pdf``); without
them the introduction says nothing of a PDF.

It also loads book/_ext/book_figures.py (figures numbered "Figure 3.2" and captioned).
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

from docutils import nodes
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform

EXPLORER = re.compile(r"^\s*[\w.]*explorer\(\)\s*$")
#: Code that builds a page's tables and counts (myst-nb's glue, the exercise catalogue).
PLUMBING = re.compile(r"\bglue\(|exercise_catalogue|sys\.path")


def _chapter_number(app, docname: str) -> str:
    numbers = app.env.toc_secnumbers.get(docname, {}).get("", ())
    return ".".join(map(str, numbers))


class CollectSolutions(SphinxPostTransform):
    """Move each chapter's solutions to its end; drop explorer cells and site-only notes."""

    default_priority = 900
    builders = ("latex",)

    def run(self, **kwargs):
        from sphinx_exercise.nodes import solution_end_node, solution_node, solution_start_node

        # hide_solutions (the student edition) leaves the end marker of a gated solution behind,
        # which the LaTeX writer does not know
        for kind in (solution_start_node, solution_end_node):
            for node in list(self.document.findall(kind)):
                if node.parent is not None and node in node.parent.children:
                    node.parent.remove(node)

        for node in list(self.document.findall(nodes.container)):
            if "cell" not in node.get("classes", []):
                continue
            code = [b.astext() for b in node.findall(nodes.literal_block)]
            if code and EXPLORER.match(code[0]):
                node.parent.remove(node)
        for node in list(self.document.findall(nodes.Admonition)):
            if "site-only" in node.get("classes", []):
                node.parent.remove(node)
        for start in list(self.document.findall(addnodes.start_of_file)):
            docname = start.get("docname", "")
            if not docname.startswith("chapters/"):
                # a page that is not a chapter (the instructors' guide) runs code only to build
                # its tables: print the tables, not the code
                for cell in list(start.findall(nodes.container)):
                    if "cell_input" in cell.get("classes", []) and cell.parent is not None \
                            and PLUMBING.search(cell.astext()):
                        cell.parent.remove(cell)
                continue
            # (a chapter's top-level nodes still have the chapter's own document as parent: Sphinx
            # moves them under start_of_file without updating it, so the search goes down from here)
            solutions = [s for s in start.findall(solution_node) if s.parent is not None]
            if not solutions:
                continue
            top = next((c for c in start.children if isinstance(c, nodes.section)), None)
            if top is None:
                continue
            number = _chapter_number(self.app, docname)
            section = nodes.section(ids=[f"solutions-{docname.replace('/', '-')}"], names=[])
            section += nodes.title("", f"Solutions to the exercises of Chapter {number}")
            exercises = _exercises(start)
            for solution in solutions:
                solution.parent.remove(solution)
                label = solution_label(solution.get("target_label", ""))
                solution.insert(1 if solution.children and isinstance(solution[0], nodes.title) else 0,
                                nodes.raw("", f"\\phantomsection\\label{{{label}}}", format="latex"))
                section += solution
                exercise = exercises.get(solution.get("target_label", ""))
                if exercise is not None:
                    exercise += solution_pointer(number, label)
            top += section


def solution_label(exercise_label: str) -> str:
    """The LaTeX label at the start of an exercise's solution."""
    return "solution-of-" + re.sub(r"[^A-Za-z0-9-]", "-", exercise_label)


def solution_pointer(chapter: str, label: str) -> nodes.raw:
    """The line that ends an exercise: "Solution: end of Chapter 3, p. 112" (a link to the solution)."""
    return nodes.raw("", "\\par\\smallskip\\noindent{\\small\\textit{Solution: end of Chapter "
                     f"{chapter}, \\hyperref[{label}]{{p.~\\pageref*{{{label}}}}}.}}}}\\par\n",
                     format="latex")


def _exercises(start) -> dict:
    """``{label: exercise node}`` of the exercises under ``start`` (numbered or not)."""
    from sphinx_exercise.nodes import exercise_enumerable_node, exercise_node

    found = {}
    for kind in (exercise_enumerable_node, exercise_node):
        for node in start.findall(kind):
            if node.get("label"):
                found[node["label"]] = node
    return found


MARKER = "<!-- pdf-download: book/_ext/pdf_book.py puts the links to the PDFs here -->"
PDFS = (("how-many-heads.pdf", "the whole book, with the solutions collected at the end of each chapter"),
        ("how-many-heads-student.pdf", "the student edition, without solutions"))


def _pdfs(app):
    """The PDFs ``make pdf`` built (in _build/pdf of the book's folder) that this site offers."""
    folder = Path(app.srcdir) / "_build" / "pdf"
    offered = PDFS[1:] if getattr(app.config, "hide_solutions", False) else PDFS
    return [(folder / name, what) for name, what in offered if (folder / name).exists()]


def _chapter_pdfs(app) -> list[tuple[Path, str, str]]:
    """``(pdf, its place on the site, chapter number)`` for the chapters' own PDFs that exist.

    The reader edition's (``03_head_count.pdf``), or the student edition's on a site without
    solutions; each goes next to its chapter's page (``chapters/03_head_count.pdf``).
    """
    folder = Path(app.srcdir) / "_build" / "pdf" / "chapters"
    suffix = "-student" if getattr(app.config, "hide_solutions", False) else ""
    found = []
    for number, docname in enumerate(_numbered_pages(Path(app.srcdir)), start=1):
        path = folder / (docname.rsplit("/", 1)[-1] + suffix + ".pdf")
        if path.exists():
            found.append((path, docname.rsplit("/", 1)[0] + "/" + path.name, str(number)))
    return found


def _numbered_pages(srcdir: Path) -> list[str]:
    """The docnames of the numbered part of _toc.yml, in order (chapter 1, 2, ...)."""
    import yaml

    toc_file = srcdir / "_toc.yml"
    if not toc_file.exists():
        return []
    toc = yaml.safe_load(toc_file.read_text(encoding="utf-8")) or {}
    return [re.sub(r"\.(ipynb|md)$", "", str(entry["file"])) for part in toc.get("parts", []) or []
            if part.get("numbered") for entry in part.get("chapters", []) or [] if "file" in entry]


def _link_pdfs(app, docname, source):
    """On the HTML site, replace the introduction's marker by links to the PDFs that exist."""
    if app.builder.format != "html" or MARKER not in source[0]:
        return
    found = _pdfs(app)
    if found:
        depth = "../" * docname.count("/")
        links = "; ".join(f'<a class="reference download" href="{depth}{p.name}">{p.name}</a> ({what}, '
                          f'{p.stat().st_size / 2**20:.1f} MB)' for p, what in found)
        html = f'<p class="pdf-download">To print, annotate or read offline, the book is also one PDF: {links}.'
        chapters = _chapter_pdfs(app)
        if chapters:
            html += (" Each chapter alone, with the book's page numbers and its solutions at its end: "
                     + ", ".join(f'<a class="reference download" href="{depth}{where}">Chapter {number}</a> '
                                 f'({p.stat().st_size / 2**20:.1f} MB)' for p, where, number in chapters) + ".")
        html += "</p>"
    else:
        html = ""
    source[0] = source[0].replace(MARKER, html)


def _copy_pdfs(app, exception):
    if exception is None and app.builder.format == "html":
        for path, _ in _pdfs(app):
            shutil.copy(path, Path(app.outdir) / path.name)
        for path, where, _ in _chapter_pdfs(app):
            (Path(app.outdir) / where).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, Path(app.outdir) / where)


def _reread_intro(app, env, added, changed, removed):
    """Read the introduction again on every build: whether PDFs exist is not in its source."""
    return [app.config.root_doc] if app.builder.format == "html" else []


def setup(app):
    # figures numbered and captioned, "Figure 3.2", on the site and in the PDF
    app.setup_extension("book_figures")
    app.add_post_transform(CollectSolutions)
    app.connect("env-get-outdated", _reread_intro)
    app.connect("source-read", _link_pdfs)
    app.connect("build-finished", _copy_pdfs)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
