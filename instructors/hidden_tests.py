"""Hidden tests of the book's 19 auto-checked exercises, for Otter-Grader.

Each exercise's question gets one visible test (the ``check_...`` of
``ssmheads.exercises`` on its fixed cases, which students can run themselves)
and the hidden tests below: new cases that live only in the instructors'
master notebooks and in the autograder (tools/make_otter.py copies them).

Rules every function here follows (Otter copies each function's source *alone*
into a test cell and calls it with the student's globals, by parameter name):

* its one parameter is named as the student's function; Otter passes ``None``
  when the student did not define it;
* it is self-contained: it imports what it uses inside its body and defines its
  small helpers there (no module-level helper or constant is used);
* it calls the student's function, reads its result and compares it through the
  helpers of ``ssmheads.exercises.checking`` (``ck.call``, ``ck.real_array``,
  ``ck.number``, ``ck.compare``), with its own cases, references, messages and hints;
  it loads that module fresh from its file, in its first three lines of code::

      checking = Path(sh.__file__).with_name("exercises") / "checking.py"
      spec = importlib.util.spec_from_file_location("_checking", checking)
      spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))

  because the student's notebook runs in the grading kernel first, and an answer that
  assigned to ``ssmheads.exercises.checking.compare`` (say) must not reach the test's copy;
* its references are computed independently of the student's answer, by another
  route than the one the exercise asks for where there is one, and never by a
  ``check_...`` function; they are computed *before* the answer runs, and the
  answer runs with the same library routines switched off as in the visible check;
* every failure is an ``assert`` whose message says what was called, what was
  expected and what the answer gave (a stub, ``None``, a wrong shape, NaN or an
  exception raised by the student's code each get a clear message);
* it is deterministic (seeded) and fast (well under 0.5 s of CPU; Exercise 5.1's, whose last case
  runs the answer on 40,000 tokens so that an n x n matrix cannot finish, under 1 s).

``HIDDEN_TESTS`` at the end maps each exercise label to its hidden tests;
tests/test_hidden_tests.py tests them.
"""


# ============================================================== Chapter 1

def hidden_ema(ema_operator):
    """ex-ema (Exercise 1.1), hidden cases: the EMA operator on 6 new (n, d, gamma).

    (6, 3, 0.25); n = 1 with d = 4; gamma = 0 (the identity, 0**0 = 1); gamma = 1 (the
    zero operator: the factor 1 - gamma vanishes); a slow decay (9, 2, 0.97); a negative
    gamma with a wide token (3, 5, -0.8). Reference: the interaction operator of the SSM
    A = gamma I, B = (1 - gamma) I, C = I (sh.LinearSSM), not the EMA formula.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(ema_operator, "ema_operator")
    precision = ("{what}: your array holds {dtype}, and the test compares entries to 1e-9 (relative to the largest "
                 "entry when that exceeds 1): build it in float64, NumPy's default")
    negative = ("; gamma = {gamma} is negative here (any real gamma is allowed): gamma ** (i - j) with an integer "
                "power is fine, but log(gamma) or a fractional power is not")
    for n, d, gamma in ((6, 3, 0.25), (1, 4, 0.8), (5, 2, 0.0), (4, 2, 1.0), (9, 2, 0.97), (3, 5, -0.8)):
        what = f"ema_operator({n}, {d}, {gamma})"
        expected = sh.LinearSSM(gamma * np.eye(d), (1 - gamma) * np.eye(d), np.eye(d)).interaction(np.zeros((n, d)))
        out = ck.call(ema_operator, what, n, d, gamma, todo="fill in its body and return the array")
        got = ck.real_array(out, (n, n, d, d), what, float64=True, messages={"precision": precision},
                            nonfinite_hint=negative.format(gamma=gamma) if gamma < 0 else "")
        ck.compare(got, expected, what, first=np.arange(n)[None, :, None, None] > np.arange(n)[:, None, None, None],
                   note=(" (indices (i, j, row, col), 0-based: output i, source j, then the entry of the d x d block "
                         "W_ij = (1 - gamma) gamma^(i-j) I for j <= i)"),
                   hints=[(lambda got, where: where[1] > where[0],
                           "; this block lies above the diagonal (j > i): the EMA never reads later tokens, "
                           "so W_ij = 0 for j > i"),
                          (lambda got, where: gamma == 0.0, "; with gamma = 0 the EMA is y_i = x_i: W_ii = I "
                           "(gamma^0 = 1, also for gamma = 0) and 0 elsewhere"),
                          (lambda got, where: gamma == 1.0, "; with gamma = 1 the factor 1 - gamma is 0, so every "
                           "block is 0")])


def hidden_mlp(mlp_operator):
    """ex-mlp (Exercise 1.2), hidden cases: the token-local operator W_ii = W2 D(x_i) W1 on 4 new MLPs.

    n=7, d=3, h=6, p=4 with a zero token and a token that is minus another; n = 1 with
    p = 1; a scalar MLP (d = h = p = 1) on tokens of both signs and a zero; and W1 = I with
    tokens whose preactivation is exactly 0 in one unit (D counts only W1 x > 0, strictly).
    Reference: a loop over tokens, W2 @ diag(1[W1 x_i > 0]) @ W1.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(mlp_operator, "mlp_operator")

    cases = []
    for seed, n, d, h, p in ((111, 7, 3, 6, 4), (112, 1, 2, 3, 1)):
        rng = np.random.default_rng(seed)
        W1, W2, X = rng.standard_normal((h, d)), rng.standard_normal((p, h)), rng.standard_normal((n, d))
        if n == 7:
            X[2] = 0.0        # a zero token: D(0) = 0, so W_22 = 0
            X[5] = -X[4]      # the opposite token: the complementary gates
        cases.append((f"mlp_operator(W1, W2, X) with n={n}, d={d}, h={h}, p={p} (seed {seed})"
                      + (", token 2 zero, token 5 = -token 4" if n == 7 else ""), W1, W2, X))
    cases.append(("mlp_operator(W1, W2, X) with n=5, d=h=p=1, W1 = [[1]], W2 = [[2]], X = [1, -1, 0, 2.5, -0.5]",
                  np.array([[1.0]]), np.array([[2.0]]), np.array([[1.0], [-1.0], [0.0], [2.5], [-0.5]])))
    cases.append(("mlp_operator(W1, W2, X) with n=3, W1 = I_2, X = [[1, 0], [0, -1], [2, 3]] (preactivations "
                  "exactly 0 in one unit)", np.eye(2), np.array([[1.5, -0.5], [0.7, 2.0]]),
                  np.array([[1.0, 0.0], [0.0, -1.0], [2.0, 3.0]])))

    for what, W1, W2, X in cases:
        n, p, d = X.shape[0], W2.shape[0], W1.shape[1]
        expected = np.zeros((n, n, p, d))
        for i in range(n):
            expected[i, i] = W2 @ np.diag((W1 @ X[i] > 0).astype(float)) @ W1
        out = ck.call(mlp_operator, what, W1.copy(), W2.copy(), X.copy(), todo="fill in its body and return the array")
        got = ck.real_array(out, (n, n, p, d), what)
        scale = max(1.0, float(np.abs(expected).max()))
        off = ~np.eye(n, dtype=bool)
        norms = np.sqrt(np.einsum("ijpd,ijpd->ij", got, got))
        if n > 1 and np.max(np.where(off, norms, 0.0)) > 1e-9 * scale:
            i, j = (int(k) for k in np.unravel_index(np.argmax(np.where(off, norms, 0.0)), (n, n)))
            assert False, (f"{what}: block ({i}, {j}) (0-based, i != j) has norm {norms[i, j]:.3g}; the MLP acts "
                           "token by token, so its token-local operator has W_ij = 0 for i != j")

        def hint(got, where):
            pre = W1 @ X[where[0]]
            y = np.maximum(X @ W1.T, 0) @ W2.T
            if np.any(pre == 0):
                return (f"; token {where[0]} has a preactivation W1 x exactly 0 in unit(s) "
                        f"{[int(r) for r in np.flatnonzero(pre == 0)]}: D(x) = diag(1[W1 x > 0]) counts only "
                        "strictly positive units (so a zero token has W_ii = 0)")
            if np.allclose(np.einsum("ijpd,jd->ip", got, X), y, rtol=1e-9, atol=1e-9 * scale):
                return ("; your token-local operator reproduces the MLP's output, but adding to W_ii a matrix N_i "
                        "with N_i x_i = 0 keeps the output: the exercise asks for the gate form, "
                        "D(x_i) = diag(1[W1 x_i > 0])")
            return ""

        ck.compare(got, expected, what, digits=6, note=" (indices (i, j, row, col), 0-based; W_ii = W2 D(x_i) W1)",
                   hints=hint)


