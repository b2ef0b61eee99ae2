"""Deep linear networks: the paper's linear-network sanity check (Sec. 4.2 and its appendix).

A depth-L linear network y = W_L ... W_1 x on a synthetic regression task, trained from
sigma_w-scaled inits (W_l ~ N(0, sigma_w^2 / fan_in), the same standard-normal draws for every
sigma_w) in float64 numpy. The scalar two-factor model y = b a x is the chain with widths (1, 1, 1).
Every function also takes *stacked* networks, matrices of shape (models, out, in), and then trains
all models at once (numpy broadcasting); minibatches are drawn independently per model.

With the loss L = 1/(2n) sum_i ||P x_i - y_i||^2, P = W_L ... W_1, the product-space gradient is
E = dL/dP = (P X - Y) X^T / n and the layer gradients are G_l = (W_L..W_{l+1})^T E (W_{l-1}..W_1)^T.
The adjacent imbalances D_l = W_{l+1}^T W_{l+1} - W_l W_l^T (l = 1..L-1) obey:

* Gradient flow conserves every D_l, because W_{l+1}^T G_{l+1} = G_l W_l^T (both are
  (W_L..W_{l+1})^T E (W_l..W_1)^T), so the first-order terms cancel.
* One Euclidean step W_l <- (1 - c) W_l - eta G_l (c = 0: SGD; c = 2 eta lambda: Keras L2
  lambda ||W||^2; c = eta wd: coupled weight decay) changes D_l *exactly* to
  D_l' = (1 - c)^2 D_l + eta^2 (G_{l+1}^T G_{l+1} - G_l G_l^T): no first-order term, a second-order
  leak. In the scalar model this is D' = (1 - c)^2 D - eta^2 e^2 D, with e = dL/d(ab).
* A minibatch estimate E_b (the same one for every layer) keeps the identity, so SGD leaks only
  through eta^2 (G_b^T G_b terms); with i.i.d. batches E[G_b^T G_b] = G^T G + Cov_i / b, and at a
  minimiser (G = 0) E[D(K)] - D(0) = T_sgd * C with T_sgd = sum eta_k^2 / b and
  C_l = mean_i(G_{l+1,i}^T G_{l+1,i} - G_{l,i} G_{l,i}^T) over per-example gradients.
* L2 contracts: D(K) = prod (1 - 2 eta_k lambda)^2 D(0) ~ exp(-4 T_l2) D(0), T_l2 = sum eta_k lambda
  (rate 4, not 2: Keras' gradient of lambda ||W||^2 is 2 lambda W); weight decay:
  exp(-2 T_wd), T_wd = sum eta_k wd.
* A preconditioned step W_l <- W_l - eta P_l(G_l) leaves the first-order term
  -eta (W_{l+1}^T P_{l+1} + P_{l+1}^T W_{l+1} - P_l W_l^T - W_l P_l^T), which no longer cancels: Adam moves D
  at first order in eta. Scalar example: a' = a - eta p_a e b, b' = b - eta p_b e a gives
  D' - D = 2 eta e a b (p_a - p_b) + O(eta^2), nonzero whenever the per-coordinate scales differ.
* Scalar model, gradient flow: ab -> p (the least-squares product) with b^2 - a^2 = D(0) fixed, so the
  converged factor norm is a^2 + b^2 = sqrt(D(0)^2 + 4 p^2): sigma_w (D(0) = sigma_w^2 (v^2 - u^2)) is
  remembered by the solution. With L2 the minimiser is balanced (a = b) whatever the init.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from initmem.engine.clocks import CLOCK_KEYS, clocks_from_moments
from initmem.spec import ADAM_BETA1, ADAM_BETA2, ADAM_EPS  # Keras Adam, eps-hat form (as initmem.engine.optim)

OPTIMIZERS = ("sgd", "adam")


@dataclass(frozen=True)
class Regression:
    """Inputs x (d_in, n) and targets y (d_out, n) of a synthetic regression task."""

    x: np.ndarray
    y: np.ndarray

    @property
    def n(self) -> int:
        return self.x.shape[1]


def make_regression(d_in: int, d_out: int, n: int, noise: float, seed: int = 0) -> Regression:
    """y = A x + noise, x ~ N(0, I), A ~ N(0, 1/d_in), Gaussian label noise of std ``noise``."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((d_in, n))
    a = rng.standard_normal((d_out, d_in)) / math.sqrt(d_in)
    return Regression(x, a @ x + noise * rng.standard_normal((d_out, n)))


