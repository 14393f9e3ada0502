"""The book as a PDF (``make pdf``, ``make pdf-student``, ``make pdf-chapters``; tools/make_pdf.py).

Read with poppler's ``pdftotext`` and ``pdffonts``: every chapter title and every
numbered result the site has (with its number), every figure with its number and caption
("Figure 3.1. Heads trained ...") and a list of figures, exercises and their solutions
(at the end of each chapter in the reader edition, each exercise saying on which page its
solution is, and that page holding it; none in the student edition), the guide for
instructors and the API reference after the chapters, no unresolved reference ("??"), no
MyST or LaTeX left raw in the text, every font embedded, and a size under 15 MB. Each
chapter's own PDF (``_build/pdf/chapters/03_head_count.pdf``) holds that chapter's pages
of the book, with the book's page numbers, and nothing of another chapter. ``make test``
builds the PDFs first when TeX is installed (``PDF_REQUIRED=1``); elsewhere these tests
skip when no PDF is there.
"""
from __future__ import annotations

import functools
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
EXTENDED = os.environ.get("EXTENDED") == "1"  # the student edition is built by make test-extended
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


@functools.lru_cache(maxsize=None)
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
    """The student edition: built by make test-extended's PDF part, not by make test's."""
    if not EXTENDED:
        pytest.skip("the student edition's PDF is built and read by make test-extended (EXTENDED=1)")
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


def _no_unresolved_reference_and_no_raw_markup(name, text):
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


def test_no_unresolved_reference_and_no_raw_markup(reader):
    _no_unresolved_reference_and_no_raw_markup("reader", reader)


def test_no_unresolved_reference_and_no_raw_markup_in_the_student_edition(student):
    _no_unresolved_reference_and_no_raw_markup("student", student)


def test_fonts_are_embedded_and_the_file_is_small():
    for path in (_need(READER),) + ((_need(STUDENT),) if EXTENDED else ()):
        out = subprocess.run(["pdffonts", str(path)], check=True, capture_output=True, text=True).stdout
        rows = out.strip().split("\n")[2:]
        assert rows, "no fonts listed"
        not_embedded = [r for r in rows if re.search(r"\s(no)\s+(yes|no)\s+(yes|no)\s+\d+\s+\d+\s*$", r)]
        assert not not_embedded, f"{path.name}: fonts not embedded: {not_embedded}"
        assert path.stat().st_size < 15 * 2**20, f"{path.name} is {path.stat().st_size / 2**20:.1f} MB"


# --------------------------------------------------------------------------- figures, solutions' pages, back matter


def pages_of(path: Path) -> list[str]:
    """The PDF's text page by page (pdftotext's form feeds)."""
    return text_of(path).split("\f")


def printed_number(page: str) -> str | None:
    """The page number printed in a page's foot (the last line that is only a number, arabic or roman)."""
    lines = [ln.strip() for ln in page.strip().split("\n") if ln.strip()]
    for line in reversed(lines[-4:]):
        if re.fullmatch(r"\d+|[ivxlc]+", line):
            return line
    return None


def arabic_offset(pages: list[str]) -> int:
    """Physical index minus printed number of the arabic-numbered pages (the most common difference:
    pdftotext can jumble the foot of a page full of formulas)."""
    from collections import Counter

    found = Counter(k - int(n) for k, page in enumerate(pages) if (n := printed_number(page)) and n.isdigit())
    assert found, "no page numbers found"
    return found.most_common(1)[0][0]


def figures():
    """``[(number, label, caption words)]`` of the book's figures, as tools/portable.py numbers them."""
    return [(t.numbered, t.label, plain_title(t.title)) for t in BOOK.labels.values() if t.kind == "figure"]


def test_every_figure_is_numbered_and_captioned(reader):
    text = flat(reader)
    found = figures()
    assert len(found) >= 12, f"only {len(found)} numbered figures (run python tools/figure_alt.py)"
    missing = [f"Figure {number}. {words}" for number, _, words in found
               if f"Figure {number}. {flat(words)[:30]}" not in text]
    assert not missing, f"figures not in the PDF with their number and caption: {missing}"
    # and listed in the front matter, before Chapter 1
    pages = pages_of(READER)
    lof = next((k for k, page in enumerate(pages) if "LIST OF FIGURES" in page.upper()), None)
    assert lof is not None, "no list of figures"
    chapter_one = next(k for k, page in enumerate(pages) if printed_number(page) and flat(CHAPTERS[0].title) in flat(page)
                       and k > lof)
    listed = flat(" ".join(pages[lof:chapter_one]))
    assert all(flat(words)[:20] in listed for _, _, words in found), "a figure is missing from the list of figures"


