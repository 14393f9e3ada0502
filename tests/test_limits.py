"""The findings of issue 22 ("the library's last slow and lenient paths"), one test each.

Times are user CPU time (``resource``): on a shared machine the wall time also counts
other people's work, and the kernel's time to hand a process new pages varies tenfold with
the load. Memory is the peak that ``tracemalloc`` sees (numpy reports its arrays to it).
Every correct answer is compared with an independent computation.
"""

from __future__ import annotations

import multiprocessing
import re
import resource
import tracemalloc

from _blas import one_blas_thread

import numpy as np
import pytest

import ssmheads as sh
from ssmheads import architectures as ar
from ssmheads import gradients, heads, span, systems
from ssmheads._validate import MAX_TOTAL_BYTES
from ssmheads.models import MultiHeadAttention, _Layer

E2 = np.eye(2)


def _child(conn, call):
    one_blas_thread()
    tracemalloc.start()
    start = resource.getrusage(resource.RUSAGE_SELF).ru_utime
    try:
        out = call()
    except ValueError as exc:
        out = exc
    seconds = resource.getrusage(resource.RUSAGE_SELF).ru_utime - start
    peak = tracemalloc.get_traced_memory()[1]
    conn.send((out, seconds, peak))
    conn.close()


def _measured(call):
    """``(result or the ValueError, user CPU seconds, peak traced bytes)`` of ``call()``, run in a forked
    child with one BLAS thread."""
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    child = ctx.Process(target=_child, args=(send, call))
    child.start()
    send.close()
    out = receive.recv()
    child.join()
    return out


def _refused_at_once(call, match):
    out, seconds, peak = _measured(call)
    assert isinstance(out, ValueError), f"not refused: {type(out).__name__}"
    assert re.search(match, str(out)), str(out)
    assert seconds < 1.0 and peak < 2**27, (seconds, peak)
    return str(out)


def _random_with_radius(N, rho, seed):
    M = np.random.default_rng(seed).standard_normal((N, N))
    return rho * M / np.max(np.abs(np.linalg.eigvals(M)))


def _power_norms(A, lags):
    """``||A^l||`` (spectral) at the lags ``0, 1, ..., 49`` (products) and ``2^6, ..., 2^20`` (squarings)."""
    P, out = np.eye(A.shape[0]), []
    for _ in range(50):
        out.append(np.linalg.norm(P, 2))
        P = P @ A
    P = np.linalg.matrix_power(A, 64)
    for _ in range(6, 21):
        out.append(np.linalg.norm(P, 2))
        P = P @ P
    return np.array(out)


POWER_LAGS = np.r_[np.arange(50), 2 ** np.arange(6, 21)]


# ---------------------------------------------------------------- decay_bound and gelfand_constant

@pytest.mark.parametrize("N, rho", [(64, 0.999), (256, 0.999), (8, 1 - 1e-6), (64, 1 - 1e-9)])
def test_decay_bound_near_one_is_fast_and_a_valid_bound(N, rho):
    """Issue 22: a random N = 64 system with rho = 0.999 took 11.9 s (a walk of some 3000 lags)."""
    A = _random_with_radius(N, rho, N)
    B, C = np.ones((N, 1)) / np.sqrt(N), np.ones((1, N)) / np.sqrt(N)
    lags = POWER_LAGS
    bound, seconds, _ = _measured(lambda: sh.decay_bound(A, B, C, lags))
    assert seconds < 1.0
    K = sh.lag_operators(A, B, C, 50)
    assert np.all(np.linalg.norm(K, 2, axis=(1, 2)) <= bound.general[:50])
    norms = _power_norms(A, lags)  # ||A^l|| <= kappa rho_bar^l at every lag, far beyond the walk
    assert np.all(norms <= bound.kappa * bound.rho_bar ** lags * (1 + 1e-9))
    assert bound.kappa >= 1.0


