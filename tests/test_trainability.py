"""Tests of the trainability experiments of ``ssmheads.gradients`` (Chapter 4).

math.md §1.9b: a diagonal complex SSM (``lambda_m = exp(-exp(nu_m) + i theta_m)``, trainable
``nu, theta, b, c``) on the delay-``L`` task with the exact white-noise loss (weights
``w_l = n - l``, normalised to 1 with no model), and one content-based softmax head with a
relative-position bias trained on associative recall.

Expected values are computed here independently: the kernel by an explicit recurrence of
the complex state, the loss by Monte Carlo over white-noise sequences and as a plain sum,
every gradient by central finite differences of a loss written here as plain loops.
"""

import numpy as np
import pytest

from ssmheads.gradients import (
    DiagonalSSMResult,
    RecallResult,
    delay_task_loss,
    delay_task_sweep,
    diagonal_ssm_kernel,
    recall_eval,
    recall_loss,
    train_diagonal_ssm,
    train_recall_head,
)


def _random_diagonal(M, seed, radius=(0.5, 0.95)):
    rng = np.random.default_rng(seed)
    r = rng.uniform(*radius, M)
    return (np.log(-np.log(r)), rng.uniform(0, 2 * np.pi, M),
            rng.standard_normal((M, 2)), rng.standard_normal((M, 2)) / M)


def _kernel_by_recurrence(nu, theta, b, c, n):
    lam = np.exp(-np.exp(nu) + 1j * theta)
    bz, cz = b[:, 0] + 1j * b[:, 1], c[:, 0] + 1j * c[:, 1]
    h, out = np.zeros_like(lam), []
    for i in range(n):
        h = lam * h + bz * (1.0 if i == 0 else 0.0)  # impulse at time 0
        out.append((cz @ h).real)
    return np.array(out)


def _plain_loss(nu, theta, b, c, L, n):
    K = _kernel_by_recurrence(nu, theta, b, c, n)
    total = sum((n - l) * (K[l] - (l == L)) ** 2 for l in range(n))
    return total / (n - L)


# ------------------------------------------------------------ the diagonal SSM


@pytest.mark.parametrize("seed, n", [(0, 1), (1, 7), (2, 40)])
def test_kernel_is_the_impulse_response_of_the_complex_recurrence(seed, n):
    p = _random_diagonal(5, seed)
    np.testing.assert_allclose(diagonal_ssm_kernel(*p, n), _kernel_by_recurrence(*p, n), rtol=1e-12, atol=1e-14)


def test_loss_is_the_white_noise_mean_squared_error_of_the_delay_task():
    nu, theta, b, c = _random_diagonal(3, 4)
    n, L = 6, 2
    K = diagonal_ssm_kernel(nu, theta, b, c, n)
    X = np.random.default_rng(5).standard_normal((40000, n))
    Y = np.stack([np.convolve(x, K)[:n] for x in X])
    target = np.zeros_like(X)
    target[:, L:] = X[:, : n - L]
    mc = np.mean(np.sum((Y - target) ** 2, axis=1)) / (n - L)
    loss, _ = delay_task_loss(nu, theta, b, c, L, n)
    assert loss == pytest.approx(_plain_loss(nu, theta, b, c, L, n), rel=1e-12)
    assert abs(mc - loss) < 0.03 * loss


def test_no_model_gives_one_and_an_exact_delay_gives_zero():
    M = 4
    zero = np.zeros((M, 2))
    nu = np.zeros(M)
    assert delay_task_loss(nu, np.zeros(M), zero, zero, 3, 10)[0] == 1.0
    # one mode with lambda ~ 0 and b = c = 1 is K = delta_0: the delay L = 0 exactly
    loss, _ = delay_task_loss(np.array([np.log(800.0)]), np.zeros(1), np.array([[1.0, 0]]), np.array([[1.0, 0]]), 0, 5)
    assert loss < 1e-12


@pytest.mark.parametrize("L, n, seed", [(0, 5, 0), (3, 9, 1), (11, 12, 2)])
def test_delay_gradient_matches_central_differences(L, n, seed):
    params = list(_random_diagonal(4, seed))
    _, grads = delay_task_loss(*params, L, n)
    names = ["nu", "theta", "b", "c"]
    eps = 1e-6
    for k, name in enumerate(names):
        fd = np.zeros_like(params[k])
        for idx in np.ndindex(params[k].shape):
            up = [p.copy() for p in params]
            down = [p.copy() for p in params]
            up[k][idx] += eps
            down[k][idx] -= eps
            fd[idx] = (_plain_loss(*up, L, n) - _plain_loss(*down, L, n)) / (2 * eps)
        np.testing.assert_allclose(grads[name], fd, rtol=1e-6, atol=1e-8, err_msg=name)


