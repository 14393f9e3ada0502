"""Which cells `make grade` leaves out (tools/idle_cells.py): never one an answer or a test can need."""

import json
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import idle_cells  # noqa: E402


def idle(cells, changed=(), words=(), keep=(), silent=()):
    handed = {c.strip() for k, c in enumerate(cells) if k not in changed}
    return idle_cells.idle(list(cells), handed, set(words), set(keep), set(silent))


def test_a_figure_and_the_cell_computing_its_data_are_left_out_together():
    cells = ["import numpy as np\nimport matplotlib.pyplot as plt",
             "xs = np.linspace(0, 1, 9)\nys = xs ** 2",
             "fig, ax = plt.subplots()\nax.plot(xs, ys)\nplt.show()",
             "def answer(x):\n    ..."]
    assert idle(cells, keep={3}) == {0, 1, 2}
    # the answer reads np: the imports run, the figure's cells do not
    cells[3] = "def answer(x):\n    return np.sum(x)"
    assert idle(cells, keep={3}, changed={3}) == {1, 2}


def test_a_cell_runs_when_an_answer_or_a_test_reads_what_it_binds():
    cells = ["import numpy as np", "scale = 3.0", "def answer(x):\n    return scale * x"]
    assert idle(cells, keep={2}, changed={2}) == {0}                   # the answer reads scale, not np
    cells[2] = "def answer(x):\n    ..."
    assert idle(cells, keep={2}) == {0, 1}
    assert idle(cells, keep={2}, words={"scale"}) == {0}               # a test reads `scale` from the notebook


def test_a_cell_a_student_changed_or_added_always_runs_and_its_reads_count():
    cells = ["results = [1, 2, 3]", "total = sum(results)  # added by the student"]
    assert idle(cells, changed={1}) == set()
    assert idle(cells) == {0, 1}


def test_what_a_cell_changes_counts_as_what_it_binds():
    cells = ["log = []", "def verify(ok):\n    log.append(ok)\n    return ok",
             "verify(1 < 2)", "print(len(log))  # added by the student"]
    # cell 2 appends to `log` through verify; the student's cell reads log: 0, 1 and 2 run
    assert idle(cells, changed={3}) == set()
    assert idle(cells[:3]) == {0, 1, 2}
    # item and attribute stores, augmented assignment, a mutating method
    for change in ("log[0] = 1", "log += [1]", "log.extend([1])", "setup.value = 2"):
        cells = ["log = [0]\nsetup = type('S', (), {})()", change, "print(log, setup)  # the student's"]
        assert 1 not in idle(cells, changed={2}), change


def test_state_of_a_module_or_the_process_keeps_the_cell():
    for change in ("np.random.seed(0)", "x = np.random.standard_normal(3)", "np.set_printoptions(precision=3)",
                   "plt.rcParams['figure.dpi'] = 50", "plt.style.use('dark_background')", "warnings.simplefilter('error')"):
        cells = ["import numpy as np\nimport matplotlib.pyplot as plt\nimport warnings", change,
                 "def answer():\n    return np.random.rand(), plt, warnings"]
        assert 1 not in idle(cells, keep={2}, changed={2}), change
    cells = ["import numpy as np", "rng = np.random.default_rng(0)\nx = rng.standard_normal(3)",
             "def answer():\n    return np.zeros(2)"]
    assert 1 in idle(cells, keep={2}, changed={2})                     # its own generator: nothing outside changes


def test_code_a_static_reading_cannot_follow_always_runs():
    for opaque in ("global k\nk = 1", "exec('k = 1')", "globals()['k'] = 1", "del k", "from os.path import *",
                   "%matplotlib inline", "!pip install x", "setattr(obj, 'k', 1)"):
        assert 1 not in idle(["k = 0\nobj = object()", opaque]), opaque


def test_a_name_read_by_string_counts_where_the_code_can_read_globals_by_name():
    cells = ["secret = 42", "def answer():\n    return globals()['secret']"]
    assert idle(cells, keep={1}, changed={1}) == set()
    cells = ["secret = 42", "import sys\ndef answer():\n    return sys.modules['__main__'].secret"]
    assert idle(cells, keep={1}, changed={1}) == set()
    cells = ["secret = 42", "def answer():\n    return 'secret'"]              # a string, nothing more
    assert idle(cells, keep={1}, changed={1}) == {0}


def test_a_binding_inside_a_branch_or_a_loop_does_not_hide_the_global():
    cells = ["ax = 'the chapter'", "if flag:\n    ax = 1\nprint(ax)  # the student's", "flag = False"]
    assert 0 not in idle(cells, changed={1})
    cells = ["item = 'the chapter'", "for item in []:\n    pass\nprint(item)  # the student's"]
    assert 0 not in idle(cells, changed={1})
    cells = ["x = 1", "with open(__file__) as x:\n    pass\nprint(x)  # the student's"]
    assert 0 in idle(cells, changed={1})                                 # `with ... as x` binds it for certain


def test_the_cells_read_by_hand_do_not_keep_anything():
    cells = ["table = [1, 2]", "# Exercise: your work (read by hand)\nprint(table)"]
    assert idle(cells, silent={1}, changed={1}) == {0}