def hidden_residual(residual_operator):
    """ex-residual (Exercise 1.3), hidden cases: attention plus the identity on 4 new layers.

    A causal softmax layer with 3 heads, d=4, n=5; a NON-causal layer (2 heads, d=3, d_k=5,
    n=7); a causal LINEAR-kernel layer (2 heads, d=2, n=4); one head with n = 1. Reference:
    the layer's coefficients and value maps, sum_h alpha^h_ij V_h + delta_ij I (not
    mha.interaction), so an answer that rebuilds causal softmax attention itself fails.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import systems

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(residual_operator, "residual_operator")

    for seed, H, d, dk, n, causal, kernel in ((31, 3, 4, 4, 5, True, "softmax"), (32, 2, 3, 5, 7, False, "softmax"),
                                              (33, 2, 2, 2, 4, True, "linear"), (34, 1, 3, 3, 1, True, "softmax")):
        mha = systems.random_attention(H, d, d_k=dk, seed=seed, causal=causal, kernel=kernel)
        X = np.random.default_rng(seed + 100).standard_normal((n, d))
        what = (f"residual_operator(mha, X) with a {'causal' if causal else 'non-causal'} {kernel} layer, "
                f"{H} head(s), d={d}, d_k={dk}, n={n}")
        expected = (np.einsum("hij,hpd->ijpd", mha.coefficients(X), mha.value_maps())
                    + np.eye(n)[:, :, None, None] * np.eye(d))
        out = ck.call(residual_operator, what, mha, X.copy(), todo="fill in its body and return the array")
        got = ck.real_array(out, (n, n, d, d), what)
        scale = max(1.0, float(np.abs(expected).max()))

        def hint(got, where):
            identity = np.eye(n)[:, :, None, None] * np.eye(d)
            if np.abs(got + identity - expected).max() <= 1e-9 * scale:
                return "; the residual connection is missing: add the identity to the diagonal blocks W_ii"
            if np.abs(got - (expected - identity + np.eye(d))).max() <= 1e-9 * scale:
                return "; the identity is added to every block; it belongs to the diagonal blocks (i == j) only"
            if np.abs(got - (expected - identity + np.tril(np.ones((n, n)))[:, :, None, None]
                             * np.eye(d))).max() <= 1e-9 * scale:
                return ("; the identity is added to every block with j <= i; it belongs to the diagonal "
                        "blocks (i == j) only")
            if np.allclose(np.einsum("ijpd,jd->ip", got, X), mha.forward(X) + X, rtol=1e-9, atol=1e-9 * scale):
                return ("; your operator reproduces MHA(X) + X on X, but it is another interaction form of that map, "
                        "not its natural operator sum_h alpha^h_ij V_h + delta_ij I")
            if not causal or kernel != "softmax":
                plain = sh.MultiHeadAttention(mha.W_Q, mha.W_K, mha.W_V, mha.W_O, causal=True, kernel="softmax")
                same = np.abs(got - plain.interaction(X) - identity).max() <= 1e-9 * scale
                return (f"; this layer is {'not causal (mha.causal is False)' if not causal else 'causal'} and uses "
                        f"the {kernel} kernel (mha.kernel){': your operator is that of a causal softmax layer' if same else ''}; "
                        "use the layer's own coefficients (mha.interaction or mha.coefficients)")
            return ""

        ck.compare(got, expected, what, digits=6, hints=hint,
                   note=" (indices (i, j, row, col), 0-based; W_ij = sum_h alpha^h_ij V_h + delta_ij I)")


# ============================================================== Chapter 2

def hidden_lag_span(lag_span_dimension):
    """ex-lag-span-by-hand (Exercise 2.1), hidden cases: k(n) on 13 new systems with known answers.

    A non-normal Jordan block J_3(0.9) (n = 2 and 6); a nilpotent shift with K_0 = 0
    (n = 1, 2, 5: catches a lag range off by one); badly scaled systems, B = 1e-12 I and
    C = 1e8 I (catch an absolute tolerance); a quarter-turn rotation (n = 1, 2); a
    rank-6 system before and after its plateau (n = 4, 12); p = 1, d = 3; C = 0. The
    expected values are known by construction (and the test file checks them against the
    library). The library's span routines are switched off while the answer runs, as in the check.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import systems
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch2 import SPAN_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(lag_span_dimension, "lag_span_dimension")

    jordan = systems.jordan([(0.9, 3)])
    shift = np.eye(3, k=-1)                          # e1 -> e2 -> e3 -> 0
    e1, e2 = np.array([[1.0], [0.0], [0.0]]), np.array([[0.0, 1.0, 0.0]])
    quarter = systems.rotation(np.pi / 2, rho=0.5)
    six = systems.random_with_lag_rank(6, 3, 2, seed=11)
    rng = np.random.default_rng(121)
    wide_B, row_C = rng.standard_normal((4, 3)), rng.standard_normal((1, 4))
    cases = [  # (label, (A, B, C, n), k)
        ("jordan([(0.9, 3)]) (a non-normal Jordan block), B = C = I_3, n=2", (jordan.A, jordan.B, jordan.C, 2), 2),
        ("jordan([(0.9, 3)]), B = C = I_3, n=6", (jordan.A, jordan.B, jordan.C, 6), 3),
        ("the shift e1 -> e2 -> e3, B = e1, C = e2^T (K_0 = 0, K_1 = 1, K_2 = 0), n=1", (shift, e1, e2, 1), 0),
        ("the shift e1 -> e2 -> e3, B = e1, C = e2^T, n=2", (shift, e1, e2, 2), 1),
        ("the shift e1 -> e2 -> e3, B = e1, C = e2^T, n=5", (shift, e1, e2, 5), 1),
        ("diagonal([0.9, 0.5]) with B = 1e-12 I (tiny lags), n=5", (np.diag([0.9, 0.5]), 1e-12 * np.eye(2), np.eye(2), 5), 2),
        ("diagonal([0.9, 0.5]) with C = 1e8 I (huge lags), n=5", (np.diag([0.9, 0.5]), np.eye(2), 1e8 * np.eye(2), 5), 2),
        ("rotation(pi/2, rho=0.5), n=1", (quarter.A, quarter.B, quarter.C, 1), 1),
        ("rotation(pi/2, rho=0.5), n=2", (quarter.A, quarter.B, quarter.C, 2), 2),
        ("random_with_lag_rank(6, 3, 2, seed=11), n=4", (six.A, six.B, six.C, 4), 4),
        ("random_with_lag_rank(6, 3, 2, seed=11), n=12", (six.A, six.B, six.C, 12), 6),
        ("A = diag(0.9, 0.5, -0.5, 0.2), random B (4 x 3) and C (1 x 4): p = 1, d = 3, n=8",
         (np.diag([0.9, 0.5, -0.5, 0.2]), wide_B, row_C, 8), 3),
        ("C = 0 (every lag vanishes), n=3", (np.diag([0.9, 0.5]), np.eye(2), np.zeros((2, 2)), 3), 0),
    ]
    for label, (A, B, C, n), k in cases:
        what = f"lag_span_dimension(A, B, C, {n}) on {label}"
        out = ck.call(lag_span_dimension, what, A.copy(), B.copy(), C.copy(), n,
                      within=reference_routines_off(SPAN_ROUTINES), todo="fill in its body and return k(n)")
        try:
            value = int(out)
        except (TypeError, ValueError, OverflowError):
            value = None
        assert value is not None and not isinstance(out, (bool, np.bool_)) and value == out, (
            f"{what}: expected an integer; got {out!r}")
        hint = ""
        if value != k and ("B = 1e-12" in label or "C = 1e8" in label):
            hint = ("; the singular values here are all tiny (or all huge): count those above a tolerance "
                    "RELATIVE to the largest one, not above a fixed number")
        elif value != k and "K_0 = 0" in label:
            hint = "; the lags are K_l = C A^l B for l = 0, ..., n-1 (n of them, starting at A^0 = I)"
        elif value != k and k == 0:
            hint = "; every lag is zero here, so k(n) = 0"
        assert value == k, f"{what}: k(n) should be {k}; got {out!r}{hint}"


def hidden_three_dims(three_dimensional_system):
    """ex-three-dims (Exercise 2.2), hidden test: the returned system has k(n) = min(n, 3), checked in new ways.

    The lags come from the SSM's response to impulses (running h_t = A h_(t-1) + B x_t,
    y_t = C h_t), not from powers of A; k(n) is counted for every n up to max(2N, 12) and
    must be clear-cut (no singular value between 1e-12 and 1e-8 of the largest, so k does
    not hinge on the tolerance); and the interaction operator of the SSM at n = 10
    (sh.LinearSSM(...).interaction) must have interaction rank 3.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(three_dimensional_system, "three_dimensional_system")
    name = "three_dimensional_system()"
    out = ck.call(three_dimensional_system, name, todo="return the tuple (A, B, C)")
    A, B, C = ck.linear_system(out, name, p=2, d=2)
    N = A.shape[0]
    n_max = max(2 * N, 12)
    state, lags = B.copy(), []          # impulse e_c at time 0: the state is A^t B e_c, the output C A^t B e_c
    for _ in range(n_max):
        lags.append(C @ state)
        state = A @ state
    G = np.array([K.T.ravel() for K in lags])   # row l: vec K_l (column-major)
    profile = []
    for n in range(1, n_max + 1):
        s = np.linalg.svd(G[:n], compute_uv=False)
        top = s[0] if s.size and s[0] > 0 else 0.0
        if top > 0:
            between = s[(s > 1e-12 * top) & (s <= 1e-8 * top)]
            assert between.size == 0, (
                f"{name}: at n = {n} a singular value of the stacked lags [vec K_0 .. vec K_(n-1)] is "
                f"{between[0] / top:.1e} of the largest, so k({n}) depends on the tolerance; make the three "
                "directions clearly independent (and any fourth exactly absent)")
        profile.append(int(np.sum(s > 1e-10 * top)) if top > 0 else 0)
    want = [min(n, 3) for n in range(1, n_max + 1)]
    hint = ""
    if profile != want:
        rank_b, rank_c = int(np.linalg.matrix_rank(B)), int(np.linalg.matrix_rank(C))
        m = sh.minimal_polynomial_degree(A) if N else 0
        bound = min(rank_b * rank_c, m)
        if profile[0] == 0:
            hint = ". K_0 = C B is zero, so k(1) = 0: K_0 must be nonzero"
        elif max(profile) > 3:
            hint = (". k exceeds 3: something must cap k at 3, for instance m = 3 (Proposition 2.1 (c)), or lags "
                    "that stay in a 3-dimensional space of 2 x 2 matrices (symmetric ones: A symmetric and C = B^T)")
        elif bound < 3:
            hint = (f". k stays below 3: the bound min(rank B rank C, m) = {bound} binds "
                    f"(rank B = {rank_b}, rank C = {rank_c}, m = {m})")
        elif max(profile) < 3:
            hint = (f". k stays below 3 although min(rank B rank C, m) = {bound} allows 3: your lags are dependent. "
                    "For a diagonal A, K_l = sum_s lambda_s^l c_s b_s^T (c_s column s of C, b_s^T row s of B): "
                    "are the rank-one terms c_s b_s^T of distinct eigenvalues linearly independent?")
        else:
            hint = (f". k reaches 3 only at n = {profile.index(3) + 1}, too late: K_0, K_1 and K_2 must be "
                    "linearly independent (k(2) = 2 and k(3) = 3)")
    assert profile == want, (f"{name}: from the SSM's impulse responses, k(1..{n_max}) should be {want}; "
                             f"yours is {profile}{hint}")
    W = sh.LinearSSM(A, B, C).interaction(np.zeros((10, 2)))
    rank = sh.interaction_rank(W.reshape(-1, 2, 2))
    assert rank == 3, (f"{name}: the interaction operator of your SSM on n = 10 tokens should have interaction "
                       f"rank 3; it has {rank}")


def hidden_long_plateau(long_plateau_system):
    """ex-longer-plateau (Exercise 2.3), hidden test: k = 1, 1, 1, then 2 for ever, checked in new ways.

    The lags come from the SSM's response to impulses; the test asks directly that
    K_0 != 0, that K_1 and K_2 are multiples of K_0, that K_3 is not, and that every later
    lag up to max(2N, 12) lies in span{K_0, K_3}; every count must be clear-cut (no
    singular value between 1e-12 and 1e-8 of the largest); and the operator of the SSM
    has interaction rank 1 on n = 3 tokens and 2 on n = 4 and n = 12 tokens.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(long_plateau_system, "long_plateau_system")
    name = "long_plateau_system()"
    A, B, C = ck.linear_system(ck.call(long_plateau_system, name, todo="return the tuple (A, B, C)"), name)
    N, p, d = A.shape[0], C.shape[0], B.shape[1]
    n_max = max(2 * N, 12)
    state, lags = B.copy(), []
    for _ in range(n_max):
        lags.append(C @ state)
        state = A @ state
    G = np.array([K.T.ravel() for K in lags])

    def rank(rows, what):
        s = np.linalg.svd(rows, compute_uv=False)
        if not s.size or s[0] == 0:
            return 0
        between = s[(s > 1e-12 * s[0]) & (s <= 1e-8 * s[0])]
        assert between.size == 0, (f"{name}: for {what} a singular value is {between[0] / s[0]:.1e} of the "
                                   "largest, so the count depends on the tolerance; make the plateau exact")
        return int(np.sum(s > 1e-10 * s[0]))

    assert rank(G[:1], "K_0") == 1, f"{name}: K_0 = C B is zero, so k(1) = 0; k(1) must be 1"
    assert rank(G[:3], "K_0, K_1, K_2") == 1, (
        f"{name}: K_1 and K_2 should be multiples of K_0 (k(2) = k(3) = 1); they are not")
    if rank(G[:4], "K_0, ..., K_3") != 2:
        hint = ""
        if p == d == 1:
            hint = (": with p = d = 1 every lag is a number, so k <= 1 (Proposition 2.2 (c)); use two output "
                    "(or two input) channels")
        elif np.linalg.matrix_rank(B) * np.linalg.matrix_rank(C) < 2:
            hint = (f": rank B rank C = {np.linalg.matrix_rank(B) * np.linalg.matrix_rank(C)} bounds k "
                    "(Proposition 2.1 (b)); B and C need rank B rank C >= 2")
        else:
            later = [l for l in range(4, n_max) if rank(np.vstack([G[0], G[l]]), f"K_0 and K_{l}") == 2]
            if later:
                hint = f"; yours leaves the line of K_0 only at K_{later[0]}, too late"
        raise AssertionError(f"{name}: K_3 should NOT be a multiple of K_0 (k(4) = 2); it is{hint}")
    basis = G[[0, 3]]
    for l in range(4, n_max):
        assert rank(np.vstack([basis, G[l]]), f"K_0, K_3 and K_{l}") == 2, (
            f"{name}: K_{l} is not in span{{K_0, K_3}}, so k grows past 2 at n = {l + 1}; k must stay 2 from "
            f"n = 4 on (checked up to n = {n_max})")
    for n, r in ((3, 1), (4, 2), (12, 2)):
        W = sh.LinearSSM(A, B, C).interaction(np.zeros((n, d)))
        got = sh.interaction_rank(W.reshape(-1, p, d))
        assert got == r, (f"{name}: the interaction operator of your SSM on n = {n} tokens should have "
                          f"interaction rank {r}; it has {got}")


