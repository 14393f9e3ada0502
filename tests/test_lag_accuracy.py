"""Accuracy of ``lag_operators`` on strongly non-normal systems, against 60-digit arithmetic.

The family: ``A = S diag(lambda) S^-1`` with ``|lambda| <= 0.9`` and an
eigenvector matrix ``S`` of prescribed condition number (1e2 to 1e6), N = 6,
n = 64 lags. The reference propagates the same floating-point ``A``, ``B``,
``C`` in mpmath at 60 digits, so it is exact for the matrices the library sees.
The library must stay within a small multiple of the accuracy of sequential
products in double precision (repeated squaring did not: it was off by 3e-4 at
cond(S) = 1e6).
"""

import mpmath as mp
import numpy as np
import pytest

from ssmheads import lag_operators

N, LAGS, TRIALS = 6, 64, 3


def _system(cond: float, seed: int):
    rng = np.random.default_rng(seed)
    U, _ = np.linalg.qr(rng.standard_normal((N, N)))
    V, _ = np.linalg.qr(rng.standard_normal((N, N)))
    S = U @ np.diag(np.logspace(0, np.log10(cond), N)) @ V
    lam = 0.9 * rng.uniform(-1, 1, N)
    A = S @ np.diag(lam) @ np.linalg.inv(S)
    return A, rng.standard_normal((N, 3)), rng.standard_normal((2, N))


def _reference(A, B, C, n):
    with mp.workdps(60):
        Am, Z, Cm = mp.matrix(A.tolist()), mp.matrix(B.tolist()), mp.matrix(C.tolist())
        out = []
        for _ in range(n):
            out.append(np.array((Cm * Z).tolist(), dtype=float))
            Z = Am * Z
    return np.array(out)


def _sequential(A, B, C, n):
    AB = [B]
    for _ in range(n - 1):
        AB.append(A @ AB[-1])
    return C @ np.array(AB)


@pytest.mark.parametrize("cond", [1e2, 1e3, 1e4, 1e6])
def test_lag_operators_are_as_accurate_as_sequential_products(cond):
    for trial in range(TRIALS):
        A, B, C = _system(cond, seed=100 * trial + int(np.log10(cond)))
        assert np.linalg.cond(np.linalg.eig(A)[1]) > cond / 100  # the family is really non-normal
        ref = _reference(A, B, C, LAGS)
        scale = np.abs(ref).max()
        err = np.abs(lag_operators(A, B, C, LAGS) - ref).max() / scale
        err_seq = np.abs(_sequential(A, B, C, LAGS) - ref).max() / scale
        # within 4x of sequential products (plus rounding level), and absolutely small
        assert err <= 4 * err_seq + 1e-15, (cond, err, err_seq)
        # and absolutely: 60-200x inside 1e-16 cond^2 here; repeated squaring gave 5.8e-3 at 1e6
        assert err <= 1e-16 * cond ** 2, (cond, err)


def test_a_stable_non_normal_system_from_the_review_satisfies_forward_equals_operator():
    """The review's example (rho ~ 0.87, ||A|| in the hundreds): Chapter 1's identity must hold."""
    from ssmheads import LinearSSM, two_route_gap

    rng = np.random.default_rng(0)
    U, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    V, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    S = U @ np.diag(np.logspace(0, 3, 8)) @ V
    lam = 0.866 * rng.uniform(-1, 1, 8)
    lam[0] = 0.866
    A = S @ np.diag(lam) @ np.linalg.inv(S)
    assert np.linalg.norm(A, 2) > 100 and max(abs(np.linalg.eigvals(A))) < 0.87
    ssm = LinearSSM(A, rng.standard_normal((8, 3)), rng.standard_normal((2, 8)))
    X = rng.standard_normal((58, 3))
    assert two_route_gap(ssm, X) < 1e-10
