"""Section compute by steady-time threshold: a tight lower bound and a matching feasible allocation per section.

Why: a section runs its ops at once on disjoint PCUs and takes sum(fill) + max(steady). The max is exactly one
option's steady time, so enumerating the threshold T over the distinct steady times of all options is exact:
for a fixed T every op may only use options with steady <= T (a suffix of its options, fastest last), and the
section's compute is T + (the least sum of fills that fits the PCUs and PMUs). That inner problem is a
multiple-choice knapsack; its Lagrangian relaxation on the PCUs (each op takes the option minimising
fill + lambda x PCUs) gives, for every price lambda,

* a lower bound: sum(min(fill + lambda p)) - lambda x C (any lambda >= 0; the best over a grid is taken), and
* a feasible allocation when the chosen options fit (sum p <= C, sum PMUs <= the section's PMU cap): T plus its
  fills is an upper bound on the section's compute.

Both are evaluated for every section (a, b) of the fixed op order at once with prefix sums over the ops. Only
a window of thresholds above the least feasible one is enumerated; beyond it the bound uses the window's last
threshold plus the least fills (still valid), so nothing is cut off.
"""

from __future__ import annotations

import numpy as np

from hwmodels.rdu.cost import SectionProblem

SINGLE_THRESHOLDS = 8  # thresholds taken one by one above a section's least feasible one; then growing groups
GROUP_GROWTH = 1.35
PMU_BINDING = 1.25  # PMUs are priced too when 2 x the cap is below this many times the PCUs
PRICE_RATIO = 1.02  # PCU prices (ps per PCU) at the options' ties, rounded to this log grid
BIG = 1e30
RESOURCES = ("pcus", "pmus")  # priced in turn: a section's PCUs <= the chip's, its PMUs <= the cap


