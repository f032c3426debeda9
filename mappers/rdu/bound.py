"""A proven lower bound on the section-mapping latency: shortest path over cut positions with relaxed sections.

Why: CP-SAT's own bound on the 200-op graphs stays ~50 % below its incumbent, so it cannot prove a plan
optimal. The latency is a sum over sections, so any per-section lower bound that holds whatever the other
sections do turns into a lower bound on the whole by a shortest path over the cut positions of the fixed op
order. What couples sections (the SRAM that resident data shares with the largest section's PMUs) is handled
by Lagrangian relaxation, so the bound stays valid:

* **Max section PMUs.** The range [0, PMUs] is cut into intervals; for an interval [lo, hi] every section
  uses <= hi PMUs and SRAM-resident data has at most (PMUs - lo) x PMU bytes. The bound is the smallest over
  the intervals (the optimum lies in one of them).
* **Compute.** A section takes sum(fill) + max(steady) subject to its PCUs <= chip PCUs C and PMUs <= hi.
  Its ops run at once on disjoint PCUs, so with p_k the PCUs of op k (sum p_k <= C), max(steady) is at least
  the p-weighted mean sum(steady_k p_k) / sum(p_k) >= sum(steady_k p_k) / C (work conservation: it holds
  for every option, nothing is assumed about how steady x p varies with p). It is also >= steady_j for any
  op j, so for any theta in [0, 1], max(steady) >= theta steady_j + (1 - theta) sum(steady_k p_k) / C.
  Relaxing both capacities with prices (lambda per PCU, nu per PMU; adding lambda (sum p - C) <= 0 and
  nu (sum m - hi) <= 0) makes the bound separable per op:
  sum_k min_opt(fill_k + (1 - theta) steady_k p_k / C + lambda p_k + nu m_k) + [the same for j with
  theta steady_j added, minus j's own term] - lambda C - nu hi, valid for any prices, theta and j; the best
  over a price grid, THETAS and j is taken (theta = 1 is the one-op bound).
* **Traffic.** The cut-dependent traffic (spills, streams, outputs) is exact per section. The reads of
  placed items (weights, KV caches) are split fractionally between SRAM and the off-chip tiers (filled to a
  common level), each byte in SRAM charged mu picoseconds (the price of the shared SRAM room); the best split
  of each section is found exactly at the kinks of its convex cost. The bound is the best over a mu grid.

Every term is a relaxation of ``hwmodels.rdu.cost.plan_cost``, so the bound never exceeds the latency of any
feasible plan (the brute-force tests check this on small graphs).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hwmodels.rdu.cost import SectionProblem

PRICE_STEPS = 24  # lambda grid per decade-ish span, see _price_grid
PMU_INTERVALS = 24
MU_STEPS = 9
MU_REFINE = 6  # golden-section steps on mu around the grid's best
GOLDEN = 0.381966
FLOAT_MARGIN = 1e-9  # relative float error of the prefix sums, far below any reported gap
THETAS = (1.0, 0.5, 0.0)  # weights of the one-op and the PCU-area bounds on max(steady)


def _price_grid(problem: SectionProblem) -> np.ndarray:
    """(lambda ps/PCU, nu ps/PMU) pairs: zero and a log grid spanning the options' time-per-resource slopes."""
    totals = [o.fill_ps + o.steady_ps for opts in problem.options for o in opts]
    hi = max(1.0, max(totals))
    lams = np.concatenate(([0.0], np.logspace(-2, math.log10(hi), PRICE_STEPS * 2)))
    nus = np.concatenate(([0.0], np.logspace(-2, math.log10(hi), 6)))
    grid = np.array([(lam, nu) for lam in lams for nu in nus])
    return grid


