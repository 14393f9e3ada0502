"""Jacobians across distance: the gradient highway of attention, the decay of SSMs (Chapter 4).

``J[i, j] = d y_i / d x_j`` has shape ``(n, n, p, d)``, like an interaction
operator. For a linear layer it *is* the operator (Chapter 1). For softmax
attention it adds two terms that come from differentiating the weights
(Proposition 8): for each head, with ``o_i = sum_m a_im v_m``,

* value path ``a_ij W_O W_V``;
* key path ``a_ij W_O (v_j - o_i) (W_K^T q_i)^T / sqrt(d_k)``;
* query path, at ``j = i`` only, ``sum_m a_im W_O (v_m - o_i) (W_Q^T k_m)^T / sqrt(d_k)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from ._validate import as_array, check_positive_int, check_size
from .heads import FactorizedHeads, SoftmaxSinkHeads
from .models import Convolution, LinearSSM, MultiHeadAttention, PositionwiseLinear, _check_system

__all__ = [
    "jacobian",
    "jacobian_row",
    "finite_difference_jacobian",
    "gradient_profile",
    "highway_input",
    "gelfand_constant",
    "DecayBound",
    "decay_bound",
    "lag_task_signal",
    "LagTaskResult",
    "train_lag_task",
]

_LINEAR_LAYERS = (Convolution, PositionwiseLinear, FactorizedHeads, SoftmaxSinkHeads)


def _check_model(model) -> None:
    if isinstance(model, MultiHeadAttention):
        if model.kernel != "softmax":
            raise ValueError(f"model must use the softmax kernel for an analytic Jacobian; got kernel={model.kernel!r}")
        return
    if not isinstance(model, (LinearSSM,) + _LINEAR_LAYERS):
        raise ValueError("model must be a LinearSSM, MultiHeadAttention (softmax), Convolution, "
                         f"PositionwiseLinear, FactorizedHeads or SoftmaxSinkHeads; got {type(model).__name__}")


def _row_weights(q: np.ndarray, k: np.ndarray, rows: np.ndarray, causal: bool, scale: float) -> np.ndarray:
    """Softmax weights of the query rows only, shape (r, n): O(r n) memory, not O(n^2)."""
    scores = (q @ k.T) * scale
    if causal:
        scores = np.where(np.arange(k.shape[0])[None, :] <= rows[:, None], scores, -np.inf)
    scores -= scores.max(axis=1, keepdims=True)
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)


def _attention_rows(mha: MultiHeadAttention, X: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``d y_i / d x_j`` for the query positions ``rows`` and every key ``j``: shape (len(rows), n, p, d).

    Per head, with ``P_j = W_O v_j``, ``O_i = W_O o_i``, ``g_i = W_K^T q_i / sqrt(d_k)``:
    ``J[i, j] = sum_h a_ij (V_h + P_j g_i^T - O_i g_i^T)`` plus the query path on ``j = i``.
    The three full-size terms are computed as matrix products batched over the query
    rows, so the cost is a few passes over the ``(r, n, p, d)`` result.
    """
    n, H, p, d = X.shape[0], mha.H, mha.p, mha.d
    r = rows.size
    scale = 1.0 / np.sqrt(mha.d_k)
    V = mha.value_maps()  # (H, p, d)
    a = np.empty((H, r, n))
    P = np.einsum("hpd,nd->hnp", V, X)  # (H, n, p): W_O v_j = V_h x_j
    g = np.empty((H, r, d))
    hk = np.empty((H, n, d))
    for h in range(H):
        q, k = X[rows] @ mha.W_Q[h].T, X @ mha.W_K[h].T  # (r, d_k), (n, d_k)
        a[h] = _row_weights(q, k, rows, mha.causal, scale)
        g[h] = (q @ mha.W_K[h]) * scale  # W_K^T q_i / sqrt(d_k)
        hk[h] = (k @ mha.W_Q[h]) * scale  # W_Q^T k_m / sqrt(d_k)
    O = np.einsum("hrn,hnp->hrp", a, P)  # (H, r, p)
    J = np.tensordot(a, V, axes=(0, 0))  # value path, (r, n, p, d)
    # key path, first part: sum_h a_ij P_j g_i^T, batched over i as (n p, H) @ (H, d)
    AP = (a[:, :, :, None] * P[:, None, :, :]).transpose(1, 2, 3, 0).reshape(r, n * p, H)
    J += (AP @ g.transpose(1, 0, 2)).reshape(r, n, p, d)
    # key path, second part: - sum_h a_ij O_i g_i^T, batched over i as (n, H) @ (H, p d)
    Og = (O[:, :, :, None] * g[:, :, None, :]).transpose(1, 0, 2, 3).reshape(r, H, p * d)
    J -= (a.transpose(1, 2, 0) @ Og).reshape(r, n, p, d)
    # query path, on j == i only: sum_h sum_m a_im (P_m - O_i) hk_m^T
    query = np.einsum("hrm,hmp,hmd->rpd", a, P, hk) - np.einsum("hrp,hrd->rpd", O, np.einsum("hrm,hmd->hrd", a, hk))
    J[np.arange(r), rows] += query
    return J