class ThresholdTables:
    """Per op and threshold: the options allowed (a suffix of the op's options), their fills and resources."""

    def __init__(self, problem: SectionProblem):
        self.problem = problem
        n = problem.n
        width = max(len(opts) for opts in problem.options)
        self.width = width

        def padded(attr: str, fill_value: float) -> np.ndarray:
            table = np.full((n, width), fill_value, dtype=float)
            for i, opts in enumerate(problem.options):
                table[i, : len(opts)] = [getattr(o, attr) for o in opts]
            return table

        self.fill = padded("fill_ps", BIG)
        self.steady = padded("steady_ps", BIG)
        self.pcus = padded("pcus", BIG)
        self.pmus = padded("pmus", BIG)
        self.count = np.array([len(opts) for opts in problem.options])
        steady_values = np.unique(np.concatenate([[o.steady_ps for o in opts] for opts in problem.options]))
        self.thresholds = steady_values.astype(float)
        # first allowed option of op k at threshold j (steady is non-increasing along an op's options)
        first = np.empty((n, len(self.thresholds)), dtype=np.int64)
        for i, opts in enumerate(problem.options):
            steady = np.array([o.steady_ps for o in opts], dtype=float)
            # options allowed: steady <= T; steady is non-increasing, so those form a suffix
            first[i] = len(opts) - np.searchsorted(steady[::-1], self.thresholds, side="right")
        self.first = first  # == count: no option allowed
        allowed = first < self.count[:, None]
        self.blocked_prefix = _prefix((~allowed).astype(float))
        rows = np.arange(n)[:, None]
        safe = np.minimum(first, self.count[:, None] - 1)
        self.min_pcus_prefix = _prefix(np.where(allowed, self.pcus[rows, safe], 0.0))
        self.min_pmus_prefix = _prefix(np.where(allowed, self.pmus[rows, safe], 0.0))
        self.least_fill_prefix = np.concatenate(([0.0], np.cumsum(self.fill.min(axis=1))))
        self.prices = {resource: self._price_grid(resource) for resource in RESOURCES}

    def resource(self, name: str) -> np.ndarray:
        return self.pcus if name == "pcus" else self.pmus

    def _price_grid(self, resource: str) -> np.ndarray:
        """Zero, the prices (ps per unit of ``resource``) where neighbouring options of an op tie (rounded to a
        fine log grid), and one price above every tie (where each op takes its fewest units)."""
        real = self.fill < BIG
        units = self.resource(resource)
        d_fill = self.fill[:, :-1] - self.fill[:, 1:]
        d_units = units[:, 1:] - units[:, :-1]
        both = real[:, :-1] & real[:, 1:] & (d_units > 0)
        ties = (d_fill[both] / d_units[both]) if both.any() else np.array([1.0])
        ties = ties[ties > 0]
        if not len(ties):
            return np.array([0.0, 1.0])
        top = float(np.max(np.where(real, self.fill, 0.0)) + 1.0)
        rounded = np.unique(np.round(np.log(ties) / np.log(PRICE_RATIO)))
        grid = PRICE_RATIO**rounded
        return np.unique(np.concatenate(([0.0], grid, [top])))

    def price_tables(self, resource: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per price of ``resource``: prefix sums over the ops of the chosen options' fills, PCUs and PMUs
        ((L, n + 1, J) each)."""
        rows = np.arange(self.problem.n)[:, None]
        shape = (len(self.prices[resource]), self.problem.n + 1, len(self.thresholds))
        fills, pcus, pmus = np.zeros(shape), np.zeros(shape), np.zeros(shape)
        for k, price in enumerate(self.prices[resource]):
            choice = self.choice_at_price(float(price), resource)
            fills[k, 1:] = np.cumsum(self.fill[rows, choice], axis=0)
            pcus[k, 1:] = np.cumsum(self.pcus[rows, choice], axis=0)
            pmus[k, 1:] = np.cumsum(self.pmus[rows, choice], axis=0)
        return fills, pcus, pmus

    def choice_at_price(self, price: float, resource: str) -> np.ndarray:
        """n x J: the option each op takes at each threshold for the price of ``resource`` (argmin fill + price x
        units)."""
        units = self.resource(resource)
        value = self.fill + price * np.where(units < BIG, units, 0.0)
        value = np.where(self.fill < BIG, value, np.inf)
        # suffix argmin along the options
        width = self.width
        best = np.empty_like(value, dtype=np.int64)
        best[:, width - 1] = width - 1
        running = value[:, width - 1].copy()
        for i in range(width - 2, -1, -1):
            better = value[:, i] <= running  # ties: fewer units
            best[:, i] = np.where(better, i, best[:, i + 1])
            running = np.where(better, value[:, i], running)
        safe = np.minimum(self.first, self.count[:, None] - 1)
        return np.take_along_axis(best, safe, axis=1)


def _prefix(table: np.ndarray) -> np.ndarray:
    return np.vstack([np.zeros((1, table.shape[1])), np.cumsum(table, axis=0)])


class ThresholdBounds:
    """Lower and upper bounds of every section's compute (n x n tables, upper triangle, inf where nothing fits),
    for any PMU cap. Each (section, threshold) gets two Lagrangian bounds, one pricing PCUs (the chip's, fixed)
    and one pricing PMUs (the cap's); the better one counts."""

    def __init__(self, problem: SectionProblem, tables: ThresholdTables | None = None):
        t = tables or ThresholdTables(problem)
        self.tables = t
        self.problem = problem
        n, cap_pcus = problem.n, float(problem.arch.pcus)
        thresholds = t.thresholds
        count_j = len(thresholds)
        a_idx, b_idx = np.triu_indices(n)
        self.a_idx, self.b_idx = a_idx, b_idx
        lo_row, hi_row = a_idx, b_idx + 1
        # least feasible threshold of each section: every op has an option and the least PCUs fit
        blocked = t.blocked_prefix[hi_row] - t.blocked_prefix[lo_row]
        least_pcus = t.min_pcus_prefix[hi_row] - t.min_pcus_prefix[lo_row]
        ok = (blocked < 0.5) & (least_pcus <= cap_pcus)
        first_ok = np.where(ok.any(axis=1), ok.argmax(axis=1), count_j)
        # threshold groups above the least feasible one: single ones first, then growing ranges; a group
        # [start, next start) is bounded by its smallest threshold plus the fills its largest one allows
        offsets = _group_offsets(count_j)
        starts = first_ok[:, None] + offsets[None, :-1]
        self.valid = starts < count_j
        self.cols = np.minimum(first_ok[:, None] + offsets[None, 1:] - 1, count_j - 1)  # where fills are taken
        self.t_cols = thresholds[np.minimum(starts, count_j - 1)]  # the group's least max-steady
        self.t_upper = thresholds[self.cols]  # an allocation taken at cols has max-steady <= this
        self._lo, self._hi = lo_row[:, None], hi_row[:, None]
        self.min_pmus = t.min_pmus_prefix[self._hi, self.cols] - t.min_pmus_prefix[self._lo, self.cols]
        self.least_fill = (t.least_fill_prefix[hi_row] - t.least_fill_prefix[lo_row])[:, None]
        self.priced = {resource: t.price_tables(resource) for resource in RESOURCES}
        self._plane = (n + 1) * count_j  # flat offsets into the (price, op prefix, threshold) tables
        self._hi_flat = self._hi * count_j + self.cols
        self._lo_flat = self._lo * count_j + self.cols
        self.pcu_lagrange = self._lagrange("pcus", cap_pcus)
        self._lower: dict[int, np.ndarray] = {}

    def _at(self, table: np.ndarray, k: np.ndarray) -> np.ndarray:
        """Per (section, threshold column): the sum over the section's ops in price table ``table`` at price ``k``."""
        flat = table.reshape(-1)
        base = k * self._plane
        return flat[base + self._hi_flat] - flat[base + self._lo_flat]

    def _lagrange(self, resource: str, cap: float) -> np.ndarray:
        """Per (section, threshold): the Lagrangian bound on the fills with ``resource`` <= ``cap`` priced. It is
        concave in the price; on the grid its maximum sits where the resource crosses the cap."""
        fills, pcus, pmus = self.priced[resource]
        units = pcus if resource == "pcus" else pmus
        prices = self.tables.prices[resource]
        k_fit = self._smallest_fitting(resource, {resource: cap})
        best = np.full(self.cols.shape, -np.inf)
        for k in (k_fit - 1, k_fit, np.zeros_like(k_fit)):
            k = np.maximum(k, 0)
            np.maximum(best, self._at(fills, k) + prices[k] * (self._at(units, k) - cap), out=best)
        return np.maximum(best, self.least_fill)

    def _smallest_fitting(self, resource: str, caps: dict[str, float]) -> np.ndarray:
        """Per (section, threshold): the least price index of ``resource`` whose choice fits ``caps`` (the units
        fall as the price rises)."""
        fills, pcus, pmus = self.priced[resource]
        tables = {"pcus": pcus, "pmus": pmus}
        lo = np.zeros(self.cols.shape, dtype=np.int64)
        hi = np.full(self.cols.shape, len(self.tables.prices[resource]) - 1, dtype=np.int64)
        while True:
            open_ = lo < hi
            if not open_.any():
                return lo
            mid = (lo + hi) // 2
            fits = np.ones(self.cols.shape, dtype=bool)
            for name, cap in caps.items():
                fits &= self._at(tables[name], mid) <= cap
            hi = np.where(open_ & fits, mid, hi)
            lo = np.where(open_ & ~fits, mid + 1, lo)

    def lower(self, pmu_cap: int) -> np.ndarray:
        """A proven lower bound on each section's compute when it may use at most ``pmu_cap`` PMUs."""
        if pmu_cap not in self._lower:
            pmu_ok = self.valid & (self.min_pmus <= pmu_cap)
            fills = self.pcu_lagrange
            if 2 * pmu_cap < PMU_BINDING * self.problem.arch.pcus:  # PMUs may bind: price them too
                fills = np.maximum(fills, self._lagrange("pmus", float(pmu_cap)))
            value = np.where(pmu_ok, self.t_cols + fills, np.inf).min(axis=1)
            if len(self._lower) > 64:
                self._lower.clear()
            self._lower[pmu_cap] = _square(self.problem.n, self.a_idx, self.b_idx, value)
        return self._lower[pmu_cap]

    def upper(self, pmu_cap: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(compute, threshold index, price index) of a feasible allocation of each section within ``pmu_cap``,
        priced by the binding resource (PMUs when a PMU serves two PCUs and the cap is at most half the PCUs)."""
        resource = "pmus" if 2 * pmu_cap <= self.problem.arch.pcus else "pcus"
        fills, pcus, pmus = self.priced[resource]
        caps = {"pcus": float(self.problem.arch.pcus), "pmus": float(pmu_cap)}
        k_cap = self._smallest_fitting(resource, caps)
        fits = self.valid & (self._at(pcus, k_cap) <= caps["pcus"]) & (self._at(pmus, k_cap) <= pmu_cap)
        upper_all = np.where(fits, self.t_upper + self._at(fills, k_cap), np.inf)
        j_best = upper_all.argmin(axis=1)
        rows = np.arange(len(j_best))
        n = self.problem.n
        return (
            _square(n, self.a_idx, self.b_idx, upper_all[rows, j_best]),
            _square(n, self.a_idx, self.b_idx, self.cols[rows, j_best].astype(float)),
            _square(n, self.a_idx, self.b_idx, k_cap[rows, j_best].astype(float)),
        )

    def promising_thresholds(self, first: int, last: int, pmu_cap: int) -> np.ndarray:
        """The thresholds of section [first, last] whose Lagrangian lower bound is not above the best Lagrangian
        allocation within ``pmu_cap``: the only ones an optimum can have (sorted)."""
        caps = {"pcus": float(self.problem.arch.pcus), "pmus": float(pmu_cap)}
        lower = np.full(len(self.tables.thresholds), -np.inf)
        upper = np.full(len(self.tables.thresholds), np.inf)
        for resource in RESOURCES:
            fills, pcus, pmus = (table[:, last + 1] - table[:, first] for table in self.priced[resource])
            units = pcus if resource == "pcus" else pmus
            prices = self.tables.prices[resource][:, None]
            np.maximum(lower, (fills + prices * (units - caps[resource])).max(axis=0), out=lower)
            fits = (pcus <= caps["pcus"]) & (pmus <= caps["pmus"])
            np.minimum(upper, np.where(fits, fills, np.inf).min(axis=0), out=upper)
        open_ = (self.tables.blocked_prefix[last + 1] - self.tables.blocked_prefix[first]) < 0.5
        thresholds = self.tables.thresholds
        lower = np.where(open_, thresholds + lower, np.inf)
        best = float(np.min(np.where(open_, thresholds + upper, np.inf)))
        if not np.isfinite(best):  # no Lagrangian allocation fits: every threshold that might
            return np.flatnonzero(np.isfinite(lower))
        return np.flatnonzero(lower <= best * (1 + 1e-9))

    def upper_choice(self, pmu_cap: int, first: int, last: int, threshold: int, price: int) -> list[int]:
        """The options of ``upper``'s allocation of section [first, last]."""
        resource = "pmus" if 2 * pmu_cap <= self.problem.arch.pcus else "pcus"
        table = self.tables.choice_at_price(float(self.tables.prices[resource][price]), resource)
        return [int(table[i, threshold]) for i in range(first, last + 1)]


def _group_offsets(count: int) -> np.ndarray:
    """Offsets of the threshold groups' starts above the least feasible threshold, ending at ``count``."""
    offsets = list(range(min(SINGLE_THRESHOLDS, count) + 1))
    step = 1.0
    while offsets[-1] < count:
        step *= GROUP_GROWTH
        offsets.append(offsets[-1] + max(1, int(step)))
    if offsets[-1] < count:
        offsets.append(count)
    return np.array(offsets, dtype=np.int64)


def _square(n: int, a_idx: np.ndarray, b_idx: np.ndarray, values: np.ndarray) -> np.ndarray:
    table = np.full((n, n), np.inf)
    table[a_idx, b_idx] = values
    return table


def exact_section(problem: SectionProblem, bounds: ThresholdBounds, first: int, last: int, pmu_cap: int):
    """The least compute of section [first, last] within the chip's PCUs and ``pmu_cap`` PMUs: a knapsack over
    the binding resource for every threshold, the other one checked.

    A PMU serves at most two PCUs, so within ``pmu_cap`` <= PCUs / 2 PMUs the PCUs always fit and the knapsack
    runs over PMUs; otherwise it runs over PCUs. Returns (compute, choice, fits): compute is inf when nothing
    fits; with ``fits`` the allocation is the section's optimum, without it the value is still a lower bound."""
    t = bounds.tables
    pcu_cap = int(problem.arch.pcus)
    by_pmus = 2 * pmu_cap <= pcu_cap
    cap = int(pmu_cap) if by_pmus else pcu_cap
    resource = t.pmus if by_pmus else t.pcus
    ops = range(first, last + 1)
    cols = bounds.promising_thresholds(first, last, pmu_cap)
    if not len(cols) or cap <= 0:
        return np.inf, [], False
    dp = np.full((len(cols), cap + 1), np.inf)
    dp[:, 0] = 0.0
    picks = []
    for i in ops:
        allowed_from = t.first[i, cols]  # first allowed option per threshold
        new = np.full_like(dp, np.inf)
        pick = np.full(dp.shape, -1, dtype=np.int16)
        for o in range(int(t.count[i])):
            r = int(resource[i, o])
            if r > cap:
                continue
            cand = np.full_like(dp, np.inf)
            cand[:, r:] = dp[:, : cap + 1 - r] + t.fill[i, o]
            cand[o < allowed_from] = np.inf
            better = cand < new
            new = np.where(better, cand, new)
            pick = np.where(better, o, pick)
        dp = new
        picks.append(pick)
    values = t.thresholds[cols] + dp.min(axis=1)
    j = int(np.argmin(values))
    if not np.isfinite(values[j]):
        return np.inf, [], False
    c = int(np.argmin(dp[j]))
    choice = []
    for i, pick in zip(reversed(list(ops)), reversed(picks)):
        o = int(pick[j, c])
        choice.append(o)
        c -= int(resource[i, o])
    choice.reverse()
    pcus = sum(int(t.pcus[i, o]) for i, o in zip(ops, choice))
    pmus = sum(int(t.pmus[i, o]) for i, o in zip(ops, choice))
    return float(values[j]), choice, pcus <= pcu_cap and pmus <= pmu_cap
