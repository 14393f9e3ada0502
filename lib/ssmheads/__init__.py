"""ssmheads: the library of the executable textbook *How Many Heads Make an SSM?*

Attention layers and state-space models both compute ``y_i = sum_j W_ij(X) x_j``.
This package builds those operators, compares the ways of computing them, and
checks the book's theorems numerically. Arrays follow one convention: a sequence
is ``(n, d)``, an interaction operator ``(n, n, p, d)``, lag operators ``(n, p, d)``.

Modules: :mod:`~ssmheads.models` and :mod:`~ssmheads.operator` (Chapter 1),
:mod:`~ssmheads.span` (Chapter 2), :mod:`~ssmheads.heads` (Chapter 3), :mod:`~ssmheads.gradients` (Chapter 4), :mod:`~ssmheads.architectures` (Chapter 5), :mod:`~ssmheads.systems` (example models), :mod:`~ssmheads.plotting`,
:mod:`~ssmheads.widgets`, :mod:`~ssmheads.exercises`, and :mod:`~ssmheads.source` (the listings the
chapters show).
"""

import importlib

from . import architectures, exercises, gradients, heads, numerics, operator, source, span, systems
from .numerics import close, relative_gap
from .source import show_source
from .architectures import (
    ALiBiAttention,
    Hybrid,
    LinearAttention,
    Mamba,
    Mamba2,
    RankRow,
    RankTable,
    Retention,
    RoPEAttention,
    S4D,
    S5,
    rank_table,
)
from .gradients import (
    decay_bound,
    finite_difference_jacobian,
    gradient_profile,
    highway_input,
    jacobian,
    jacobian_row,
)
from .heads import (
    FactorizedHeads,
    exact_heads,
    fit_heads,
    head_count_curve,
    is_pointed,
    nonnegative_head_count,
    nonnegative_heads,
    optimal_heads,
    softmax_heads,
)
from .models import Convolution, LinearSSM, MultiHeadAttention, PositionwiseLinear, lag_operators
from .operator import (
    apply_interaction,
    block_norms,
    causality_violation,
    operator_of_linear_map,
    toeplitz_deviation,
    toeplitz_operator,
    trivial_interaction_form,
    two_route_gap,
)
from .span import (
    interaction_rank,
    lag_span_bound,
    lag_span_dimension,
    lag_span_profile,
    minimal_polynomial_degree,
    singular_values,
    span_basis,
)

# The version of the library and of the book (one number: pyproject.toml reads it from here;
# CITATION.cff, CHANGELOG.md and the BibTeX entries repeat it, and tests/test_first_contact.py
# checks that they agree).
__version__ = "1.0.0"

#: Submodules imported when first used (``sh.plotting``, ``sh.widgets``): they need Matplotlib and
#: ipywidgets, which a script or a grader that only computes need not load (0.3-0.5 s each).
_LAZY = ("plotting", "widgets")


def __getattr__(name):
    if name in _LAZY:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))

__all__ = [
    "LinearSSM",
    "MultiHeadAttention",
    "Convolution",
    "PositionwiseLinear",
    "lag_operators",
    "apply_interaction",
    "toeplitz_operator",
    "block_norms",
    "causality_violation",
    "toeplitz_deviation",
    "operator_of_linear_map",
    "trivial_interaction_form",
    "two_route_gap",
    "interaction_rank",
    "span_basis",
    "singular_values",
    "lag_span_dimension",
    "lag_span_profile",
    "minimal_polynomial_degree",
    "lag_span_bound",
    "FactorizedHeads",
    "optimal_heads",
    "head_count_curve",
    "exact_heads",
    "fit_heads",
    "is_pointed",
    "nonnegative_head_count",
    "nonnegative_heads",
    "softmax_heads",
    "heads",
    "jacobian",
    "jacobian_row",
    "finite_difference_jacobian",
    "gradient_profile",
    "highway_input",
    "decay_bound",
    "gradients",
    "close",
    "relative_gap",
    "numerics",
    "span",
    "systems",
    "plotting",
    "widgets",
    "exercises",
    "operator",
    "LinearAttention",
    "Retention",
    "ALiBiAttention",
    "RoPEAttention",
    "S4D",
    "S5",
    "Mamba",
    "Mamba2",
    "Hybrid",
    "RankRow",
    "RankTable",
    "rank_table",
    "architectures",
    "show_source",
    "source",
]