def jacobian(model, X) -> np.ndarray:
    """The exact Jacobian ``J[i, j] = d y_i / d x_j`` of a layer at the input ``X``.

    Analytic, no finite differences: the lag operators for :class:`LinearSSM`
    (for every ``X``), the operator for the other linear layers, and the three
    paths of Proposition 8, summed over heads, for softmax
    :class:`MultiHeadAttention` (causal or not).

    Parameters
    ----------
    model : LinearSSM, MultiHeadAttention (softmax), Convolution, PositionwiseLinear,
        FactorizedHeads or SoftmaxSinkHeads
    X : array, shape (n, d)

    Returns
    -------
    J : ndarray, shape (n, n, p, d)
    """
    _check_model(model)
    X = model._input(X)
    if isinstance(model, MultiHeadAttention):
        return _attention_rows(model, X, np.arange(X.shape[0]))
    return model.interaction(X)


def jacobian_row(model, X, i: int = -1) -> np.ndarray:
    """One row of the Jacobian, ``d y_i / d x_j`` for every ``j``: shape ``(n, p, d)``.

    Costs ``O(n)`` instead of ``O(n^2)`` for attention and SSMs, so it works for long
    sequences. ``i`` may be negative (``-1`` is the last position).

    Parameters
    ----------
    model : as in :func:`jacobian`
    X : array, shape (n, d)
    i : int

    Returns
    -------
    ndarray, shape (n, p, d)
    """
    _check_model(model)
    X = model._input(X)
    n = X.shape[0]
    if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)) or not -n <= i < n:
        raise ValueError(f"i must be an integer position in [-{n}, {n}); got {i!r}")
    i = int(i) % n
    if isinstance(model, MultiHeadAttention):
        return _attention_rows(model, X, np.array([i]))[0]
    if isinstance(model, LinearSSM):
        K = model.lag_operators(i + 1)  # K[l] for l = i - j
        row = np.zeros((n, model.p, model.d))
        row[: i + 1] = K[::-1]
        return row
    return model.interaction(X)[i]


