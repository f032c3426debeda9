"""Tier placement for fixed sections and allocations: a fast local search and an exact CP-SAT placement.

Why: once the cuts and each op's PCUs/PMUs are fixed, a plan's latency depends only on where the placed items
(weights, KV caches) live: on chip within the SRAM the sections leave, or off chip in HBM and DDR, which are
read at once (a memory-bound section balances them). ``place_by_gain`` gets close by moving and swapping items;
``place_exact`` solves the same question exactly as a small CP-SAT model (items x tiers, one max per section).
"""

from __future__ import annotations

import numpy as np
from ortools.sat.python import cp_model

from hwmodels.rdu.cost import TIERS, Plan, SectionProblem, plan_cost

PLACE_TIME_S = 0.2  # CP-SAT deterministic time of an exact placement (most prove optimality well within)


def place_by_gain(problem: SectionProblem, starts: list[bool], choice: list[int]) -> dict[str, str]:
    """Tiers for fixed sections and allocations, by local search on the plan's latency: start off chip
    (HBM, then DDR, by capacity); then, while a move shortens the plan, move one item: on chip the one that saves
    the most latency per byte of the SRAM left, off chip (HBM <-> DDR, both read at once) the one that saves the
    most; finally on chip any item that costs no latency there (its reads take less energy)."""
    arch = problem.arch
    plan = Plan(starts, choice, {})
    sections = plan.sections()
    section_of = {i: s for s, (a, b) in enumerate(sections) for i in range(a, b + 1)}
    section_pmus = max(sum(problem.options[i][choice[i]].pmus for i in range(a, b + 1)) for a, b in sections)
    room = np.array(
        [(arch.pmus - section_pmus) * arch.pmu_bytes, problem.tier_bytes["hbm"], problem.tier_bytes["ddr"]], dtype=float
    )
    items = [p for p in problem.placeables]
    nbytes = np.array([p.nbytes for p in items], dtype=float)
    tier = np.zeros(len(items), dtype=np.int64)
    for k in sorted(range(len(items)), key=lambda k: (items[k].nbytes, items[k].name)):
        t = next((t for t in (1, 2, 0) if 0 < nbytes[k] <= room[t]), 0)
        room[t] -= nbytes[k]
        tier[k] = t
    plan.tiers = {p.name: TIERS[t] for p, t in zip(items, tier)}
    cost = plan_cost(problem, plan)
    compute = np.array([s.compute_ps for s in cost.sections], dtype=float)
    tier_ps = np.array([[s.tier_ps[t] for t in TIERS] for s in cost.sections], dtype=float)
    # one row per (item, section it is read in): the picoseconds its reads take in each tier
    rows: dict[tuple[int, int], np.ndarray] = {}
    for k, item in enumerate(items):
        for op, read in item.readers:
            row = rows.setdefault((k, section_of[op]), np.zeros(len(TIERS)))
            row += [problem.bytes_ps(t, read) for t in TIERS]
    row_item = np.array([k for k, _ in rows], dtype=np.int64)
    row_section = np.array([s for _, s in rows], dtype=np.int64)
    row_ps = np.array(list(rows.values())).reshape(len(rows), len(TIERS))
    movable = nbytes > 0

    def gains() -> np.ndarray:
        """items x tiers: latency saved by moving each item to each tier."""
        here = tier_ps[row_section]  # rows x tiers
        now = np.maximum(compute[row_section], here.max(axis=1))
        out = np.zeros((len(items), len(TIERS)))
        for to in range(len(TIERS)):
            after = here.copy()
            after[np.arange(len(row_item)), tier[row_item]] -= row_ps[np.arange(len(row_item)), tier[row_item]]
            after[:, to] += row_ps[:, to]
            saved = now - np.maximum(compute[row_section], after.max(axis=1))
            np.add.at(out[:, to], row_item, saved)
        out[np.arange(len(items)), tier] = -np.inf
        out[~movable] = -np.inf
        out[nbytes[:, None] > room[None, :]] = -np.inf
        return out

    def move(k: int, to: int) -> None:
        mine = row_item == k
        tier_ps[row_section[mine], tier[k]] -= row_ps[mine, tier[k]]
        tier_ps[row_section[mine], to] += row_ps[mine, to]
        room[tier[k]] += nbytes[k]
        room[to] -= nbytes[k]
        tier[k] = to

    single = np.bincount(row_item, minlength=len(items)) == 1  # items read in one section only

    def best_swap() -> tuple[int, int, float]:
        """The pair of one-section items in different tiers whose exchange saves the most latency."""
        best = (-1, -1, 0.0)
        for s in range(len(compute)):
            mine = np.flatnonzero((row_section == s) & single[row_item] & movable[row_item])
            if len(mine) < 2:
                continue
            k = row_item[mine]
            t = tier[k]
            r = row_ps[mine]  # m x tiers
            own = r[np.arange(len(k)), t]  # each item's ps in its own tier
            one_hot = np.eye(len(TIERS))[t]  # m x tiers
            r_at = r[:, t]  # r_at[x, y]: x's ps in y's tier
            after = (
                tier_ps[s][None, None, :]
                - (own[:, None] * one_hot)[:, None, :]  # x leaves its tier
                + r_at[:, :, None] * one_hot[None, :, :]  # x enters y's tier
                - (own[:, None] * one_hot)[None, :, :]  # y leaves its tier
                + r_at.T[:, :, None] * one_hot[:, None, :]  # y enters x's tier
            )
            saved = max(compute[s], tier_ps[s].max()) - np.maximum(compute[s], after.max(axis=2))
            diff = nbytes[k][:, None] - nbytes[k][None, :]  # x leaves tier t[x] for t[y], y the other way
            fits = (room[t][:, None] + diff >= 0) & (room[t][None, :] - diff >= 0) & (t[:, None] != t[None, :])
            saved = np.where(fits, saved, 0.0)
            x, y = np.unravel_index(int(np.argmax(saved)), saved.shape)
            if saved[x, y] > best[2]:
                best = (int(k[x]), int(k[y]), float(saved[x, y]))
        return best

    if len(row_item):
        while True:
            g = gains()
            score = g.copy()
            score[:, 0] = g[:, 0] / np.maximum(nbytes, 1.0)  # on chip: per byte of the SRAM left
            score[g <= 0] = -np.inf
            if not np.isfinite(score).any():
                x, y, saved = best_swap()
                if saved <= 0:
                    break
                tx, ty = int(tier[x]), int(tier[y])
                move(x, ty)
                move(y, tx)
                continue
            # the best on-chip move by saving per byte, unless an off-chip move saves more in all
            k_chip = int(np.argmax(score[:, 0]))
            off = g[:, 1:].copy()
            off[g[:, 1:] <= 0] = -np.inf
            k_off, t_off = np.unravel_index(int(np.argmax(off)), off.shape)
            chip_ok, off_ok = np.isfinite(score[k_chip, 0]), np.isfinite(off[k_off, t_off])
            if chip_ok and (not off_ok or g[k_chip, 0] >= off[k_off, t_off]):
                move(k_chip, 0)
            else:
                move(int(k_off), int(t_off) + 1)
        for k in sorted(range(len(items)), key=lambda k: (items[k].nbytes, items[k].name)):
            if tier[k] != 0 and movable[k] and nbytes[k] <= room[0] and gains()[k, 0] >= 0:
                move(k, 0)  # free room on chip: cheaper reads, no latency lost
    return {p.name: TIERS[t] for p, t in zip(items, tier)}


