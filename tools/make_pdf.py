"""Build the book as one PDF (``make pdf``, ``make pdf-student``) and one PDF per chapter (``make pdf-chapters``).

Usage: python tools/make_pdf.py [--student] [--chapters] [--out _build/pdf]

1. A configuration derived from _config.yml (written next to the LaTeX sources):
   the chapters' stored outputs are used (``exclude_patterns: [chapters/*]``; they are the outputs of
   one clean run, which nbval compares with a fresh run, so the PDF reuses the site's
   execution instead of running the notebooks again); pdflatex with Sphinx's own LaTeX
   classes (``use_jupyterbook_latex: false``: Jupyter Book's route forces xelatex and a
   class that needs texlive-fonts-extra, about 1.4 GB); no "Proof Index"
   (``latex_domain_indices: false``); the book's extension ``pdf_book`` collects each
   chapter's solutions at its end and drops the explorer cells, which need a kernel. The
   student edition is built from the students' copy of the book (tools/make_assignments.py:
   chapters without solutions, no instructors' pages), as the students' site is.
2. ``jupyter-book build --builder latex`` writes the LaTeX (about 20 s).
3. The LaTeX is tidied where Sphinx's output does not suit pdflatex or the book:
   a ``\\tag`` inside ``split`` moves after it; each exercise gets the label its
   references use and is named by the site's number (tools/portable.py computes them,
   and the build compares them with Sphinx's); theorem-like boxes get their own
   look by kind (theorems, definitions, examples, exercises, solutions). The pages that are
   not chapters keep their place on the site's menu except two, which go to the back
   matter: after the chapters come the References, the Guide for instructors and the API
   reference (then the index of API names). Figures (numbered "Figure 3.2" with their
   caption, book/_ext/book_figures.py) stay where the text has them and are listed after
   the contents. Each exercise with a solution ends in "Solution: end of Chapter 3, p. N"
   (book/_ext/pdf_book.py; N is a ``\\pageref``, a link).
4. The body is cut into parts that LaTeX ``\\include``s: ``part-front`` (title, contents,
   introduction, notation, running), one ``chapter-NN`` per chapter, ``part-back``. The
   whole book is all of them: ``latexmk -pdf`` (about 25 s) and the PDF is copied to
   ``_build/pdf/how-many-heads.pdf`` (``how-many-heads-student.pdf`` for the student
   edition).
5. With ``--chapters`` (``make pdf-chapters``), each chapter alone: two pdflatex runs with
   ``\\includeonly`` of its part, which LaTeX typesets with the page numbers, figure
   numbers and cross-references of the whole book (read from its .aux files), so a
   chapter's PDF is its pages of the book, solutions at the end included, with their
   bookmarks: ``_build/pdf/chapters/03_head_count.pdf`` (``03_head_count-student.pdf``
   for the student edition). A reference to another chapter prints its number and page
   but links nowhere.

A PDF whose inputs have not changed since it was made is not made again: every file of the
project (git's list of tracked and untracked, not ignored files) but the tests, CI, the portable
notebooks, Binder's set-up, the README and the Makefile (NOT_INPUTS),
with the edition, the TeX tools' versions and the Python that builds it, hash to the digest
stored beside the PDF (``.how-many-heads.pdf.inputs``; a build with and one without ``--chapters``
write the same PDF from different digests, so each makes it again after the other).
``--force`` makes it anyway. Not seen by the digest: the library as installed in the
environment (``pip install -e`` points at one checkout: a second checkout sharing the
environment renders the first one's docstrings).

Needs TeX: Debian's texlive-latex-recommended, texlive-latex-extra,
texlive-fonts-recommended, tex-gyre and latexmk (.ci/run installs them). Without
``latexmk`` the script says so and exits with status 3, which ``make test`` reports as
a skip.
"""
from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import portable  # noqa: E402

NAME = "how-many-heads"
SKIPPED = 3