# ============================================================== Chapter 3

def hidden_build_heads(exact_head_construction):
    """ex-build-heads (Exercise 3.1), hidden cases: any exact k-head construction on 6 new sets of lags.

    A non-normal system J_2(0.8) (+) [-0.5] (k = 3); sigma_2 / sigma_1 ~ 4e-8 (a rank
    tolerance looser than that, e.g. 1e-5, sees one direction); lags scaled by 1e-12 (an
    absolute tolerance sees none); a nilpotent shift with zero lags K_3 = K_4 = K_5 = 0;
    a single lag (n = 1, p = 2, d = 3); p = 1, d = 4 (k = 4). Accepts any construction
    with exactly k heads and sum_h c_h(l) V_h = K_l to 1e-9 of max |K| (relative, so the
    tiny lags count). A wrong head count is told, as by the visible check, whether its
    tolerance counts rounding noise (extra singular values below 1e-12 of the largest),
    looks absolute (no head kept, or tiny lags), drops a real direction, or whether the
    count is off (a dropped direction above 1e-2 of the largest). An answer
    that mixes vec orders (row-major vec, column-major inverse, or the reverse) is told so;
    for p = 1 (the last case) both orders flatten alike and it passes.
    The library's head routines are switched off while the answer runs.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import lag_operators, systems
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch3 import REFERENCE_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(exact_head_construction, "exact_head_construction")

    def spans(maps, K):
        basis, lags = maps.reshape(maps.shape[0], -1).T, K.reshape(K.shape[0], -1).T
        if not basis.size:
            return not np.any(lags)
        fit = basis @ np.linalg.lstsq(basis, lags, rcond=None)[0]
        return bool(np.abs(fit - lags).max() <= 1e-8 * float(np.abs(lags).max()))

    def vec_order_hint(c, V, K):
        """Mixed vec orders (row-major vec, column-major inverse, or the reverse): say so."""
        p, d = K.shape[1:]
        if p == 1 or d == 1 or not V.shape[0]:  # a row or a column flattens alike in both orders
            return ""
        mixes = (("a row-major vec with a column-major inverse", lambda M: M.reshape(-1, order="F").reshape(p, d)),
                 ("a column-major vec with a row-major inverse", lambda M: M.reshape(-1).reshape((p, d), order="F")))
        for name, undo in mixes:
            fixed = np.stack([undo(v) for v in V])
            rebuilt = np.einsum("hl,hpd->lpd", c, fixed)
            if (np.abs(rebuilt - K).max() <= 1e-8 * float(np.abs(K).max())
                    or (spans(fixed, K) and not spans(V, K))):
                which = f" ({name})" if p != d else ""
                return (f"; your vec and its inverse use different orders, one row-major and one column-major{which}: "
                        "read back in the other order, your value maps span the lags; use the same order both ways")
        return ""

    jordan = systems.jordan([(0.8, 2), (-0.5, 1)])
    small = systems.random_with_lag_rank(3, 3, 2, seed=21)
    shift = np.eye(3, k=-1)
    wide = systems.random_stable(4, 4, 1, seed=23)
    cases = [  # (label, K, k): k known by construction
        ("jordan([(0.8, 2), (-0.5, 1)]), B = C = I_3, n=7 (non-normal)", lag_operators(jordan.A, jordan.B, jordan.C, 7), 3),
        ("diagonal([0.9, 0.5]), B = I, C = diag(1, 1e-7), n=9 (sigma_2 / sigma_1 ~ 4e-8)",
         lag_operators(np.diag([0.9, 0.5]), np.eye(2), np.diag([1.0, 1e-7]), 9), 2),
        ("random_with_lag_rank(3, 3, 2, seed=21) times 1e-12 (tiny lags), n=8",
         1e-12 * lag_operators(small.A, small.B, small.C, 8), 3),
        ("nilpotent shift, B = C = I_3, n=6 (K_3 = K_4 = K_5 = 0)", lag_operators(shift, np.eye(3), np.eye(3), 6), 3),
        ("a single lag, n=1, p=2, d=3", np.random.default_rng(131).standard_normal((1, 2, 3)), 1),
        ("random_stable(4, 4, 1, seed=23): p = 1, d = 4, n=5", lag_operators(wide.A, wide.B, wide.C, 5), 4),
    ]
    for label, K, k in cases:
        n, p, d = K.shape
        what = f"exact_head_construction(K) on {label}"
        out = ck.call(exact_head_construction, what, K.copy(), within=reference_routines_off(REFERENCE_ROUTINES),
                      todo="return (coefficients, values)")
        try:
            coefficients, values = out
        except (TypeError, ValueError):
            coefficients = values = None
        assert values is not None, f"{what}: expected a pair (coefficients, values); got {type(out).__name__}"
        heads = np.shape(values)[0] if np.ndim(values) == 3 else None
        assert heads is not None, f"{what}: values should have shape ({k}, {p}, {d}); got shape {np.shape(values)}"
        if heads != k:
            s = np.linalg.svd(K.transpose(0, 2, 1).reshape(n, p * d), compute_uv=False)
            why = ""
            if k < heads <= s.size and s[heads - 1] < 1e-12 * s[0]:
                which = (f"singular value {heads} is" if heads == k + 1 else
                         f"singular values {k + 1} to {heads} are")
                why = f"; your tolerance counts rounding noise: {which} below 1e-12 of the largest"
                if heads == k + 1:
                    why += ("; if your tolerance is already relative and above rounding, check how you count "
                            "(off by one?)")
            elif 0 <= heads < k and (heads == 0 or s[0] < 1e-6):
                why = (f"; is your tolerance absolute? The largest singular value is {s[0]:.1e} here: make the "
                       "tolerance relative to the largest singular value sigma_1")
            elif 0 <= heads < k and s[heads] > 1e-2 * s[0]:
                why = (f"; no rank tolerance drops a direction this large: singular value {heads + 1} is "
                       f"{s[heads] / s[0]:.1e} of the largest. Check how you count (off by one?)")
            elif 0 <= heads < k:
                why = (f"; your tolerance is too loose: singular value {heads + 1} is {s[heads] / s[0]:.1e} of the "
                       "largest, a real direction, not rounding")
            assert False, (f"{what}: the lags span k = {k} dimensions, so use exactly {k} heads; you used {heads} "
                           f"(singular values of the stacked lags, relative to the largest: "
                           f"{', '.join(f'{v / s[0]:.1e}' for v in s[:k + 1])}; choose a rank tolerance "
                           f"relative to the largest and below the smallest nonzero one){why}")
        V = ck.real_array(values, (k, p, d), f"{what}: values")
        c = ck.real_array(coefficients, (k, n), f"{what}: coefficients")
        ck.compare(np.einsum("hl,hpd->lpd", c, V), K, what, scale=float(np.abs(K).max()), digits=6,
                   says="sum_h coefficients[h, l] values[h] should reproduce K_l; entry (l, row, col) = {where} should "
                        "be {want}; got {got}", note=f" (tolerance 1e-9 of max |K| = {np.abs(K).max():.3g})",
                   hints=lambda got, where: vec_order_hint(c, V, K))


def hidden_tail(optimal_error):
    """ex-tail (Exercise 3.2), hidden cases: the Eckart-Young tail on 6 new (K, H, weights).

    H = 0 (the whole weighted energy); random weights in [0.1, 3]; H = k (zero); lags
    scaled by 1e4 with random weights; H = 6 beyond min(n, pd) (zero); a single lag
    (n = 1) with weight 2.5. Reference: the eigenvalues of the weighted Gram matrix
    G_w^T G_w (n x n), summed beyond the H largest, not an SVD of G_w; compared to 1e-9 of
    the total weighted energy. A number may come as a float, a NumPy scalar or a one-entry
    array; a wrong value that a common mistake gives (w_l for sqrt(w_l), weights ignored,
    singular values not squared, the kept part, eigvalsh's ascending order, an index off by
    one, divided by n, a square root) is named, and a value within
    1e-5 of the total (single precision) is asked whether it was computed in float32
    (not given the H = 0 or H >= k hint). The library's head routines are switched off
    while the answer runs.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import lag_operators, systems
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch3 import REFERENCE_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(optimal_error, "optimal_error")

    rng = np.random.default_rng(141)
    jordan = systems.jordan([(0.8, 2), (-0.5, 1)])
    Ka = lag_operators(jordan.A, jordan.B, jordan.C, 7)          # p = d = 3, k = 3
    rot = systems.rotation(0.7, rho=0.95)
    Kb = 1e4 * lag_operators(rot.A, rot.B, rot.C, 6)
    five = systems.random_stable(5, 2, 3, seed=24)
    Kc = lag_operators(five.A, five.B, five.C, 4)                # n = 4, p d = 6
    Kd = rng.standard_normal((1, 2, 2))
    cases = [
        ("jordan([(0.8, 2), (-0.5, 1)]), n=7, H=0, weights ones", Ka, 0, np.ones(7)),
        ("jordan([(0.8, 2), (-0.5, 1)]), n=7, H=2, random weights in [0.1, 3]", Ka, 2, rng.uniform(0.1, 3.0, 7)),
        ("jordan([(0.8, 2), (-0.5, 1)]), n=7, H=3 = k, weights n - l", Ka, 3, 7.0 - np.arange(7)),
        ("rotation(0.7, rho=0.95) times 1e4, n=6, H=1, random weights in [0.1, 3]", Kb, 1, rng.uniform(0.1, 3.0, 6)),
        ("random_stable(5, 2, 3, seed=24), n=4, H=6 (more heads than min(n, pd) = 4)", Kc, 6, np.ones(4)),
        ("a single lag, n=1, H=0, weight 2.5", Kd, 0, np.array([2.5])),
    ]
    for label, K, H, weights in cases:
        n = K.shape[0]
        Gw = K.reshape(n, -1) * np.sqrt(weights)[:, None]          # row l: sqrt(w_l) vec K_l
        eigenvalues = np.clip(np.sort(np.linalg.eigvalsh(Gw @ Gw.T))[::-1], 0.0, None)
        value = float(np.sum(eigenvalues[H:]))
        total = float(np.sum(weights * np.sum(K.reshape(n, -1) ** 2, axis=1)))
        what = f"optimal_error(K, {H}, weights) on {label}"
        got = ck.number(ck.call(optimal_error, what, K.copy(), H, weights.copy(), todo="return the minimum, a number",
                                within=reference_routines_off(REFERENCE_ROUTINES)), what)
        hint = ""
        gap = abs(got - value) / total
        if gap <= 1e-5:   # right to single precision: no other cause to name
            hint = "; they agree only to single precision: computed in float32? Compute in float64, NumPy's default"
        elif H == 0:
            hint = "; with H = 0 heads nothing is approximated: the minimum is sum_l w_l ||K_l||_F^2"
        elif value <= 1e-9 * total:
            hint = "; with at least k heads the lags are reproduced exactly: the minimum is 0"
        if gap > 1e-5:   # name a common mistake that gives the answer's value
            rows = K.reshape(n, -1)
            sv = np.linalg.svd(Gw, compute_uv=False)
            s_w = np.linalg.svd(rows * weights[:, None], compute_uv=False)
            s_1 = np.linalg.svd(rows, compute_uv=False)
            mistakes = (("w_l instead of sqrt(w_l) on the columns of G_w", np.sum(s_w[H:] ** 2)),
                        ("the weights ignored", np.sum(s_1[H:] ** 2)),
                        ("singular values not squared", np.sum(sv[H:])),
                        ("the part the heads keep, sum_{r<=H} sigma_r^2, instead of the tail", np.sum(sv[:H] ** 2)),
                        ("eigenvalues in ascending order, as np.linalg.eigvalsh returns them: sort them in "
                         "decreasing order", np.sum(np.linalg.eigvalsh(Gw @ Gw.T)[H:])),
                        ("eigenvalues in ascending order, as np.linalg.eigvalsh returns them: sort them in "
                         "decreasing order", np.sum(np.linalg.eigvalsh(Gw.T @ Gw)[H:])),
                        ("the tail from index H + 1 on (0-based s[H:] is right)", np.sum(sv[H + 1:] ** 2)),
                        ("the tail from index H - 1 on (0-based s[H:] is right)",
                         np.sum(sv[H - 1:] ** 2) if H >= 1 else np.nan),
                        ("the minimum divided by n", value / n),
                        ("the square root of the minimum", np.sqrt(value)))
            named = list(dict.fromkeys(name for name, wrong in mistakes
                                       if np.isfinite(wrong) and abs(wrong - value) > 1e-6 * max(1.0, value)
                                       and abs(got - wrong) <= 1e-8 * max(1.0, abs(wrong))))
            if named:
                hint += "; your value is what a common mistake gives: " + "; or ".join(named)
        assert abs(got - value) <= 1e-9 * total, (
            f"{what}: the minimum is {value:.10g}; got {got:.10g} (a difference of {got - value:.1e}, {gap:.1e} of "
            f"sum_l w_l ||K_l||^2 = {total:.4g}; the tolerance is 1e-9 of it){hint}")