def finite_difference_jacobian(f: Callable[[np.ndarray], np.ndarray], X, eps: float = 1e-6) -> np.ndarray:
    """Central-difference Jacobian of any sequence map, for checking analytic ones.

    ``J[i, j, :, c] = (f(X + eps E_jc) - f(X - eps E_jc))[i] / (2 eps)``, with ``E_jc``
    the unit change of coordinate ``c`` of token ``j``: ``2 n d`` evaluations of ``f``.

    Parameters
    ----------
    f : callable
        Maps ``(n, d)`` to ``(n, p)``.
    X : array, shape (n, d)
    eps : float
        Step, ``eps > 0``.

    Returns
    -------
    J : ndarray, shape (n, n, p, d)
    """
    X = as_array("X", X, 2, "(n, d)")
    if not (isinstance(eps, (int, float, np.floating)) and not isinstance(eps, bool) and np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive number; got {eps!r}")
    n, d = X.shape
    columns = []
    for j in range(n):
        for c in range(d):
            step = np.zeros_like(X)
            step[j, c] = eps
            columns.append((np.asarray(f(X + step)) - np.asarray(f(X - step))) / (2 * eps))
    D = np.stack(columns)  # (n*d, n, p)
    return D.reshape(n, d, n, -1).transpose(2, 0, 3, 1)


def gradient_profile(model, X, i: int = -1):
    """Norms ``||d y_i / d x_j||`` (spectral) against distance ``i - j``, for ``j <= i``.

    Parameters
    ----------
    model : as in :func:`jacobian`
    X : array, shape (n, d)
    i : int
        Output position; default the last.

    Returns
    -------
    distances : ndarray of int, shape (i + 1,)
        ``0, 1, ..., i``.
    norms : ndarray, shape (i + 1,)
        ``norms[l] = ||d y_i / d x_{i-l}||``.
    """
    row = jacobian_row(model, X, i)
    i = int(i) % row.shape[0]
    distances = np.arange(i + 1)
    norms = np.linalg.norm(row[i - distances], ord=2, axis=(1, 2))
    return distances, norms


def highway_input(attention: MultiHeadAttention, n: int, a: float, key: int = 0, head: int = 0) -> np.ndarray:
    """Theorem 9's input: the last token attends to position ``key`` with weight exactly ``a``.

    With ``M = W_K^T W_Q`` of the chosen head, take ``u`` the top right singular vector of
    ``M`` and ``w = M u``. The input has ``x_{n-1} = u`` (the query), ``x_key = t w / ||w||``
    and zeros elsewhere, with
    ``t = sqrt(d_k) / ||w|| * (log(a / (1 - a)) + log(n - 2 + exp(s)))`` and
    ``s = u^T W_Q^T W_K u / sqrt(d_k)`` the query's score on itself. Zero tokens score 0, so
    the softmax weight on ``key`` is ``a`` whatever its distance from the end.

    Parameters
    ----------
    attention : MultiHeadAttention
        Softmax kernel; the weight is exact for the chosen head (the theorem is
        stated for one head).
    n : int
        Sequence length, ``n >= 2``.
    a : float
        Target weight, ``0 < a < 1``.
    key : int
        Position of the key token, ``0 <= key < n - 1``.
    head : int

    Returns
    -------
    X : ndarray, shape (n, d)
    """
    if not isinstance(attention, MultiHeadAttention) or attention.kernel != "softmax":
        raise ValueError("attention must be a MultiHeadAttention with the softmax kernel")
    n = check_positive_int("n", n, minimum=2)
    if not (isinstance(a, (int, float, np.floating)) and 0 < a < 1):
        raise ValueError(f"a must be a number strictly between 0 and 1; got {a!r}")
    if isinstance(key, (bool, np.bool_)) or not isinstance(key, (int, np.integer)) or not 0 <= key < n - 1:
        raise ValueError(f"key must be an integer position in [0, n - 1) = [0, {n - 1}); got {key!r}")
    if isinstance(head, (bool, np.bool_)) or not isinstance(head, (int, np.integer)) or not 0 <= head < attention.H:
        raise ValueError(f"head must be an integer in [0, {attention.H}); got {head!r}")
    Wq, Wk = attention.W_Q[head], attention.W_K[head]
    M = Wk.T @ Wq  # (d, d): w = M u
    _, sv, Vt = np.linalg.svd(M)
    if sv[0] == 0:
        raise ValueError("the chosen head has W_K^T W_Q = 0: its weights cannot depend on the input")
    u = Vt[0]
    w = M @ u
    self_score = float(u @ Wq.T @ Wk @ u) / np.sqrt(attention.d_k)
    # log(n - 2 + exp(s)) computed stably
    log_rest = np.logaddexp(np.log(n - 2) if n > 2 else -np.inf, self_score)
    t = np.sqrt(attention.d_k) / np.linalg.norm(w) * (np.log(a / (1 - a)) + log_rest)
    X = np.zeros((n, attention.d))
    X[n - 1] = u
    X[key] = t * w / np.linalg.norm(w)
    return X


def gelfand_constant(A, rho_bar: float, max_lag: int = 100_000) -> float:
    """``kappa(rho_bar) = sup_l ||A^l|| / rho_bar^l`` (spectral norm), for ``rho(A) < rho_bar``.

    Finite by Gelfand's formula ``||A^l||^(1/l) -> rho(A)``. The powers are formed one at
    a time (rescaled to avoid overflow), and the search stops once the ratio has fallen
    below ``1e-8`` of its maximum, or at ``max_lag``.

    Parameters
    ----------
    A : array, shape (N, N)
    rho_bar : float
        ``rho(A) < rho_bar``.
    max_lag : int

    Returns
    -------
    float
    """
    A = as_array("A", A, 2, "(N, N)")
    if A.shape[0] != A.shape[1] or A.shape[0] < 1:
        raise ValueError(f"A must be square with N >= 1, shape (N, N); got shape {A.shape}")
    rho = float(np.max(np.abs(np.linalg.eigvals(A))))
    if not (isinstance(rho_bar, (int, float, np.floating)) and rho < rho_bar):
        raise ValueError(f"rho_bar must exceed the spectral radius {rho:.6g} of A; got {rho_bar!r}")
    max_lag = check_positive_int("max_lag", max_lag)
    P = np.eye(A.shape[0])
    log_scale = 0.0  # ||A^l|| = exp(log_scale) * ||P||
    best = 1.0
    for lag in range(1, max_lag + 1):
        P = (A @ P) / rho_bar
        size = float(np.linalg.norm(P, 2))
        if size == 0.0:
            break
        ratio = np.exp(log_scale) * size
        best = max(best, ratio)
        if ratio < 1e-8 * best:
            break
        P /= size
        log_scale += np.log(size)
    return best


@dataclass(frozen=True)
class DecayBound:
    """Proposition 10's bounds on ``||C A^l B||`` at the given lags.

    Attributes
    ----------
    lags : ndarray of int
    general : ndarray
        ``||C|| ||B|| kappa(rho_bar) rho_bar^l``.
    kappa, rho_bar : float
    diagonalizable : ndarray or None
        ``||C|| ||B|| cond(S) rho(A)^l`` when ``A = S diag S^{-1}`` is diagonalizable, else None.
    cond_S : float or None
    """

    lags: np.ndarray
    general: np.ndarray
    kappa: float
    rho_bar: float
    diagonalizable: np.ndarray | None
    cond_S: float | None


def decay_bound(A, B, C, lags, rho_bar: float | None = None) -> DecayBound:
    """Bounds on the Jacobian norms ``||d y_i / d x_j|| = ||C A^(i-j) B||`` of a stable SSM.

    Parameters
    ----------
    A : array, shape (N, N)
        Stable: ``rho(A) < 1``.
    B : array, shape (N, d)
    C : array, shape (p, N)
    lags : array of int, shape (L,)
        Nonnegative lags ``l = i - j``.
    rho_bar : float, optional
        In ``(rho(A), 1)``; default ``(rho(A) + 1) / 2``.

    Returns
    -------
    DecayBound
    """
    A, B, C, _ = _check_system(A, B, C)
    lags = np.asarray(lags)
    if lags.size == 0:
        lags = lags.astype(int)
    if lags.ndim != 1 or not np.issubdtype(lags.dtype, np.integer) or np.any(lags < 0):
        raise ValueError(f"lags must be a 1-D array of nonnegative integers; got {lags!r}")
    eig, S = np.linalg.eig(A)
    rho = float(np.max(np.abs(eig)))
    if rho >= 1 - 1e-12:  # a rotation's computed spectral radius can be 1 - 1e-16
        raise ValueError(f"A must be stable (spectral radius < 1); got {rho:.6g}")
    if rho_bar is None:
        rho_bar = (rho + 1) / 2
    if not (isinstance(rho_bar, (int, float, np.floating)) and rho < rho_bar < 1):
        raise ValueError(f"rho_bar must lie in (rho(A), 1) = ({rho:.6g}, 1); got {rho_bar!r}")
    scale = np.linalg.norm(C, 2) * np.linalg.norm(B, 2)
    kappa = gelfand_constant(A, rho_bar)
    general = scale * kappa * float(rho_bar) ** lags
    cond = float(np.linalg.cond(S))
    diagonalizable = None
    if np.isfinite(cond) and cond < 1e12:
        diagonalizable = scale * cond * rho ** lags
    return DecayBound(lags, general, kappa, float(rho_bar), diagonalizable, cond if diagonalizable is not None else None)


# ---------------------------------------------------------------- a lagged-regression task

@dataclass(frozen=True)
class LagTaskResult:
    """Outcome of :func:`train_lag_task`.

    Attributes
    ----------
    losses : ndarray, shape (steps + 1,)
        Population loss before each step and after the last.
    signal : float
        Norm of the target's pull on the parameters at initialisation (see :func:`lag_task_signal`).
    lag_weight : float
        For ``model="attention"``, the final softmax weight on distance ``L``; for the SSM,
        ``||C A^L B||_F / ||M||_F`` at the end.
    """

    losses: np.ndarray
    signal: float
    lag_weight: float


def _lag_task_setup(model: str, L: int, n: int, rho: float, seed: int):
    if model not in ("attention", "ssm"):
        raise ValueError(f"model must be 'attention' or 'ssm'; got {model!r}")
    n = check_positive_int("n", n, minimum=2)
    L = check_positive_int("L", L, minimum=0)
    if L >= n:
        raise ValueError(f"L must be smaller than n = {n}; got {L}")
    if not (isinstance(rho, (int, float, np.floating)) and 0 < rho < 1):
        raise ValueError(f"rho must lie in (0, 1); got {rho!r}")
    rng = np.random.default_rng(check_positive_int("seed", seed, minimum=0))
    M = rng.standard_normal((2, 2))
    M /= np.linalg.norm(M)  # ||M||_F = 1: the loss with no model is 1
    A = rho * np.array([[np.cos(0.3), -np.sin(0.3)], [np.sin(0.3), np.cos(0.3)]])
    if model == "attention":
        params = [np.zeros(n), 0.5 * rng.standard_normal((2, 2))]  # scores b_l, value map V
    else:
        params = [0.5 * rng.standard_normal((2, 2)), 0.5 * rng.standard_normal((2, 2))]  # B, C
    powers = np.stack([np.linalg.matrix_power(A, l) for l in range(n)])  # A^l, l < n
    return M, powers, params


def _lag_task_loss_grad(model: str, params, M, powers, L: int):
    """Population loss sum_l ||Khat_l - M delta_lL||_F^2 and its exact gradient."""
    n = powers.shape[0]
    target = np.zeros((n, 2, 2))
    target[L] = M
    if model == "attention":
        b, V = params
        a = np.exp(b - b.max())
        a /= a.sum()
        R = a[:, None, None] * V - target  # residual per lag
        dV = 2 * np.einsum("l,lpd->pd", a, R)
        da = 2 * np.einsum("lpd,pd->l", R, V)
        db = a * (da - a @ da)  # softmax Jacobian
        return float(np.sum(R * R)), [db, dV]
    B, C = params
    R = np.einsum("pq,lqr,rd->lpd", C, powers, B) - target
    dC = 2 * np.einsum("lpd,lqr,rd->pq", R, powers, B)
    dB = 2 * np.einsum("pq,lqr,lpd->rd", C, powers, R)
    return float(np.sum(R * R)), [dB, dC]


def lag_task_signal(model: str, L: int, n: int, rho: float = 0.9, seed: int = 0) -> float:
    """The target's pull on the parameters at initialisation, for the lag-``L`` task.

    The task: predict ``y = M x_{n-1-L}`` at the last position from white-noise tokens in
    ``R^2``. For white noise the expected squared error is
    ``sum_l ||Khat_l - M delta_{lL}||_F^2``, whose only target-dependent term is
    ``-2 <M, Khat_L>_F``. This function returns the norm of its gradient with respect to
    all parameters at initialisation: for the positional softmax head
    (``Khat_l = softmax(b)_l V``, ``b = 0``) it does not depend on ``L``; for the SSM
    (``Khat_l = C A^l B``, ``A = rho R(0.3)`` fixed) it is proportional to ``rho^L``.

    Parameters
    ----------
    model : {"attention", "ssm"}
    L : int
        The distance, ``0 <= L < n``.
    n : int
    rho : float
        The SSM's spectral radius.
    seed : int

    Returns
    -------
    float
    """
    M, powers, params = _lag_task_setup(model, L, n, rho, seed)
    if model == "attention":
        b, V = params
        a = np.full(n, 1.0 / n)  # b = 0
        coupling = float(np.sum(M * V))
        db = -2 * coupling * a[L] * ((np.arange(n) == L) - a)
        dV = -2 * a[L] * M
        return float(np.sqrt(np.sum(db**2) + np.sum(dV**2)))
    B, C = params
    AL = powers[L]
    dC = -2 * M @ (AL @ B).T
    dB = -2 * (C @ AL).T @ M
    return float(np.sqrt(np.sum(dC**2) + np.sum(dB**2)))


def train_lag_task(model: str, L: int, n: int, steps: int = 300, lr: float = 0.05, rho: float = 0.9,
                   seed: int = 0) -> LagTaskResult:
    """Train a model on the lag-``L`` task by Adam on the exact population loss.

    The loss is the expected squared error on white-noise input (no sampling), with the
    analytic gradients of :func:`lag_task_signal`'s models. The loss with no model is 1.

    Parameters
    ----------
    model : {"attention", "ssm"}
    L, n : int
    steps : int
    lr : float
    rho : float
    seed : int

    Returns
    -------
    LagTaskResult
    """
    steps = check_positive_int("steps", steps)
    if not (isinstance(lr, (int, float, np.floating)) and not isinstance(lr, bool) and np.isfinite(lr) and 0 < lr):
        raise ValueError(f"lr must be a positive number; got {lr!r}")
    signal = lag_task_signal(model, L, n, rho, seed)
    M, powers, params = _lag_task_setup(model, L, n, rho, seed)
    m1 = [np.zeros_like(x) for x in params]
    m2 = [np.zeros_like(x) for x in params]
    losses = np.empty(steps + 1)
    for step in range(steps):
        losses[step], grads = _lag_task_loss_grad(model, params, M, powers, L)
        for x, g, u, v in zip(params, grads, m1, m2):
            u *= 0.9
            u += 0.1 * g
            v *= 0.999
            v += 0.001 * g * g
            x -= lr * (u / (1 - 0.9 ** (step + 1))) / (np.sqrt(v / (1 - 0.999 ** (step + 1))) + 1e-12)
    losses[steps], _ = _lag_task_loss_grad(model, params, M, powers, L)
    if model == "attention":
        b = params[0]
        a = np.exp(b - b.max())
        weight = float(a[L] / a.sum())
    else:
        B, C = params
        weight = float(np.linalg.norm(C @ powers[L] @ B) / np.linalg.norm(M))
    return LagTaskResult(losses, signal, weight)