def test_train_records_the_initial_loss_and_returns_the_final_parameters():
    r = train_diagonal_ssm(5, 16, modes=4, steps=3, seed=2)
    assert isinstance(r, DiagonalSSMResult)
    assert r.losses.shape == (4,) and r.radii.shape == (4,) and r.kernel.shape == (16,)
    loss, _ = delay_task_loss(r.nu, r.theta, r.b, r.c, 5, 16)
    assert r.losses[-1] == pytest.approx(loss, rel=1e-12)
    np.testing.assert_allclose(r.radii, np.exp(-np.exp(r.nu)))
    np.testing.assert_allclose(r.kernel, diagonal_ssm_kernel(r.nu, r.theta, r.b, r.c, 16))
    assert np.all((0.9 <= r.initial_radii) & (r.initial_radii < 0.999))


def test_mode_powers_are_the_exponentials_and_an_overflowing_rate_gives_zero():
    import ssmheads.gradients as g
    nu, theta = np.array([[-3.0, 0.2, 2.0, 800.0]]), np.array([[0.3, -2.0, 5.0, 1.0]])
    Z, e_nu = g._mode_powers(nu, theta, 60)
    lags = np.arange(60)[:, None]
    with np.errstate(over="ignore", under="ignore"):
        direct = np.exp(lags * (-np.exp(nu[0, :3]) + 1j * theta[0, :3]))
    np.testing.assert_allclose(Z[0, :, :3], direct, rtol=1e-13, atol=1e-300)
    assert np.all(Z[0, 0] == 1) and np.all(Z[0, 1:, 3] == 0) and np.isfinite(e_nu).all()
    loss, grads = delay_task_loss(nu[0], theta[0], np.ones((4, 2)), np.ones((4, 2)) / 4, 3, 20)
    assert np.isfinite(loss) and grads["nu"][3] == 0 and np.all(np.isfinite(grads["nu"]))


def test_zero_steps_return_the_initialisation():
    r0 = train_diagonal_ssm(7, 20, modes=5, radius=(0.2, 0.6), steps=0, seed=4)
    r3 = train_diagonal_ssm(7, 20, modes=5, radius=(0.2, 0.6), steps=3, seed=4)
    assert r0.losses.shape == (1,) and r0.losses[0] == r3.losses[0]
    np.testing.assert_array_equal(r0.radii, r0.initial_radii)
    np.testing.assert_array_equal(r0.radii, r3.initial_radii)
    loss, _ = delay_task_loss(r0.nu, r0.theta, r0.b, r0.c, 7, 20)
    assert loss == pytest.approx(r0.losses[0], rel=1e-12)


def test_adam_epsilon_is_passed_through_and_matters_only_for_tiny_gradients():
    big = delay_task_sweep([5], 16, [(0.5, 0.9)], [1], modes=4, steps=30)
    tiny = delay_task_sweep([5], 16, [(0.5, 0.9)], [1], modes=4, steps=30, eps=1e-30)
    single = train_diagonal_ssm(5, 16, modes=4, radius=(0.5, 0.9), steps=30, seed=1, eps=1e-30)
    assert tiny[0, 0, 0] == pytest.approx(single.losses[-1], rel=1e-9)
    assert tiny[0, 0, 0] == pytest.approx(big[0, 0, 0], rel=1e-3)   # gradients here are far above 1e-8
    huge = delay_task_sweep([5], 16, [(0.5, 0.9)], [1], modes=4, steps=30, eps=1e3)
    assert abs(huge[0, 0, 0] - big[0, 0, 0]) > 1e-3                # an eps above the gradients slows Adam


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_acceptance_vanishing_gradients_with_capacity_present(seed):
    small = train_diagonal_ssm(48, 96, modes=32, radius=(0.0, 0.5), seed=seed)
    large = train_diagonal_ssm(48, 96, modes=32, radius=(0.9, 0.999), seed=seed)
    assert small.losses[-1] > 0.95
    assert large.losses[-1] < 0.025
    assert large.losses[0] > 1.0  # it starts worse than no model and learns


