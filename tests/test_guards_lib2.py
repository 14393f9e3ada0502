"""Clear errors and bounded work in span, gradients, systems and the Chapter 2 and 4 explorers (issue 11)."""

import numpy as np
import pytest

from ssmheads import LinearSSM, systems
from ssmheads.gradients import decay_bound, finite_difference_jacobian, gelfand_constant, gradient_profile, jacobian
from ssmheads.span import default_rtol
from ssmheads.widgets import ch2, ch4


def test_gelfand_constant_of_a_normal_matrix_is_one_without_powers_even_at_a_tiny_gap():
    assert gelfand_constant(0.9 * np.eye(3), 0.9 * (1 + 1e-9)) == 1.0
    Q = np.linalg.qr(np.random.default_rng(0).standard_normal((5, 5)))[0]
    assert gelfand_constant(0.5 * Q, 0.5 * (1 + 1e-12)) == 1.0


def test_gelfand_constant_too_close_to_the_spectral_radius_names_rho_bar_and_the_gap():
    J = systems.jordan([(0.9, 3)]).A
    with pytest.raises(ValueError, match=r"rho_bar = .* within a relative 1e-09 of the spectral radius 0\.9"):
        gelfand_constant(J, 0.9 * (1 + 1e-9))
    # a caller's max_lag truncates instead
    assert gelfand_constant(J, 0.9 * (1 + 1e-9), max_lag=50) > 1.0


def test_decay_bound_near_one_is_a_valid_bound_without_walking_every_lag():
    """Issue 22: near rho = 1 decay_bound bounds kappa (a walk over powers of powers) instead of refusing."""
    s = systems.random_stable(N=8, d=2, p=2, rho=1 - 1e-6, seed=0)
    lags = np.array([0, 1, 10, 1000, 10**5, 10**6])
    bound = decay_bound(s.A, s.B, s.C, lags)
    assert not bound.kappa_exact and np.isfinite(bound.kappa)
    norms = [np.linalg.norm(s.C @ np.linalg.matrix_power(s.A, int(l)) @ s.B, 2) for l in lags]
    assert np.all(norms <= bound.general)


@pytest.mark.parametrize("f, match", [
    (lambda Z: Z.ravel()[:5], r"f must return an array of shape \(n, p\) = \(3, p\).*got.*\(5,\)|returned shape \(5,\)"),
    (lambda Z: Z[:, 0], r"f must return an array of shape \(n, p\) = \(3, p\).*returned shape \(3,\)"),
    (lambda Z: Z[:2], r"returned shape \(2, 2\)"),
    (lambda Z: "text", r"f must map X of shape \(3, 2\) to a real array"),
    (lambda Z: 1 / 0, r"f must map X .* ZeroDivisionError"),
    (lambda Z: Z * np.nan, r"f returned NaN or infinity at X perturbed by eps"),
    (5, r"f must be a callable"),
])
def test_finite_difference_jacobian_names_f_and_the_expected_shape(f, match):
    with pytest.raises(ValueError, match=match):
        finite_difference_jacobian(f, np.ones((3, 2)))


def test_finite_difference_jacobian_rejects_an_empty_X():
    with pytest.raises(ValueError, match=r"X must have at least one token"):
        finite_difference_jacobian(lambda Z: Z, np.zeros((0, 2)))


def test_finite_difference_jacobian_rejects_a_shape_that_changes_with_the_input():
    def f(Z):
        return Z if Z[0, 0] == 1.0 else Z[:, :1]
    with pytest.raises(ValueError, match=r"f must return the same shape"):
        finite_difference_jacobian(f, np.ones((3, 2)))


def test_diagonal_blames_the_mismatch_on_the_number_of_eigenvalues():
    with pytest.raises(ValueError, match=r"^B has shape \(2, 2\), but axis 0 must be 1, the number of eigenvalues"):
        systems.diagonal([0.5], B=np.eye(2))


def test_unstable_ssm_errors_name_the_spectral_radius():
    A = 1.5 * systems.rotation_matrix(0.3)
    ssm = LinearSSM(A, np.eye(2), np.eye(2))
    X = np.ones((3000, 2))
    for call in (lambda: jacobian(ssm, X), lambda: gradient_profile(ssm, X)):
        with pytest.raises(ValueError, match=r"spectral radius 1\.5"):
            call()


@pytest.mark.parametrize("args, match", [((-1, 2.5, True), r"m must be an integer >= 1"),
                                         ((3, 2.5, 1), r"p must be an integer >= 1"),
                                         ((3, 2, True), r"d must be an integer >= 1"),
                                         (("a", 1, 1), r"m must be an integer")])
def test_default_rtol_rejects_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        default_rtol(*args)


@pytest.mark.parametrize("kwargs, match", [
    ({"family": "diagonal", "rho": np.nan}, r"^rho must be finite"),
    ({"family": "rotation", "theta": np.inf}, r"^theta must be finite"),
    ({"family": "Jordan", "rho": -0.5}, r"^rho must be a positive number"),
    ({"family": "diagonal", "k": 10**5}, r"^k must be at most 64"),
    ({"family": 3}, r"^family must be one of"),
    ({"family": "random with lag rank k", "seed": -1}, r"^seed must be an integer >= 0"),
])
def test_family_system_names_the_bad_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ch2.family_system(**kwargs)


def test_explorer_figures_refuse_huge_lengths():
    with pytest.raises(ValueError, match=r"^n must be at most 400"):
        ch2.rank_explorer_figure(n=10**5)
    with pytest.raises(ValueError, match=r"^n must be at most 100000"):
        ch4.highway_explorer_figure(n=10**7)


@pytest.mark.parametrize("call, match", [
    (lambda: systems.random_stable(30000, 2, 2), r"^N must be at most 2048"),
    (lambda: systems.random_with_lag_rank(3000, 100, 100), r"^k must be at most 2048"),
    (lambda: systems.random_attention(10**6, 4000), r"^H must be at most 4096"),
    (lambda: systems.random_attention(4000, 4000), r"^H would make"),
    (lambda: systems.random_attention(2, 10**7), r"^d would make"),
    (lambda: systems.jordan([(0.5, 10**5)]), r"^blocks would make"),
    (lambda: systems.diagonal(np.ones(20000)), r"^eigenvalues would make"),
    (lambda: systems.gallery(d=10**5), r"^d must be at most 1024"),
    (lambda: systems.random_stable(3, 2, 2, rho=True), r"^rho must be a real number"),
])
def test_systems_refuse_huge_or_bad_inputs_naming_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()
