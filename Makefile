# The book's commands. The README leads with two: `make book` and `make test`.
# Both create the virtual environment in .venv on first use and install
# requirements.txt into it; later runs reuse it until requirements.txt changes.

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PORT   ?= 8000
# Every tool runs through one command line, tools/bookcli: `$(CLI) portable --all` runs
# tools/portable.py's main as `python tools/portable.py --all` does (`$(CLI) --help` lists the
# commands). tools/ is put on PYTHONPATH for it alone (it takes tools/ off again for the programs
# a tool starts); CLI_SYS runs it with $(PYTHON) (the tools that need no .venv), CLI_OTTER with the
# instructors' environment.
TOOLS_PATH = PYTHONPATH=tools$${PYTHONPATH:+:$$PYTHONPATH}
CLI        = $(TOOLS_PATH) $(BIN)/python -m bookcli
CLI_SYS    = $(TOOLS_PATH) $(PYTHON) -m bookcli
CLI_OTTER  = $(TOOLS_PATH) $(OTTER_BIN)/python -m bookcli
# axe-core, the browser check's contrast checker (make axe)
AXE    := tools/node/node_modules/axe-core/axe.min.js
# The stored outputs are checked with nbval under two numerical set-ups (tools/check_outputs.py):
# this machine's own OpenBLAS kernel and numpy SIMD, and OpenBLAS's Sandybridge kernel with numpy's
# baseline SIMD, so that an output that depends on the BLAS kernel or the processor fails here and
# not only on a reader's machine. Two notebooks at a time (one kernel each), 120 s per cell, and a
# notebook whose cell timed out is checked once more. MPLBACKEND=Agg, as servers and CI often
# export it: the figures must still appear (use_book_style selects the inline backend).
NBVAL_WORKERS ?= 2
NBVAL := $(CLI) check-outputs --workers $(NBVAL_WORKERS)
BUILD := $(BIN)/jupyter-book build . -W -n --keep-going

# The machines' image sets PYTHONDONTWRITEBYTECODE=1: every Python process then compiled the
# library and the tools from source again, and every pytest rewrote the tests' asserts (6 s
# of each test run's start). Bytecode goes to __pycache__/, which git ignores and every copy
# the tools make leaves out.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: lengths otter otter-env grade gradebook hand-scores rubrics-check answers test-otter test-otter-extended pdf pdf-student pdf-chapters test-pdf test-pdf-extended book test test-extended test-all test-lib test-lib-extended test-standalone-extended test-standalone-all test-site-extended test-notebooks test-build test-standalone test-site site-check axe assignments env serve clean outputs portable repository

book: $(STAMP)
	$(BUILD)
	@echo "The book is at $(abspath _build/html/index.html)"

# make test, the gate before a commit: seven parts in two lanes at once (tools/test_parts.py;
# each part's output in _build/test-logs/PART.log, printed when it fails; every part runs even
# when another fails). A lane runs its parts in order: the site is built after the PDFs it links
# and checked after it is built, last, when the other lane has finished and the browser check has
# both cores. The browser check runs when Chromium is installed and says plainly that it skipped
# when not. make test-extended runs the slow end-to-end checks that make test samples (each
# chapter's student notebook, standalone runs, the fuzz, the JAX training runs, the student PDF
# and the chapter PDFs' tests, the grading audit, the browser check's planted defects); make
# test-all runs both, as CI does. On this 2-core machine make test takes about nine minutes
# (the two cores busy nearly all the time), ten on a fresh clone, which makes the PDF, the site and
# the Otter assignments from nothing.
LANE_1 ?= test-notebooks test-lib
LANE_2 ?= test-pdf test-build test-otter test-standalone test-site
test: $(STAMP) $(AXE)
	$(CLI) test-parts --lane "$(LANE_1)" --lane "$(LANE_2)"

EXTENDED_1 ?= test-lib-extended test-standalone-extended
EXTENDED_2 ?= test-pdf-extended test-otter-extended test-site-extended
test-extended: $(STAMP) $(AXE)
	$(CLI) test-parts --lane "$(EXTENDED_1)" --lane "$(EXTENDED_2)"

test-all: $(STAMP) $(AXE)
	$(CLI) test-parts --lane "$(LANE_1) $(EXTENDED_1)" --lane "$(LANE_2) $(EXTENDED_2)"