def hidden_count_nonneg(nonnegative_head_count):
    """ex-count-nonneg (Exercise 3.3), hidden cases: H+ on 10 new sets of lags with known answers.

    Positive scalar lags (1); alternating signs with n = 2 (2); a single negative-decay lag,
    n = 1 (1); rotation(1.0) before and after half a turn (n = 3: 2, n = 5: 3); a sign change
    in one coordinate only, diagonal([0.9, -0.5]) (pointed: 2) and diagonal([-0.9, 0.5, 0.2])
    with C = -I (3: pointed by a functional with a negative entry); scalar lags 0, 1, 0, 0.25, ... with K_0 = 0 (1); rotation(0.5) scaled by 1e-6 (2)
    and by 1e6 (3). The values are known by construction (the test file checks them against
    the library). A float with an integer value (2.0) counts as that integer, and a
    one-entry array (np.array([2])) as its entry. The library's
    head routines are switched off while the answer runs.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import lag_operators, systems
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch3 import REFERENCE_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(nonnegative_head_count, "nonnegative_head_count")

    def scalar(a, n, c=1.0):
        return lag_operators([[a]], [[1.0]], [[c]], n)

    def of(ssm, n):
        return lag_operators(ssm.A, ssm.B, ssm.C, n)

    rot1, rot05 = systems.rotation(1.0, 0.9), systems.rotation(0.5, 0.9)
    cases = [  # (label, K, H+)
        ("scalar a = 0.3, C = 2, n=5 (positive lags)", scalar(0.3, 5, 2.0), 1),
        ("scalar a = -0.9, n=2 (lags 1, -0.9)", scalar(-0.9, 2), 2),
        ("scalar a = -0.5, n=1 (a single lag)", scalar(-0.5, 1), 1),
        ("rotation(1.0, rho=0.9), n=3 ((n-1) theta = 2 < pi)", of(rot1, 3), 2),
        ("rotation(1.0, rho=0.9), n=5 ((n-1) theta = 4 > pi)", of(rot1, 5), 3),
        ("diagonal([0.9, -0.5]), n=6 (one coordinate changes sign, the other stays positive)",
         of(systems.diagonal([0.9, -0.5]), 6), 2),
        ("diagonal([-0.9, 0.5, 0.2]), C = -I_3, n=8 (k = 3; K[1, 1] < 0 on every lag)",
         -of(systems.diagonal([-0.9, 0.5, 0.2]), 8), 3),
        ("A = diag(0.5, -0.5), B = [1, 1]^T, C = [1, -1], n=7 (lags 0, 1, 0, 0.25, 0, ...: K_0 = 0)",
         lag_operators(np.diag([0.5, -0.5]), np.ones((2, 1)), np.array([[1.0, -1.0]]), 7), 1),
        ("rotation(0.5, rho=0.9) times 1e-6, n=6 (tiny lags, (n-1) theta < pi)", 1e-6 * of(rot05, 6), 2),
        ("rotation(0.5, rho=0.9) times 1e6, n=8 (huge lags, (n-1) theta > pi)", 1e6 * of(rot05, 8), 3),
    ]
    for label, K, value in cases:
        what = f"nonnegative_head_count(K) on {label}"
        out = ck.call(nonnegative_head_count, what, K.copy(), within=reference_routines_off(REFERENCE_ROUTINES),
                      todo="return H+, an integer")
        if isinstance(out, np.ndarray) and out.size == 1:
            out = out.reshape(()).item()   # a one-entry array is its entry
        if isinstance(out, (float, np.floating)) and float(out).is_integer():
            out = int(out)   # 2.0 is the integer 2
        assert isinstance(out, (int, np.integer)) and not isinstance(out, (bool, np.bool_)), (
            f"{what}: expected an integer; got {out!r} ({type(out).__name__})")
        hint = ""
        if out != value and "K_0 = 0" in label:
            hint = "; zero lags belong to every cone: leave them out of the pointedness test"
        elif out != value and "times 1e" in label:
            hint = "; only the scale differs from an ordinary case: use tolerances relative to the lags' size"
        elif out != value and "one coordinate" in label:
            hint = ("; a sign change costs a head only when no functional is positive on every nonzero lag: "
                    "here phi(K) = K[0, 0] is")
        assert out == value, f"{what}: H+ should be {value}; got {out}{hint}"


def hidden_quaternion(quaternion_heads):
    """ex-quaternion-heads (Exercise 3.6), hidden cases: four fixed heads, pair by pair, on 3 new inputs.

    A random SSM (N = 8, p = d = 4) on n = 9 tokens: token 0 zero, token 3 of norm ~1e-9,
    token 6 of norm ~1e6, tokens 7 and 8 equal; a second SSM on 8 structured tokens
    (e_1..e_4, (1, 1, 1, 1), (1, -1, 1, -1), (1, 1, 0, 0), (0, 1, 0, -1)), where sets of
    value maps that miss a direction often fail; and n = 1. Each pair (i, j), j <= i, must
    give sum_h alpha[h, i, j] V_h x_j = K_(i-j) x_j to 1e-9 of ||K_(i-j)|| ||x_j|| (relative,
    so the tiny token counts); alpha must be causal and the value maps the same in every call.
    The library's head routines are switched off while the answer runs.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import lag_operators, systems
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch3 import REFERENCE_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(quaternion_heads, "quaternion_heads")

    first = systems.random_stable(8, 4, 4, rho=0.8, seed=41)
    X1 = np.random.default_rng(151).standard_normal((9, 4))
    X1[0] = 0.0
    X1[3] *= 1e-9
    X1[6] *= 1e6
    X1[8] = X1[7]
    second = systems.random_stable(6, 4, 4, rho=0.9, seed=42)
    X2 = np.vstack([np.eye(4), [[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0], [1.0, 1.0, 0.0, 0.0],
                                [0.0, 1.0, 0.0, -1.0]]])
    third = systems.random_stable(4, 4, 4, seed=43)
    cases = [("random_stable(8, 4, 4, rho=0.8, seed=41), n=9: token 0 zero, token 3 tiny (~1e-9), token 6 "
              "huge (~1e6), tokens 7 and 8 equal", lag_operators(first.A, first.B, first.C, 9), X1),
             ("random_stable(6, 4, 4, seed=42), n=8, tokens e_1, e_2, e_3, e_4, (1,1,1,1), (1,-1,1,-1), "
              "(1,1,0,0), (0,1,0,-1)", lag_operators(second.A, second.B, second.C, 8), X2),
             ("random_stable(4, 4, 4, seed=43), n=1, x_0 = (0.3, -1.2, 0.5, 2)",
              lag_operators(third.A, third.B, third.C, 1), np.array([[0.3, -1.2, 0.5, 2.0]]))]
    fixed = None
    for label, K, X in cases:
        n = K.shape[0]
        what = f"quaternion_heads(K, X) on {label}"
        out = ck.call(quaternion_heads, what, K.copy(), X.copy(), within=reference_routines_off(REFERENCE_ROUTINES),
                      todo="return (alpha, values)")
        try:
            alpha, values = out
        except (TypeError, ValueError):
            alpha = values = None
        assert values is not None, f"{what}: expected a pair (alpha, values); got {type(out).__name__}"
        V = ck.real_array(values, (4, 4, 4), f"{what}: values")
        alpha = ck.real_array(alpha, (4, n, n), f"{what}: alpha")
        if fixed is None:
            fixed = V
        assert np.abs(V - fixed).max() <= 1e-12 * max(1.0, np.abs(fixed).max()), (
            f"{what}: the value maps differ from those of your first call; a head's value map is fixed, only "
            "the coefficients alpha may depend on K and X")
        upper = np.triu(np.ones((n, n), bool), 1)
        if upper.any():
            worst = np.abs(alpha).max(axis=0) * upper
            assert worst.max() <= 1e-12 * max(1.0, np.abs(alpha).max()), (
                f"{what}: alpha must be causal (zero for j > i); alpha[:, {int(np.argwhere(worst == worst.max())[0][0])}, "
                f"{int(np.argwhere(worst == worst.max())[0][1])}] is not")
        for i in range(n):
            for j in range(i + 1):
                target = K[i - j] @ X[j]
                got = np.einsum("h,hpd,d->p", alpha[:, i, j], V, X[j])
                allowed = 1e-9 * np.linalg.norm(K[i - j], 2) * np.linalg.norm(X[j])
                assert np.linalg.norm(got - target) <= allowed, (
                    f"{what}: pair (i, j) = ({i}, {j}) (0-based): sum_h alpha[h, {i}, {j}] V_h x_{j} should be "
                    f"K_{i - j} x_{j} = [{', '.join(f'{v:.6g}' for v in target)}]; yours is "
                    f"[{', '.join(f'{v:.6g}' for v in got)}] (token {j} has norm {np.linalg.norm(X[j]):.3g}; "
                    "the coefficients must work for every nonzero token, whatever its size)")


