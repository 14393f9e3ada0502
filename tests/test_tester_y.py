"""The outside tester's findings on gradients, systems, operator, numerics and _validate (issue 11 follow-up).

Each test is the tester's reproducing call, asserting the fixed behaviour: a finite, correct
result, or a ValueError that names the caller's argument."""

import numpy as np
import pytest

import ssmheads.gradients as G
from ssmheads import models, numerics, operator, systems

MHA = systems.random_attention(1, 2)


# 1. non-finite results on finite input
def test_kernel_with_overflowing_decay_is_an_impulse():
    K = G.diagonal_ssm_kernel([710.], [0.], [[1, 0]], [[1, 0]], 3)
    assert np.array_equal(K, [1.0, 0.0, 0.0])  # lambda = 0, lambda^0 = 1


def test_delay_loss_with_overflowing_decay_is_exact():
    loss, grads = G.delay_task_loss([710.], [0.], [[1, 0]], [[1, 0]], 1, 4)
    # K = (1, 0, 0, 0), weights w = (4, 3, 2, 1), target lag 1: (4 * 1 + 3 * 1) / 3
    assert abs(loss - 7 / 3) < 1e-14
    assert all(np.all(np.isfinite(g)) for g in grads.values())
    assert grads["nu"][0] == 0.0
    assert abs(grads["b"][0, 0] - 8 / 3) < 1e-14  # d loss / d Re b = 2 w_0 K_0 / w_L


def test_delay_loss_overflowing_weights_name_b_and_c():
    with pytest.raises(ValueError, match="b and c"):
        G.delay_task_loss([710.], [0.], [[1e200, 0]], [[1e200, 0]], 1, 4)
    with pytest.raises(ValueError, match="b and c"):
        G.diagonal_ssm_kernel([0.], [0.], [[1e200, 0]], [[1e200, 0]], 3)


def test_delay_loss_unchanged_on_ordinary_input():
    nu, theta, b, c = np.array([0.1, -1.0]), np.array([0.3, 1.0]), np.array([[1, .5], [.2, -1]]), \
        np.array([[1, .2], [-.3, .4]])
    loss, grads = G.delay_task_loss(nu, theta, b, c, 1, 6)
    h = 1e-6
    num = (G.delay_task_loss(nu + [h, 0], theta, b, c, 1, 6)[0] - G.delay_task_loss(nu - [h, 0], theta, b, c, 1, 6)[0]) / (2 * h)
    assert abs(num - grads["nu"][0]) < 1e-6 * max(1.0, abs(num))


# 2. infinite results
def test_kappa_overflow_names_A():
    A = 0.99 * np.eye(5) + 1e100 * np.eye(5, k=1)
    with pytest.raises(ValueError, match=r"^A has"):
        G.gelfand_constant(A, 0.995)
    with pytest.raises(ValueError, match=r"^A has"):
        G.decay_bound(A, np.ones((5, 1)), np.ones((1, 5)), np.arange(3), rho_bar=0.995)


def test_decay_bound_huge_B_C_named():
    with pytest.raises(ValueError, match="B and C"):
        G.decay_bound(np.diag([.5, .3]), np.full((2, 1), 1e200), np.full((1, 2), 1e200), np.arange(3))
    res = G.decay_bound(np.diag([.5, .3]), np.full((2, 1), 1e150), np.full((1, 2), 1e150), np.arange(3))
    assert abs(res.general[0] / 2e300 - 1) < 1e-12  # ||C|| ||B|| = (sqrt 2 1e150)^2, kappa = 1


# 3. highway input at extreme weight scales
@pytest.mark.parametrize("s", [1e-155, 1e160, 1e100])
def test_highway_input_unrepresentable_key_names_the_layer(s):
    layer = models.MultiHeadAttention(MHA.W_Q * s, MHA.W_K * s, MHA.W_V, MHA.W_O)
    with pytest.raises(ValueError, match="attention .*W_Q"):
        G.highway_input(layer, 8, 0.5)


@pytest.mark.parametrize("s", [1e-60, 1.0, 1e3])
def test_highway_input_weight_is_a_at_representable_scales(s):
    layer = models.MultiHeadAttention(MHA.W_Q * s, MHA.W_K * s, MHA.W_V, MHA.W_O)
    X = G.highway_input(layer, 8, 0.5)
    Q, K = layer._queries_keys(X)
    assert abs(layer._weights(Q, K, np.array([7]))[0, 0, 0] - 0.5) < 1e-6


# 4. memory and size
@pytest.mark.parametrize("n", [10**8, 10**20])
def test_kernel_size_guard_names_n(n):
    with pytest.raises(ValueError, match="^n would make"):
        G.diagonal_ssm_kernel([0.], [0.], [[1, 0]], [[1, 0]], n)


@pytest.mark.parametrize("n", [10**9, 10**20])
def test_highway_size_guard_names_n(n):
    with pytest.raises(ValueError, match="^n would make"):
        G.highway_input(MHA, n, 0.5)


def test_attention_jacobian_size_guard_names_X():
    with pytest.raises(ValueError, match="^X would make"):
        G.jacobian(systems.random_attention(2, 2, p=3), np.ones((5000, 2)))


def test_recall_working_set_guarded():
    with pytest.raises(ValueError, match="batch = 10000000"):
        G.train_recall_head(2, steps=1, batch=10**7, d_k=4, d_v=1)
    result = G.train_recall_head(2, steps=1, batch=4, d_k=4, d_v=1)
    with pytest.raises(ValueError, match="batch = 10000000"):
        G.recall_eval(result, [1, 2], batch=10**7)


def test_random_layers_total_memory_guarded():
    with pytest.raises(ValueError, match="^H = 16, d = 2048 would make"):
        systems.random_attention(16, 2048)
    with pytest.raises(ValueError, match="^N, d and p would make"):
        systems.random_stable(2048, 65536, 1)


# 5. messages
def test_array_arguments_named():
    with pytest.raises(ValueError, match="^kernel must be"):
        systems.random_attention(1, 2, kernel=np.array(["softmax", "linear"]))
    with pytest.raises(ValueError, match="^ord must be"):
        operator.block_norms(np.ones((2, 2, 1, 1)), ord=np.array(["fro", "spectral"]))
    with pytest.raises(ValueError, match="^position must be"):
        G.train_recall_head(2, steps=1, position=np.array(["learned", "none"]))
    with pytest.raises(ValueError, match="^blocks must be"):
        systems.jordan(blocks=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="^a must be"):
        numerics.close("abc", np.ones((3, 2)))


def test_string_number_arrays_rejected():
    X = np.ones((3, 2))
    with pytest.raises(ValueError, match="^X must be a numeric array"):
        G.jacobian(MHA, X.astype(str))
    with pytest.raises(ValueError, match="^A must be a numeric array"):
        G.gelfand_constant(np.eye(2).astype(str), 0.5)
    with pytest.raises(ValueError, match="^A must be a numeric array"):
        G.gelfand_constant(np.eye(2).astype(object), 0.5)