def test_decay_bound_is_exact_where_the_walk_ends_and_close_otherwise():
    """kappa is kappa(rho_bar) itself when the walk ends (a brute-force supremum agrees), and within a
    small factor of it when it does not (here the walk needs about 3200 lags)."""
    s = systems.random_stable(5, 2, 3, rho=0.9, seed=1)
    bound = sh.decay_bound(s.A, s.B, s.C, np.arange(5))
    brute = max(np.linalg.norm(np.linalg.matrix_power(s.A / bound.rho_bar, l), 2) for l in range(400))
    assert bound.kappa_exact and bound.kappa == pytest.approx(brute, rel=1e-9)
    A = _random_with_radius(64, 0.999, 64)
    bound = sh.decay_bound(A, np.ones((64, 1)), np.ones((1, 64)), np.arange(3))
    P, brute = np.eye(64), 1.0
    for _ in range(4000):  # the ratio has fallen below 1/2 before this (checked: about 3200)
        P = P @ (A / bound.rho_bar)
        brute = max(brute, np.linalg.norm(P, 2))
    assert not bound.kappa_exact and brute <= bound.kappa < 10 * brute


def test_decay_bound_states_its_mathematics():
    doc = sh.decay_bound.__doc__
    for phrase in ("||T^l|| <= ||T^Q||^a ||T^b||", "T_1 = T^{s_0}", "prod_i max_{q < s_i} ||T_i^q||", "cond(S)"):
        assert phrase in doc


def test_gelfand_constant_refuses_at_once_what_it_cannot_finish():
    J = systems.jordan([(0.9, 3)]).A
    _refused_at_once(lambda: gradients.gelfand_constant(J, 0.9 * (1 + 1e-9)), r"rho_bar = .* within a relative")
    _refused_at_once(lambda: gradients.gelfand_constant(np.eye(600) * 0.5, 0.9), r"^A has state size N = 600")


# ---------------------------------------------------------------- minimal_polynomial_degree

def test_minimal_polynomial_degree_refuses_a_large_A_at_once_and_states_its_limit():
    """Issue 22: a random 1500 x 1500 A took 13.3 s."""
    A = np.random.default_rng(0).standard_normal((1500, 1500))
    _refused_at_once(lambda: sh.minimal_polynomial_degree(A), r"^A of size 1500 x 1500 is above the size limit 1024")
    doc = sh.minimal_polynomial_degree.__doc__
    assert "**Size limit.**" in doc and "512" in doc and "1024" in doc and "about a second" in doc


