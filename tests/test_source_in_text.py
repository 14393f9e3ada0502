"""The code in the text: every listing a chapter shows is the library's current source.

A chapter shows a construction right after its proof with a code cell
``sh.show_source(<function>)`` tagged ``source-listing``; its stored output is the
source read from ``lib/`` when the notebook was run. These tests read the stored
outputs of the chapters, of the portable notebooks (``notebooks/``), of the student
notebooks (as ``make assignments`` writes them) and of the built site, and compare
each listing with ``inspect.getsource`` of the function it names now. A change to
the library that is not rerun into the book fails here, and so does a listing that
names a function that no longer exists. Each chapter must show at least two
functions, including the ones the book promises for it (``REQUIRED``), each short
enough to read next to its proof.
"""

from __future__ import annotations

import ast
import html
import importlib
import inspect
import io
import re
import sys
import textwrap
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import make_assignments  # noqa: E402

CHAPTERS = sorted((ROOT / "chapters").glob("[0-9][0-9]_*.ipynb"))
TAG = "source-listing"
HEADER = re.compile(r"^`(?P<name>ssmheads(?:\.\w+)+)`, from `lib/(?P<path>[\w/]+\.py)`:\n\n```python\n",
                    re.ASCII)

#: The functions each chapter promises to show (issue 14), as dotted names.
REQUIRED = {
    "01_unified_operator": ["ssmheads.models._lag_operators", "ssmheads.models.LinearSSM.interaction"],
    "02_rank_gap": ["ssmheads.span._lag_span_dimension"],
    "03_head_count": ["ssmheads.heads._exact_heads", "ssmheads.heads._best_heads"],
    "04_gradient_highway": ["ssmheads.gradients._jacobian_row", "ssmheads.gradients._delay_loss_grad"],
    "05_architectures": ["ssmheads.architectures._ssd_chunked", "ssmheads.architectures._selective_scan"],
    "06_tradeoff": ["ssmheads._bench_models._attention_forward", "ssmheads._bench_models._mamba2_forward"],
}
#: At most this many lines of logic (not docstring, comment or blank) in a listing.
MAX_LOGIC_LINES = 30


def resolve(name: str):
    """The object a dotted name ``ssmheads.module.qual.name`` denotes now."""
    parts = name.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise LookupError(name)


def current_source(name: str) -> str:
    code = textwrap.dedent(inspect.getsource(inspect.unwrap(resolve(name))))
    return code if code.endswith("\n") else code + "\n"


def listings(nb) -> list[tuple[str, str, str]]:
    """(dotted name, file, code) of every source-listing cell of ``nb``, from its stored output."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code" or TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        shown = [o for o in cell.get("outputs", []) if "text/markdown" in o.get("data", {})]
        assert len(shown) == 1, f"a {TAG} cell must display one listing; cell {cell.source!r} shows {len(shown)}"
        text = shown[0]["data"]["text/markdown"]
        text = "".join(text) if isinstance(text, list) else text
        m = HEADER.match(text)
        assert m, f"not a listing: {text[:120]!r}"
        assert text.endswith("```\n"), f"listing of {m.group('name')} is not closed"
        found.append((m.group("name"), m.group("path"), text[m.end():-len("```\n")]))
        assert f"show_source(" in cell.source, f"cell {cell.source!r} does not call show_source"
    return found


def logic_lines(code: str) -> int:
    """Lines of ``code`` holding something other than its docstring, comments and blanks."""
    func = ast.parse(code).body[0]
    doc = set()
    first = func.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        doc = set(range(first.lineno, first.end_lineno + 1))
    lines = set()
    skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER)
    for tok in tokenize.generate_tokens(io.StringIO(code).readline):
        if tok.type not in skip:
            lines.update(range(tok.start[0], tok.end[0] + 1))
    return len(lines - doc)


@pytest.fixture(scope="session")
def student_dir(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("students-listings")
    make_assignments.make_student_notebooks(ROOT / "chapters", out, verbose=False)
    return out


def versions(chapter: Path, student_dir: Path) -> dict:
    return {
        "chapter": nbformat.read(chapter, as_version=4),
        "portable": nbformat.read(ROOT / "notebooks" / chapter.name, as_version=4),
        "student": nbformat.read(student_dir / chapter.name, as_version=4),
    }


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_every_listing_is_the_current_source(chapter, student_dir):
    for version, nb in versions(chapter, student_dir).items():
        shown = listings(nb)
        for name, path, code in shown:
            expected = current_source(name)
            assert code == expected, (
                f"{chapter.name} ({version}) shows an old source of {name}: rerun the chapter "
                f"(tools/run_notebooks.py) and make portable")
            module_file = Path(inspect.getfile(inspect.unwrap(resolve(name)))).resolve()
            assert module_file == (ROOT / "lib" / path).resolve(), f"{name} is not in lib/{path}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_each_chapter_shows_its_constructions(chapter, student_dir):
    shown = {v: [name for name, _, _ in listings(nb)] for v, nb in versions(chapter, student_dir).items()}
    names = shown["chapter"]
    assert len(names) >= 2, f"{chapter.name} shows {len(names)} listing(s); every chapter shows at least two"
    missing = [n for n in REQUIRED[chapter.stem] if n not in names]
    assert not missing, f"{chapter.name} does not show {missing}"
    assert len(set(names)) == len(names), f"{chapter.name} shows a function twice: {names}"
    for version in ("portable", "student"):
        assert shown[version] == names, f"the {version} notebook of {chapter.name} shows {shown[version]}, " \
                                        f"the chapter {names}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda p: p.stem)
def test_listings_are_short_enough_to_read_next_to_a_proof(chapter):
    for name, _, code in listings(nbformat.read(chapter, as_version=4)):
        n = logic_lines(code)
        assert n <= MAX_LOGIC_LINES, f"{name} has {n} lines of logic (at most {MAX_LOGIC_LINES}): split it"


def test_the_built_site_shows_the_current_sources():
    """On the site, each listing is a highlighted block whose text is the current source."""
    from helpers import built_chapter_pages

    import os
    built = Path(os.environ.get("BOOK_HTML", ROOT / "_build" / "html"))
    pages = built_chapter_pages(built, CHAPTERS)
    for page in pages:
        chapter = ROOT / "chapters" / (page.stem + ".ipynb")
        if not chapter.exists():
            continue
        text = html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        for name, _, code in listings(nbformat.read(chapter, as_version=4)):
            body = current_source(name)
            assert body.rstrip("\n") in text, f"{page.name} does not show the current source of {name}"


# ------------------------------------------------------------------ the checks catch what they claim


def test_a_stale_listing_is_caught():
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("sh.show_source(sh.heads._best_heads)", metadata={"tags": [TAG]})
    import ssmheads as sh
    listing = sh.show_source(sh.heads._best_heads)
    stale = listing._repr_markdown_().replace("np.linalg.svd", "np.linalg.eigh")
    cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/markdown": stale, "text/plain": "x"})]
    nb.cells.append(cell)
    ((name, _, code),) = listings(nb)
    assert name == "ssmheads.heads._best_heads" and code != current_source(name)
    cell.outputs[0]["data"]["text/markdown"] = listing._repr_markdown_()
    ((name, _, code),) = listings(nb)
    assert code == current_source(name)


def test_logic_lines_skip_docstring_comments_and_blanks():
    code = 'def f(x):\n    """Doc\n\n    more doc.\n    """\n    # a comment\n\n    y = x + 1\n    return (y +\n            2)\n'
    assert logic_lines(code) == 4   # def, y =, return over two lines