class SectionBounds:
    """Per-section lower-bound ingredients, for every (first, last) op pair, as n x n arrays (upper triangle)."""

    def __init__(self, problem: SectionProblem):
        self.problem = problem
        n = problem.n
        self.n = n
        self._prices = _price_grid(problem)
        self._op_tables()
        self._traffic_tables()

    # -- compute ----------------------------------------------------------------------------------
    def _op_tables(self) -> None:
        """Per op and (theta, lambda, nu) column: g_fill = min_k(fill + (1 - theta) steady pcus / C + lambda p +
        nu m) and g_total, the same with theta x steady added (see the module docstring)."""
        p = self.problem
        grid = self._prices
        lam, nu = grid[:, 0][:, None], grid[:, 1][:, None]
        n, cap = self.n, float(p.arch.pcus)
        width = len(THETAS) * len(grid)
        self.gf = np.zeros((n, width))
        self.gt = np.zeros((n, width))
        for i, opts in enumerate(p.options):
            fill = np.array([o.fill_ps for o in opts], dtype=float)[None, :]
            steady = np.array([o.steady_ps for o in opts], dtype=float)[None, :]
            pcus = np.array([o.pcus for o in opts], dtype=float)[None, :]
            res = lam * pcus + nu * np.array([o.pmus for o in opts], dtype=float)[None, :]
            for t, theta in enumerate(THETAS):
                area = (1.0 - theta) * steady * pcus / cap
                cols = slice(t * len(grid), (t + 1) * len(grid))
                self.gf[i, cols] = (fill + area + res).min(axis=1)
                self.gt[i, cols] = (fill + area + theta * steady + res).min(axis=1)
        self.prefix_gf = np.vstack([np.zeros(width), np.cumsum(self.gf, axis=0)])
        self.min_pmus = np.array([min(o.pmus for o in opts) for opts in p.options])
        self.min_pcus = np.array([min(o.pcus for o in opts) for opts in p.options])

    def _compute_tables(self) -> None:
        """Per section and PMU price nu: the best over theta and PCU prices of the relaxed compute, before nu x cap."""
        p, n, grid = self.problem, self.n, self._prices
        lams, nus = np.unique(grid[:, 0]), np.unique(grid[:, 1])
        order = np.lexsort((grid[:, 1], grid[:, 0]))  # grid rows as (lambda, nu) blocks
        order = np.concatenate([t * len(grid) + order for t in range(len(THETAS))])  # (theta, lambda, nu) blocks
        diff = (self.gt - self.gf)[:, order]
        prefix = self.prefix_gf[:, order]
        lam_cost = (np.tile(grid[:, 0], len(THETAS))[order] * p.arch.pcus)[None, :]
        blocks = len(THETAS) * len(lams)
        self._by_nu = np.full((n, n, len(nus)), -np.inf)
        self._nus = grid[order[: len(grid)], 1].reshape(len(lams), len(nus))[0]
        for a in range(n):
            sums = prefix[a + 1 :] - prefix[a]
            best_j = np.maximum.accumulate(diff[a:], axis=0)
            value = (sums + best_j - lam_cost).reshape(n - a, blocks, len(nus)).max(axis=1)
            self._by_nu[a, a:] = value

    def compute_lb(self, pmu_cap: int) -> np.ndarray:
        """n x n: lower bound of section [a, b]'s compute with at most ``pmu_cap`` PMUs (inf where it cannot fit)."""
        p, n = self.problem, self.n
        if not hasattr(self, "_by_nu"):
            self._compute_tables()
        lb = (self._by_nu - self._nus[None, None, :] * pmu_cap).max(axis=2)
        cum_pmus = np.concatenate(([0], np.cumsum(self.min_pmus)))
        cum_pcus = np.concatenate(([0], np.cumsum(self.min_pcus)))
        fits = (cum_pmus[None, 1:] - cum_pmus[:-1, None] <= pmu_cap) & (
            cum_pcus[None, 1:] - cum_pcus[:-1, None] <= p.arch.pcus
        )
        upper = np.triu(np.ones((n, n), dtype=bool))
        return np.where(fits & upper, np.maximum(lb, 0.0), np.inf)

    # -- traffic ----------------------------------------------------------------------------------
    def _traffic_tables(self) -> None:
        """Fixed per-tier picoseconds of every section (n x n per tier) and its placed-item read bytes."""
        p, n = self.problem, self.n
        spill = p.spill_tier
        src = np.array([e.src for e in p.edges], dtype=int)
        dst = np.array([e.dst for e in p.edges], dtype=int)
        off = np.array([p.bytes_ps(spill, e.nbytes) for e in p.edges], dtype=float)
        on = np.array([p.bytes_ps("sram", 2 * e.nbytes) for e in p.edges], dtype=float)
        w_src = np.array([w[0] for w in p.writes], dtype=int)
        w_last = np.array([w[1] for w in p.writes], dtype=int)
        w_ps = np.array([p.bytes_ps(spill, w[2]) for w in p.writes], dtype=float)
        fixed_op = np.zeros(n)
        for op, nbytes in p.fixed_reads:
            fixed_op[op] += p.bytes_ps(spill, nbytes)
        item_bytes = np.zeros(n)
        item_weight = np.ones(n)  # resident bytes per byte read: < 1 for an item read by several ops
        for item in p.placeables:
            total = sum(nb for _, nb in item.readers) or 1
            for op, nbytes in item.readers:
                item_bytes[op] += nbytes
                item_weight[op] = min(item_weight[op], item.nbytes / total)
        spill_tab = np.zeros((n, n))
        sram_tab = np.zeros((n, n))
        items = np.zeros((n, n))
        weight = np.ones((n, n))
        for a in range(n):
            outside = src < a
            reads = np.bincount(dst[outside], weights=off[outside], minlength=n)
            streams = np.bincount(dst[~outside], weights=on[~outside], minlength=n)
            mine = w_src >= a
            written = np.bincount(w_src[mine], weights=w_ps[mine], minlength=n)
            internal = mine & (w_last >= 0)
            taken_back = np.bincount(w_last[internal], weights=w_ps[internal], minlength=n)
            spill_tab[a, a:] = np.cumsum((reads + written - taken_back + fixed_op)[a:])
            sram_tab[a, a:] = np.cumsum(streams[a:])
            items[a, a:] = np.cumsum(item_bytes[a:])
            weight[a, a:] = np.minimum.accumulate(item_weight[a:])
        self.fixed = {"sram": sram_tab, "hbm": np.zeros((n, n)), "ddr": np.zeros((n, n))}
        self.fixed[spill] = spill_tab
        self.items = items
        self.item_weight = weight

    def _placement_tables(self) -> None:
        """What ``section_lb`` needs that neither the compute nor mu changes, on the upper triangle: the off-chip
        tiers and rates, and the candidate SRAM shares that do not depend on the compute with their levels."""
        p, n = self.problem, self.n
        self._tri = np.triu_indices(n)
        tri = self._tri
        self._r_s = 1.0 / p.tier_ps_per_byte["sram"]
        off_tiers = [t for t in ("hbm", "ddr") if p.tier_bytes[t] > 0]
        self._rates = [1.0 / p.tier_ps_per_byte[t] for t in off_tiers]
        self._fixed_off = [self.fixed[t][tri] for t in off_tiers]
        self._total = self.items[tri]
        self._weight = self.item_weight[tri]
        self._f_s = self.fixed["sram"][tri]
        rates, fixed_off, total, f_s, r_s = self._rates, self._fixed_off, self._total, self._f_s, self._r_s
        shares = [np.zeros_like(total), total]
        for f, r in zip(fixed_off, rates):  # where the SRAM time meets each off-chip tier's level
            shares.append((f - f_s + total / r) / (1 / r_s + 1 / r))
        if len(rates) == 2:
            big_r = sum(rates)
            phi = sum(f * r for f, r in zip(fixed_off, rates))
            shares.append(((total + phi) / big_r - f_s) / (1 / r_s + 1 / big_r))
            for f in fixed_off:  # the off-chip kink: the level reaches the busier tier's fixed time
                shares.append(total - sum(np.maximum(0.0, f - g) * r for g, r in zip(fixed_off, rates)))
        shares = [np.clip(np.where(np.isfinite(c), c, 0.0), 0.0, total) for c in shares]
        self._fixed_shares = [(c, self._memory_level(c)) for c in shares]

    def _off_level(self, y: np.ndarray) -> np.ndarray:
        """The off-chip tiers' time when they read ``y`` bytes of placed items at once, filled to a common level."""
        if len(self._rates) == 1:
            return self._fixed_off[0] + y / self._rates[0]
        (f1, f2), (r1, r2) = self._fixed_off, self._rates
        lo_f, hi_f = np.minimum(f1, f2), np.maximum(f1, f2)
        lo_r = np.where(f1 <= f2, r1, r2)
        single = lo_f + y / lo_r
        both = (y + f1 * r1 + f2 * r2) / (r1 + r2)
        return np.where(single <= hi_f, single, np.maximum(both, hi_f))

    def _memory_level(self, share: np.ndarray) -> np.ndarray:
        """The memory time of a section with ``share`` of its placed-item reads in SRAM."""
        return np.maximum(self._f_s + share / self._r_s, self._off_level(self._total - share))

    def section_lb(self, compute: np.ndarray, mu: float) -> np.ndarray:
        """n x n: min over the SRAM share s of max(compute, SRAM ps, off-chip level) + mu x resident bytes.

        The minimum of this convex piecewise-linear function of s lies at one of its kinks: the shares where
        two of its pieces meet (those that depend on the compute are computed here, the others once)."""
        if not hasattr(self, "_tri"):
            self._placement_tables()
        tri = self._tri
        full = compute[tri]
        finite = np.isfinite(full)
        comp = np.where(finite, full, 0.0)
        charge = mu * self._weight
        total = self._total
        best = np.full(len(comp), np.inf)
        for share, level in self._fixed_shares:
            np.minimum(best, np.maximum(comp, level) + charge * share, out=best)
        at_compute = total - sum(np.maximum(0.0, comp - f) * r for f, r in zip(self._fixed_off, self._rates))
        for share in ((comp - self._f_s) * self._r_s, at_compute):
            share = np.clip(share, 0.0, total)
            np.minimum(best, np.maximum(comp, self._memory_level(share)) + charge * share, out=best)
        out = np.full((self.n, self.n), np.inf)
        out[tri] = np.where(finite, best, np.inf)
        return out