# ============================================================== Chapter 4

def hidden_head_jacobian(head_jacobian):
    """ex-head-jacobian (Exercise 4.1), hidden cases: d y_i / d x_j of one causal head on 5 new heads and inputs.

    d=3, d_k=2, n=5; p=3 != d=2 with d_k=4, n=6 (catches a transposed block); a zero
    token (d=3, n=2); n = 1 with d_k = 1; sharp attention (inputs times 3, n = 8).
    Reference: sh.jacobian of the same head as a MultiHeadAttention layer (the test file
    checks it against central finite differences); tolerance 1e-7 of max(1, max |J|).
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import systems

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(head_jacobian, "head_jacobian")

    for seed, d, p, dk, n in ((61, 3, 3, 2, 5), (62, 2, 3, 4, 6), (63, 3, 3, 3, 2), (64, 2, 2, 1, 1), (65, 2, 2, 3, 8)):
        head = systems.random_attention(1, d, p=p, d_k=dk, seed=seed, scale=1.5)
        X = np.random.default_rng(seed + 100).standard_normal((n, d))
        note = ""
        if seed == 63:
            X[0] = 0.0
            note = ", token 0 zero"
        if seed == 65:
            X *= 3.0
            note = ", sharp attention (inputs times 3)"
        V = head.value_maps()[0]
        head = sh.MultiHeadAttention(head.W_Q, head.W_K, V[None], np.eye(p)[None])   # the value map V = W_O W_V
        expected = sh.jacobian(head, X)
        what = f"head_jacobian(W_Q, W_K, V, X) on a head with d={d}, p={p}, d_k={dk}, n={n}{note}"
        out = ck.call(head_jacobian, what, head.W_Q[0].copy(), head.W_K[0].copy(), V.copy(), X.copy(),
                      todo="fill in its body and return J")

        def hint(got, where):
            if n == 1:
                return ("; with one token the weight is 1 and y_1 = v_1, so both score paths, which carry v_j - y_i "
                        "(centred at the output), vanish: the Jacobian is V")
            if where[0] == where[1]:
                return ("; this is a diagonal block (j == i): besides the value and key paths it carries the query "
                        "path sum_m a_im (v_m - y_i) (W_Q^T k_m)^T / sqrt(d_k)")
            if where[1] > where[0]:
                return "; the head is causal: y_i does not depend on x_j for j > i, so this block is zero"
            return ("; an off-diagonal block (j < i) has the value path a_ij V and the key path "
                    "a_ij (v_j - y_i) (W_K^T q_i)^T / sqrt(d_k) only")

        ck.compare(ck.real_array(out, (n, n, p, d), what), expected, what, rtol=1e-7, digits=6, note="", hints=hint,
                   first=np.triu(np.ones((n, n), bool), 1)[:, :, None, None],     # blocks j > i first
                   says="entry (i, j, row, col) = {where} of d y_i / d x_j should be {want}; got {got}")


def hidden_highway(make_input):
    """ex-build-highway (Exercise 4.2), hidden cases: weight exactly a on position key, on 4 new heads.

    d=3, d_k=2: n = 2, a = 0.999 (the key is the only other token); the same head, n = 10,
    a = 0.01, key = 8 (next to the last); d_k = 1 (a rank-one W_K^T W_Q), n = 50, a = 0.75,
    key = 25; d = 4, d_k = 3, n = 1000, a = 0.6, key = 500. Reference: the softmax weight
    computed here from W_Q, W_K and the returned input, to 1e-8 (the check's tolerance).
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import systems

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(make_input, "make_input")

    for seed, d, dk, n, a, key in ((71, 3, 2, 2, 0.999, 0), (71, 3, 2, 10, 0.01, 8), (72, 2, 1, 50, 0.75, 25),
                                   (73, 4, 3, 1000, 0.6, 500)):
        head = systems.random_attention(1, d, d_k=dk, seed=seed, scale=1.5)
        W_Q, W_K = head.W_Q[0], head.W_K[0]
        what = f"make_input(W_Q, W_K, n={n}, a={a}, key={key}) with d={d}, d_k={dk}"
        X = ck.real_array(ck.call(make_input, what, W_Q.copy(), W_K.copy(), n, a, key,
                                  todo="fill in its body and return X"), (n, d), what)
        with np.errstate(all="ignore"):
            scores = (X @ W_K.T) @ (W_Q @ X[-1]) / np.sqrt(dk)     # s_(n-1, j) for j <= n-1: the last row sees all
            weights = np.exp(scores - scores.max())
            weights = weights / weights.sum()
        assert np.all(np.isfinite(weights)), f"{what}: the scores on your input overflow (NaN or infinity)"
        top = int(np.argmax(weights))
        hint = f"; the largest weight ({weights[top]:.6g}) is on position {top}" if top != key else ""
        assert abs(weights[key] - a) <= 1e-8, (
            f"{what}: the weight of the last position (n-1 = {n - 1}) on position {key} should be {a}; on your "
            f"input it is {weights[key]:.10g}{hint} (positions 0-based; the last token competes with all n tokens, "
            "itself included)")


def hidden_ssm_profile(ssm_profile):
    """ex-ssm-profile (Exercise 4.3), hidden cases: ||d y_n / d x_(n-l)|| (positions 1..n) on 6 new systems.

    A non-normal Jordan block J_4(0.95), n = 30 (the norms first grow); p = 1, d = 3, n = 10;
    a badly scaled diagonal system (B = 1e-6 I, C = 1e6 [[1, 2], [0, 1]]), n = 8; a
    nilpotent shift, n = 5 (norms 1, 1, 1, 0, 0); n = 1; random_stable(6, 3, 2), n = 15.
    Reference: the lags read off the SSM's response to impulses (sh.LinearSSM.forward),
    then spectral norms; tolerance 1e-9 of max(1, max norm), as in the check. The library's
    Jacobian and profile routines are switched off while the answer runs, as in the check.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import systems
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch4 import PROFILE_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(ssm_profile, "ssm_profile")

    jordan = systems.jordan([(0.95, 4)])
    siso = systems.random_stable(4, 3, 1, seed=81)
    mimo = systems.random_stable(6, 3, 2, rho=0.95, seed=82)
    rot = systems.rotation(2.0, rho=0.7)
    cases = [("jordan([(0.95, 4)]) (non-normal), n=30", (jordan.A, jordan.B, jordan.C, 30)),
             ("random_stable(4, 3, 1, seed=81) (p = 1, d = 3), n=10", (siso.A, siso.B, siso.C, 10)),
             ("diagonal([0.9, -0.6]) with B = 1e-6 I, C = 1e6 [[1, 2], [0, 1]], n=8",
              (np.diag([0.9, -0.6]), 1e-6 * np.eye(2), 1e6 * np.array([[1.0, 2.0], [0.0, 1.0]]), 8)),
             ("the nilpotent shift, B = C = I_3, n=5", (np.eye(3, k=-1), np.eye(3), np.eye(3), 5)),
             ("rotation(2.0, rho=0.7), n=1", (rot.A, rot.B, rot.C, 1)),
             ("random_stable(6, 3, 2, rho=0.95, seed=82), n=15", (mimo.A, mimo.B, mimo.C, 15))]
    for label, (A, B, C, n) in cases:
        d = B.shape[1]
        ssm = sh.LinearSSM(A, B, C)
        lags = np.zeros((n + 1, C.shape[0], d))
        for c in range(d):
            impulse = np.zeros((n + 1, d))
            impulse[0, c] = 1.0
            lags[:, :, c] = ssm.forward(impulse)                 # y_l = K_l e_c
        shifted = np.linalg.norm(lags[1:], ord=2, axis=(1, 2))  # lags 1..n: off by one
        lags = lags[:n]
        expected = np.linalg.norm(lags, ord=2, axis=(1, 2))
        what = f"ssm_profile(A, B, C, {n}) on {label}"
        out = ck.call(ssm_profile, what, A.copy(), B.copy(), C.copy(), n, todo="return the n norms",
                      within=reference_routines_off(PROFILE_ROUTINES))
        tol = 1e-9 * max(1.0, float(expected.max()))
        ck.compare(ck.real_array(out, (n,), what), expected, what, digits=6, note="",
                   says=("entry {where[0]} (l = {where[0]}, 0-based) should be ||C A^{where[0]} B||_2 = {want}; "
                         "got {got}"),
                   hints=[(lambda got, where: ck.near(got[::-1], expected, tol),
                           "; your profile is reversed: entry l is the norm of K_l = C A^l B (distance l)"),
                          (lambda got, where: ck.near(got, np.linalg.norm(lags, axis=(1, 2)), tol),
                           "; that is the Frobenius norm: the exercise asks for the spectral norm (ord=2)"),
                          (lambda got, where: ck.near(got, shifted, tol),
                           "; your lags are off by one: lag 0 is K_0 = C B (start from B, not A B)")])


def hidden_delay_loss(delay_loss):
    """ex-delay-loss (Exercise 4.8), hidden cases: the normalised white-noise loss on 6 new (K, L).

    n = 1, L = 0, K = [0.3]; a random kernel with the longest delay L = n - 1 = 14; a delay
    at the wrong lag (K = e_3, L = 2); a random kernel, n = 40, L = 17; half the exact
    delay, n = 5, L = 0; a large kernel (1e3 times random), n = 7, L = 4. Reference: the
    operator route, sum over pairs i, j of (W_ij - T_ij)^2 with W_ij = K_(i-j) and the
    delay T_ij = [i - j = L], divided by the same for K = 0 (math.md, Corollary 7(c)).
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(delay_loss, "delay_loss")

    rng = np.random.default_rng(161)
    cases = [("K = [0.3], n=1, L=0", np.array([0.3]), 0),
             ("a random kernel, n=15, L=14 (the longest delay)", rng.standard_normal(15), 14),
             ("K = e_3 (a delay at the wrong lag), n=8, L=2", np.eye(8)[3], 2),
             ("a random kernel, n=40, L=17", rng.standard_normal(40), 17),
             ("K = 0.5 e_0 (half the exact delay), n=5, L=0", 0.5 * np.eye(5)[0], 0),
             ("1e3 times a random kernel, n=7, L=4", 1e3 * rng.standard_normal(7), 4)]
    for label, K, L in cases:
        n = K.shape[0]
        lag = np.arange(n)[:, None] - np.arange(n)[None, :]
        W = np.where(lag >= 0, K[np.clip(lag, 0, None)], 0.0)   # the convolution's operator, W_ij = K_(i-j)
        T = (lag == L).astype(float)                            # the delay's operator
        right = float(np.sum((W - T) ** 2) / np.sum(T ** 2))
        what = f"delay_loss(K, {L}) with {label}"
        got = ck.number(ck.call(delay_loss, what, K.copy(), L, todo="return the loss, a number"), what, one_entry=False)
        hint = ""
        unweighted = float(np.sum((K - (np.arange(n) == L)) ** 2))
        if abs(got - unweighted) <= 1e-9 * max(1.0, unweighted) and abs(right - unweighted) > 1e-9 * max(1.0, right):
            hint = "; every lag is weighted alike there: lag l is seen by the n - l positions i >= l (weight n - l)"
        elif abs(got - right * (n - L)) <= 1e-9 * max(1.0, right * (n - L)) and n - L != 1:
            hint = "; divide by the loss of K = 0, which is n - L"
        else:
            sq = (K - (np.arange(n) == L)) ** 2
            shifted = [float(np.sum((n - np.arange(n) + s) * sq) / norm)       # weights n - l +- 1
                       for s in (1, -1) for norm in (n - L + s, n - L) if norm != 0]
            if any(abs(got - v) <= 1e-9 * max(1.0, abs(v)) for v in shifted) and abs(got - right) > 1e-9 * max(
                    1.0, abs(right)):
                hint = ("; your weights are off by one: position i (0-based) sees the lags 0..i, so lag l is seen "
                        "by the n - l positions i = l, ..., n - 1")
        assert abs(got - right) <= 1e-9 * max(1.0, abs(right)), (
            f"{what}: the loss should be {right:.10g}; got {got:.10g}{hint}")


# ============================================================== Chapter 5

def hidden_retention(retention_recurrent):
    """ex-retention-recurrent (Exercise 5.1), hidden cases: the recurrence on 8 new (n, d_k, p, gamma).

    (10, 3, 2, 0.3); n = 1 with d_k = p = 1 and gamma = 1; d_k = 6 > n = 4; a slow decay
    (15, 2, 4, 0.999); a fast decay (8, 2, 2, 1e-3); a zero query row and a zero key row
    (7, 3, 3, 0.6); a long sequence (1200, 3, 2, 0.5), where a state rescaled by gamma^(-t)
    overflows. Reference: the parallel form (D * Q K^T) V, D_ts = gamma^(t-s) for
    s <= t. The library's retention routines are switched off while the answer runs; the
    hints are those of the visible check.

    Last, the exercise's "never an n x n matrix", graded: n = 40000 tokens, d_k = 256, p = 1,
    gamma = 0.9999 (gamma^n = 0.02: no window of recent tokens is exact). The recurrence takes
    n steps: the book's answer 0.3 s of CPU (Q and K reach the answer's process as their thin
    factors, 2 MB, and are multiplied out there: ``Product``). An n x n
    matrix of float64 takes 12.8 GB here (the parallel form about 50 GB at its peak), and the
    weights formed one row at a time take n^2/2 = 8e8 dot products of length d_k (about two
    minutes of CPU), so when graded such an answer runs out of memory or of the question's
    time (tools/grading_sandbox.py), and the message says which and what to do. Q and K have
    rank 3 (products of thin random factors), so the case is quick to draw and its reference
    is the chunkwise form of the rank-3 problem (the parallel form within blocks of 200
    tokens, the state carried between blocks): no n x n matrix either. It is the last case,
    since a time limit stops every later call.
    """
    import importlib.util
    import re
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch5 import RETENTION_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(retention_recurrent, "retention_recurrent")

    def raised(exc):
        """What the answer's exception says; on the long case, that an n x n matrix cannot finish."""
        limit = re.search(r"within the ([0-9.]+ s)", str(exc))
        stop = None
        if n > 10000 and isinstance(exc, TimeoutError):
            stop = (f"did not finish within the {limit.group(1) if limit else 'time'} this question allows "
                    f"at n = {n} (grading stopped it)")
        elif n > 10000 and isinstance(exc, MemoryError):
            stop = f"ran out of memory at n = {n} (it raised MemoryError)"
        elif n > 10000 and isinstance(exc, RuntimeError) and str(exc).startswith("ended the Python process"):
            stop = f"ran out of memory or CPU time at n = {n} (it raised RuntimeError: the process that ran it ended)"
        if stop:
            return (f"{stop}; at this length an n x n matrix of float64 takes {n * n * 8 / 1e9:.1f} GB, and the "
                    f"weights formed one row at a time take n^2/2 = {n * n / 2:.0e} dot products of length "
                    f"d_k = {dk}: form the recurrence one token at a time (S_t = gamma S_(t-1) + k_t v_t^T, "
                    "y_t = S_t^T q_t: n steps, each a few NumPy operations on the d_k x p state, not a Python loop "
                    "over its entries), never the n x n weights")
        if isinstance(exc, OverflowError):
            return (f"raised OverflowError: {exc}; on a long sequence gamma^(-t) overflows: run "
                    "S_t = gamma S_(t-1) + k_t v_t^T as it stands")
        if isinstance(exc, ValueError) and any(w in str(exc) for w in ("mismatch", "shapes", "aligned", "broadcast")):
            return (f"raised {type(exc).__name__}: {exc} (the state S_t = gamma S_(t-1) + k_t v_t^T is d_k x p, "
                    "and y_t = S_t^T q_t has p entries)")
        return None

    def parallel(Q, K, V, gamma, read_first=False):
        lag = np.arange(Q.shape[0])[:, None] - np.arange(Q.shape[0])[None, :] - (1 if read_first else 0)
        return (np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0) * (Q @ K.T)) @ V

    def chunkwise(Q, K, V, gamma, c=200):
        """The parallel form within blocks of c tokens, the state sum_s gamma^(t-s) k_s v_s^T carried between them."""
        lag = np.arange(c)[:, None] - np.arange(c)[None, :]
        inside = np.where(lag >= 0, gamma ** np.maximum(lag, 0), 0.0)
        S, Y = np.zeros((Q.shape[1], V.shape[1])), np.empty((Q.shape[0], V.shape[1]))
        for a in range(0, Q.shape[0], c):
            q, k, v = Q[a:a + c], K[a:a + c], V[a:a + c]
            m = q.shape[0]
            Y[a:a + m] = (inside[:m, :m] * (q @ k.T)) @ v + gamma ** np.arange(1, m + 1)[:, None] * (q @ S)
            S = gamma ** m * S + k.T @ (gamma ** np.arange(m - 1, -1, -1)[:, None] * v)
        return Y

    class Product(np.ndarray):
        """The array F G, sent to the answer's process as its two thin factors: grading's sandbox
        pickles the arguments, and 2 x 82 MB cost about a second of CPU to copy, the factors 2 MB.
        Unpickled it is a plain array (np.matmul of the factors, computed there)."""

        def __new__(cls, F, G):
            product = np.matmul(F, G).view(cls)
            product.factors = (F, G)
            return product

        def __reduce__(self):
            factors = getattr(self, "factors", None)
            return (np.matmul, factors) if factors is not None else np.asarray(self).__reduce__()

    rng = np.random.default_rng(171)
    for n, dk, p, gamma in ((10, 3, 2, 0.3), (1, 1, 1, 1.0), (4, 6, 3, 0.8), (15, 2, 4, 0.999), (8, 2, 2, 1e-3),
                            (7, 3, 3, 0.6), (1200, 3, 2, 0.5), (40000, 256, 1, 0.9999)):
        long = n > 10000
        if long:   # Q = C E and K = A B of rank 3: q_t . k_s = C_t . (A B E^T)_s
            C, E = rng.standard_normal((n, 3)), rng.standard_normal((3, dk)) / np.sqrt(3 * dk)
            A, B = rng.standard_normal((n, 3)), rng.standard_normal((3, dk)) / np.sqrt(3)
            Q, K, V = Product(C, E), Product(A, B), rng.standard_normal((n, p))
            expected = chunkwise(C, A @ (B @ E.T), V, gamma)
        else:
            Q, K, V = rng.standard_normal((n, dk)), rng.standard_normal((n, dk)), rng.standard_normal((n, p))
        note = ""
        if n == 7:
            Q[2], K[4] = 0.0, 0.0
            note = ", query 2 and key 4 zero"
        if not long:
            expected = parallel(Q, K, V, gamma)
        what = f"retention_recurrent(Q, K, V, {gamma}) with n={n}, d_k={dk}, p={p}{note}"
        args = (Q, K, V) if long else (Q.copy(), K.copy(), V.copy())   # the long case reads Q, K no more
        out = ck.call(retention_recurrent, what, *args, gamma, within=reference_routines_off(RETENTION_ROUTINES),
                      raised=raised, todo="return the outputs Y")
        overflows = " (a state rescaled by gamma^(-t) overflows on a long sequence)"
        got = ck.real_array(out, (n, p), what, nonfinite_hint=overflows if n > 1000 and gamma ** n < 1e-300 else "")
        scale = max(1.0, float(np.abs(expected).max()))

        def hint(got, where):
            err, tol = np.abs(got - expected).max(), 1e-9 * scale
            if long and err > 1e-4 * scale:
                return (f"; every earlier token counts here (gamma^(n-1) = {gamma ** (n - 1):.2g}): a window of "
                        "recent tokens is not enough")
            if not long:   # the slips, named on the shorter cases (no n x n matrix on the long one)
                if gamma < 1 and ck.near(got, gamma * expected, tol):
                    return "; the current token is decayed too: decay the old state, then add k_t v_t^T"
                if gamma < 1 and ck.near(got, (1 - gamma) * expected, tol):
                    return ("; the new token is scaled by (1 - gamma), as in a moving average: retention adds "
                            "k_t v_t^T itself, S_t = gamma S_(t-1) + k_t v_t^T")
                if gamma < 1 and ck.near(got, parallel(Q, K, V, 1.0), tol):
                    return "; no decay is applied: S_t = gamma S_(t-1) + k_t v_t^T"
                if ck.near(got, (Q @ K.T) @ V, tol):
                    return "; the sum runs over every s, also s > t: retention is causal"
                if ck.near(got, parallel(Q, K, V, gamma, read_first=True), tol):
                    return "; y_t is read before the update: add k_t v_t^T first, then y_t = S_t^T q_t"
            if err <= 1e-4 * scale:
                return (f"; they agree only to {err / scale:.0e} of their size: single precision (float32)? "
                        "Compute in float64")
            return ""

        ck.compare(got, expected, what, digits=6, hints=hint,
                   says="Y entry (t, channel) = {where} should be {want}; got {got}",
                   note=" (the parallel form (D * Q K^T) V, D_ts = gamma^(t-s) for s <= t)")