#: Characters of the book that pdflatex's T1/UTF-8 setup does not know, and what to print.
UNICODE = {
    "\u2605": r"\ding{72}", "\u2606": r"\ding{73}", "\u2705": r"\ding{52}", "\u2713": r"\ding{51}",
    "\u220e": r"\ensuremath{\blacksquare}", "\u2212": r"\ensuremath{-}", "\u2248": r"\ensuremath{\approx}",
    "\u2264": r"\ensuremath{\le}", "\u2265": r"\ensuremath{\ge}", "\u2192": r"\ensuremath{\to}",
    "\u00d7": r"\ensuremath{\times}", "\u03c3": r"\ensuremath{\sigma}", "\u03b1": r"\ensuremath{\alpha}",
    "\u03bb": r"\ensuremath{\lambda}", "\u03c1": r"\ensuremath{\rho}", "\u03ba": r"\ensuremath{\kappa}",
    "\u2016": r"\ensuremath{\|}", "\u2211": r"\ensuremath{\sum}", "\u2208": r"\ensuremath{\in}",
    "\u221a": r"\ensuremath{\surd}", "\u2207": r"\ensuremath{\nabla}", "\u2202": r"\ensuremath{\partial}",
    "\u221e": r"\ensuremath{\infty}", "\u2009": r"\,", "\u25c0": r"\ensuremath{\blacktriangleleft}",
    "\u25b6": r"\ensuremath{\blacktriangleright}", "\u03b8": r"\ensuremath{\theta}",
    "\u03bd": r"\ensuremath{\nu}", "\u03b5": r"\ensuremath{\varepsilon}", "\u2260": r"\ensuremath{\ne}",
    "\u00b7": r"\ensuremath{\cdot}", "\u0394": r"\ensuremath{\Delta}", "\u03b4": r"\ensuremath{\delta}",
    "\u03c4": r"\ensuremath{\tau}", "\u03be": r"\ensuremath{\xi}", "\u03b7": r"\ensuremath{\eta}",
    "\u03c6": r"\ensuremath{\phi}", "\u03b2": r"\ensuremath{\beta}", "\u03b3": r"\ensuremath{\gamma}",
    "\u03bc": r"\ensuremath{\mu}", "\u03c0": r"\ensuremath{\pi}", "\u03c9": r"\ensuremath{\omega}",
    "\u039b": r"\ensuremath{\Lambda}", "\u03a3": r"\ensuremath{\Sigma}",
}
#: Characters pdflatex prints as they are (T1 fonts with inputenc's UTF-8: Latin letters, quotes, dashes).
PRINTABLE = set("\u00a0\u2018\u2019\u201c\u201d\u2013\u2014\u2026") | {chr(c) for c in range(0xc0, 0x180)}
PREAMBLE = ("\\usepackage{amssymb}\n\\usepackage{pifont}\n\\usepackage{etoolbox}\n"
            # one chapter alone (make pdf-chapters): pdflatex '\\def\\bookpart{chapter-03}\\input{...}'
            "\\ifdefined\\bookpart\\expandafter\\includeonly\\expandafter{\\bookpart}\\fi\n"
            # figure captions as in the portable notebooks: "Figure 3.2. What to notice"
            "\\usepackage[font=small,labelfont=bf,labelsep=period]{caption}\n"
            # the list of figures after the contents, in the front matter's roman page numbers
            "\\makeatletter\\renewcommand{\\sphinxtableofcontents}{\\pagenumbering{roman}\\begingroup"
            "\\parskip\\z@skip\\sphinxtableofcontentshook\\tableofcontents\\clearpage\\listoffigures"
            "\\endgroup\\clearpage\\pagenumbering{arabic}}\\makeatother\n"
            # tables in a smaller type, so that wide ones (notation, the exercise catalogue) fit
            "\\AtBeginEnvironment{tabulary}{\\footnotesize}\n\\AtBeginEnvironment{longtable}{\\footnotesize}\n"
            "\\addto\\captionsenglish{\\renewcommand{\\bibname}{References}}\n") + "".join(
    f"\\DeclareUnicodeCharacter{{{ord(ch):04X}}}{{{tex}}}\n" for ch, tex in UNICODE.items())


