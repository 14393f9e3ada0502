"""minimal_polynomial_degree's fast path against the original algorithm (all N powers, one SVD per prefix)."""

import numpy as np
import pytest

from ssmheads.span import default_rtol, minimal_polynomial_degree


def reference_minimal_polynomial_degree(A, rtol=None):
    """The original implementation: every power I, ..., A^(N-1) stacked (N^3 floats), the
    module's running count over the prefixes, each prefix by its own SVD."""
    A = np.asarray(A, dtype=float)
    N = A.shape[0]
    rtol = default_rtol(N, N, N) if rtol is None else rtol
    top = float(np.max(np.abs(A)))
    if top == 0.0:
        return 1
    A = A / top
    A = A / np.linalg.norm(A, 2)
    P = np.empty((N, N, N))
    P[0] = np.eye(N)
    for l in range(1, N):
        P[l] = A @ P[l - 1]
    G = P.transpose(0, 2, 1).reshape(N, N * N).T

    def count(length):
        s = np.linalg.svd(G[:, :length], compute_uv=False)
        return 0 if s[0] == 0.0 else int(np.count_nonzero(s > rtol * s[0]))

    best = count(N)
    if best >= N:
        return N
    if best == 0:
        return 1
    for length in range(best + 1, N):
        if best >= length:
            continue
        best = max(best, count(length))
        if best >= N:
            return N
    return max(1, best)


def _similar(J, g, cond_max=30.0):
    N = J.shape[0]
    while True:
        S = g.standard_normal((N, N))
        if np.linalg.cond(S) < cond_max:
            return S @ J @ np.linalg.inv(S)


def _jordan(g, N):
    sizes, values = [], []
    left = N
    while left:
        size = int(g.integers(1, min(left, 4) + 1))
        sizes.append(size)
        left -= size
        values.append(float(g.choice([-0.8, -0.3, 0.2, 0.5, 0.9])) if g.random() < 0.7 else float(g.uniform(-1, 1)))
    J = np.zeros((N, N))
    i = 0
    for size, lam in zip(sizes, values):
        J[i:i + size, i:i + size] = lam * np.eye(size) + np.eye(size, k=1)
        i += size
    return J


def _clustered(g, N):
    centres = g.uniform(-1, 1, size=max(1, N // 3))
    lam = centres[g.integers(0, centres.size, size=N)] + g.choice([0.0, 1e-13, 1e-9, 1e-5, 1e-3], size=N)
    return np.diag(lam)


def _rotation(g, N):
    A = np.zeros((N, N))
    angles = g.choice([0.3, 0.3, 1.1, np.pi / 2, 2.0], size=N // 2)
    radii = g.choice([1.0, 0.95, 0.6], size=N // 2)
    for b, (t, r) in enumerate(zip(angles, radii)):
        A[2 * b:2 * b + 2, 2 * b:2 * b + 2] = r * np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    if N % 2:
        A[-1, -1] = float(g.choice([1.0, -0.5]))
    return A


KINDS = {
    "random": lambda g, N: g.standard_normal((N, N)),
    "random-scaled": lambda g, N: g.standard_normal((N, N)) * 10.0 ** g.uniform(-8, 8),
    "jordan": lambda g, N: _similar(_jordan(g, N), g),
    "clustered": lambda g, N: _similar(_clustered(g, N), g),
    "rotation": lambda g, N: _similar(_rotation(g, N), g),
    "orthogonal": lambda g, N: np.linalg.qr(g.standard_normal((N, N)))[0],
    "triangular": lambda g, N: np.triu(g.standard_normal((N, N))),
}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_fast_minimal_polynomial_degree_matches_the_original_algorithm(kind):
    g = np.random.default_rng(sorted(KINDS).index(kind) + 100)
    for trial in range(12):
        N = int(g.choice([2, 3, 5, 8, 13, 21, 40])) if trial else 40
        A = KINDS[kind](g, N)
        assert minimal_polynomial_degree(A) == reference_minimal_polynomial_degree(A), (kind, trial, N)


def test_fast_minimal_polynomial_degree_matches_with_a_larger_rtol():
    g = np.random.default_rng(7)
    for kind in sorted(KINDS):
        A = KINDS[kind](g, 13)
        assert minimal_polynomial_degree(A, rtol=1e-6) == reference_minimal_polynomial_degree(A, 1e-6), kind


def _rotations(angles):
    A = np.zeros((2 * len(angles), 2 * len(angles)))
    for b, t in enumerate(angles):
        A[2 * b:2 * b + 2, 2 * b:2 * b + 2] = [[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]
    return A


def test_non_decaying_powers_are_certified_full_by_krylov_when_the_budget_is_small():
    # distinct, evenly spread eigenvalues on the unit circle: the powers never decay, and the
    # count is N; with room for only 3 powers the Krylov certificate must give N
    N = 16
    A = _rotations(2 * np.pi * (np.arange(N // 2) + 0.5) / N)
    assert reference_minimal_polynomial_degree(A) == N
    assert minimal_polynomial_degree(A, max_bytes=3 * 8 * N * N) == N


def test_non_decaying_powers_beyond_the_budget_raise_naming_A():
    """A normal A is counted on its eigenvalues' powers (no budget needed); a non-normal one
    with the same spectrum still needs the stack of powers, and refuses beyond the budget."""
    A = _rotations([0.3] * 4 + [1.1] * 4)  # normal, m = 4, powers do not decay
    assert minimal_polynomial_degree(A) == reference_minimal_polynomial_degree(A) == 4
    assert minimal_polynomial_degree(A, max_bytes=3 * 8 * 16 * 16) == 4
    S = np.eye(16) + 0.5 * np.triu(np.ones((16, 16)), 1)
    B = S @ A @ np.linalg.inv(S)  # same minimal polynomial, not normal
    assert minimal_polynomial_degree(B) == reference_minimal_polynomial_degree(B) == 4
    with pytest.raises(ValueError, match=r"A of size 16 x 16 .* max_bytes="):
        minimal_polynomial_degree(B, max_bytes=3 * 8 * 16 * 16)


@pytest.mark.parametrize("bad", [0, -5, "big", np.nan])
def test_max_bytes_must_be_positive(bad):
    with pytest.raises(ValueError, match="max_bytes"):
        minimal_polynomial_degree(np.eye(3), max_bytes=bad)


def test_decaying_powers_stop_early_and_match_at_N_100():
    A = np.random.default_rng(3).standard_normal((100, 100))
    # room for 75 of the N = 100 powers only: a random matrix needs about 60
    assert minimal_polynomial_degree(A, max_bytes=75 * 8 * 100 * 100) == reference_minimal_polynomial_degree(A)
    with pytest.raises(ValueError, match=r"A of size 100 x 100 .*MiB"):
        minimal_polynomial_degree(A, max_bytes=20 * 8 * 100 * 100)