def hidden_rope(rope_interaction):
    """ex-rope-rank (Exercise 5.2), hidden cases: the operator of a causal RoPE head on 4 new heads.

    n=7, d=3, d_k=6, p=2, base 500 (three rotation frequencies); n = 1; d_k = 2 with base 2
    and n = 12 (angles past a full turn), p = 1; base 1 (every pair at the same frequency)
    with a zero token, d_k = 4. Reference: rotary scores computed with complex numbers,
    (q_t as d_k/2 complex pairs times e^(i t theta_m)), not with rotation matrices;
    tolerance 1e-9 as in the check. The library's RoPE routines are switched off while the answer runs;
    the hints are those of the visible check.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch5 import ROPE_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(rope_interaction, "rope_interaction")

    def operator(W_Q, W_K, W_V, X, base, causal=True, rotate=True, scale=True, rotate_q=True, rotate_k=True,
                 half=False, sign=1.0, freq=2.0):
        n, dk = X.shape[0], W_Q.shape[0]
        Q, K = X @ W_Q.T, X @ W_K.T
        first, second = (slice(0, dk // 2), slice(dk // 2, dk)) if half else (slice(0, None, 2), slice(1, None, 2))
        zq, zk = Q[:, first] + 1j * Q[:, second], K[:, first] + 1j * K[:, second]   # pair m as one complex number
        if rotate:
            phase = np.exp(1j * sign * np.arange(n)[:, None] * base ** (-freq * np.arange(dk // 2) / dk)[None, :])
            zq, zk = (zq * phase if rotate_q else zq), (zk * phase if rotate_k else zk)
        S = (zq @ zk.conj().T).real / (np.sqrt(dk) if scale else 1.0)        # Re <z_q, z_k> = the real dot product
        if causal:
            S = np.where(np.tril(np.ones((n, n), bool)), S, -np.inf)
        a = np.exp(S - S.max(axis=1, keepdims=True))
        return (a / a.sum(axis=1, keepdims=True))[:, :, None, None] * W_V

    rng = np.random.default_rng(181)
    for n, d, dk, p, base in ((7, 3, 6, 2, 500.0), (1, 3, 2, 2, 10000.0), (12, 2, 2, 1, 2.0), (6, 4, 4, 3, 1.0)):
        W_Q, W_K = rng.standard_normal((dk, d)), rng.standard_normal((dk, d))
        W_V, X = rng.standard_normal((p, d)), rng.standard_normal((n, d))
        note = ""
        if base == 1.0:
            X[3] = 0.0
            note = ", token 3 zero"
        args = (W_Q, W_K, W_V, X, base)
        expected = operator(*args)
        what = f"rope_interaction(W_Q, W_K, W_V, X, base={base:g}) with n={n}, d={d}, d_k={dk}, p={p}{note}"
        out = ck.call(rope_interaction, what, W_Q.copy(), W_K.copy(), W_V.copy(), X.copy(), base,
                      within=reference_routines_off(ROPE_ROUTINES), todo="return the operator W")
        tol = 1e-9 * max(1.0, float(np.abs(expected).max()))
        slips = (("the head is not causal: position i may only attend to j <= i", dict(causal=False)),
                 ("the queries and keys are not rotated", dict(rotate=False)),
                 ("only the queries are rotated: rotate each key by its own position too", dict(rotate_k=False)),
                 ("only the keys are rotated: rotate each query by its own position too", dict(rotate_q=False)),
                 ("the scores are not divided by sqrt(d_k)", dict(scale=False)),
                 ("coordinates are paired as (m, m + d_k/2), the rotate-half convention of GPT-NeoX and LLaMA; this "
                  "exercise pairs (2m, 2m+1), as RoFormer", dict(half=True)),
                 ("the rotation turns the wrong way: R_t maps (x, y) to (x cos - y sin, x sin + y cos) with the "
                  "angle +t base^(-2m/d_k)", dict(sign=-1.0)),
                 ("pair m turns at the frequency base^(-2m/d_k), not base^(-m/d_k)", dict(freq=1.0)))
        ck.compare(ck.real_array(out, (n, n, p, d), what, float64=True), expected, what, single_precision=True,
                   says="entry (i, j, row, col) = {where} should be {want}; got {got}",
                   note=" (W_ij = a_ij W_V, pair (2m, 2m+1) rotated by t base^(-2m/d_k))",
                   hints=[(lambda got, where, flags=flags: not ck.near(operator(*args, **flags), expected, tol)
                           and ck.near(got, operator(*args, **flags), tol), f"; {why}") for why, flags in slips])


def hidden_ssd(ssd_operator):
    """ex-ssd-rank (Exercise 5.3), hidden cases: the SSD operator on 5 new layers.

    H=2, n=8, N=5, p=3, d=2; n = 1 (H=1, N=4); H = 4 heads with N = p = d = 1, n = 3;
    decays close to 1 (H=3, n=6, N=2); strong decays a in [1e-8, 1e-6] over n = 70 tokens
    (the products underflow to 0: dividing cumulative products gives 0/0 there, a cumulative
    sum of logs does not). Steps dt in [0.05, 3]. Reference: the recurrence
    S_t = a_t S_(t-1) + dt_t B_t x_t^T, y_t = sum_h V_h S_t^T C_t, run on every unit input;
    tolerance 1e-9 as in the check. The library's SSD routines are switched off while the
    answer runs; the hints are those of the visible check.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch5 import SSD_ROUTINES

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(ssd_operator, "ssd_operator")

    def by_recurrence(a, dt, B, C, V, shifted=False):
        H, n = a.shape
        coeff = np.zeros((H, n, n))               # coeff[h, t, s]: what source s contributes at time t
        state = np.zeros((H, n, B.shape[1]))      # state[h, s]: the part of S^h_t fed by the token at s
        for t in range(n):
            state = a[:, t, None, None] * state
            state[:, t] += dt[:, t, None] * B[t]
            coeff[:, t] = state @ C[t]
        if shifted:                               # a_s ... a_(t-1) instead of a_(s+1) ... a_t
            coeff = coeff * a[:, None, :] / a[:, :, None]
        return np.einsum("hts,hpd->tspd", coeff, V)

    rng = np.random.default_rng(191)
    for H, n, N, p, d, low, high in ((2, 8, 5, 3, 2, 0.3, 0.99), (1, 1, 4, 2, 3, 0.3, 0.95), (4, 3, 1, 1, 1, 0.3, 0.95),
                                     (3, 6, 2, 2, 2, 0.99, 0.999999), (2, 70, 3, 1, 2, 1e-8, 1e-6)):
        a, dt = rng.uniform(low, high, (H, n)), rng.uniform(0.05, 3.0, (H, n))
        B, C = rng.standard_normal((n, N)), rng.standard_normal((n, N))
        V = rng.standard_normal((H, p, d))
        expected = by_recurrence(a, dt, B, C, V)
        what = (f"ssd_operator(a, dt, B, C, V) with H={H}, n={n}, N={N}, p={p}, d={d}, "
                f"decays a in [{low:g}, {high:g}]"
                + (" (products of decays underflow to 0: a ratio of cumulative products gives 0/0)" if n == 70 else ""))
        out = ck.call(ssd_operator, what, a.copy(), dt.copy(), B.copy(), C.copy(), V.copy(),
                      todo="return the operator W",
                      within=(np.errstate(all="ignore"), reference_routines_off(SSD_ROUTINES)))
        tol = 1e-9 * max(1.0, float(np.abs(expected).max()))

        def hint(got, where):
            t, s = where[:2]
            if s > t:
                return "; W_ts must be 0 for s > t (the layer is causal)"
            if ck.near(got, by_recurrence(a, np.ones_like(dt), B, C, V), tol):
                return "; the step dt is left out: the input written at s is dt_s B_s x_s^T"
            if ck.near(got, by_recurrence(a, dt, C, B, V), tol):
                return ("; the scores are C_s . B_t: W_ts uses C_t . B_s (C read at the target t, B written at "
                        "the source s)")
            if n > 1 and ck.near(got, by_recurrence(a, dt, B, C, V, shifted=True), tol):
                return ("; the decays run over s .. t-1: L_ts = a_(s+1) ... a_t, the decays of the tokens after s "
                        "up to and including t")
            if s == t:
                return "; on the diagonal L_tt = 1 (an empty product): W_tt = sum_h dt^h_t (C_t . B_t) V_h"
            return (f"; L_ts = a_(s+1) ... a_t, the decays after s up to t (here a_{s + 1} ... a_{t}), "
                    "and the step is dt_s, read at the source")

        ck.compare(ck.real_array(out, (n, n, p, d), what, float64=True), expected, what, single_precision=True,
                   says="entry (t, s, row, col) = {where} should be {want}; got {got}", hints=hint,
                   note=" (W_ts = sum_h L^h_ts dt^h_s (C_t . B_s) V_h)")