# Two workers (pytest-xdist), one BLAS thread each. Each takes tests in collection order, and
# tests/conftest.py puts the tests that fork first, so no worker forks after Chapter 6's tests
# start JAX. The tests that read the built site and PDFs run in test-build and test-pdf, which the
# other lane may be writing meanwhile: here they look in a folder that does not exist, and skip.
PYTEST_WORKERS ?= 2
NOT_BUILT := BOOK_HTML=_build/not-built PORTABLE_SITE_HTML=_build/not-built PDF_DIR=_build/not-built
test-lib: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(NOT_BUILT) $(BIN)/pytest -n $(PYTEST_WORKERS) tests/ \
	  --ignore=tests/test_site_check.py --ignore=tests/test_pdf.py

test-lib-extended: $(STAMP)
	OPENBLAS_NUM_THREADS=1 $(NOT_BUILT) EXTENDED=1 $(BIN)/pytest -n $(PYTEST_WORKERS) tests/ -m extended \
	  --ignore=tests/test_site_check.py --ignore=tests/test_pdf.py

test-notebooks: $(STAMP)
	$(NBVAL)

# Sphinx rewrites only the pages whose source changed; when the tools that write the pages'
# downloads and numbers changed since the last build (tools/portable.py, tools/bookkit/,
# book/_ext/), every page is built again.
test-build: $(STAMP)
	@if [ -f _build/html/chapters/01_unified_operator.html ] && [ -z "$$(find tools/portable.py tools/bookkit \
	    book/_ext -newer _build/html/chapters/01_unified_operator.html -name '*.py' 2>/dev/null | head -1)" ]; \
	  then echo "$(BUILD)"; $(BUILD); else echo "$(BUILD) --all"; $(BUILD) --all; fi
	PORTABLE_REQUIRE_SITE=1 $(BIN)/pytest -q tests/test_portable.py -k built_site
	BOOK_HTML=_build/html $(BIN)/pytest -q tests/test_figures_a11y.py tests/test_numbering.py \
	  tests/test_source_in_text.py::test_the_built_site_shows_the_current_sources \
	  tests/test_backrefs.py::test_the_api_page_links_them

# The built site in headless Chromium: math rendered, no errors, no outside requests,
# no broken links or images; screenshots in _build/site-check/.
site-check: $(STAMP) $(AXE)
	@test -f _build/html/index.html || $(BUILD)
	$(CLI) site-check --full-page

# axe-core, the browser check's contrast checker, at the version and sha512 that
# tools/node/package-lock.json pins, fetched from the npm registry by Python (no node
# needed; `npm ci --prefix tools/node` gives the same files) into tools/node/node_modules/.
axe: $(AXE)

$(AXE): tools/node/package-lock.json tools/node/package.json
	$(CLI_SYS) fetch-axe

# Student notebooks (solutions removed, a code cell after each exercise, outputs cleared)
# in _build/assignments/, and a solutions-hidden site built from the stored outputs.
# SITE_URL=https://... is where that site will be published: the notebooks link there
# (without it they link to the full site, solutions included, and the script says so).
ASSIGNMENTS ?= _build/assignments
SITE_URL ?=
assignments: $(STAMP)
	$(CLI) make-assignments --out $(ASSIGNMENTS) $(if $(SITE_URL),--site-url $(SITE_URL))

# The chapters as portable notebooks (MyST rendered to plain Markdown and LaTeX, numbers
# as on the site, outputs kept) in notebooks/, for Colab and as downloads; a test fails
# when they are stale. Rerun after changing a chapter.
portable: $(STAMP)
	$(CLI) portable --all

# Sets the repository's public address everywhere it is used: repository.url in
# _config.yml, each chapter's set-up cell, the site address derived from it, and the
# portable notebooks. Usage: make repository URL=https://github.com/ORG/REPO
repository: $(STAMP)
	@test -n "$(URL)" || { echo "usage: make repository URL=https://github.com/ORG/REPO"; exit 2; }
	$(CLI) set-repository "$(URL)"

