"""Tests of ``ssmheads.systems``: the example models used throughout the book."""

import warnings

import numpy as np
import pytest
from helpers import assert_rel_close

from ssmheads import Convolution, LinearSSM, MultiHeadAttention, PositionwiseLinear
from ssmheads.systems import (
    GALLERY_NAMES,
    diagonal,
    gallery,
    random_attention,
    random_stable,
    rotation,
    rotation_matrix,
)

J = np.array([[0.0, -1.0], [1.0, 0.0]])  # R(pi/2)

# ------------------------------------------------------------ rotation


@pytest.mark.parametrize("theta", [0.0, 0.3, np.pi / 2, 2.0, -1.1, 10.0])
def test_rotation_matrix_is_a_rotation(theta):
    R = rotation_matrix(theta)
    assert R.shape == (2, 2)
    assert_rel_close(R.T @ R, np.eye(2), tol=1e-15)
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-15)
    assert_rel_close(R @ [1.0, 0.0], [np.cos(theta), np.sin(theta)], tol=1e-15)  # counter-clockwise


def test_rotation_matrix_quarter_turn_is_J():
    assert_rel_close(rotation_matrix(np.pi / 2), J, tol=1e-15)


@pytest.mark.parametrize("theta, rho", [(0.4, 1.0), (1.3, 0.9), (2.5, 0.7), (0.4, -0.8)])
def test_rotation_lags_follow_the_closed_form(theta, rho):
    """``K_l = rho^l (cos(l theta) I + sin(l theta) J)`` (math.md Prop. 3(a))."""
    m = rotation(theta, rho)
    assert isinstance(m, LinearSSM) and (m.N, m.d, m.p) == (2, 2, 2)
    assert m.spectral_radius == pytest.approx(abs(rho), rel=1e-14)
    n = 40
    expected = np.stack([rho**l * (np.cos(l * theta) * np.eye(2) + np.sin(l * theta) * J) for l in range(n)])
    assert_rel_close(m.lag_operators(n), expected)


def test_rotation_default_is_undamped():
    assert rotation(0.7).spectral_radius == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_rotation_rejects_non_finite_theta(bad):
    with pytest.raises(ValueError, match="theta must be finite; got"):
        rotation_matrix(bad)
    with pytest.raises(ValueError, match="theta must be finite; got"):
        rotation(bad)


@pytest.mark.parametrize("bad", ["a quarter", None, 1j, [0.1, 0.2]])
def test_rotation_rejects_non_numbers(bad):
    with pytest.raises(ValueError, match="theta must be a real number; got"):
        rotation_matrix(bad)
    with pytest.raises(ValueError, match="rho must be a real number; got"):
        rotation(0.3, rho=bad)


def test_rotation_rejects_non_finite_rho():
    with pytest.raises(ValueError, match="rho must be finite; got"):
        rotation(0.3, rho=np.inf)


# ------------------------------------------------------------ diagonal


def test_diagonal_has_the_given_eigenvalues():
    lam = [0.9, -0.5, 0.2, 0.2]
    m = diagonal(lam)
    np.testing.assert_array_equal(m.A, np.diag(lam))
    np.testing.assert_array_equal(m.B, np.eye(4))
    np.testing.assert_array_equal(m.C, np.eye(4))
    np.testing.assert_allclose(np.sort(np.linalg.eigvals(m.A).real), np.sort(lam))
    K = m.lag_operators(6)
    assert_rel_close(K, np.stack([np.diag(np.array(lam) ** l) for l in range(6)]))


def test_diagonal_uses_given_B_and_C():
    B, C = np.arange(6.0).reshape(3, 2), np.arange(12.0).reshape(4, 3)
    m = diagonal(np.array([0.1, 0.2, 0.3]), B=B, C=C)
    assert (m.N, m.d, m.p) == (3, 2, 4)
    np.testing.assert_array_equal(m.B, B)
    np.testing.assert_array_equal(m.C, C)


def test_diagonal_errors():
    with pytest.raises(ValueError, match="eigenvalues must contain at least one value; got an empty array"):
        diagonal([])
    with pytest.raises(ValueError, match=r"eigenvalues must have shape \(N,\) \(1 dimensions\); got shape \(2, 2\)"):
        diagonal(np.eye(2))
    with pytest.raises(ValueError, match="eigenvalues must contain only finite numbers"):
        diagonal([0.5, np.nan])
    with pytest.raises(ValueError, match=r"B has shape \(2, 2\), but axis 0 must be 3"):
        diagonal([0.1, 0.2, 0.3], B=np.eye(2))


