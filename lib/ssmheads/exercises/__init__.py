"""Checks that students call on their answers to the book's exercises.

Each ``check_*`` function takes the student's answer (usually a function they
wrote), tests it on several cases against a reference, and returns a
:class:`CheckResult`. A result is truthy only when the answer passed, so a
solution cell can end in ``assert result``. An untouched stub (a function whose
body is ``...``, or ``None``) is reported as "not attempted yet", never as a
traceback. The checks of Chapter N live in ``ssmheads.exercises.chN``.

What the checks share to call an answer and compare its result with a reference
is public in ``ssmheads.exercises.checking`` (``require_function``, ``call``,
``real_array``, ``number``, ``linear_system``, ``compare``, ``near``, ``is_stub``),
re-exported here; the instructors' hidden tests use it too.
"""

from ._common import CheckResult
from .checking import call, compare, is_stub, linear_system, near, number, real_array, require_function
from .ch1 import check_ema_operator, check_mlp_operator, check_residual_operator
from .ch2 import check_lag_span_dimension, check_long_plateau, check_rank_three_system
from .ch3 import check_exact_heads, check_nonnegative_head_count, check_optimal_error, check_quaternion_heads
from .ch4 import check_delay_loss, check_head_jacobian, check_highway_input, check_ssm_gradient_profile
from .ch5 import check_retention_recurrent, check_rope_operator, check_ssd_operator
from .ch6 import check_delay_floor, check_jacobian_norm

__all__ = [
    "CheckResult",
    "check_ema_operator",
    "check_mlp_operator",
    "check_residual_operator",
    "check_lag_span_dimension",
    "check_rank_three_system",
    "check_long_plateau",
    "check_exact_heads",
    "check_optimal_error",
    "check_nonnegative_head_count",
    "check_quaternion_heads",
    "check_head_jacobian",
    "check_highway_input",
    "check_ssm_gradient_profile",
    "check_delay_loss",
    "check_retention_recurrent",
    "check_rope_operator",
    "check_ssd_operator",
    "check_delay_floor",
    "check_jacobian_norm",
]