def test_an_otter_test_reads_its_arguments_and_env_keys_not_its_own_locals():
    source = '''
from otter.test_files import test_case

@test_case(points=1, hidden=True)
def test_one(answer, env):
    rows = [1, 2]
    cases = env.get("__hidden__cases")
    env["__hidden__other"] = rows
    assert "scale" in env
'''
    assert idle_cells.test_names(source) == {"answer", "__hidden__cases", "__hidden__other", "scale"}
    assert "rows" in idle_cells.test_names("def test(env):\n    return env[name]\nrows = 1")  # computed key: every word


def test_grading_prepares_each_submission_with_its_own_idle_cells(tmp_path):
    """Through otter_grade._prepared: a figure cell that make_otter tagged runs when this student's
    answer reads what it computed, and the imports run only when something that runs uses them."""
    import otter_grade

    def code(cell_id, source, **meta):
        return {"cell_type": "code", "id": cell_id, "metadata": meta, "outputs": [], "execution_count": None,
                "source": source}

    handed = {"cells": [code("setup", "import os"), code("imports", "import numpy as np"),
                        code("figure", "grid = np.linspace(0, 1, 5)\nprint(grid)", tags=["otter_ignore"]),
                        code("stub-ex-a", "def f(x):\n    ...", exercise_stub="ex-a"),
                        code("work-ex-b", "# your work (read by hand)", exercise_work="ex-b", tags=["otter_ignore"])],
              "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    folder = tmp_path / "01_alpha"
    (folder / "student").mkdir(parents=True)
    (folder / "student" / "01_alpha.ipynb").write_text(json.dumps(handed))
    (folder / "autograder").mkdir()
    with zipfile.ZipFile(folder / "autograder" / "01_alpha-autograder.zip", "w") as archive:
        archive.writestr("tests/ex1.1.py", "def test_f(f, env):\n    assert env.get('f')\n")
    questions = [{"name": "ex1.1", "label": "ex-a", "number": "1.1", "manual": False}]

    def skipped(stub_source):
        submitted = json.loads(json.dumps(handed))
        submitted["cells"][3]["source"] = stub_source
        path = tmp_path / "sub.ipynb"
        path.write_text(json.dumps(submitted))
        nb, _, _ = otter_grade._prepared(path, "01_alpha", questions, tmp_path, 5.0, None)
        return {c["id"] for c in nb["cells"] if "otter_ignore" in (c.get("metadata") or {}).get("tags", [])}

    assert skipped("def f(x):\n    ...") == {"imports", "figure", "work-ex-b"}
    assert skipped("def f(x):\n    return np.sum(x)") == {"figure", "work-ex-b"}
    assert skipped("def f(x):\n    return grid * x") == {"work-ex-b"}          # reads the figure's data: it runs


def run(cells, skip=frozenset()):
    """Run the cells in order in one namespace, leaving out ``skip``; return the namespace."""
    space: dict = {}
    for k, cell in enumerate(cells):
        if k not in skip:
            exec(cell, space)
    return space


def test_the_outside_testers_cases_give_the_same_answer_with_idle_cells_left_out():
    """The cases a review found (each an honest answer that worked top to bottom and failed, or
    changed, with the idle cells left out): each now gives the same result both ways."""
    cases = [
        ["import numpy as np\nrng = np.random.default_rng(0)", "samples = rng.normal(size=3)",
         "def answer():\n    return rng.normal()"],                                   # a shared generator
        ["class Model:\n    mu = None\n    def fit(self, x):\n        self.mu = sum(x) / len(x)\nmodel = Model()",
         "model.fit([1, 2, 3])", "def answer():\n    return model.mu"],               # a method that changes its object
        ["def normalize(v):\n    v[0] = 0\nw = [5, 1]", "normalize(w)", "def answer():\n    return w"],
        ["grid = [[0] * 3 for _ in range(3)]", "row = grid[0]\nrow[:] = [1, 1, 1]", "def answer():\n    return grid"],
        ["n_steps = 7", "class Stepper:\n    def __init__(self):\n        self.n = n_steps\n"
         "    def other(self):\n        n_steps = 1\n        return n_steps", "def answer():\n    return Stepper().n"],
        ["x = 3", "def answer():\n    return [x for x in range(2)] + [x]"],          # a comprehension's own x
        ["cutoff = 2", "def answer(df):\n    return df.query('a > @cutoff')"],
        ["[(total := k) for k in range(4)]", "def answer():\n    return total"],          # a walrus binds a global
    ]
    for cells in cases:
        answer = len(cells) - 1
        skip = idle(cells, keep={answer}, changed={answer})
        full, lean = run(cells), run(cells, skip)
        if "df" in cells[answer]:
            assert 0 not in skip, cells
            continue
        assert repr(full["answer"]()) == repr(lean["answer"]()), (cells, skip)


def test_reading_a_value_is_not_changing_it():
    """What the rules above must not turn into: a copy of a module's constant, or a call of a
    function that only reads its argument, changes nothing (else every chapter cell would run)."""
    cells = ["import numpy as np", "best = np.inf\nx = best + 1", "def answer():\n    return np.zeros(1)"]
    assert 1 in idle(cells, keep={2}, changed={2})
    cells = ["def twice(n):\n    return n * 2\nd = 3", "y = twice(d)", "def answer():\n    return d"]
    assert 1 in idle(cells, keep={2}, changed={2})
    cells[0] = "def twice(v):\n    v[0] *= 2\n    return v\nd = [3]"           # now it changes what it is given
    assert 1 not in idle(cells, keep={2}, changed={2})
