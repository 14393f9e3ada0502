"""The book as a PDF (``make pdf``, ``make pdf-student``; tools/make_pdf.py).

Read with poppler's ``pdftotext`` and ``pdffonts``: every chapter title and every
numbered result the site has (with its number), exercises and their solutions (at the
end of each chapter in the reader edition, none in the student edition), no unresolved
reference ("??"), no MyST or LaTeX left raw in the text, every font embedded, and a
size under 15 MB. ``make test`` builds both PDFs first when TeX is installed
(``PDF_REQUIRED=1``); elsewhere these tests skip when no PDF is there.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import make_pdf  # noqa: E402
import portable  # noqa: E402

OUT = Path(os.environ.get("PDF_DIR", ROOT / "_build" / "pdf"))
READER, STUDENT = OUT / "how-many-heads.pdf", OUT / "how-many-heads-student.pdf"
BOOK = portable.Book(ROOT)
CHAPTERS = BOOK.chapters()


def _need(path: Path) -> Path:
    if not path.exists():
        if os.environ.get("PDF_REQUIRED"):
            pytest.fail(f"{path} was not built")
        pytest.skip(f"no {path.name} (make pdf builds it)")
    if shutil.which("pdftotext") is None:
        pytest.skip("poppler-utils (pdftotext, pdffonts) is not installed")
    return path


def text_of(path: Path) -> str:
    """The PDF's text, one line per line, with words hyphenated across lines joined."""
    raw = subprocess.run(["pdftotext", "-enc", "UTF-8", str(path), "-"], check=True,
                         capture_output=True, text=True).stdout
    return re.sub(r"(\w)-\n(\w)", r"\1\2", raw)


def flat(text: str) -> str:
    return " ".join(text.split())


def plain_title(title: str) -> str:
    """A result's title without its math, as words to look for ("Head-count theorem")."""
    words = title.split("$")[0]            # the words before any math
    words = re.sub(r"[`*_{}\\]", "", words).replace("'", "\u2019")
    return " ".join(words.split())


@pytest.fixture(scope="module")
def reader():
    return text_of(_need(READER))


@pytest.fixture(scope="module")
def student():
    return text_of(_need(STUDENT))


def test_every_chapter_title_is_there(reader):
    text = flat(reader)
    for page in CHAPTERS:
        assert flat(page.title) in text, f"chapter title {page.title!r} is not in the PDF"


def test_every_numbered_result_is_there_with_its_number(reader):
    text = flat(reader)
    missing = []
    for t in BOOK.labels.values():
        if t.kind not in portable.PRF_KINDS or not t.number:
            continue
        name = f"{t.kind.capitalize()} {t.numbered}"
        words = plain_title(t.title)
        head = f"{name} ({words}" if words else name
        if head.split(" (")[0] not in text or (words and flat(words)[:25] not in text):
            missing.append(head)
    assert not missing, f"results not in the PDF as the site numbers them: {missing}"


def test_exercises_then_solutions_at_the_end_of_each_chapter(reader):
    text = flat(reader)
    for page in CHAPTERS:
        n = page.number[0]
        heading = f"Solutions to the exercises of Chapter {n}"
        assert heading in text, f"no '{heading}'"
        exercises = [t for t in BOOK.labels.values() if t.kind == "exercise" and t.docname == page.docname]
        tail = text[text.index(heading):]
        first = tail.find(f"Chapter {n + 1}") if n < len(CHAPTERS) else -1
        for t in exercises:
            assert f"Exercise {t.numbered}" in text
            sol = f"Solution to Exercise {t.numbered}"
            if any(s.kind == "solution" and s.exercise == t.label for s in BOOK.labels.values()):
                assert sol in tail[:first if first > 0 else None] or sol in tail, f"{sol} not in the solutions"
                assert text.index(sol) > text.index(heading), f"{sol} is inline, not at the chapter's end"


def solution_titles():
    """The title a solution box of each exercise would have: "Solution to Exercise 3.1 (Build the heads)"."""
    titles = []
    for t in BOOK.labels.values():
        if t.kind == "exercise" and t.number:
            words = plain_title(t.title)
            titles.append(f"Solution to Exercise {t.numbered}" + (f" ({words}" if words else ""))
    return titles