#: Box styles by kind (Sphinx 7.4's admonition keys): theorems blue, definitions green,
#: examples and remarks grey, exercises orange, solutions light, other notes plain.
SPHINXSETUP = ",".join([
    "div.important_border-TeXcolor={RGB}{0,114,178}",
    "div.important_background-TeXcolor={RGB}{235,243,250}",
    "div.important_border-width=0.8pt",
    "div.tip_border-TeXcolor={RGB}{0,158,115}",
    "div.tip_background-TeXcolor={RGB}{235,248,243}",
    "div.tip_border-width=0.8pt",
    "div.attention_border-TeXcolor={RGB}{213,94,0}",
    "div.attention_background-TeXcolor={RGB}{253,242,233}",
    "div.attention_border-width=0.8pt",
    "div.hint_border-TeXcolor={RGB}{120,120,120}",
    "div.hint_border-width=0.5pt",
    "div.seealso_border-TeXcolor={RGB}{160,160,160}",
    "div.seealso_border-width=0.5pt",
])
KINDS = {
    "important": ("Theorem", "Lemma", "Proposition", "Corollary"),
    "tip": ("Definition",),
    "hint": ("Example", "Remark"),
    "attention": ("Exercise",),
    "seealso": ("Solution",),
}


def pdf_config(root: Path, target: Path, student: bool) -> Path:
    """Write the PDF build's configuration (derived from _config.yml) to ``target``."""
    config = yaml.safe_load((root / "_config.yml").read_text()) or {}
    # the chapters' stored outputs are used as they are; only the text notebook of the
    # instructors' page (its tables and counts, a second) runs
    config.setdefault("execute", {})["execute_notebooks"] = "force"
    config["execute"]["exclude_patterns"] = ["chapters/*"]
    config["latex"] = {"latex_engine": "pdflatex", "use_jupyterbook_latex": False,
                       "latex_documents": {"targetname": f"{NAME}.tex"}}
    sphinx = config.setdefault("sphinx", {})
    local = dict(sphinx.get("local_extensions") or {})
    local["pdf_book"] = "book/_ext"
    # jupyter-book finds local extensions relative to the configuration file
    sphinx["local_extensions"] = {k: str((root / v).resolve()) for k, v in local.items()}
    extra = sphinx.setdefault("config", {})
    extra["latex_domain_indices"] = False
    extra["hide_solutions"] = bool(student)
    extra["latex_elements"] = {"preamble": PREAMBLE, "sphinxsetup": SPHINXSETUP,
                               # a figure stays where the text has it, after its "What to notice"
                               "papersize": "a4paper", "pointsize": "11pt", "figure_align": "H"}
    extra["latex_show_urls"] = "no"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("# Generated by tools/make_pdf.py from _config.yml\n" + yaml.safe_dump(config, sort_keys=False))
    return target


def unknown_characters(tex: str) -> list[str]:
    """Characters of ``tex`` that pdflatex would stop at (neither printable nor declared)."""
    return sorted({ch for ch in tex if ord(ch) > 127 and ch not in PRINTABLE and ch not in UNICODE})