def test_sweep_reproduces_single_runs():
    grid = delay_task_sweep([3, 9], 12, [(0.0, 0.5), (0.8, 0.95)], [0, 4], modes=6, steps=20)
    assert grid.shape == (2, 2, 2)
    for a, L in enumerate([3, 9]):
        for b, rad in enumerate([(0.0, 0.5), (0.8, 0.95)]):
            for s, seed in enumerate([0, 4]):
                single = train_diagonal_ssm(L, 12, modes=6, radius=rad, steps=20, seed=seed).losses[-1]
                assert grid[a, b, s] == pytest.approx(single, rel=1e-9)


@pytest.mark.parametrize("kwargs, match", [
    (dict(L=12, n=12), "L must be smaller than n"),
    (dict(L=-1, n=12), "L must be an integer"),
    (dict(L=2, n=12, radius=(0.5, 0.4)), "radius must be a pair"),
    (dict(L=2, n=12, radius=(0.5, 1.0)), "radius must be a pair"),
    (dict(L=2, n=12, radius=0.5), "radius must be a pair"),
    (dict(L=2, n=12, steps=-1), "steps must be an integer >= 0"),
    (dict(L=2, n=12, eps=0.0), "eps must be a finite number > 0"),
    (dict(L=2, n=12, eps=1e-200), "eps must be at least 1e-100"),
    (dict(L=2, n=12, lr=-1.0), "lr must be a finite number"),
    (dict(L=2, n=12, lr=np.inf), "lr must be a finite number"),
    (dict(L=2, n=12, modes=0), "modes must be an integer"),
    (dict(L=2, n=12, seed=-3), "seed must be an integer"),
])
def test_train_diagonal_ssm_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        train_diagonal_ssm(**kwargs)


def test_sweep_rejects_empty_grids_and_bad_delays():
    with pytest.raises(ValueError, match="at least one value"):
        delay_task_sweep([], 10, [(0, 0.5)], [0])
    with pytest.raises(ValueError,
                       match=r"Ls must be a 1-d sequence of delays in \[0, n\) \(\[0, 9\]\); got the entry 10"):
        delay_task_sweep([10], 10, [(0, 0.5)], [0])


def test_kernel_and_loss_reject_bad_shapes():
    nu, theta, b, c = _random_diagonal(3, 0)
    with pytest.raises(ValueError, match=r"b must have shape \(M, 2\) = \(3, 2\)"):
        diagonal_ssm_kernel(nu, theta, b[:2], c, 4)
    with pytest.raises(ValueError, match="theta has shape"):
        diagonal_ssm_kernel(nu, theta[:2], b, c, 4)
    with pytest.raises(ValueError, match="at least one mode"):
        delay_task_loss(np.zeros(0), np.zeros(0), np.zeros((0, 2)), np.zeros((0, 2)), 0, 3)
    with pytest.raises(ValueError, match="must be real"):
        diagonal_ssm_kernel(nu, theta, b[:, 0] + 1j * b[:, 1], c, 4)


# ------------------------------------------------------------ attention: associative recall


def _recall_instance(seed, B=3, n=5, dk=4, dv=2):
    rng = np.random.default_rng(seed)
    keys = rng.standard_normal((B, n, dk))
    values = rng.standard_normal((B, n, dv))
    match = rng.integers(0, n, B)
    queries = keys[np.arange(B), match] + 0.1 * rng.standard_normal((B, dk))
    W = rng.standard_normal((dk, dk))
    bias = rng.standard_normal(n)
    return W, bias, queries, keys, values, match


def _recall_plain(W, bias, queries, keys, values, match):
    B, n, _ = keys.shape
    num = den = 0.0
    for b in range(B):
        s = np.array([queries[b] @ W @ keys[b, j] + bias[n - 1 - j] for j in range(n)])
        a = np.exp(s - s.max())
        a /= a.sum()
        yhat = a @ values[b]
        num += np.sum((yhat - values[b, match[b]]) ** 2)
        den += np.sum(values[b, match[b]] ** 2)
    return num / den


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recall_loss_and_gradient_match_a_loop_and_central_differences(seed):
    W, bias, q, k, v, match = _recall_instance(seed)
    loss, grads, weight = recall_loss(W, bias, q, k, v, match)
    assert loss == pytest.approx(_recall_plain(W, bias, q, k, v, match), rel=1e-12)
    assert weight.shape == (3,) and np.all((0 < weight) & (weight < 1))
    eps = 1e-6
    for name, x in (("W", W), ("bias", bias)):
        fd = np.zeros_like(x)
        for idx in np.ndindex(x.shape):
            x[idx] += eps
            up = _recall_plain(W, bias, q, k, v, match)
            x[idx] -= 2 * eps
            down = _recall_plain(W, bias, q, k, v, match)
            x[idx] += eps
            fd[idx] = (up - down) / (2 * eps)
        np.testing.assert_allclose(grads[name], fd, rtol=1e-6, atol=1e-9, err_msg=name)