def shortest_path_cuts(section_cost: np.ndarray, reconfig_ps: float) -> tuple[float, list[bool]]:
    """Cheapest cover of ops 0..n-1 by consecutive sections, each costing reconfig + its entry: its cost and its
    section starts (all False where nothing covers the ops)."""
    n = section_cost.shape[0]
    best = np.full(n + 1, np.inf)
    back = np.zeros(n + 1, dtype=np.int64)
    best[0] = 0.0
    for b in range(n):
        totals = best[: b + 1] + section_cost[: b + 1, b]
        a = int(np.argmin(totals))
        best[b + 1] = totals[a] + reconfig_ps
        back[b + 1] = a
    starts = [False] * n
    if np.isfinite(best[n]):
        b = n
        while b > 0:
            a = int(back[b])
            starts[a] = True
            b = a
    return float(best[n]), starts


@dataclass
class IntervalDual:
    """The bound of one max-section-PMU interval [lo, hi] at its best SRAM price mu, with the cover attaining it."""

    lo: int
    hi: int
    value: float
    mu: float
    starts: list[bool]
    refined: bool = False  # mu searched by golden section around the grid's best


def interval_dual(
    problem: SectionProblem,
    bounds: SectionBounds,
    lo: int,
    hi: int,
    compute_lb: Callable[[int], np.ndarray] | None = None,
    stop_above: float = math.inf,
    refine: bool = True,
) -> IntervalDual | None:
    """The bound of the plans whose largest section uses lo..hi PMUs: the best over the SRAM prices mu (a grid,
    then, with ``refine``, golden-section steps around its best: the bound is concave in mu), and its cover.
    The search stops once the bound reaches ``stop_above`` (the interval cannot hold the minimum then).
    None: nothing fits."""
    arch = problem.arch
    compute = bounds.compute_lb(int(hi))
    if compute_lb is not None:
        compute = np.maximum(compute, compute_lb(int(hi)))
    if not np.isfinite(compute).any():
        return None
    room = (arch.pmus - int(lo)) * arch.pmu_bytes
    spill_ps = problem.tier_ps_per_byte[problem.spill_tier]
    best = IntervalDual(int(lo), int(hi), -math.inf, 0.0, [])

    def value(mu: float) -> float:
        nonlocal best
        path, starts = shortest_path_cuts(bounds.section_lb(compute, mu), problem.reconfig_ps)
        result = path - mu * room
        if result > best.value:
            best = IntervalDual(int(lo), int(hi), result, float(mu), starts)
        return result

    mus = np.linspace(0.0, spill_ps, MU_STEPS)
    values = []
    for mu in mus:
        values.append(value(float(mu)))
        if best.value >= stop_above:
            return best
    if not refine:
        return best
    k = int(np.argmax(values))
    a, b = float(mus[max(0, k - 1)]), float(mus[min(len(mus) - 1, k + 1)])
    for _ in range(MU_REFINE):  # golden section on [a, b]
        c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        if value(c) >= value(d):
            b = d
        else:
            a = c
        if best.value >= stop_above:
            break
    best.refined = True
    return best if math.isfinite(best.value) else None