def tidy(tex: str, book) -> str:
    """The LaTeX as Sphinx wrote it, made right for pdflatex and for the book."""
    unknown = unknown_characters(tex)
    if unknown:
        raise SystemExit("make pdf: characters pdflatex does not know: "
                         + ", ".join(f"{ch} (U+{ord(ch):04X})" for ch in unknown)
                         + "; add them to UNICODE in tools/make_pdf.py")
    # amsmath forbids \tag inside split: put it after the split (same equation, same tag)
    tex = re.sub(r"\\begin\{split\}\n((?:(?!\\end\{split\}).)*?)\s*(\\tag\{[^}]*\})\s*\n\\end\{split\}",
                 lambda m: "\\begin{split}\n" + m.group(1) + "\n\\end{split}" + m.group(2), tex, flags=re.S)
    # exercises: sphinx-exercise labels them exercise:LABEL and refers to DOC:LABEL with \ref,
    # which would print a section number; give the label its reference name, print the site's number
    exercises = {t.label: t for t in book.labels.values() if t.kind == "exercise" and t.number}

    def label(m):
        t = exercises.get(m.group(1))
        extra = f"\\label{{\\detokenize{{{t.docname}:{t.label}}}}}" if t else ""
        return m.group(0) + extra
    tex = re.sub(r"\\label\{exercise:([\w-]+)\}", label, tex)
    # sphinx-proof labels its boxes \label{None:LABEL} (no document name); references use DOC:LABEL
    tex = re.sub(r"\\label\{None:([\w-]+)\}",
                 lambda m: m.group(0) + (f"\\label{{\\detokenize{{{book.labels[m.group(1)].docname}:{m.group(1)}}}}}"
                                         if m.group(1) in book.labels else ""), tex)

    def number(m):
        t = exercises.get(m.group(2))
        return t.numbered if t else m.group(0)
    tex = re.sub(r"\\ref\{\\detokenize\{([\w/]+):([\w-]+)\}\}", number, tex)
    tex = number_like_the_site(tex)
    # a long table whose columns are all "l" (Sphinx's choice when it has no widths) never
    # wraps and runs off the page: give its columns equal shares of the line, which wrap
    def columns(m):
        n = len(m.group(1))
        return "\\begin{longtable}{" + "".join(f"\\X{{1}}{{{n}}}" for _ in range(n)) + "}"
    tex = re.sub(r"\\begin\{longtable\}\{(l{4,})\}", columns, tex)
    # the contents are titled by the first part's caption ("Getting started"): call them Contents
    tex = re.sub(r"\\renewcommand\{\\contentsname\}\{[^}]*\}", r"\\renewcommand{\\contentsname}{Contents}", tex)
    # sphinx-proof leaves some boxes unnumbered in LaTeX ("Lemma  (Rank bound)"): the site's number
    def boxnumber(m):
        t = book.labels.get(m.group(2))
        return m.group(1) + m.group(3) + (f" {t.numbered} (" if t and t.number else " (")
    tex = re.sub(r"(\\label\{None:([\w-]+)\}(?:\\label\{[^\n]*?\}\})?\n\\begin\{sphinxadmonition\}\{\w+\}\{)"
                 r"([A-Z][a-z]+)  \(", boxnumber, tex)
    # a proof is text, not a box with an empty title: "Proof." in italics, ended by a square
    def proof(m):
        body = m.group(1).rstrip()
        end = "" if body.endswith(("\u220e", "\\blacksquare}", "\\qed")) else "\\hfill\\ensuremath{\\blacksquare}"
        return "\\par\\smallskip\\noindent\\textit{Proof.} " + body + end + "\\par\\smallskip\n"
    tex = re.sub(r"\\begin\{sphinxadmonition\}\{note\}\n\\sphinxAtStartPar\nProof\. "
                 r"((?:(?!\\begin\{sphinxadmonition\}).)*?)\\end\{sphinxadmonition\}\n", proof, tex, flags=re.S)
    # theorem-like boxes by kind (sphinx-proof and sphinx-exercise write every one as "note")
    for style, words in KINDS.items():
        tex = re.sub(r"\\begin\{sphinxadmonition\}\{note\}\{(" + "|".join(words) + r")\b",
                     lambda m: "\\begin{sphinxadmonition}{" + style + "}{" + m.group(1), tex)
    return tex


