"""The public API: what ``__all__`` promises exists, is documented, and is tested.

The public names are those in ``ssmheads.__all__`` and in each module's ``__all__``.
"""

import inspect
import re
import types
from pathlib import Path

import pytest

import ssmheads

MODULES = [ssmheads.operator, ssmheads.systems, ssmheads.plotting, ssmheads.widgets, ssmheads.exercises,
           ssmheads.models]
PUBLIC = sorted({("ssmheads", name) for name in ssmheads.__all__}
                | {(m.__name__, name) for m in MODULES for name in m.__all__})
TEST_SOURCES = {p.name: p.read_text() for p in Path(__file__).parent.glob("test_*.py") if p.name != Path(__file__).name}


def _resolve(module_name, name):
    module = ssmheads if module_name == "ssmheads" else getattr(ssmheads, module_name.split(".")[1])
    return getattr(module, name)


def test_every_module_lists_its_public_names():
    for module in [ssmheads, *MODULES]:
        assert module.__all__, module.__name__
        assert len(set(module.__all__)) == len(module.__all__), f"duplicates in {module.__name__}.__all__"
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.__all__ lists missing {name!r}"


def test_top_level_reexports_are_the_module_objects():
    assert ssmheads.LinearSSM is ssmheads.models.LinearSSM
    assert ssmheads.apply_interaction is ssmheads.operator.apply_interaction
    assert isinstance(ssmheads.systems, types.ModuleType)
    assert re.fullmatch(r"\d+\.\d+\.\d+", ssmheads.__version__)


@pytest.mark.parametrize("module_name, name", PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_public_callables_and_modules_have_docstrings(module_name, name):
    obj = _resolve(module_name, name)
    if callable(obj) or isinstance(obj, types.ModuleType):
        doc = inspect.getdoc(obj)
        assert doc and len(doc.strip()) > 20, f"{module_name}.{name} has no docstring"
    if inspect.isclass(obj):
        for attr, member in vars(obj).items():
            if not attr.startswith("_") and (inspect.isfunction(member) or isinstance(member, property)):
                assert inspect.getdoc(member), f"{module_name}.{name}.{attr} has no docstring"


@pytest.mark.parametrize("module_name, name", PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_every_public_name_is_used_in_a_test_module(module_name, name):
    """Guards the acceptance criterion that each public name is exercised by at least one test."""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    users = [fname for fname, text in TEST_SOURCES.items() if pattern.search(text)]
    assert users, f"{module_name}.{name} is not used by any test module"
