"""The interaction operator ``W`` and what can be read off it (Chapter 1).

A sequence map in *interaction form* computes ``y_i = sum_j W_ij(X) x_j``.
Arrays follow the book's conventions:

* a sequence ``X`` has shape ``(n, d)``; token ``i`` is the row ``X[i]``;
* an interaction operator ``W`` has shape ``(n, n, p, d)``; ``W[i, j]`` is the
  ``p x d`` block ``W_ij(X)``;
* lag operators ``K`` have shape ``(L, p, d)``; ``K[l]`` acts at lag ``l = i - j``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ._validate import as_array, check_positive_int, check_size

__all__ = [
    "apply_interaction",
    "toeplitz_operator",
    "block_norms",
    "causality_violation",
    "toeplitz_deviation",
    "operator_of_linear_map",
    "trivial_interaction_form",
    "two_route_gap",
]


def _operator(W) -> np.ndarray:
    W = as_array("W", W, 4, "(n, n, p, d)")
    if W.shape[0] != W.shape[1]:
        raise ValueError(f"W must have shape (n, n, p, d) with equal first two axes; got shape {W.shape}")
    if W.shape[0] < 1:
        raise ValueError(f"W has shape {W.shape}; the sequence length n must be at least 1")
    return W


def apply_interaction(W, X) -> np.ndarray:
    """Apply an interaction operator: ``y_i = sum_j W[i, j] @ X[j]``.

    Parameters
    ----------
    W : array, shape (n, n, p, d)
        The interaction operator, ``W[i, j]`` the block acting from token ``j`` to output ``i``.
    X : array, shape (n, d)
        The input sequence, one token per row.

    Returns
    -------
    Y : ndarray, shape (n, p)
    """
    W = _operator(W)
    X = as_array("X", X, 2, "(n, d)")
    check_size("X", X, 0, W.shape[0], "the sequence length n of W")
    check_size("X", X, 1, W.shape[3], "the token width d of W")
    return np.einsum("ijpd,jd->ip", W, X)


def toeplitz_operator(K, n: int) -> np.ndarray:
    """The causal block-Toeplitz operator ``W[i, j] = K[i - j]`` for ``0 <= i - j < L``, else 0.

    This is the operator of every causal time-invariant linear layer: a
    convolution with ``L`` taps, or an LTI SSM with ``K[l] = C A^l B`` (``L >= n``).

    Parameters
    ----------
    K : array, shape (L, p, d)
        Lag operators; lags at or beyond ``L`` are zero.
    n : int
        Sequence length, ``n >= 1``.

    Returns
    -------
    W : ndarray, shape (n, n, p, d)
    """
    K = as_array("K", K, 3, "(L, p, d)")
    n = check_positive_int("n", n)
    L = K.shape[0]
    lag = np.arange(n)[:, None] - np.arange(n)[None, :]  # (n, n), lag = i - j
    inside = (lag >= 0) & (lag < L)
    padded = np.concatenate([K, np.zeros((1,) + K.shape[1:])], axis=0)  # index L is the zero block
    return padded[np.where(inside, lag, L)]


def block_norms(W, ord: str = "fro") -> np.ndarray:
    """Norm of every block ``W[i, j]``: the picture of "who talks to whom".

    Parameters
    ----------
    W : array, shape (n, n, p, d)
    ord : {"fro", "spectral"}
        Frobenius norm (default) or spectral norm of each ``p x d`` block.

    Returns
    -------
    norms : ndarray, shape (n, n)
    """
    W = _operator(W)
    if ord == "fro":
        return np.sqrt(np.einsum("ijpd,ijpd->ij", W, W))
    if ord == "spectral":
        return np.linalg.norm(W, ord=2, axis=(2, 3))
    raise ValueError(f"ord must be 'fro' or 'spectral'; got {ord!r}")


def causality_violation(W) -> float:
    """Largest Frobenius norm of a block above the diagonal (``j > i``); 0 for a causal operator.

    Parameters
    ----------
    W : array, shape (n, n, p, d)

    Returns
    -------
    float
    """
    norms = block_norms(W)
    upper = np.triu(norms, k=1)
    return float(upper.max()) if upper.size else 0.0


def toeplitz_deviation(W) -> float:
    """How far ``W`` is from block-Toeplitz: ``max |W[i, j] - W[i + 1, j + 1]|`` over all entries.

    Zero exactly when every block depends only on the offset ``i - j``. For a
    *causal, input-independent* operator this is time invariance of the map
    (delaying the input delays the output). It is not in general: an
    anti-causal shift is Toeplitz but not time-invariant, and an input-dependent
    operator (an MLP's, say) can fail the test at every input although its map
    is time-invariant.

    Parameters
    ----------
    W : array, shape (n, n, p, d)

    Returns
    -------
    float
    """
    W = _operator(W)
    if W.shape[0] < 2:
        return 0.0
    return float(np.max(np.abs(W[1:, 1:] - W[:-1, :-1])))


def operator_of_linear_map(f: Callable[[np.ndarray], np.ndarray], n: int, d: int) -> np.ndarray:
    """Recover the interaction operator of a *linear* sequence map by probing it with unit tokens.

    For a linear map the operator is unique and equals the Jacobian,
    ``W[i, j] = d y_i / d x_j``: column ``c`` of ``W[i, j]`` is output ``i`` when the
    input is the unit vector ``e_c`` placed at position ``j`` and zeros elsewhere.
    All ``n * d`` probes are evaluated by ``f`` one at a time.

    Parameters
    ----------
    f : callable
        Maps an array of shape ``(n, d)`` to an array of shape ``(n, p)``. Must be linear.
    n, d : int
        Sequence length and token width.

    Returns
    -------
    W : ndarray, shape (n, n, p, d)
    """
    n = check_positive_int("n", n)
    d = check_positive_int("d", d)
    columns = []
    for probe in np.eye(n * d).reshape(n * d, n, d):
        y = as_array("f(X)", f(probe), 2, "(n, p)")
        check_size("f(X)", y, 0, n, "the sequence length n")
        columns.append(y)
    response = np.stack(columns)  # (n*d, n, p): probe (j, c) -> y
    p = response.shape[2]
    return response.reshape(n, d, n, p).transpose(2, 0, 3, 1)


def trivial_interaction_form(Y, X) -> np.ndarray:
    """Remark 1: an interaction form for *any* map, ``W_ij = y_i x_j^T / ||X||_F^2``.

    Given the output ``Y = F(X)`` of an arbitrary map on a nonzero input ``X``, this
    operator satisfies ``sum_j W_ij x_j = y_i``. It shows that "the" operator of a
    nonlinear map only exists relative to a construction.

    Parameters
    ----------
    Y : array, shape (n, p)
        Output of the map on ``X``.
    X : array, shape (n, d)
        A nonzero input.

    Returns
    -------
    W : ndarray, shape (n, n, p, d)
    """
    Y = as_array("Y", Y, 2, "(n, p)")
    X = as_array("X", X, 2, "(n, d)")
    check_size("Y", Y, 0, X.shape[0], "the sequence length n of X")
    scale = float(np.sum(X * X))
    if scale == 0.0:
        raise ValueError("X must be nonzero: the construction divides by ||X||_F^2")
    return np.einsum("ip,jd->ijpd", Y, X) / scale


def two_route_gap(layer, X) -> float:
    """Relative gap between a layer's direct computation and its operator route.

    Returns ``max |forward(X) - W(X) X| / max |forward(X)|`` (the denominator is
    taken as 1 when the output is zero), where ``W(X) = layer.interaction(X)``.
    It is at rounding level exactly when the derivation of ``W`` is right.

    Parameters
    ----------
    layer : object with ``forward(X)`` and ``interaction(X)``
        Any layer of :mod:`ssmheads.models`.
    X : array, shape (n, d)

    Returns
    -------
    float
    """
    if not (hasattr(layer, "forward") and hasattr(layer, "interaction")):
        raise ValueError(f"layer must have forward(X) and interaction(X) methods; got {type(layer).__name__}")
    direct = np.asarray(layer.forward(X))
    via_operator = apply_interaction(layer.interaction(X), X)
    scale = float(np.max(np.abs(direct))) if direct.size else 0.0
    return float(np.max(np.abs(direct - via_operator))) / (scale if scale > 0 else 1.0)