# ============================================================== Chapter 6

def hidden_delay_floor(delay_floor):
    """ex-delay-floor (Exercise 6.1), hidden cases: the floor of H positional heads on 6 new (n, L, H).

    (32, 2, 1); (10, 6, 2) (the last tap at n - 1); (128, 100, 3); (50, 1, 0) (no head: 1);
    (64, 20, 5) (more heads than k: 0); (9, 1, 2). Reference: an SVD of the weighted lags
    G_w = [sqrt(n - l) vec K_l] of the task (numpy, not the library's head-count routines),
    its tail after H singular values over the total; the library's routines are switched off
    while the answer runs, as in the visible check.
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads.exercises._common import reference_routines_off
    from ssmheads.exercises.ch6 import FLOOR_ROUTINES, _how_far

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(delay_floor, "delay_floor")
    taps = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.0, -1.0], [1.0, 0.0]],
                     [[1.0, 0.0], [0.0, -1.0]], [[0.0, 1.0], [1.0, 0.0]]])
    for n, L, H in ((32, 2, 1), (10, 6, 2), (128, 100, 3), (50, 1, 0), (64, 20, 5), (9, 1, 2)):
        K = np.zeros((n, 2, 2))
        K[L:L + 4] = taps
        G = (K.reshape(n, 4) * np.sqrt(n - np.arange(n))[:, None]).T
        s2 = np.linalg.svd(G, compute_uv=False) ** 2
        right = float(np.sum(s2[H:]) / np.sum(s2))
        what = f"delay_floor({n}, {L}, {H})"
        got = ck.number(ck.call(delay_floor, what, n, L, H, within=reference_routines_off(FLOOR_ROUTINES),
                                todo="return the floor, a number"), what, one_entry=False)
        hint = ""
        if abs(got - max(4 - H, 0) / 4) <= 1e-9 and abs(right - max(4 - H, 0) / 4) > 1e-9:
            hint = "; that is (4 - H)/4: lag l is seen by n - l positions, so the taps weigh differently"
        elif abs(got - (1 - right)) <= 1e-9:
            hint = "; you returned the share the heads keep; the floor is the share they miss"
        assert abs(got - right) <= 1e-9, f"{what}: the floor is {_how_far(got, right)}{hint}"


def hidden_jacobian_norm(jacobian_norm):
    """ex-jacobian-norm (Exercise 6.2), hidden cases: ||dy_i/dx_j|| on 5 new layers and pairs.

    A diagonal SSM 0.6 (one channel) at i = j (K_0); a random 3-state LTI SSM with p = 1,
    d = 2 at distance 5; a retention head (Chapter 5) at i = 6, j = 0; an S4D layer at
    distance 3; the same S4D layer at j = i + 2 (zero: causality). References: the lag
    operators for the linear layers (their Jacobian), and for retention the exact
    derivative of its bilinear form, computed in the test (not by finite differences).
    """
    import importlib.util
    from pathlib import Path

    import numpy as np

    import ssmheads as sh
    from ssmheads import architectures as arch
    from ssmheads.exercises.ch6 import _CountedForward, _how_far

    checking = Path(sh.__file__).with_name("exercises") / "checking.py"
    spec = importlib.util.spec_from_file_location("_checking", checking)
    spec.loader.exec_module(ck := importlib.util.module_from_spec(spec))
    ck.require_function(jacobian_norm, "jacobian_norm")
    rng = np.random.default_rng(62)
    cases = []
    one = sh.LinearSSM(np.array([[0.6]]), np.array([[1.0]]), np.array([[2.0]]))
    cases.append(("a scalar SSM (a = 0.6, b = 1, c = 2), i = j = 4", one.forward, rng.standard_normal((6, 1)), 4, 4,
                  2.0))
    A = np.diag([0.9, -0.5, 0.3])
    B, C = rng.standard_normal((3, 2)), rng.standard_normal((1, 3))
    K = sh.lag_operators(A, B, C, 9)
    cases.append(("a 3-state SSM with p = 1, d = 2, i = 8, j = 3", sh.LinearSSM(A, B, C).forward,
                  rng.standard_normal((9, 2)), 8, 3, float(np.linalg.norm(K[5], 2))))
    W_Q, W_K, W_V = rng.standard_normal((2, 2)), rng.standard_normal((2, 2)), rng.standard_normal((2, 2))
    ret = arch.Retention(W_Q, W_K, W_V, 0.8)
    X = rng.standard_normal((7, 2))
    # y_6 = sum_j 0.8^(6-j) (q_6 . k_j) W_V x_j: d y_6 / d x_0 = 0.8^6 [(q_6 . k_0) W_V + W_V x_0 (W_K^T q_6)^T]
    q6, k0 = W_Q @ X[6], W_K @ X[0]
    J = 0.8 ** 6 * ((q6 @ k0) * W_V + np.outer(W_V @ X[0], W_K.T @ q6))
    cases.append(("a retention head (gamma = 0.8), i = 6, j = 0", ret.forward, X, 6, 0, float(np.linalg.norm(J, 2))))
    s4d = arch.S4D(-np.exp(rng.standard_normal((2, 3))) + 1j * rng.standard_normal((2, 3)),
                   rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), np.array([0.5, 0.2]))
    Kd = s4d.lag_operators(10)
    X = rng.standard_normal((10, 2))
    cases.append(("an S4D layer, i = 9, j = 6", s4d.forward, X, 9, 6, float(np.linalg.norm(Kd[3], 2))))
    cases.append(("the S4D layer, i = 4, j = 6 (j > i)", s4d.forward, X, 4, 6, 0.0))
    for label, forward, X, i, j, right in cases:
        what = f"jacobian_norm on {label}"
        out = ck.call(jacobian_norm, what, _CountedForward(forward), X.copy(), i, j,   # no attributes; read-only count
                      todo="return the norm, a number")
        got = ck.number(out, what, one_entry=False)
        # No count of forward's calls here: when graded, the answer runs in another process
        # (tools/grading_sandbox.py), which counts its own calls; the sandbox and the scan of
        # the answer's source keep the layer's exact Jacobian out of reach there.
        hint = "; the layers are causal: y_i does not depend on x_j for j > i" if right == 0.0 else ""
        assert abs(got - right) <= 1e-5 * max(abs(right), 1e-3), (
            f"{what}: ||dy_i/dx_j|| {_how_far(got, right)}{hint}")


HIDDEN_TESTS = {
    "ex-ema": [hidden_ema],
    "ex-mlp": [hidden_mlp],
    "ex-residual": [hidden_residual],
    "ex-lag-span-by-hand": [hidden_lag_span],
    "ex-three-dims": [hidden_three_dims],
    "ex-longer-plateau": [hidden_long_plateau],
    "ex-build-heads": [hidden_build_heads],
    "ex-tail": [hidden_tail],
    "ex-count-nonneg": [hidden_count_nonneg],
    "ex-quaternion-heads": [hidden_quaternion],
    "ex-head-jacobian": [hidden_head_jacobian],
    "ex-build-highway": [hidden_highway],
    "ex-ssm-profile": [hidden_ssm_profile],
    "ex-delay-loss": [hidden_delay_loss],
    "ex-retention-recurrent": [hidden_retention],
    "ex-rope-rank": [hidden_rope],
    "ex-ssd-rank": [hidden_ssd],
    "ex-delay-floor": [hidden_delay_floor],
    "ex-jacobian-norm": [hidden_jacobian_norm],
}