def test_recall_loss_rejects_bad_shapes():
    W, bias, q, k, v, match = _recall_instance(0)
    with pytest.raises(ValueError, match="W must have shape"):
        recall_loss(W[:2], bias, q, k, v, match)
    with pytest.raises(ValueError, match="bias has shape"):
        recall_loss(W, bias[:2], q, k, v, match)
    with pytest.raises(ValueError, match="queries must have shape"):
        recall_loss(W, bias, q[:, :2], k, v, match)
    with pytest.raises(ValueError, match="values must have shape"):
        recall_loss(W, bias, q, k, v[:, :2], match)
    with pytest.raises(ValueError, match="match must be an integer array"):
        recall_loss(W, bias, q, k, v, match + 10)


def test_recall_head_starts_uniform_and_learns_at_every_distance():
    r = train_recall_head(32, steps=150, seed=0)
    assert isinstance(r, RecallResult)
    assert r.losses.shape == (151,)
    assert r.losses[0] == pytest.approx(1.0, abs=0.1)  # uniform weights: about 1 - 1/n
    assert r.steps_to_solve is not None and r.losses[-1] < 0.05
    losses, weights = recall_eval(r, [1, 8, 16, 32])
    assert np.all(losses < 0.1) and np.all(weights > 0.8)


def test_alibi_penalises_distance():
    r = train_recall_head(64, steps=80, position="alibi", slope=0.1, seed=0)
    losses, weights = recall_eval(r, [1, 64])
    np.testing.assert_allclose(r.bias, -0.1 * np.arange(1, 65))
    assert weights[0] > 0.5 > weights[1] and losses[1] > 4 * losses[0]


def test_recall_steps_to_solve_is_none_when_not_reached():
    r = train_recall_head(8, steps=2, seed=1)
    assert r.steps_to_solve is None and r.grad_norm0 > 0


def test_recall_records_w_at_the_step_it_is_solved():
    r = train_recall_head(16, steps=120, seed=2)
    t = r.steps_to_solve
    assert t is not None and 0 < t < 120
    again = train_recall_head(16, steps=t, seed=2)   # the same batches up to step t
    np.testing.assert_array_equal(r.W_solved, again.W)
    assert train_recall_head(8, steps=2, seed=1).W_solved is None


@pytest.mark.parametrize("kwargs, match", [
    (dict(n=1), "n must be an integer >= 2"),
    (dict(n=8, position="rope"), "position must be 'learned', 'alibi' or 'none'"),
    (dict(n=8, max_distance=9), r"max_distance must lie in \[1, n\]"),
    (dict(n=8, max_distance=0), "max_distance must be an integer"),
    (dict(n=8, max_distance=4, distance=2), "at most one of distance and max_distance"),
    (dict(n=8, position="alibi", slope=-1.0), "slope must be a finite number"),
    (dict(n=8, distance=9), r"distance must lie in \[1, n\]"),
    (dict(n=8, tol=0.0), "tol must be a finite number"),
    (dict(n=8, batch=0), "batch must be an integer"),
])
def test_train_recall_head_rejects_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        train_recall_head(**kwargs)


def test_recall_eval_rejects_bad_arguments():
    r = train_recall_head(8, steps=1)
    with pytest.raises(ValueError, match="result must be a RecallResult"):
        recall_eval("head", [1])
    with pytest.raises(ValueError, match=r"distances must be a 1-d sequence of distances in \[1, n\] \(\[1, 8\]\); "
                                         r"got the entry 9"):
        recall_eval(r, [9])


def test_recall_with_a_fixed_distance_is_deterministic():
    a = train_recall_head(16, steps=20, distance=5, seed=3)
    b = train_recall_head(16, steps=20, distance=5, seed=3)
    np.testing.assert_array_equal(a.losses, b.losses)


def test_restricted_training_distances_never_make_a_far_pair_the_match():
    """With max_distance, the far pairs only compete: a learned bias learns to push them down."""
    import ssmheads.gradients as g
    rng = np.random.default_rng(0)
    _, _, _, match = g._recall_batch(rng, 2000, 32, 4, 2, None, 8)
    distances = 32 - match
    assert distances.min() == 1 and distances.max() == 8
    r = train_recall_head(32, steps=150, seed=0, max_distance=8)
    near, far = r.bias[:8].mean(), r.bias[8:].mean()
    assert far < near - 1.0                         # a recency preference, learned from the data
    losses, _ = recall_eval(r, [1, 8, 32])
    assert losses[2] > 4 * max(losses[0], losses[1])