# Each portable chapter (notebooks/) copied alone into an empty folder and run in a fresh venv that has only
# the package's declared dependencies (installed by the chapter's set-up cell), as in
# Colab. Needs no .venv; takes about two minutes.
# The book as one PDF (tools/make_pdf.py): _build/pdf/how-many-heads.pdf, and the student
# edition without solutions. pdflatex from the chapters' stored outputs (no notebook runs
# again); needs Debian's texlive-latex-recommended texlive-latex-extra
# texlive-fonts-recommended tex-gyre latexmk (.ci/run installs them). The site build that
# follows copies both PDFs into the site and links them from the introduction.
pdf: $(STAMP)
	$(CLI) make-pdf

pdf-student: $(STAMP)
	$(CLI) make-pdf --student

# The whole book, then each chapter alone with the book's page numbers and its solutions:
# _build/pdf/chapters/01_unified_operator.pdf, ... (STUDENT=1: the student edition's,
# 01_unified_operator-student.pdf). The site build that follows links them too.
pdf-chapters: $(STAMP)
	$(CLI) make-pdf --chapters $(if $(STUDENT),--student)

# The reader's PDF built and read back (tests/test_pdf.py; the chapters alone are extended);
# says plainly that it skipped without TeX.
test-pdf: $(STAMP)
	@if ! command -v latexmk >/dev/null 2>&1 || ! command -v pdflatex >/dev/null 2>&1; then \
	  echo "test-pdf: SKIPPED, no TeX here (install texlive-latex-recommended texlive-latex-extra texlive-fonts-recommended tex-gyre latexmk)"; \
	  exit 0; fi; \
	$(CLI) make-pdf && PDF_REQUIRED=1 $(BIN)/pytest -q tests/test_pdf.py

# The reader's PDF with each chapter alone, and the student edition, built and read back (make test-extended).
test-pdf-extended: $(STAMP)
	@if ! command -v latexmk >/dev/null 2>&1 || ! command -v pdflatex >/dev/null 2>&1; then \
	  echo "test-pdf-extended: SKIPPED, no TeX here"; exit 0; fi; \
	$(CLI) make-pdf --chapters && $(CLI) make-pdf --student && \
	EXTENDED=1 PDF_REQUIRED=1 $(BIN)/pytest -q tests/test_pdf.py

# make test runs Chapter 1 alone (one fresh environment: its set-up cell installs everything,
# about 70 s); make test-extended the other chapters, two at a time; make test-standalone-all all.
test-standalone:
	$(CLI_SYS) check-standalone --python $(PYTHON) --workers 1 notebooks/01_unified_operator.ipynb