def init_chain(widths: tuple[int, ...], sigma_w: float, seed: int = 0) -> list[np.ndarray]:
    """W_l ~ N(0, sigma_w^2 / fan_in) of shape (widths[l+1], widths[l]); one seed gives the same
    standard-normal draws for every sigma_w (as the trainer's init)."""
    rng = np.random.default_rng(seed)
    return [sigma_w * rng.standard_normal((o, i)) / math.sqrt(i) for i, o in zip(widths[:-1], widths[1:], strict=True)]


def product(ws: list[np.ndarray]) -> np.ndarray:
    """P = W_L ... W_1."""
    p = ws[0]
    for w in ws[1:]:
        p = w @ p
    return p


def loss(ws: list[np.ndarray], data: Regression) -> np.ndarray:
    """1/(2n) sum_i ||P x_i - y_i||^2 (one value per model when stacked)."""
    r = product(ws) @ data.x - data.y
    return 0.5 * np.sum(r * r, axis=(-2, -1)) / data.n


def product_gradient(ws: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """E = dL/dP = (P X - Y) X^T / n over the columns of ``x``."""
    return (product(ws) @ x - y) @ x.mT / x.shape[-1]


def layer_gradients(ws: list[np.ndarray], e: np.ndarray) -> list[np.ndarray]:
    """G_l = (W_L..W_{l+1})^T E (W_{l-1}..W_1)^T: every layer's gradient from one product-space gradient E."""
    below = [np.eye(ws[0].shape[-1])]
    for w in ws[:-1]:
        below.append(w @ below[-1])
    grads, above = [], np.eye(ws[-1].shape[-2])
    for layer in range(len(ws) - 1, -1, -1):
        grads.append(above.mT @ e @ below[layer].mT)
        above = above @ ws[layer]
    return grads[::-1]


def imbalances(ws: list[np.ndarray]) -> list[np.ndarray]:
    """D_l = W_{l+1}^T W_{l+1} - W_l W_l^T for l = 1..L-1."""
    return [ws[i + 1].mT @ ws[i + 1] - ws[i] @ ws[i].mT for i in range(len(ws) - 1)]


def leak_term(grads: list[np.ndarray]) -> list[np.ndarray]:
    """The exact second-order change of one Euclidean step per eta^2: G_{l+1}^T G_{l+1} - G_l G_l^T."""
    return [grads[i + 1].mT @ grads[i + 1] - grads[i] @ grads[i].mT for i in range(len(grads) - 1)]


def noise_leak(ws: list[np.ndarray], data: Regression) -> list[np.ndarray]:
    """C_l = mean_i (G_{l+1,i}^T G_{l+1,i} - G_{l,i} G_{l,i}^T) over per-example gradients minus their
    mean: the drift of E[D_l] per unit of T_sgd = sum eta^2 / b under i.i.d. minibatches."""
    full = layer_gradients(ws, product_gradient(ws, data.x, data.y))
    each = layer_gradients(ws, product_gradient(ws, data.x.T[:, :, None], data.y.T[:, :, None]))  # (n, out, in) per layer
    return [term.mean(axis=0) for term in leak_term([g - f for g, f in zip(each, full, strict=True)])]


def flat(mats: list[np.ndarray]) -> np.ndarray:
    """All matrices of a list as one vector (per model when stacked): norms and inner products over every layer."""
    return np.concatenate([m.reshape(*m.shape[:-2], -1) for m in mats], axis=-1)


@dataclass
class Trace:
    """Recorded steps of one training run: clocks, imbalances, loss; ``ws`` is the final network."""

    steps: list[int] = field(default_factory=list)
    clocks: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in CLOCK_KEYS})
    imbalance: list[list[np.ndarray]] = field(default_factory=list)
    loss: list[np.ndarray] = field(default_factory=list)
    ws: list[np.ndarray] = field(default_factory=list)

    def drift(self) -> np.ndarray:
        """||D(t) - D(0)||_F over all layers at every recorded step (records, or records x models)."""
        d0 = flat(self.imbalance[0])
        return np.array([np.linalg.norm(flat(d) - d0, axis=-1) for d in self.imbalance])

    def size(self) -> np.ndarray:
        """||D(t)||_F over all layers at every recorded step (records, or records x models)."""
        return np.array([np.linalg.norm(flat(d), axis=-1) for d in self.imbalance])