def test_diagonal_rejects_complex_eigenvalues():
    """``diagonal(np.array([0.5+0.5j, 0.5-0.5j]))`` returns A = 0.5 I after a ComplexWarning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", np.exceptions.ComplexWarning)
        with pytest.raises(ValueError, match="eigenvalues"):
            diagonal(np.array([0.5 + 0.5j, 0.5 - 0.5j]))


# ------------------------------------------------------------ random_stable


@pytest.mark.parametrize("N, d, p", [(1, 1, 1), (3, 2, 4), (8, 3, 2)])
@pytest.mark.parametrize("rho", [0.5, 0.9, 1.0, 1.2])
def test_random_stable_has_spectral_radius_rho(N, d, p, rho):
    m = random_stable(N, d, p, rho=rho, seed=N + d + p)
    assert (m.A.shape, m.B.shape, m.C.shape) == ((N, N), (N, d), (p, N))
    assert not np.any(m.D)
    assert abs(np.max(np.abs(np.linalg.eigvals(m.A))) - rho) < 1e-12
    assert abs(m.spectral_radius - rho) < 1e-12


def test_random_stable_default_rho_is_0_9():
    assert abs(random_stable(4, 2, 2).spectral_radius - 0.9) < 1e-12


def test_random_stable_is_reproducible_per_seed():
    a, b, c = random_stable(4, 2, 3, seed=11), random_stable(4, 2, 3, seed=11), random_stable(4, 2, 3, seed=12)
    for name in ("A", "B", "C"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.allclose(getattr(a, name), getattr(c, name))


@pytest.mark.parametrize("rho", [0, 0.0, -0.5])
def test_random_stable_rejects_nonpositive_rho(rho):
    with pytest.raises(ValueError, match="rho must be positive; got"):
        random_stable(3, 2, 2, rho=rho)


@pytest.mark.parametrize("name, kwargs", [("N", dict(N=0)), ("d", dict(d=2.0)), ("p", dict(p=True)), ("N", dict(N=-1))])
def test_random_stable_rejects_bad_sizes(name, kwargs):
    args = dict(N=3, d=2, p=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=f"{name} must be an integer >= 1; got"):
        random_stable(**args)


def test_random_stable_rejects_non_finite_rho():
    with pytest.raises(ValueError, match="rho must be finite; got nan"):
        random_stable(3, 2, 2, rho=float("nan"))


# ------------------------------------------------------------ random_attention


def test_random_attention_default_widths_are_d():
    mha = random_attention(3, 4)
    assert isinstance(mha, MultiHeadAttention)
    assert (mha.H, mha.d, mha.p, mha.d_k, mha.d_v) == (3, 4, 4, 4, 4)
    assert mha.causal is True and mha.kernel == "softmax"


def test_random_attention_shapes_and_options():
    mha = random_attention(2, 3, p=5, d_k=4, d_v=6, causal=False, kernel="linear")
    assert mha.W_Q.shape == (2, 4, 3) and mha.W_K.shape == (2, 4, 3)
    assert mha.W_V.shape == (2, 6, 3) and mha.W_O.shape == (2, 5, 6)
    assert mha.causal is False and mha.kernel == "linear"


def test_random_attention_is_deterministic_per_seed():
    a, b, c = random_attention(2, 3, seed=4), random_attention(2, 3, seed=4), random_attention(2, 3, seed=5)
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
        assert not np.allclose(getattr(a, name), getattr(c, name))


def test_random_attention_scale_multiplies_only_the_queries():
    a, b = random_attention(2, 3, seed=1, scale=1.0), random_attention(2, 3, seed=1, scale=3.0)
    assert_rel_close(b.W_Q, 3.0 * a.W_Q, tol=1e-15)
    for name in ("W_K", "W_V", "W_O"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


def test_random_attention_errors():
    with pytest.raises(ValueError, match="H must be an integer >= 1; got 0"):
        random_attention(0, 3)
    with pytest.raises(ValueError, match="d must be an integer >= 1; got 2.5"):
        random_attention(1, 2.5)
    for name in ("p", "d_k", "d_v"):
        with pytest.raises(ValueError, match=f"{name} must be an integer >= 1; got 0"):
            random_attention(1, 3, **{name: 0})
    with pytest.raises(ValueError, match="scale must be finite; got inf"):
        random_attention(1, 3, scale=float("inf"))
    with pytest.raises(ValueError, match="kernel must be 'softmax' or 'linear'"):
        random_attention(1, 3, kernel="relu")
    with pytest.raises(ValueError, match="causal must be True or False"):
        random_attention(1, 3, causal="no")


SEEDED = {
    "random_stable": lambda seed: random_stable(3, 2, 2, seed=seed),
    "random_attention": lambda seed: random_attention(1, 2, seed=seed),
    "gallery": lambda seed: gallery(seed=seed),
}


@pytest.mark.parametrize("seed", [1.5, -1])
@pytest.mark.parametrize("make", SEEDED.values(), ids=SEEDED.keys())
def test_seeded_functions_reject_bad_seed(make, seed):
    with pytest.raises(ValueError, match="seed"):
        make(seed)


# ------------------------------------------------------------ gallery


def test_gallery_names():
    assert GALLERY_NAMES == (
        "position-wise linear",
        "causal convolution",
        "LTI SSM",
        "softmax attention, 1 head",
        "softmax attention, 4 heads",
        "linear attention",
    )


@pytest.mark.parametrize("d", [1, 2, 3])
def test_gallery_returns_one_layer_per_name_with_p_equal_d(d):
    layers = gallery(d=d, seed=3)
    assert tuple(layers) == GALLERY_NAMES
    for name, layer in layers.items():
        assert (layer.d, layer.p) == (d, d), name
    assert isinstance(layers["position-wise linear"], PositionwiseLinear)
    assert isinstance(layers["causal convolution"], Convolution) and layers["causal convolution"].L == 3
    ssm = layers["LTI SSM"]
    assert isinstance(ssm, LinearSSM) and ssm.N == 2 * d and abs(ssm.spectral_radius - 0.8) < 1e-12
    assert layers["softmax attention, 1 head"].H == 1 and layers["softmax attention, 1 head"].kernel == "softmax"
    assert layers["softmax attention, 4 heads"].H == 4
    lin = layers["linear attention"]
    assert lin.H == 1 and lin.kernel == "linear" and lin.causal


def test_gallery_is_deterministic_per_seed():
    X = np.random.default_rng(0).standard_normal((5, 2))
    a, b, c = gallery(seed=1), gallery(seed=1), gallery(seed=2)
    for name in GALLERY_NAMES:
        np.testing.assert_array_equal(a[name].forward(X), b[name].forward(X))
        assert not np.allclose(a[name].forward(X), c[name].forward(X)), name


def test_gallery_rejects_bad_d():
    with pytest.raises(ValueError, match="d must be an integer >= 1; got 0"):
        gallery(d=0)
