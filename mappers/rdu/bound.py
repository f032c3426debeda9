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

import numpy as np

from hwmodels.rdu.cost import SectionProblem

PRICE_STEPS = 24  # lambda grid per decade-ish span, see _price_grid
PMU_INTERVALS = 24
MU_STEPS = 9
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

    def section_lb(self, compute: np.ndarray, mu: float) -> np.ndarray:
        """n x n: min over the SRAM share s of max(compute, SRAM ps, off-chip level) + mu x resident bytes."""
        p = self.problem
        r_s = 1.0 / p.tier_ps_per_byte["sram"]
        off_tiers = [t for t in ("hbm", "ddr") if p.tier_bytes[t] > 0]
        rates = [1.0 / p.tier_ps_per_byte[t] for t in off_tiers]
        fixed_off = [self.fixed[t] for t in off_tiers]
        total = self.items
        charge = mu * self.item_weight
        f_s = self.fixed["sram"]

        def off_level(y: np.ndarray) -> np.ndarray:
            if len(off_tiers) == 1:
                return fixed_off[0] + y / rates[0]
            (f1, f2), (r1, r2) = fixed_off, rates
            lo_f, hi_f = np.minimum(f1, f2), np.maximum(f1, f2)
            lo_r = np.where(f1 <= f2, r1, r2)
            single = lo_f + y / lo_r
            both = (y + f1 * r1 + f2 * r2) / (r1 + r2)
            return np.where(single <= hi_f, single, np.maximum(both, hi_f))

        def cost(s: np.ndarray) -> np.ndarray:
            s = np.clip(s, 0.0, total)
            level = np.maximum(compute, np.maximum(f_s + s / r_s, off_level(total - s)))
            return level + charge * s

        candidates = [np.zeros_like(total), total, (compute - f_s) * r_s]
        # where the off-chip level meets the compute time, and where it meets the SRAM time (each piece)
        y_at_compute = sum(np.maximum(0.0, compute - f) * r for f, r in zip(fixed_off, rates))
        candidates.append(total - y_at_compute)
        for f, r in zip(fixed_off, rates):
            candidates.append((f - f_s + total / r) / (1 / r_s + 1 / r))
        if len(off_tiers) == 2:
            big_r = sum(rates)
            phi = sum(f * r for f, r in zip(fixed_off, rates))
            candidates.append(((total + phi) / big_r - f_s) / (1 / r_s + 1 / big_r))
            for f in fixed_off:  # the off-chip kink: the level reaches the busier tier's fixed time
                candidates.append(total - sum(np.maximum(0.0, f - g) * r for g, r in zip(fixed_off, rates)))
        finite = np.isfinite(compute)
        safe = np.where(finite, compute, 0.0)
        compute_saved, compute = compute, safe
        best = np.min([cost(np.where(np.isfinite(c), c, 0.0)) for c in candidates], axis=0)
        return np.where(np.isfinite(compute_saved), best, np.inf)


def shortest_path(section_cost: np.ndarray, reconfig_ps: float) -> float:
    """Cheapest cover of ops 0..n-1 by consecutive sections, each costing reconfig + its entry."""
    n = section_cost.shape[0]
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    for b in range(n):
        best[b + 1] = np.min(best[: b + 1] + section_cost[: b + 1, b]) + reconfig_ps
    return float(best[n])


def latency_lower_bound(problem: SectionProblem, bounds: SectionBounds | None = None) -> float:
    """A proven lower bound (ps) on the latency of every feasible plan of ``problem``."""
    bounds = bounds or SectionBounds(problem)
    arch = problem.arch
    spill_ps = problem.tier_ps_per_byte[problem.spill_tier]
    mus = np.linspace(0.0, spill_ps, MU_STEPS)
    edges = np.unique(np.linspace(0, arch.pmus, PMU_INTERVALS + 1).astype(int))
    overall = math.inf
    for lo, hi in zip(edges[:-1], edges[1:]):
        compute = bounds.compute_lb(int(hi))
        if not np.isfinite(compute).any():
            continue
        room = (arch.pmus - int(lo)) * arch.pmu_bytes
        best = -math.inf
        for mu in mus:
            value = shortest_path(bounds.section_lb(compute, mu), problem.reconfig_ps) - mu * room
            best = max(best, value)
            if best >= overall:
                break  # this interval cannot be the minimum
        overall = min(overall, best)
    if not math.isfinite(overall):
        return overall
    # latencies are integer ps: round down, with a relative margin for the float sums at a tight bound
    return float(math.floor(overall * (1.0 - FLOAT_MARGIN)))