def test_the_student_edition_has_no_solutions(student, reader):
    titles = solution_titles()
    r, s = flat(reader), flat(student)
    found = [t for t in titles if t in r]
    assert len(found) >= 30, f"the reader edition has only {len(found)} of {len(titles)} solutions"
    assert [t for t in titles if t in s] == [], "the student edition has solutions"
    assert "Solutions to the exercises of Chapter" not in s
    # and no solution's text, titled or not: the distinctive lines of every solution (code lines
    # and sentences found nowhere else in its chapter, as tests/test_assignments.py picks them)
    # that the reader edition shows must all be absent from the student edition
    sys.path.insert(0, str(ROOT / "tests"))
    from test_assignments import distinctive, solutions_and_rest
    shown = []
    for page in CHAPTERS:
        solutions, rest = solutions_and_rest(page.path)
        for solution in solutions:
            # (once in the whole reader edition: in its solution, not also in another chapter)
            shown += [line for line in distinctive(solution, rest) if r.count(flat(line)) == 1]
    assert len(shown) >= 20, f"only {len(shown)} solution lines found in the reader edition: the check is blind"
    leaked = [line for line in shown if flat(line) in s]
    assert not leaked, f"the student edition prints solution text: {leaked[:3]}"
    # and the exercises themselves are there
    exercises = [t for t in BOOK.labels.values() if t.kind == "exercise" and t.number]
    assert all(f"Exercise {t.numbered}" in s for t in exercises)


def test_no_unresolved_reference_and_no_raw_markup(reader, student):
    for name, text in (("reader", reader), ("student", student)):
        assert "??" not in text, f"{name}: an unresolved reference ('??')"
        # "Running the book" quotes MyST markup on purpose (what a plain front end shows): its
        # pages (their running foot names the chapter) are left out of this check
        text = "\f".join(p for p in text.split("\f") if "\nRunning the book\n" not in f"\n{p}\n"
                         or "Contents" in p or "GETTING STARTED" in p)
        for raw in ("{prf:", "{ref}`", "{doc}`", "{eq}`", "{cite", "{numref}", ":::", "```{", "{exercise}",
                    "{solution", "\\begin{", "\\(", "\\)"):
            assert raw not in text, f"{name}: raw markup {raw!r} in the PDF's text"
        # prose: code lines carry straight quotes (strings, labels of figures) or the wrap mark,
        # the book's prose curly ones
        prose = [ln for ln in text.split("\n") if not re.search(r"[\"'\u02d3]", ln)]
        dollars = [ln for ln in prose if re.search(r"\$[^$\s][^$]{0,60}\$", ln)]
        assert not dollars, f"{name}: raw $...$ math in the text: {dollars[:3]}"


def test_fonts_are_embedded_and_the_file_is_small():
    for path in (_need(READER), _need(STUDENT)):
        out = subprocess.run(["pdffonts", str(path)], check=True, capture_output=True, text=True).stdout
        rows = out.strip().split("\n")[2:]
        assert rows, "no fonts listed"
        not_embedded = [r for r in rows if re.search(r"\s(no)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+\s*$", r)]
        assert not not_embedded, f"{path.name}: fonts not embedded: {not_embedded}"
        assert path.stat().st_size < 15 * 2**20, f"{path.name} is {path.stat().st_size / 2**20:.1f} MB"


def test_unknown_characters_are_refused():
    assert make_pdf.unknown_characters("plain ★ é \u2019") == []
    assert make_pdf.unknown_characters("a snowman \u2603") == ["\u2603"]


def test_tidy_moves_a_tag_out_of_split_and_numbers_exercises_like_the_site():
    t = next(t for t in BOOK.labels.values() if t.kind == "exercise" and t.number)
    tex = ("\\begin{split}\nx=1 \\tag{L}\n\\end{split}\n"
           f"\\label{{exercise:{t.label}}} see Exercise \\ref{{\\detokenize{{{t.docname}:{t.label}}}}}")
    out = make_pdf.tidy(tex, BOOK)
    assert "\\end{split}\\tag{L}" in out
    assert f"Exercise {t.numbered}" in out and "\\ref{" not in out
    assert f"\\label{{\\detokenize{{{t.docname}:{t.label}}}}}" in out