def train_chain(ws: list[np.ndarray], data: Regression, *, optimizer: str = "sgd", lr: float | list[float] = 1e-2,
                steps: int = 100, batch_size: int | None = None, l2: float = 0.0, weight_decay: float = 0.0,
                seed: int = 0, record_every: int = 1) -> Trace:
    """Train a copy of ``ws`` and record clocks and imbalances every ``record_every`` steps (and at 0 and the end).

    optimizer: "sgd" (Euclidean step) or "adam" (Keras Adam). batch_size None: full batch; else i.i.d.
    minibatches drawn with replacement, so the gradient noise covariance is exactly the per-example
    covariance / b. l2: Keras L2, loss + l2 sum ||W_l||^2 (gradient 2 l2 W); weight_decay: coupled,
    W <- W - eta (G + wd W) (for SGD the same as Keras' decoupled decay applied before the step).
    lr: a constant or one rate per step.
    """
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"unknown optimizer {optimizer!r}; choose one of {OPTIMIZERS}")
    ws = [w.copy() for w in ws]
    rates = np.broadcast_to(np.asarray(lr, dtype=float), (steps,))
    rng = np.random.default_rng(seed)
    b = data.n if batch_size is None else int(batch_size)
    clocks = dict.fromkeys(CLOCK_KEYS, 0.0)
    s1 = s2 = 0.0  # the rate moments sum eta, sum eta^2 (arbitrary per-step rates here, so summed as we go)
    moments = [(np.zeros_like(w), np.zeros_like(w)) for w in ws]
    trace = Trace()

    def record(k: int) -> None:
        trace.steps.append(k)
        for key in CLOCK_KEYS:
            trace.clocks[key].append(clocks[key])
        trace.imbalance.append(imbalances(ws))
        trace.loss.append(loss(ws, data))

    record(0)
    for k in range(steps):
        if batch_size is None:
            x, y = data.x, data.y
        else:
            idx = rng.integers(0, data.n, ws[0].shape[:-2] + (b,))  # one batch per model
            x, y = np.moveaxis(data.x[:, idx], 0, -2), np.moveaxis(data.y[:, idx], 0, -2)
        grads = layer_gradients(ws, product_gradient(ws, x, y))
        eta = float(rates[k])
        for i, (w, g) in enumerate(zip(ws, grads, strict=True)):
            g = g + 2 * l2 * w + weight_decay * w
            if optimizer == "sgd":
                ws[i] = w - eta * g
            else:
                m, v = moments[i]
                m += (g - m) * (1 - ADAM_BETA1)
                v += (g * g - v) * (1 - ADAM_BETA2)
                alpha = eta * math.sqrt(1 - ADAM_BETA2 ** (k + 1)) / (1 - ADAM_BETA1 ** (k + 1))
                ws[i] = w - alpha * m / (np.sqrt(v) + ADAM_EPS)
        s1, s2 = s1 + eta, s2 + eta * eta
        clocks = clocks_from_moments(s1, s2, b, l2, weight_decay)
        if (k + 1) % record_every == 0 or k + 1 == steps:
            record(k + 1)
    trace.ws = ws
    return trace


def loglog_slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log y against log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


# ---- the checks behind Figure 9 and results/tables/linear_check.csv -------------------------------

WIDTHS = (4, 6, 6, 3)  # depth-3 chain: two adjacent imbalances of 6 x 6
N_EXAMPLES, LABEL_NOISE = 256, 0.5  # the chain's regression task
SCALAR_N, SCALAR_NOISE = 256, 0.3  # the scalar model's


def chain_task(seed: int = 0) -> Regression:
    """The depth-3 chain's regression task: 4 -> 3, 256 examples, label noise 0.5."""
    return make_regression(WIDTHS[0], WIDTHS[-1], N_EXAMPLES, LABEL_NOISE, seed)


def minimiser(data: Regression, sigma_w: float = 1.0, seed: int = 0) -> list[np.ndarray]:
    """A converged chain (full-batch GD from a sigma_w init): the data gradient is ~0, D remembers the init."""
    return train_chain(init_chain(WIDTHS, sigma_w, seed), data, lr=0.05, steps=3000, record_every=3000).ws