def test_content_only_head_has_no_bias_and_extrapolates_in_distance():
    r = train_recall_head(32, steps=150, seed=0, position="none", max_distance=8)
    np.testing.assert_array_equal(r.bias, np.zeros(32))
    losses, _ = recall_eval(r, [1, 8, 32])
    assert np.all(losses < 0.1)
    # scores are content only: the loss at a distance never seen in training equals the one
    # at a seen distance on the same sequences, up to which pair is the match (a relabelling)
    assert abs(losses[2] - losses[0]) < 0.05


# ------------------------------------------------------------ guards: names, sizes, work, scale (issue 11)


@pytest.mark.parametrize("name, bad", [
    ("Ls", None), ("Ls", "x"), ("Ls", [2.0]), ("Ls", [True]), ("Ls", np.zeros((1, 1), dtype=int)), ("Ls", [-1]),
    ("radii", None), ("radii", "x"), ("radii", [(0.5, 0.4)]), ("radii", [0.5]), ("radii", 3),
    ("seeds", None), ("seeds", "x"), ("seeds", [-1]), ("seeds", [0.5]), ("seeds", [[0]]),
])
def test_sweep_names_the_grid_argument_that_is_wrong(name, bad):
    kwargs = dict(Ls=[2], n=8, radii=[(0.9, 0.99)], seeds=[0], modes=2, steps=2)
    kwargs[name] = bad
    with pytest.raises(ValueError, match=rf"^{name} must be a"):
        delay_task_sweep(**kwargs)


def test_sweep_accepts_ranges_and_integer_arrays():
    a = delay_task_sweep(np.array([2, 3]), 8, ((0.9, 0.99),), range(2), modes=2, steps=2)
    b = delay_task_sweep([2, 3], 8, [(0.9, 0.99)], [0, 1], modes=2, steps=2)
    np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("call, names", [
    (lambda: train_diagonal_ssm(2, 10**7, modes=2, steps=2), r"n = 10000000, modes = 2 would make"),
    (lambda: train_diagonal_ssm(2, 8, modes=10**7, steps=2), r"n = 8, modes = 10000000 would make"),
    (lambda: train_diagonal_ssm(2, 8, modes=2, steps=10**7), r"steps = 10000000 with n = 8, modes = 2 would take"),
    (lambda: delay_task_sweep([2], 10**7, [(0.9, 0.99)], [0], modes=2, steps=2), r"n = 10000000, modes = 2"),
    (lambda: delay_task_sweep([2], 8, [(0.9, 0.99)], range(3), modes=2, steps=10**7),
     r"steps = 10000000 with n = 8, modes = 2 and 3 runs"),
    (lambda: delay_task_loss(np.zeros(2), np.zeros(2), np.ones((2, 2)), np.ones((2, 2)), 2, 10**7),
     r"n = 10000000, modes = 2 would make"),
    (lambda: train_recall_head(10**7, steps=2, batch=4, d_k=4, d_v=2), r"n = 10000000"),
    (lambda: train_recall_head(6, steps=2, batch=10**7, d_k=4, d_v=2), r"batch = 10000000"),
    (lambda: train_recall_head(6, steps=2, batch=4, d_k=10**7, d_v=2), r"d_k = 10000000"),
    (lambda: train_recall_head(6, steps=2, batch=4, d_k=4, d_v=10**7), r"d_v = 10000000"),
    (lambda: train_recall_head(6, steps=10**7, batch=4, d_k=4, d_v=2), r"steps = 10000000 with batch = 4"),
])
def test_oversized_training_is_refused_before_it_starts_naming_the_sizes(call, names):
    """Each refusal comes at once (no allocation, no step taken) and says which sizes set the cost."""
    with pytest.raises(ValueError, match=names) as info:
        call()
    assert "GiB" in str(info.value) or "entry-steps" in str(info.value)


def test_recall_eval_refuses_a_huge_batch_naming_it():
    r = train_recall_head(6, steps=1, batch=4, d_k=4, d_v=2)
    with pytest.raises(ValueError, match=r"batch = 10000000, n = 6, d_k = 4 would make the keys of one batch"):
        recall_eval(r, [1, 2], batch=10**7)