test-standalone-extended:
	$(CLI_SYS) check-standalone --python $(PYTHON) $(filter-out notebooks/01_unified_operator.ipynb,$(sort $(wildcard notebooks/*.ipynb)))

test-standalone-all:
	$(CLI_SYS) check-standalone --python $(PYTHON)

# Instructors: Otter-Grader assignments (tools/make_otter.py). Otter lives in its own
# environment, .venv-otter, from requirements-instructor.txt (about 800 MB; never in the
# readers' .venv or Binder); it is also the grading environment.
#   make otter [SITE_URL=https://...] [HIDDEN=my_hidden_tests.py] [QUESTION_TIMEOUT=20] [COURSE=course.yml]
#       a master notebook per chapter, then `otter assign`: _build/otter/<chapter>/student/
#       (the notebook to hand out) and autograder/ (the zip for Gradescope or `make grade`);
#       COURSE (instructors/course.example.yml): which exercises are graded, their points, show_hidden
#   make grade SUBMISSIONS=folder [GRADES=grades.csv] [CHAPTER=...] [TIMEOUT=300] [HIDE_HIDDEN=1|0] [FORCE=1] [WORKERS=2] [COURSE=course.yml]
#       grades every notebook in the folder with `otter run` (no Docker) into one CSV (never
#       overwritten without FORCE=1: hand-graded scores may be in it); COURSE: workers, dropped
#       questions (marked), hidden messages by show_hidden_after_due and due (HIDE_HIDDEN=1/0 wins)
OTTER_VENV ?= .venv-otter
OTTER_BIN  := $(OTTER_VENV)/bin
OTTER_STAMP := $(OTTER_VENV)/.installed
GRADES ?= grades.csv
HIDDEN ?=

otter-env: $(OTTER_STAMP)

$(OTTER_STAMP): requirements-instructor.txt pyproject.toml
	test -x $(OTTER_BIN)/python || $(PYTHON) -m venv $(OTTER_VENV)
	$(OTTER_BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(OTTER_BIN)/python -m pip install --quiet -r requirements-instructor.txt
	touch $(OTTER_STAMP)

otter: $(STAMP) $(OTTER_STAMP)
	$(CLI) make-otter --otter $(OTTER_BIN)/otter $(if $(SITE_URL),--site-url $(SITE_URL)) $(if $(HIDDEN),--hidden $(HIDDEN)) \
	  $(if $(QUESTION_TIMEOUT),--question-timeout $(QUESTION_TIMEOUT)) $(if $(COURSE),--course "$(COURSE)")

grade: $(OTTER_STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make grade SUBMISSIONS=folder [GRADES=grades.csv] [CHAPTER=01_unified_operator] [TIMEOUT=300] [HIDE_HIDDEN=1|0] [FORCE=1] [WORKERS=2] [COURSE=course.yml]"; exit 2; }
	$(CLI_OTTER) otter-grade "$(SUBMISSIONS)" --out "$(GRADES)" \
	  $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(TIMEOUT),--timeout $(TIMEOUT)) \
	  $(if $(filter 0,$(HIDE_HIDDEN)),--show-hidden-cases,$(if $(HIDE_HIDDEN),--hide-hidden-cases)) $(if $(FORCE),--force) $(if $(WORKERS),--workers $(WORKERS)) \
	  $(if $(COURSE),--course "$(COURSE)")

# The scores of the answers graded by hand (answers/<chapter>/<question>.scores.csv, filled in with the
# rubric at the top of each answers file) merged into a copy of the grades (tools/hand_scores.py):
#   make hand-scores [ANSWERS=answers] [GRADES=grades.csv] [HAND_GRADES=grades-hand.csv] [FORCE=1]
HAND_GRADES ?= $(basename $(GRADES))-hand.csv
hand-scores: $(OTTER_STAMP)
	$(CLI_OTTER) hand-scores merge "$(ANSWERS)" --into "$(GRADES)" --out "$(HAND_GRADES)" $(if $(FORCE),--force)

# Every hand-graded question has a rubric whose points sum to the question's (instructors/rubrics.yml).
rubrics-check: $(OTTER_STAMP)
	$(CLI_OTTER) hand-scores check-rubrics

# One row per student from the CSV of `make grade`, with totals (instructors/course.example.yml),
# or Canvas's or Gradescope's import columns (tools/gradebook.py; grades nothing).
#   make gradebook [GRADES=grades.csv] [ROSTER=roster.csv] [COURSE=course.yml] [FORMAT=plain|canvas|gradescope] [OUT=gradebook.csv]
gradebook: $(STAMP)
	@test -f "$(GRADES)" || { echo "usage: make gradebook GRADES=grades.csv [ROSTER=roster.csv] [COURSE=course.yml] [FORMAT=plain|canvas|gradescope] [OUT=gradebook.csv]"; exit 2; }
	$(CLI) gradebook "$(GRADES)" --out "$(or $(OUT),gradebook.csv)" \
	  $(if $(ROSTER),--roster "$(ROSTER)") $(if $(COURSE),--course "$(COURSE)") \
	  $(if $(FORMAT),--format $(FORMAT)) $(if $(OTTER_DIR),--otter-dir "$(OTTER_DIR)")

# How long each chapter's problem set takes: an estimate from sizes measured in the chapters
# (tools/problem_set_length.py, standard library only; the guide for instructors shows the same
# table). DETAIL=1 adds a row per exercise: its measured sizes and estimated minutes.
#   make lengths [DETAIL=1]
lengths:
	$(CLI_SYS) problem-set-length $(if $(DETAIL),--exercises)

# The answers graded by hand, gathered by question: ANSWERS/<chapter>/<question>.md, student after student.
ANSWERS ?= answers
answers: $(OTTER_STAMP)
	@test -n "$(SUBMISSIONS)" || { echo "usage: make answers SUBMISSIONS=folder [ANSWERS=answers] [CHAPTER=...] [FORCE=1]"; exit 2; }
	$(CLI_OTTER) otter-grade "$(SUBMISSIONS)" --answers "$(ANSWERS)" \
	  $(if $(CHAPTER),--chapter $(CHAPTER)) $(if $(FORCE),--force)

# The assignments made and graded (tests/test_otter.py): runs when the instructors'
# environment is installed (`make otter-env`; .ci/run installs it), says plainly that it
# skipped when not. It makes them in _build/otter-test, so that it never replaces the
# assignments an instructor made with `make otter` (with private hidden tests, a site address),
# and makes them again only when they are missing or older than anything they are made from
# (OTTER_SOURCES: tools/make_otter.py and the modules it imports, tools/bookkit/, the grading
# sandbox, the hidden tests, the chapters, the book's pages and configuration (references, page
# titles, numbers), the library, the requirements, this Makefile, the instructors' environment,
# and git's current commit, which the autograder installs the library from); make-otter takes
# about a minute. OTTER_MADE is touched when a make-otter run starts and kept only when it
# succeeds, so an interrupted run is made again, and so is an edit made during a run.
OTTER_SOURCES := tools/make_otter.py tools/portable.py tools/make_assignments.py tools/exercise_catalogue.py \
  tools/course.py tools/grading_sandbox.py tools/bookkit instructors/hidden_tests.py chapters lib \
  book _config.yml _toc.yml requirements.txt requirements-instructor.txt Makefile $(OTTER_STAMP) \
  $(wildcard .git/HEAD .git/refs/heads .git/packed-refs)
OTTER_MADE := _build/otter-test/.made
OTTER_REMAKE = if [ ! -f $(OTTER_MADE) ] || [ -n "$$(find $(OTTER_SOURCES) -newer $(OTTER_MADE) -type f \
	    -not -path '*/__pycache__/*' -not -path '*/.ipynb_checkpoints/*' 2>/dev/null | head -1)" ]; then \
	  rm -f $(OTTER_MADE); mkdir -p _build/otter-test; touch $(OTTER_MADE).start; \
	  $(CLI) make-otter --otter $(OTTER_BIN)/otter --out _build/otter-test --question-timeout 8 || exit 1; \
	  mv $(OTTER_MADE).start $(OTTER_MADE); \
	else echo "test-otter: the assignments in _build/otter-test are newer than all they are made from"; fi
test-otter: $(STAMP)
	@if [ ! -f $(OTTER_STAMP) ]; then \
	  echo "test-otter: SKIPPED, no instructors' environment here (make otter-env installs it)"; exit 0; fi; \
	$(OTTER_REMAKE); \
	OTTER_REQUIRED=1 OTTER_DIR=_build/otter-test $(BIN)/pytest -q tests/test_otter.py tests/test_course.py

# Every chapter's untouched notebook graded, and the grading audit (honest, cheating, hanging and
# broken submissions; make test-extended), on the assignments test-otter made (made again as
# test-otter does).
test-otter-extended: $(STAMP)
	@if [ ! -f $(OTTER_STAMP) ]; then \
	  echo "test-otter-extended: SKIPPED, no instructors' environment here (make otter-env installs it)"; exit 0; fi; \
	$(OTTER_REMAKE); \
	EXTENDED=1 OTTER_REQUIRED=1 OTTER_DIR=_build/otter-test $(BIN)/pytest -q tests/test_otter.py tests/test_grading_integrity.py tests/test_course.py

# make test checks every page of the site in the browser (tools/site_check.py: desktop and phone,
# light and dark, figures, code width, tab order, contrast; 20 pages); make test-extended runs the
# browser check's own tests (planted defects); make site-check is the same check with full-page
# screenshots. make test-site PAGES="chapters/03_* index.html" checks only those pages.
test-site: $(STAMP) $(AXE)
	$(CLI) site-check --allow-missing-browser $(if $(PAGES),--pages $(foreach p,$(PAGES),'$(p)'))

test-site-extended: $(STAMP) $(AXE)
	$(BIN)/pytest -q tests/test_site_check.py

env: $(STAMP)

$(STAMP): requirements.txt requirements-test.txt pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade "pip>=24"
	$(BIN)/python -m pip install --quiet -r requirements.txt -r requirements-test.txt
	touch $(STAMP)

serve: book
	@echo "Serving on http://127.0.0.1:$(PORT)/ (Ctrl-C stops it)"
	$(BIN)/python -m http.server --directory _build/html --bind 127.0.0.1 $(PORT)

clean:
	rm -rf _build

# Re-run every chapter top to bottom and store its outputs (what nbval compares against).
outputs: $(STAMP)
	$(CLI) run-notebooks