def step_order(etas: np.ndarray, steps: int = 1, seed: int = 0) -> dict[str, np.ndarray]:
    """Imbalance drift ||D(K) - D(0)|| after ``steps`` steps from a sigma_w = 1 init, per eta, for
    full-batch GD and Adam; plus the largest deviation of GD's one-step change from the exact formula
    eta^2 (G_{l+1}^T G_{l+1} - G_l G_l^T), relative to its size, and that term's norm ``leak_norm``
    (GD's predicted one-step drift is eta^2 * leak_norm)."""
    data = chain_task(seed)
    ws = init_chain(WIDTHS, 1.0, seed)
    out = {"eta": np.asarray(etas, float)}
    for opt in OPTIMIZERS:
        out[opt] = np.array([train_chain(ws, data, optimizer=opt, lr=eta, steps=steps, record_every=steps).drift()[-1]
                             for eta in etas])
    predicted = flat(leak_term(layer_gradients(ws, product_gradient(ws, data.x, data.y))))
    errors = []
    for eta in etas:
        one = train_chain(ws, data, lr=eta, steps=1)
        change = flat(one.imbalance[1]) - flat(one.imbalance[0])
        errors.append(np.linalg.norm(change - eta**2 * predicted) / np.linalg.norm(eta**2 * predicted))
    out["formula_error"] = np.array(errors)
    out["leak_norm"] = float(np.linalg.norm(predicted))
    return out


def gradient_flow(etas: np.ndarray, flow_time: float = 1.0, seed: int = 0) -> dict[str, np.ndarray]:
    """GD at a fixed flow time t = sum eta: the drift ||D(t) - D(0)|| / ||D(0)|| vanishes like eta * t
    as eta -> 0 (t / eta steps, each leaking eta^2): gradient flow conserves D."""
    data = chain_task(seed)
    ws = init_chain(WIDTHS, 1.0, seed)
    rel = []
    for eta in etas:
        trace = train_chain(ws, data, lr=eta, steps=round(flow_time / eta), record_every=10**9)
        rel.append(trace.drift()[-1] / trace.size()[0])
    return {"eta": np.asarray(etas, float), "relative_drift": np.array(rel), "flow_time": flow_time}