@pytest.mark.parametrize("bad", [None, "x", np.array([0.5, 1.5]), np.array([-1]), np.zeros((2, 2), dtype=int),
                                 [0], [7], [True], 3])
def test_recall_eval_validates_distances_by_that_name(bad):
    r = train_recall_head(6, steps=1, batch=4, d_k=4, d_v=2)
    with pytest.raises(ValueError, match=r"^distances must be a 1-d sequence of distances in \[1, n\] \(\[1, 6\]\)"):
        recall_eval(r, bad)


def test_recall_eval_accepts_integer_arrays_and_ranges():
    r = train_recall_head(6, steps=1, batch=4, d_k=4, d_v=2)
    a = recall_eval(r, np.array([1, 6]), batch=8)
    b = recall_eval(r, range(1, 7, 5), batch=8)
    np.testing.assert_array_equal(a[0], b[0])


@pytest.mark.parametrize("call", [
    lambda lr: train_diagonal_ssm(2, 8, modes=2, steps=2, lr=lr),
    lambda lr: delay_task_sweep([2], 8, [(0.9, 0.99)], [0], modes=2, steps=2, lr=lr),
    lambda lr: train_recall_head(6, steps=2, batch=4, d_k=4, d_v=2, lr=lr),
])
@pytest.mark.parametrize("lr", [1.5, 1e155])
def test_learning_rates_above_one_are_refused(call, lr):
    with pytest.raises(ValueError, match=r"^lr must be at most 1: Adam moves each parameter by about lr"):
        call(lr)


def test_largest_learning_rate_is_accepted_and_stays_finite():
    run = train_diagonal_ssm(2, 8, modes=2, steps=50, lr=1.0)
    assert np.all(np.isfinite(run.losses)) and np.all(np.isfinite(run.kernel))


def test_a_diverging_run_stops_with_an_error_naming_lr(monkeypatch):
    """If the loss stops being finite, the trainer says so instead of returning NaN."""
    import ssmheads.gradients as g
    monkeypatch.setattr(g, "_MAX_LR", 1e300)
    with pytest.raises(ValueError, match=r"the training diverged: the loss is not finite after step \d+ "
                                         r"with lr = 1e\+155; use a smaller lr"):
        train_diagonal_ssm(2, 8, modes=2, steps=5, lr=1e155)


def _recall_case(seed=0, B=3, n=5, d_k=3, d_v=2):
    r = np.random.default_rng(seed)
    return (r.standard_normal((d_k, d_k)), r.standard_normal(n), r.standard_normal((B, d_k)),
            r.standard_normal((B, n, d_k)), r.standard_normal((B, n, d_v)), r.integers(0, n, B))


@pytest.mark.parametrize("scale", [1e155, 1e-300, 2.0**600, 3.0])
def test_recall_loss_does_not_depend_on_the_scale_of_the_values(scale):
    """Loss and gradient are homogeneous of degree 0 in the values: huge or tiny values give the same answer."""
    W, bias, q, k, v, match = _recall_case()
    loss, grads, weight = recall_loss(W, bias, q, k, v, match)
    loss_s, grads_s, weight_s = recall_loss(W, bias, q, k, v * scale, match)
    assert abs(loss_s - loss) <= 1e-13 * loss
    for key in ("W", "bias"):
        np.testing.assert_allclose(grads_s[key], grads[key], rtol=1e-12, atol=1e-14 * np.abs(grads[key]).max())
    np.testing.assert_array_equal(weight_s, weight)


def test_recall_loss_rejects_empty_values_and_zero_targets():
    W, bias, q, k, v, match = _recall_case()
    with pytest.raises(ValueError, match=r"values has shape \(3, 5, 0\); the value width d_v must be at least 1"):
        recall_loss(W, bias, q, k, v[..., :0], match)
    with pytest.raises(ValueError, match="values must not vanish on every matching pair"):
        recall_loss(W, bias, q, k, np.zeros_like(v), match)


def test_recall_loss_names_keys_in_a_batch_mismatch():
    W, bias, q, k, v, match = _recall_case()
    with pytest.raises(ValueError, match=r"keys has shape \(0, 5, 3\); the batch size B must be at least 1"):
        recall_loss(W, bias, q, k[:0], v, match)
    with pytest.raises(ValueError, match=r"queries must have shape \(B, d_k\) = \(2, 3\), with B and d_k "
                                         r"from keys of shape \(2, 5, 3\); got \(3, 3\)"):
        recall_loss(W, bias, q, k[:2], v, match)