def pmu_intervals(problem: SectionProblem, count: int = PMU_INTERVALS) -> list[tuple[int, int]]:
    """The range [0, PMUs] cut into ``count`` intervals of the largest section's PMUs."""
    edges = np.unique(np.linspace(0, problem.arch.pmus, count + 1).astype(int))
    return [(int(lo), int(hi)) for lo, hi in zip(edges[:-1], edges[1:])]


def interval_duals(
    problem: SectionProblem,
    bounds: SectionBounds | None = None,
    compute_lb: Callable[[int], np.ndarray] | None = None,
    refine: bool = True,
) -> list[IntervalDual]:
    """Per PMU interval: the bound and its cover (``interval_dual``). The bound of the problem is the least of
    them; an interval stops its search once it reaches the least so far."""
    bounds = bounds or SectionBounds(problem)
    overall = math.inf
    out: list[IntervalDual] = []
    for lo, hi in pmu_intervals(problem):
        dual = interval_dual(problem, bounds, lo, hi, compute_lb, overall, refine)
        if dual is not None:
            out.append(dual)
            overall = min(overall, dual.value)
    return out


def latency_lower_bound(
    problem: SectionProblem,
    bounds: SectionBounds | None = None,
    compute_lb: Callable[[int], np.ndarray] | None = None,
) -> float:
    """A proven lower bound (ps) on the latency of every feasible plan of ``problem``.

    ``compute_lb(pmu_cap)`` may give a tighter per-section compute bound (n x n), e.g. the threshold bound of
    ``mappers.rdu.threshold``; the larger of it and this module's is used."""
    duals = interval_duals(problem, bounds, compute_lb)
    return rounded_bound(min((d.value for d in duals), default=math.inf))


def rounded_bound(value: float) -> float:
    """Latencies are integer ps: round down, with a relative margin for the float sums at a tight bound."""
    if not math.isfinite(value):
        return value
    return float(math.floor(value * (1.0 - FLOAT_MARGIN)))
