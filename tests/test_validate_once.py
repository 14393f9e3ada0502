"""Validate once, at the public edge.

A public function checks its arguments once and then calls private, unchecked cores;
it does not call other public functions that check the same arrays again (before
issue 14, one call of ``exact_heads`` validated ``A`` three times and built and checked
the heads it returns once more). A method of a layer checks only its own arguments: the
layer's parameters were checked when it was made.

These tests count, during one public call, every call of the library's validators
(``_validate.as_array`` and ``check_positive_int``, and the parameter checks of
``architectures``) by the argument name they are given. Each name may be checked at most
once, and a method may check no name but its own arguments.
"""

from __future__ import annotations

import collections
import inspect
import sys

import numpy as np
import pytest

import ssmheads as sh
from ssmheads import _validate
from ssmheads import architectures as ar

VALIDATORS = {
    "as_array": _validate.as_array,
    "check_positive_int": _validate.check_positive_int,
}
for _name in ("_param", "_complex_param", "_real_number"):
    if hasattr(ar, _name):
        VALIDATORS[_name] = getattr(ar, _name)


@pytest.fixture
def counted(monkeypatch):
    """A Counter of the argument names validated, filled while the test runs."""
    counts = collections.Counter()
    originals = {id(f): f for f in VALIDATORS.values()}

    def wrap(f):
        def counting(name, *args, **kwargs):
            counts[name] += 1
            return f(name, *args, **kwargs)
        return counting

    wrapped = {id(f): wrap(f) for f in VALIDATORS.values()}
    for modname, module in list(sys.modules.items()):
        if not (modname == "ssmheads" or modname.startswith("ssmheads.")):
            continue
        for attr, value in list(vars(module).items()):
            if id(value) in originals and callable(value):
                monkeypatch.setattr(module, attr, wrapped[id(value)])
    return counts


rng = np.random.default_rng(0)
A = 0.3 * rng.standard_normal((4, 4))
B = rng.standard_normal((4, 2))
C = rng.standard_normal((3, 4))
X = rng.standard_normal((6, 2))
K = sh.lag_operators(A, B, C, 8)
SSM = sh.LinearSSM(A, B, C, np.ones((3, 2)))
MHA = sh.systems.random_attention(2, 2, 3, seed=0)
HEADS = sh.exact_heads(A, B, C, 8)


def _att(d=2, dk=3, p=2):
    return rng.standard_normal((dk, d)), rng.standard_normal((dk, d)), rng.standard_normal((p, d))


S4D = ar.S4D(-np.ones((2, 3)) + 1j * np.arange(6).reshape(2, 3), rng.standard_normal((2, 3)),
             rng.standard_normal((2, 3)) + 0j, np.full(2, 0.5))
MAMBA = ar.Mamba(rng.standard_normal((3, 2)), rng.standard_normal((3, 3)) / 2, rng.standard_normal((2, 3)),
                 rng.standard_normal((2, 3)), 0.5 * rng.standard_normal((3, 2)), rng.standard_normal(3))
MAMBA2 = ar.Mamba2(rng.standard_normal((4, 2)), rng.standard_normal((2, 4)), rng.standard_normal((2, 2)),
                   rng.standard_normal((3, 2)), rng.standard_normal((3, 2)), 2)
RET = ar.Retention(*_att(), gamma=0.9)

#: (label, call, the names the call may check: its own arguments)
FUNCTIONS = [
    ("lag_operators", lambda: sh.lag_operators(A, B, C, 8), None),
    ("lag_span_dimension", lambda: sh.lag_span_dimension(A, B, C, 8), None),
    ("lag_span_profile", lambda: sh.lag_span_profile(A, B, C, 8), None),
    ("lag_span_bound", lambda: sh.lag_span_bound(A, B, C, 8), None),
    ("minimal_polynomial_degree", lambda: sh.minimal_polynomial_degree(A), None),
    ("interaction_rank", lambda: sh.interaction_rank(K), None),
    ("span_basis", lambda: sh.span_basis(K), None),
    ("exact_heads", lambda: sh.exact_heads(A, B, C, 8), {"A", "B", "C", "n"}),
    ("optimal_heads", lambda: sh.optimal_heads(K, 2), {"K", "H"}),
    ("head_count_curve", lambda: sh.head_count_curve(K, 3), {"K", "H_max"}),
    ("nonnegative_heads", lambda: sh.nonnegative_heads(K), {"K"}),
    ("softmax_heads", lambda: sh.softmax_heads(K), {"K"}),
    ("toeplitz_operator", lambda: sh.toeplitz_operator(K, 8), {"K", "n"}),
    ("decay_bound", lambda: sh.gradients.decay_bound(A, B, C, [1, 2, 3]), None),
    ("LinearSSM.interaction", lambda: SSM.interaction(X), {"X"}),
    ("LinearSSM.forward", lambda: SSM.forward(X), {"X"}),
    ("LinearSSM.lag_operators", lambda: SSM.lag_operators(5), {"n"}),
    ("MultiHeadAttention.interaction", lambda: MHA.interaction(X), {"X"}),
    ("FactorizedHeads.forward", lambda: HEADS.forward(X), {"X"}),
    ("FactorizedHeads.interaction", lambda: HEADS.interaction(X), {"n_or_X (an input X)"}),
    ("jacobian_row", lambda: sh.jacobian_row(SSM, X), {"X", "i"}),
    ("jacobian_row attention", lambda: sh.jacobian_row(MHA, X), {"X", "i"}),
    ("gradient_profile", lambda: sh.gradient_profile(SSM, X), {"X", "i"}),
    ("Retention.chunkwise_forward", lambda: RET.chunkwise_forward(X, 2), {"X", "chunk"}),
    ("S4D.interaction", lambda: S4D.interaction(X), {"X"}),
    ("Mamba.forward", lambda: MAMBA.forward(X), {"X"}),
    ("Mamba.interaction", lambda: MAMBA.interaction(X), {"X"}),
    ("Mamba2.ssd_forward", lambda: MAMBA2.ssd_forward(X, 2), {"X", "chunk"}),
    ("Mamba2.interaction", lambda: MAMBA2.interaction(X), {"X"}),
]


@pytest.mark.parametrize("label, call, allowed", FUNCTIONS, ids=[row[0] for row in FUNCTIONS])
def test_each_argument_is_checked_once(counted, label, call, allowed):
    call()
    twice = {name: k for name, k in counted.items() if k > 1}
    assert not twice, f"{label} checks {twice} more than once: call the private cores after the first check"
    if allowed is not None:
        extra = set(counted) - allowed
        assert not extra, f"{label} checks {sorted(extra)}, which are not its arguments (checked already)"
    assert counted, f"{label} checks nothing: the counter is not wired"


def test_the_counter_sees_a_second_check(counted):
    """The harness would catch a public function that calls another public one."""
    sh.lag_operators(A, B, C, 4)
    sh.lag_operators(A, B, C, 4)
    assert counted["A"] == 2 and counted["n"] == 2