def place_exact(
    problem: SectionProblem,
    starts: list[bool],
    choice: list[int],
    hint: dict[str, str],
    time_limit_s: float = PLACE_TIME_S,
) -> dict[str, str]:
    """The placement minimising the plan's latency for fixed cuts and allocations (CP-SAT; ``hint`` is a
    feasible placement it starts from and returns if it finds nothing better)."""
    arch = problem.arch
    plan = Plan(starts, choice, dict(hint))
    hint_cost = plan_cost(problem, plan)
    if hint_cost.feasible and all(s.seconds_ps == s.compute_ps for s in hint_cost.sections):
        return dict(hint)  # every section is compute-bound already: no placement is faster
    sections = plan.sections()
    section_of = {i: s for s, (a, b) in enumerate(sections) for i in range(a, b + 1)}
    base = plan_cost(problem, Plan(starts, choice, {p.name: "sram" for p in problem.placeables}))
    section_pmus = max(s.pmus for s in base.sections)
    room = {"sram": (arch.pmus - section_pmus) * arch.pmu_bytes, **{t: problem.tier_bytes[t] for t in ("hbm", "ddr")}}
    m = cp_model.CpModel()
    x = {}
    for item in problem.placeables:
        allowed = [t for t in TIERS if item.nbytes <= room[t] and (t == "sram" or item.nbytes > 0)]
        for t in allowed:
            x[item.name, t] = m.NewBoolVar(f"{item.name}@{t}")
        m.AddExactlyOne(x[item.name, t] for t in allowed)
        if hint.get(item.name) in allowed:
            m.AddHint(x[item.name, hint[item.name]], 1)
    for t in TIERS:
        m.Add(sum(item.nbytes * x[item.name, t] for item in problem.placeables if (item.name, t) in x) <= room[t])
    # each section's tier time: its cut-dependent traffic (with every item on chip, minus those reads) + items
    fixed = [dict(s.tier_ps) for s in base.sections]
    reads: list[dict[str, list]] = [{t: [] for t in TIERS} for _ in sections]
    for item in problem.placeables:
        for op, nbytes in item.readers:
            s = section_of[op]
            fixed[s]["sram"] -= problem.bytes_ps("sram", nbytes)
            for t in TIERS:
                if (item.name, t) in x:
                    reads[s][t].append((problem.bytes_ps(t, nbytes), x[item.name, t]))
    horizon = max(hint_cost.latency_ps, 1) + 1
    times = []
    for s, cost in enumerate(base.sections):
        time = m.NewIntVar(cost.compute_ps, horizon, f"t{s}")
        for t in TIERS:
            m.Add(time >= fixed[s][t] + sum(ps * var for ps, var in reads[s][t]))
        times.append(time)
    m.Minimize(sum(times))
    solver = cp_model.CpSolver()
    solver.parameters.max_deterministic_time = float(time_limit_s)
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    if solver.Solve(m) not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return dict(hint)
    tiers = {
        item.name: next(t for t in TIERS if (item.name, t) in x and solver.Value(x[item.name, t]))
        for item in problem.placeables
    }
    better = plan_cost(problem, Plan(starts, choice, tiers))
    return tiers if better.feasible and better.latency_ps <= hint_cost.latency_ps else dict(hint)