def number_like_the_site(tex: str) -> str:
    """Number only the chapters the site numbers: Chapter 3 is the third chapter, as on the site.

    Sphinx makes every page a numbered chapter and the introduction's sections chapters
    too; here the introduction becomes one unnumbered chapter with unnumbered sections,
    and the pages before and after the numbered part (notation, running, instructors;
    API, status, references) become unnumbered chapters, listed in the contents.
    """
    head = re.compile(r"\\chapter\{(.*?)\}\n\\label\{\\detokenize\{([\w/]+):")
    marks = list(head.finditer(tex))
    if not marks:
        return tex
    ending = _ending(tex, marks[-1].end())
    out, last = [], 0
    blocks: list[tuple[str, str]] = []            # (doc, its LaTeX), in the site's order
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else ending
        out.append(tex[last:m.start()])
        block, title, doc = tex[m.start():end], m.group(1), m.group(2)
        if doc == "book/status":
            block = ""              # the build's status table: a page of the site, not of the book
        elif doc == "book/bibliography":
            # sphinxthebibliography opens its own chapter ("References", see PREAMBLE)
            block = block[len("\\chapter{" + title + "}"):]
        elif not doc.startswith("chapters/"):
            block = re.sub(r"\\(sub)*section\{", lambda s: s.group(0)[:-1] + "*{", block)
            if doc == "book/intro":
                block = "\\section*{" + title + "}" + block[len("\\chapter{" + title + "}"):]
            else:
                block = ("\\chapter*{" + title + "}\\addcontentsline{toc}{chapter}{" + title + "}"
                         "\\markboth{" + title + "}{" + title + "}" + block[len("\\chapter{" + title + "}"):])
        blocks.append((doc, block))
        last = end
    front = "".join(out)
    # the back matter: the references, then the pages for instructors and programmers
    chapters = [b for doc, b in blocks if doc.startswith("chapters/")]
    back = [b for doc, b in blocks if doc in BACK_MATTER]
    back.sort(key=lambda b: BACK_MATTER.index(next(doc for doc, x in blocks if x is b)))
    if chapters:
        first = next(k for k, (doc, _) in enumerate(blocks) if doc.startswith("chapters/"))
        front += "".join(b for doc, b in blocks[:first] if doc not in BACK_MATTER)
        middle = [b for doc, b in blocks[first:] if doc not in BACK_MATTER and not doc.startswith("chapters/")]
        numbered = [(doc, b) for doc, b in blocks if doc.startswith("chapters/")]
        body = [(_part_name(doc), b) for doc, b in numbered] \
            + [(PART_BACK, "".join(middle + back) + tex[ending:_document_end(tex)])]
        tex = front + "".join(f"{PART_MARK}{name}\n{text}" for name, text in body) + tex[_document_end(tex):]
    else:
        tex = front + "".join(b for _, b in blocks) + tex[ending:]
    intro = "\\phantomsection\\label{\\detokenize{book/intro::doc}}"
    return tex.replace(intro, intro + "\n\\chapter*{Introduction}\\addcontentsline{toc}{chapter}{Introduction}"
                       "\\markboth{Introduction}{Introduction}\n", 1)


#: Pages that are not chapters and go after them, in this order (the others keep the menu's order).
BACK_MATTER = ("book/bibliography", "book/instructors", "book/api")
#: Marks number_like_the_site leaves at the start of each part (split_parts cuts there).
PART_MARK = "%% make_pdf part: "
PART_FRONT, PART_BACK = "part-front", "part-back"


def _part_name(docname: str) -> str:
    """The LaTeX part of a chapter: chapters/03_head_count -> chapter-03."""
    stem = docname.rsplit("/", 1)[-1]
    m = re.match(r"(\d+)", stem)
    return f"chapter-{m.group(1) if m else re.sub(r'[^A-Za-z0-9]+', '-', stem)}"


def _document_end(tex: str) -> int:
    return tex.rindex("\\end{document}") if "\\end{document}" in tex else len(tex)