@pytest.mark.parametrize("kind", ["random", "shift", "orthogonal", "I + shift", "rotation blocks"])
def test_minimal_polynomial_degree_at_N_256_answers_or_refuses_within_a_second(kind):
    rng = np.random.default_rng(3)
    N = 256
    A = {"random": rng.standard_normal((N, N)), "shift": np.eye(N, k=-1),
         "orthogonal": np.linalg.qr(rng.standard_normal((N, N)))[0], "I + shift": np.eye(N) + np.eye(N, k=1),
         "rotation blocks": np.kron(np.eye(N // 2), systems.rotation_matrix(0.3))}[kind]
    out, seconds, peak = _measured(lambda: sh.minimal_polynomial_degree(A))
    assert seconds < 1.0 and peak < MAX_TOTAL_BYTES
    expected = {"random": None, "shift": N, "orthogonal": None, "I + shift": "refused", "rotation blocks": 2}[kind]
    if expected == "refused":
        assert isinstance(out, ValueError) and "work limit" in str(out) and str(out).startswith("A of size 256")
    elif expected is not None:
        assert out == expected
    else:
        assert isinstance(out, int) and 1 <= out <= N


def test_minimal_polynomial_degree_agrees_with_a_direct_count():
    """The running count of the rule on all N powers, computed directly (SVD of every prefix)."""
    rng = np.random.default_rng(5)
    for N in (8, 24, 40):
        A = rng.standard_normal((N, N))
        A = A / np.linalg.norm(A, 2)
        G = np.stack([np.linalg.matrix_power(A, l).reshape(-1, order="F") for l in range(N)], axis=1)
        tol = N * N * np.finfo(float).eps
        counts = [int(np.count_nonzero(s > tol * s[0])) for s in
                  (np.linalg.svd(G[:, :l], compute_uv=False) for l in range(1, N + 1))]
        assert sh.minimal_polynomial_degree(A) == max(counts)


# ---------------------------------------------------------------- silent acceptances

def test_default_rtol_refuses_an_empty_list_of_matrices():
    with pytest.raises(ValueError, match=r"^m must be an integer >= 1; got 0"):
        span.default_rtol(0, 2, 2)
    with pytest.raises(ValueError, match=r"^m too large"):
        span.default_rtol(2**53, 1, 1)
    assert span.default_rtol(1, 2, 2) == 4 * np.finfo(float).eps


@pytest.mark.parametrize("values, match", [(np.zeros((1, 2, 0)), r"^values has shape \(1, 2, 0\); the token width d"),
                                           (np.zeros((1, 0, 2)), r"^values has shape \(1, 0, 2\); the output width p")])
def test_softmax_sink_heads_refuse_empty_values(values, match):
    with pytest.raises(ValueError, match=match):
        heads.SoftmaxSinkHeads(np.zeros((1, 2, 3)), values)


@pytest.mark.parametrize("f", [lambda Z: Z * (1 + 1j), lambda Z: Z + 0j])
def test_finite_difference_jacobian_refuses_complex_values(f):
    with pytest.raises(ValueError, match=r"^f must return a real array; it returned a complex one"):
        sh.finite_difference_jacobian(f, np.ones((2, 2)))


def test_recall_eval_checks_the_result_it_is_given():
    good = gradients.train_recall_head(6, steps=2, batch=4, d_k=4, d_v=2)
    losses, weights = gradients.recall_eval(good, [1, 2], batch=8)
    assert np.all(np.isfinite(losses)) and np.all((weights > 0) & (weights < 1))
    nan_W = gradients.RecallResult(np.zeros(3), None, np.full((4, 4), np.nan), np.zeros(6), 0.0, 2)
    with pytest.raises(ValueError, match=r"^result\.W must contain only finite numbers"):
        gradients.recall_eval(nan_W, [1, 2])
    for d_v in (0, True, 2.0):
        bad = gradients.RecallResult(np.zeros(3), None, np.zeros((4, 4)), np.zeros(6), 0.0, d_v)
        with pytest.raises(ValueError, match=r"^result\.d_v must be an integer >= 1"):
            gradients.recall_eval(bad, [1, 2])
    with pytest.raises(ValueError, match=r"^result\.W must be square"):
        gradients.recall_eval(gradients.RecallResult(np.zeros(3), None, np.zeros((4, 3)), np.zeros(6), 0.0, 2),
                              [1])


def test_alibi_with_a_huge_slope_attends_to_each_token_itself():
    """slope = 1e308: the bias of every earlier token overflows to -inf, a weight of 0, not an error on X."""
    X = np.random.default_rng(1).standard_normal((5, 2))
    layer = ar.ALiBiAttention(E2, E2, 2 * E2, 1e308)
    np.testing.assert_array_equal(layer.coefficients(X), np.eye(5))
    np.testing.assert_allclose(layer.forward(X), 2 * X, rtol=0, atol=0)
    with pytest.raises(ValueError, match=r"^X is too large"):  # a content score that overflows is X's
        layer.forward(X * 1e200)


# ---------------------------------------------------------------- working sets

@pytest.mark.parametrize("make", [
    lambda: ar.Retention(E2, E2, E2, 0.9), lambda: ar.ALiBiAttention(E2, E2, E2, 0.5),
    lambda: ar.RoPEAttention(E2, E2, E2), lambda: ar.LinearAttention(E2, E2, E2)],
    ids=["Retention", "ALiBi", "RoPE", "LinearAttention"])
def test_parallel_forward_holds_no_n_by_n_array(make):
    """Issue 22: Retention(eye, eye, eye, 0.9).forward(ones((8500, 2))) peaked at 2.2 GiB (at 8000 tokens,
    the old code held four 8000 x 8000 arrays, 2 GiB)."""
    layer = make()
    X = np.ones((8000, 2))
    Y, seconds, peak = _measured(lambda: layer.forward(X))
    assert peak < 2**28, peak / 2**30  # 256 MiB: blocks of rows, not 8000^2 weights (512 MB each)
    short = X[:300]
    np.testing.assert_allclose(layer.forward(short), ar._apply(layer.interaction(short), short), rtol=1e-12,
                               atol=1e-12)
    assert Y.shape == (8000, 2)


def test_parallel_forward_and_coefficients_are_refused_beyond_their_limits():
    layer = ar.Retention(E2, E2, E2, 0.9)
    _refused_at_once(lambda: layer.forward(np.ones((20000, 2))), r"^X has 20000 tokens.*recurrent_forward")
    _refused_at_once(lambda: layer.coefficients(np.ones((20000, 2))), r"^X would make")
    _refused_at_once(lambda: layer.chunkwise_forward(np.ones((20000, 2)), 10**7), r"^chunk would make")
    np.testing.assert_allclose(layer.chunkwise_forward(np.ones((300, 2)), 10**7), layer.recurrent_forward(
        np.ones((300, 2))), rtol=1e-12)


def test_mamba2_guards_its_coefficients_and_its_chunk():
    g = np.random.default_rng(2).standard_normal
    layer = ar.Mamba2(g((4, 2)), g((2, 4)), g((2, 2)), g((3, 2)), g((3, 2)), 2)
    # the weights are built block by block: at n = 7500 the call holds alpha (0.84 GiB) and one block
    # (it held 2.6 GiB), and at 11000 alpha alone is 1.8 GiB
    _refused_at_once(lambda: layer.coefficients(np.ones((11000, 2))), r"^X would make")
    _refused_at_once(lambda: layer.ssd_forward(np.ones((8000, 2)), 8000), r"^chunk would make")
    X = g((300, 2))
    np.testing.assert_allclose(layer.ssd_forward(X, 10**7), layer.forward(X), rtol=1e-10, atol=1e-12)


def test_hybrid_counts_the_product_of_its_operators():
    """Issue 22: S4D then RoPE at n = 4000 held 2.4 GiB and took 18 s."""
    s4d = ar.S4D(-np.ones((2, 3)) + 1j, np.ones((2, 3)), np.ones((2, 3)), np.ones(2))
    hybrid = ar.Hybrid([s4d, ar.RoPEAttention(E2, E2, E2)])
    _refused_at_once(lambda: hybrid.interaction(np.ones((4000, 2))), r"^X would make the layers' operators")
    _refused_at_once(lambda: hybrid.interaction(np.ones((1500, 2))), r"^X of length 1500 would make the product")
    X = np.random.default_rng(3).standard_normal((40, 2))
    np.testing.assert_allclose(ar._apply(hybrid.interaction(X), X), hybrid.forward(X), rtol=1e-10, atol=1e-12)


def test_diagonal_ssm_kernel_counts_its_arrays_and_its_lags():
    args = (np.array([-1.0, -2.0]), np.array([0.3, 1.0]), np.ones((2, 2)), np.ones((2, 2)))
    _refused_at_once(lambda: gradients.diagonal_ssm_kernel(*args, 10**7), r"^n = 10000000 lags is more than")
    # 200 modes at 2^20 lags: each of the arrays is within 1 GiB (3.2 GiB complex), together they are not
    _refused_at_once(lambda: gradients.diagonal_ssm_kernel(np.zeros(200), np.zeros(200), np.ones((200, 2)),
                                                           np.ones((200, 2)), 2**19), r"^n would make")
    K = gradients.diagonal_ssm_kernel(*args, 6)
    lam = np.exp(-np.exp(args[0]) + 1j * args[1])
    np.testing.assert_allclose(K, [np.real(np.sum((1 + 1j) ** 2 * lam**l)) for l in range(6)], rtol=1e-13)


def _layers():
    g = np.random.default_rng(4).standard_normal
    lam = -np.exp(g((2, 3))) + 1j * g((2, 3))
    return {
        "LinearSSM": sh.LinearSSM(0.5 * systems.rotation_matrix(0.3), E2, E2),
        "MultiHeadAttention": MultiHeadAttention(g((2, 3, 2)), g((2, 3, 2)), g((2, 2, 2)), g((2, 2, 2))),
        "Convolution": sh.Convolution(g((3, 2, 2))),
        "PositionwiseLinear": sh.PositionwiseLinear(g((2, 2))),
        "LinearAttention": ar.LinearAttention(g((4, 2)), g((4, 2)), g((2, 2))),
        "Retention": ar.Retention(g((4, 2)), g((4, 2)), g((2, 2)), 0.9, theta=0.3),
        "ALiBiAttention": ar.ALiBiAttention(g((4, 2)), g((4, 2)), g((2, 2)), 0.5),
        "RoPEAttention": ar.RoPEAttention(g((4, 2)), g((4, 2)), g((2, 2))),
        "S4D": ar.S4D(lam, g((2, 3)), g((2, 3)), np.ones(2)),
        "S5": ar.S5(lam[0], g((3, 2)), g((2, 3)), 0.5),
        "Mamba": ar.Mamba(g((3, 2)), g((3, 3)), g((2, 3)), g((2, 3)), 0.5 * g((3, 2))),
        "Mamba2": ar.Mamba2(g((4, 2)), g((2, 4)), g((2, 2)), g((3, 2)), g((3, 2)), 2),
        "Hybrid": ar.Hybrid([ar.S4D(lam, g((2, 3)), g((2, 3)), np.ones(2)), ar.RoPEAttention(E2, E2, E2)]),
    }


@pytest.mark.parametrize("name", sorted(_layers()))
def test_interaction_guards_count_at_least_what_the_call_holds(name):
    """Each layer's estimate of its interaction's working set (the number its guard checks) is at
    least the memory the call is measured to hold (tracemalloc), at a size where it runs."""
    layer = _layers()[name]
    n = 300
    X = np.random.default_rng(5).standard_normal((n, layer.d)) * 0.5
    W, _, peak = _measured(lambda: layer.interaction(X))
    assert not isinstance(W, Exception), W
    estimate = 8.0 * layer._interaction_entries(n)
    assert peak <= estimate + 2**20, (peak / 2**20, estimate / 2**20)  # MiB; 1 MiB for small arrays


@pytest.mark.parametrize("name", ["Retention", "ALiBiAttention", "RoPEAttention", "LinearAttention", "Mamba2",
                                  "MultiHeadAttention"])
def test_coefficient_guards_count_at_least_what_the_call_holds(name):
    layer = _layers()[name]
    n = 300
    X = np.random.default_rng(6).standard_normal((n, layer.d)) * 0.5
    _, _, peak = _measured(lambda: layer.coefficients(X))
    heads_ = getattr(layer, "heads", getattr(layer, "H", 1))
    assert peak <= 8.0 * (layer._interaction_entries(n) if name == "Mamba2" else
                          (2 * heads_ + 1) * n * n + 6 * min(2**22, heads_ * n * n)) + 2**20


def test_every_layer_guard_is_a_total():
    """The guard of every layer's interaction goes through check_total (a layer's _interaction_entries)."""
    for name, layer in _layers().items():
        assert isinstance(layer, _Layer) and callable(getattr(layer, "_interaction_entries", None)), name


# ---------------------------------------------------------------- the block-by-block forms equal the direct ones

def test_mamba2_coefficients_by_blocks_equal_the_segment_sum_formula(monkeypatch):
    g = np.random.default_rng(7).standard_normal
    layer = ar.Mamba2(g((6, 2)), g((2, 6)), g((3, 2)), g((3, 2)), g((3, 2)), 3, A_log=g(3), dt_bias=g(3))
    X = g((50, 2))
    _, Delta, log_a, Bt, Ct = layer._projections(X)
    direct = np.exp(ar._segsum(log_a.T)) * Delta.T[:, None, :] * (Ct @ Bt.T)[None]
    np.testing.assert_array_equal(layer.coefficients(X), direct)  # one block: the same sums in the same order
    monkeypatch.setattr(ar, "_BLOCK_ENTRIES", 3 * 7 * 3)  # blocks of 7 rows: sums carried from block to block
    np.testing.assert_allclose(layer.coefficients(X), direct, rtol=1e-11, atol=0)
    W = layer.interaction(X)
    np.testing.assert_allclose(W, np.einsum("hts,hpd->tspd", direct, layer.value_maps()), rtol=1e-11, atol=1e-14)


def test_operator_readers_by_blocks_equal_the_direct_formulas(monkeypatch):
    from ssmheads import operator as op
    rng = np.random.default_rng(8)
    W, X = rng.standard_normal((23, 23, 3, 2)), rng.standard_normal((23, 2))
    for scale in (1.0, 1e200, 1e-200):
        expected = (np.einsum("ijpd,jd->ip", W, X) * scale, np.sqrt(np.einsum("ijpd,ijpd->ij", W, W)) * scale,
                    np.max(np.abs(W[1:, 1:] - W[:-1, :-1])) * scale)
        for entries in (op._ROW_ENTRIES, 3 * 23 * 6):  # one block; blocks of 3 rows
            monkeypatch.setattr(op, "_ROW_ENTRIES", entries)
            np.testing.assert_allclose(sh.apply_interaction(W * scale, X), expected[0], rtol=1e-13)
            np.testing.assert_allclose(sh.block_norms(W * scale), expected[1], rtol=1e-14)
            assert sh.toeplitz_deviation(W * scale) == pytest.approx(expected[2], rel=1e-14)
            assert sh.causality_violation(W * scale) == pytest.approx(np.max(np.triu(expected[1], 1)), rel=1e-14)
    with pytest.raises(ValueError, match=r"^W has 1050625 blocks \(n = 1025\): their spectral norms"):
        sh.block_norms(np.zeros((1025, 1025, 1, 1)), "spectral")


def test_recurrences_refuse_sequences_longer_than_max_scan():
    from ssmheads.models import MAX_SCAN
    X = np.ones((MAX_SCAN + 1, 2))
    ssm = sh.LinearSSM(0.5 * E2, E2, E2)
    _refused_at_once(lambda: ssm.forward(X), r"^X has 262145 tokens: the recurrence would take 262145 steps")
    retention = ar.Retention(E2, E2, E2, 0.9)
    _refused_at_once(lambda: retention.recurrent_forward(X), r"use chunkwise_forward")
    _refused_at_once(lambda: retention.chunkwise_forward(X, 2), r"^X has 262145 tokens: chunk = 2 makes 131073 chunks")
    Y = retention.chunkwise_forward(X, 64)  # 4097 chunks
    assert Y.shape == X.shape and np.all(np.isfinite(Y))


def test_bench_training_is_bounded_and_steps_to_checks_its_input():
    """Chapter 6's trainer refuses more than MAX_STEPS Adam steps at once (a call of 10**9
    steps would have trained for months), and steps_to refuses a curve or threshold it cannot judge
    (a NaN curve or threshold answered None, 'never below', silently)."""
    from ssmheads import bench
    _refused_at_once(lambda: bench.train("s4d", "delay", 4, steps=bench.MAX_STEPS + 1),
                     r"^steps must be at most 20000")
    _refused_at_once(lambda: bench.sweep(["s4d"], [("delay", 4)], [0], steps=10**9), r"^steps must be at most")
    for losses, threshold, message in (([1.0, np.nan], 0.1, r"^losses must be .* non-finite"),
                                       ([], 0.1, r"^losses must be a nonempty"),
                                       ([[1.0, 0.5]], 0.1, r"^losses must be a nonempty 1-D"),
                                       ([1.0, 0.01], np.nan, r"^threshold must be a finite number"),
                                       ([1.0, 0.01], "0.1", r"^threshold must be a finite number")):
        with pytest.raises(ValueError, match=message):
            bench.steps_to(losses, threshold)
    assert bench.steps_to([1.0, 0.5, 0.05, 0.01], 0.1) == 2 and bench.steps_to([1.0, 0.5], 0.1) is None


def test_bench_floor_and_results_file_checks(tmp_path):
    """task_floor with more heads than the lags' p d dimensions is 0 (it allocated a curve
    of 10**9 entries and named an internal H_max); save_results refuses what is not a list
    of records and values JSON cannot hold (NaN was written as a bare NaN token)."""
    from ssmheads import bench
    assert bench.task_floor("delay", 4, 10**9) == 0.0 == bench.task_floor("delay", 4, 4)
    assert 0.0 < bench.task_floor("delay", 4, 3) < bench.task_floor("delay", 4, 2)
    with pytest.raises(ValueError, match=r"^records must be a list of dicts"):
        bench.save_results(None, tmp_path / "r.json")
    with pytest.raises(ValueError, match=r"^records and meta must hold finite numbers"):
        bench.save_results([{"test_loss": float("nan")}], tmp_path / "r.json")
    bench.save_results([{"architecture": "s4d", "losses": [1.0, 0.5]}], tmp_path / "r.json", {"steps": 1})
    back = bench.load_results(tmp_path / "r.json")
    assert back["meta"] == {"steps": 1} and back["runs"][0]["losses"].tolist() == [1.0, 0.5]