def test_each_exercise_says_on_which_page_its_solution_is(reader):
    pages = pages_of(READER)
    offset = arabic_offset(pages)
    checked = 0
    for page in CHAPTERS:
        n = page.number[0]
        solved = set(re.findall(r"\{solution(?:-start)?\}[ \t]*([\w-]+)",
                                "\n".join(portable.markdown_cells(page.path))))
        with_solution = [t for t in BOOK.labels.values() if t.kind == "exercise" and t.docname == page.docname
                         and t.label in solved]
        pointers = [(k, int(m.group(1))) for k, text in enumerate(pages)
                    for m in re.finditer(rf"Solution: end of Chapter {n}, p\.\s*(\d+)\.", flat(text))]
        assert len(pointers) == len(with_solution), \
            f"Chapter {n}: {len(pointers)} 'Solution: end of Chapter {n}, p. N' lines, {len(with_solution)} solutions"
        for t, (k, target) in zip(with_solution, pointers):
            assert f"Exercise {t.numbered}" in flat(pages[k]) or f"Exercise {t.numbered}" in flat(pages[k - 1]), \
                f"the pointer on PDF page {k + 1} does not follow Exercise {t.numbered}"
            where = target + offset
            assert 0 <= where < len(pages), f"Exercise {t.numbered}: no page numbered {target}"
            assert f"Solution to Exercise {t.numbered}" in flat(pages[where]), \
                f"Exercise {t.numbered} points to p. {target}, which does not hold its solution"
            checked += 1
    assert checked >= 30


def test_the_student_edition_points_to_no_solution(student):
    assert "Solution: end of Chapter" not in flat(student)


def test_the_guide_and_the_api_are_back_matter(reader):
    pages = pages_of(READER)
    contents = flat(" ".join(pages[:12]))
    last = flat(CHAPTERS[-1].title)
    order = [contents.find(flat(CHAPTERS[0].title)), contents.find(last), contents.find("References", contents.find(last)),
             contents.find("Guide for instructors"), contents.find("API reference")]
    assert -1 not in order and order == sorted(order), f"contents order: {order}"
    text = flat(reader)
    end_of_chapters = text.rindex(f"Solutions to the exercises of Chapter {CHAPTERS[-1].number[0]}")
    body = text[text.upper().index("LIST OF FIGURES"):]
    first_chapter = body.index(flat(CHAPTERS[0].title), body.index("Running the book"))
    assert "Guide for instructors" not in body[:first_chapter].replace("Guide for instructors . ", ""), \
        "the guide for instructors comes before Chapter 1"
    assert text.index("Guide for instructors", end_of_chapters) > end_of_chapters
    assert text.index("API reference", end_of_chapters) > end_of_chapters


CHAPTER_DIR = OUT / "chapters"


def _chapter_pdf(page, suffix: str = "") -> Path:
    return _need(CHAPTER_DIR / f"{page.path.stem}{suffix}.pdf")


@pytest.mark.skipif(not EXTENDED, reason="the chapters alone are built and read by make test-extended (EXTENDED=1)")
@pytest.mark.parametrize("page", CHAPTERS, ids=lambda p: p.path.stem)
def test_each_chapter_alone_is_its_pages_of_the_book(page, reader):
    path = _chapter_pdf(page)
    pages = pages_of(path)
    text = flat("\f".join(pages))
    n = page.number[0]
    assert flat(page.title) in text and "??" not in text
    assert f"Solutions to the exercises of Chapter {n}" in text
    others = [f"Solutions to the exercises of Chapter {c.number[0]}" for c in CHAPTERS if c is not page]
    assert not [o for o in others if o in text], "another chapter's pages are in it"
    assert "LIST OF FIGURES" not in text.upper(), "the front matter is in it"
    # the book's pages, with their numbers: the chapter's first page is the book's page of that
    # number, and so on to its last
    book_pages = pages_of(READER)
    pages = [p for p in pages if p.strip()]
    first = int(printed_number(pages[0]))
    start = first + arabic_offset(book_pages)
    assert flat(page.title).upper() in flat(book_pages[start]).upper()
    for k in (0, len(pages) // 2, len(pages) - 1):
        assert flat(book_pages[start + k])[:300] == flat(pages[k])[:300], f"page {first + k} differs"
    # and it ends where the book's next part begins (after the blank back of its last page, if any)
    after = flat(book_pages[start + len(pages)])
    blank = re.fullmatch(r"How Many Heads Make an SSM\? \d+ (Chapter \d+\. .*)?", after)
    assert blank or re.match(r"CHAPTER |REFERENCES", after), f"the book goes on after p. {first + len(pages) - 1}"
    # its figures and exercises keep the book's numbers
    for number, _, words in figures():
        if number.split(".")[0] == str(n):
            assert f"Figure {number}. {flat(words)[:30]}" in text
    assert path.stat().st_size < 5 * 2**20


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