def _ending(tex: str, after: int) -> int:
    """Where the text after the last page's content starts (the index and \\end{document})."""
    for marker in ("\\renewcommand{\\indexname}", "\\printindex", "\\end{document}"):
        k = tex.find(marker, after)
        if k != -1:
            return k
    return len(tex)


def split_parts(tex: str) -> tuple[str, dict[str, str]]:
    """The main file (``\\include`` of each part) and ``{part name: its LaTeX}``.

    Cuts at the marks number_like_the_site leaves. The front part starts with the title
    page (what comes before it, babel's settings, stays in the main file); every part
    starts on a new page, as each of them does anyway.
    """
    if PART_MARK not in tex or "\\begin{document}" not in tex:
        return tex, {}
    begin = tex.index(PART_MARK)
    end = _document_end(tex)
    head, body, tail = tex[:begin], tex[begin:end], tex[end:]
    start = head.index("\\begin{document}") + len("\\begin{document}")
    title = head.find("\\pagestyle{empty}", start)
    cut = title if title != -1 else start           # the title page and contents open the front part
    body = PART_MARK + PART_FRONT + "\n" + head[cut:] + body
    head = head[:cut]
    parts: dict[str, str] = {}
    for chunk in body.split(PART_MARK)[1:]:
        name, _, text = chunk.partition("\n")
        parts[name] = text
    for name in parts:
        if name.startswith("chapter-"):
            # alone, a chapter starts on its odd page without the blank back of the page before
            parts[name] = "\\ifdefined\\bookpart\\ifodd\\value{page}\\else\\stepcounter{page}\\fi\\fi\n" + parts[name]
    includes = "".join(f"\\include{{{name}}}\n" + ("\\pagestyle{normal}\n" if name == PART_FRONT else "")
                       for name in parts)
    return head + includes + tail, parts


def chapter_pdfs(latex: Path, book, out: Path, student: bool) -> list[Path]:
    """Each chapter alone, from the whole book's LaTeX in ``latex`` (built just before): its PDFs in ``out``.

    Two pdflatex runs per chapter with ``\\includeonly`` of its part (the second puts
    the bookmarks in); the main .aux of the whole book is copied first, so that every
    reference, also to a later chapter, has its number and page from the first run on.
    """
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for page in book.chapters():
        part = _part_name(page.docname)
        if not (latex / f"{part}.tex").exists():
            raise SystemExit(f"make pdf: no LaTeX part {part}.tex for {page.docname}")
        job = f"alone-{part}"
        shutil.copy(latex / f"{NAME}.aux", latex / f"{job}.aux")
        for _ in range(2):
            run = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", f"-jobname={job}",
                                  f"\\def\\bookpart{{{part}}}\\input{{{NAME}.tex}}"],
                                 cwd=latex, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if run.returncode != 0:
                print(run.stdout[-4000:])
                raise SystemExit(f"make pdf: pdflatex failed for {page.docname}; see {latex / (job + '.log')}")
        target = out / (page.path.stem + ("-student" if student else "") + ".pdf")
        shutil.copy(latex / f"{job}.pdf", target)
        written.append(target)
    return written


# what no PDF is made from: the tests, CI, the portable notebooks and Binder's set-up (made from
# the chapters, not read by the PDF), the README and the Makefile
NOT_INPUTS = ("tests/", ".ci/", "notebooks/", "binder/", "README.md", "Makefile")