def sgd_clock(batch_sizes: tuple[int, ...] = (2, 8, 32), lr: float = 0.01, t_max: float = 0.05,
              repeats: int = 16, seed: int = 0) -> dict:
    """Minibatch SGD from a minimiser at one lr and several b, each run to T_sgd = t_max: the drift
    projected on C (predicted: E[D(T) - D(0)] = T C, i.e. the projection equals T for every b)."""
    data = chain_task(seed)
    ws = minimiser(data, seed=seed)
    c = flat(noise_leak(ws, data))
    curves = {}
    for b in batch_sizes:
        steps = math.ceil(t_max * b / lr**2)
        every = max(1, steps // 40)
        stacked = [np.repeat(w[None], repeats, axis=0) for w in ws]  # independent minibatch streams
        trace = train_chain(stacked, data, lr=lr, steps=steps, batch_size=b, seed=seed + b, record_every=every)
        d0 = flat(trace.imbalance[0])
        projection = np.array([((flat(d) - d0) @ c / (c @ c)).mean() for d in trace.imbalance])
        curves[b] = {"T_sgd": np.array(trace.clocks["T_sgd"]), "steps": np.array(trace.steps), "projection": projection}
    return {"curves": curves, "C_norm": float(np.linalg.norm(c)), "D0_norm": float(np.linalg.norm(flat(imbalances(ws)))),
            "lr": lr, "repeats": repeats}


def decay_contraction(lr: float = 0.01, batch_size: int = 32, t_max: float = 1.2, l2s: tuple[float, ...] = (0.01, 0.03),
                      weight_decays: tuple[float, ...] = (0.03,), seed: int = 0) -> dict:
    """Minibatch SGD from a minimiser with Keras L2 or coupled weight decay: ||D|| / ||D(0)|| against
    T_l2 (or T_wd); predicted exp(-4 T_l2) and exp(-2 T_wd) to first order, exactly
    prod (1 - 2 eta l2)^2 and prod (1 - eta wd)^2 up to the eta^2 leak."""
    data = chain_task(seed)
    ws = minimiser(data, seed=seed)
    curves = {}
    for kind, values, clock, factor in (("l2", l2s, "T_l2", 2.0), ("weight_decay", weight_decays, "T_wd", 1.0)):
        for value in values:
            t_end = t_max if kind == "l2" else 2 * t_max  # the same predicted contraction for both
            steps = math.ceil(t_end / (lr * value))
            trace = train_chain(ws, data, lr=lr, steps=steps, batch_size=batch_size, seed=seed,
                                record_every=max(1, steps // 60), **{kind: value})
            curves[(kind, value)] = {"T": np.array(trace.clocks[clock]), "ratio": trace.size() / trace.size()[0],
                                     "clock": clock, "exact_rate": -2 * math.log(1 - factor * lr * value) / (lr * value)}
    return {"curves": curves, "lr": lr, "batch_size": batch_size}


def contraction_rate(t: np.ndarray, ratio: np.ndarray, floor: float = 0.02) -> float:
    """-d log(||D|| / ||D(0)||) / dT by least squares over the points above ``floor`` (the SGD leak's noise floor)."""
    keep = ratio > floor
    return float(-np.polyfit(t[keep], np.log(ratio[keep]), 1)[0])


def scalar_memory(sigma_ws: np.ndarray, seeds: tuple[int, ...] = (0, 1, 2, 3, 4), steps: int = 8000,
                  lr: float = 0.005, l2: float = 0.05) -> dict:
    """The scalar model y = b a x (target product ~1) from a = sigma_w u, b = sigma_w v (one draw (u, v)
    per seed): final factor norm a^2 + b^2 after full-batch GD, Adam and GD + L2 (all inits trained
    at once), beside the gradient-flow prediction sqrt(D(0)^2 + 4 p^2) (p = c / m: the least-squares
    product) and the balanced L2 minimiser 2 (c - 2 l2) / m (m = mean x^2, c = mean x y)."""
    data = make_regression(1, 1, SCALAR_N, SCALAR_NOISE, seed=7)
    data = Regression(data.x, data.y / data.y.std() * data.x.std())  # target product close to 1
    m, c = float(np.mean(data.x**2)), float(np.mean(data.x * data.y))
    grid = [(float(sw), seed) for seed in seeds for sw in sigma_ws]
    inits = [init_chain((1, 1, 1), sw, seed) for sw, seed in grid]
    ws = [np.stack([w[layer] for w in inits]) for layer in range(2)]  # (models, 1, 1) per layer
    d0 = imbalances(ws)[0][:, 0, 0]
    cosine = 0.01 + 0.99 * 0.5 * (1 + np.cos(np.pi * np.arange(steps) / steps))  # Adam needs a decaying lr to settle
    out = {"sigma_w": np.array([g[0] for g in grid]), "seed": np.array([g[1] for g in grid]), "D0": d0,
           "setup": {"lr": lr, "adam_lr": 4 * lr, "l2": l2, "steps": steps, "n": data.n},
           "predicted": np.sqrt(d0**2 + 4 * (c / m) ** 2), "l2_predicted": np.full(len(grid), 2 * (c - 2 * l2) / m)}
    for name, kwargs in (("gd", dict(lr=lr)), ("adam", dict(optimizer="adam", lr=4 * lr * cosine)), ("l2", dict(lr=lr, l2=l2))):
        trace = train_chain(ws, data, steps=steps, record_every=steps, **kwargs)
        out[name] = sum(np.sum(w * w, axis=(-2, -1)) for w in trace.ws)
        out[f"{name}_D_final"] = trace.imbalance[-1][0][:, 0, 0]
    return out


def run_checks() -> dict:
    """Every experiment behind Figure 9 (about ten CPU seconds)."""
    return {"step_order": step_order(np.logspace(-4, -1, 7)),
            "gradient_flow": gradient_flow(np.array([1e-2, 3e-3, 1e-3])),
            "sgd_clock": sgd_clock(),
            "decay": decay_contraction(),
            "scalar": scalar_memory(np.linspace(0.1, 2.5, 7))}


def check_table(results: dict) -> list[dict]:
    """Fitted exponents and rates beside the predicted ones: the rows of results/tables/linear_check.csv."""
    rows = []

    def row(panel: str, check: str, measured: float, predicted: float, detail: str) -> None:
        rows.append({"panel": panel, "check": check, "measured": float(measured), "predicted": float(predicted), "detail": detail})

    so = results["step_order"]
    etas = f"one step from a sigma_w = 1 init of the depth-3 chain {WIDTHS}, eta {so['eta'][0]:g}..{so['eta'][-1]:g}"
    row("a", "gd_step_exponent", loglog_slope(so["eta"], so["sgd"]), 2, f"log-log slope of ||D' - D|| against eta, full-batch GD; {etas}")
    row("a", "gd_step_formula_error", so["formula_error"].max(), 0,
        "largest relative deviation of GD's one-step change from eta^2 (G_{l+1}^T G_{l+1} - G_l G_l^T) (float64 rounding)")
    row("a", "adam_step_exponent", loglog_slope(so["eta"], so["adam"]), 1, f"log-log slope of ||D' - D|| against eta, Keras Adam; {etas}")
    gf = results["gradient_flow"]
    row("a", "gd_fixed_flow_time_exponent", loglog_slope(gf["eta"], gf["relative_drift"]), 1,
        f"GD to flow time sum eta = {gf['flow_time']:g}: ||D(t) - D(0)|| / ||D(0)|| ~ eta t, so D is conserved as eta -> 0")
    row("a", "gd_fixed_flow_time_drift", gf["relative_drift"][-1], 0,
        f"relative drift at eta = {gf['eta'][-1]:g}, flow time {gf['flow_time']:g} (gradient flow: 0)")
    sc = results["sgd_clock"]
    slopes = {}
    for b, curve in sc["curves"].items():
        t, p = curve["T_sgd"], curve["projection"]
        slopes[b] = float(np.sum(t * p) / np.sum(t * t))
        row("b", f"sgd_clock_slope_b{b}", slopes[b], 1,
            f"drift along C per unit T_sgd = sum eta^2/b (least squares through 0), b = {b}, {len(t) - 1} records to T_sgd {t[-1]:.3g}, "
            f"from a GD minimiser; ||C|| = {sc['C_norm']:.3g}, ||D(0)|| = {sc['D0_norm']:.3g}")
    row("b", "sgd_clock_collapse", max(slopes.values()) / min(slopes.values()), 1,
        f"largest / smallest slope across b = {sorted(slopes)}: 1 = the curves collapse on T_sgd")
    dc = results["decay"]
    for (kind, value), curve in dc["curves"].items():
        predicted = 4 if kind == "l2" else 2
        row("c", f"{'l2' if kind == 'l2' else 'wd'}_rate_{value:g}", contraction_rate(curve["T"], curve["ratio"]), predicted,
            f"-d log ||D|| / d {curve['clock']}, SGD b {dc['batch_size']}, eta {dc['lr']:g}, {kind} {value:g}; exact discrete "
            f"rate without the eta^2 leak {curve['exact_rate']:.4f}")
    s = results["scalar"]
    big = np.abs(s["D0"]) > 0.1
    row("d", "scalar_gd_norm_error", np.median(np.abs(s["gd"] / s["predicted"] - 1)), 0,
        f"median |relative error| of GD's final a^2 + b^2 against sqrt(D(0)^2 + 4 p^2) over {len(s['D0'])} inits "
        f"(max {np.max(np.abs(s['gd'] / s['predicted'] - 1)):.3g}: the eta^2 leak at the largest norms)")
    for name, predicted, why in (("gd", 0, "conserved up to the eta^2 leak"), ("adam", np.nan, "no conservation law: first-order term, either sign")):
        change = np.abs(s[f"{name}_D_final"][big] / s["D0"][big] - 1)
        row("d", f"scalar_{name}_imbalance_change", np.median(change), predicted,
            f"median |D(end) / D(0) - 1|, {name}, inits with |D(0)| > 0.1 ({big.sum()}; max {change.max():.3g}): {why}")
    dev = np.abs(s["adam"] / s["predicted"] - 1)
    row("d", "scalar_adam_norm_deviation", np.median(dev[big]), np.nan,
        f"median |relative deviation| of Adam's final a^2 + b^2 from the gradient-flow law sqrt(D(0)^2 + 4 p^2), inits with "
        f"|D(0)| > 0.1 ({big.sum()}; all {len(dev)}: median {np.median(dev):.3g}); largest {dev.max():.3g} at D(0) = "
        f"{s['D0'][np.argmax(dev)]:.3g}: near the law while |D(0)| is small, well below it at large |D(0)|")
    row("d", "scalar_l2_norm_error", np.max(np.abs(s["l2"] / s["l2_predicted"] - 1)), 0,
        "largest |relative error| of GD + L2's final norm against the balanced minimiser 2 (c - 2 l2) / m: sigma_w forgotten")
    return rows