def inputs_digest(root: Path, student: bool, chapters: bool) -> str:
    """A digest of everything a PDF is made from (see the module's docstring)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if listed.returncode != 0:  # not a git checkout: no digest, the PDF is always made
        return ""
    h = hashlib.sha256(f"{student} {chapters} {sys.executable} {sys.version}\n".encode())
    for tool in ("pdflatex", "latexmk"):
        h.update(subprocess.run([tool, "--version"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True).stdout.split("\n", 1)[0].encode() + b"\n")
    for name in sorted(set(listed.stdout.decode().split("\0")) - {""}):
        path = root / name
        if name.startswith(NOT_INPUTS) or not path.is_file():
            continue
        h.update(name.encode() + b"\0" + hashlib.sha256(path.read_bytes()).digest())
    return h.hexdigest()


def build(student: bool = False, out: Path = ROOT / "_build" / "pdf", root: Path = ROOT,
          chapters: bool = False, force: bool = False) -> Path:
    if shutil.which("latexmk") is None or shutil.which("pdflatex") is None:
        print("make pdf: SKIPPED, no TeX here (install Debian's texlive-latex-recommended "
              "texlive-latex-extra texlive-fonts-recommended tex-gyre latexmk, as .ci/run does)")
        raise SystemExit(SKIPPED)
    edition = "student" if student else "reader"
    target = out / (f"{NAME}-student.pdf" if student else f"{NAME}.pdf")
    # one stamp per PDF file: a --chapters build writes the same book PDF, so it replaces the
    # stamp (its digest differs, chapters being part of it) and a later plain build makes it again
    stamp = out / f".{target.name}.inputs"
    digest = inputs_digest(root, student, chapters)
    made = target.is_file() and (not chapters or (out / "chapters").is_dir())
    if digest and not force and made and stamp.is_file() and stamp.read_text().strip() == digest:
        print(f"make pdf: {target} is up to date (made from the same inputs, digest {digest[:12]}; "
              f"--force makes it again)")
        return target
    stamp.unlink(missing_ok=True)
    work = out / f"src-{edition}"
    if work.exists():
        shutil.rmtree(work)
    config = pdf_config(root, work / "config.yml", student)
    start = time.perf_counter()
    source = root
    if student:
        # the students' copy of the book, as the students' site is built from it: chapters
        # without their solutions (gated ones included), no instructors' pages
        import make_assignments
        source = work / "book"
        make_assignments.stage_site_source(root, source, avoid=(out,))
    jb = str(Path(sys.executable).with_name("jupyter-book"))
    subprocess.run([jb, "build", str(source), "--builder", "latex", "--config", str(config),
                    "--path-output", str(work), "-W", "-n", "--keep-going"], check=True)
    latex = work / "_build" / "latex"
    tex = latex / f"{NAME}.tex"
    book = portable.Book(source)
    main, parts = split_parts(tidy(tex.read_text(encoding="utf-8"), book))
    tex.write_text(main, encoding="utf-8")
    for name, text in parts.items():
        (latex / f"{name}.tex").write_text(text, encoding="utf-8")
    middle = time.perf_counter()
    run = subprocess.run(["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", tex.name],
                         cwd=latex, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if run.returncode != 0:
        print(run.stdout[-4000:])
        raise SystemExit(f"make pdf: latexmk failed; see {latex / (NAME + '.log')}")
    shutil.copy(latex / f"{NAME}.pdf", target)
    end = time.perf_counter()
    print(f"wrote {target} ({target.stat().st_size / 2**20:.1f} MB): LaTeX {middle - start:.0f} s, "
          f"PDF {end - middle:.0f} s")
    if chapters:
        for path in chapter_pdfs(latex, book, out / "chapters", student):
            print(f"wrote {path} ({path.stat().st_size / 2**20:.1f} MB)")
        print(f"chapters alone: {time.perf_counter() - end:.0f} s")
    if digest:
        stamp.write_text(digest + "\n")
    return target


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--student", action="store_true", help="the student edition (no solutions)")
    parser.add_argument("--chapters", action="store_true",
                        help="also one PDF per chapter, in OUT/chapters/ (make pdf-chapters)")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "pdf")
    parser.add_argument("--force", action="store_true", help="make it even when its inputs have not changed")
    args = parser.parse_args(argv)
    build(args.student, args.out, chapters=args.chapters, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
