"""Brute force for small graphs: the reference the tests prove the CP-SAT schedule optimal against.

It enumerates every topological order, every set of resident tensors and every combination of tile
candidates (depth first, cutting branches that cannot beat the best so far), scores each with the
candidates' closed-form costs, and accepts one only if its scratchpad addresses can be packed. The
packing test is exact: a set of buffers with fixed lifetimes fits if and only if placing them one by
one at the lowest free address, in some order, fits (sort any feasible packing by offset: each buffer
then lands at or below its offset), so every order of the conflicting buffers is tried.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass

from dse.graph import Graph
from mappers.base import Mapping, MappingError
from mappers.systolic.problem import Problem, Schedule, build_problem, schedule_score, to_mapping
from templates.systolic import SystolicArch

MAX_UNITS = 8
MAX_ELIGIBLE = 10
MAX_PACKED_BUFFERS = 24


def topological_orders(problem: Problem) -> list[list[int]]:
    """Every order of the units that respects the DAG."""
    n = len(problem.units)
    out: list[list[int]] = []

    def extend(prefix: list[int], done: set[int]) -> None:
        if len(prefix) == n:
            out.append(list(prefix))
            return
        for u in range(n):
            if u not in done and problem.preds[u] <= done:
                prefix.append(u)
                done.add(u)
                extend(prefix, done)
                done.discard(u)
                prefix.pop()

    extend([], set())
    return out


@functools.lru_cache(maxsize=200_000)
def packs(blocks: tuple[tuple[int, int, int], ...], cap: int) -> tuple[int, ...] | None:
    """Offsets for (size, first slot, last slot) blocks under ``cap``, or None if no packing exists.

    Depth first over placement orders, each block at the lowest address free of the time-overlapping
    blocks already placed; a branch stops as soon as a block overflows. Two blocks that do not overlap
    in time do not affect each other's placement, so of two such blocks placed back to back only one
    order is tried (the search stays exact).
    """
    blocks = tuple(blocks)
    if any(size > cap for size, _, _ in blocks):
        return None
    slots = max((b for _, _, b in blocks), default=-1) + 1
    for q in range(slots):
        if sum(s for s, a, b in blocks if a <= q <= b) > cap:
            return None
    n = len(blocks)
    if n > MAX_PACKED_BUFFERS:
        raise MappingError(f"brute force: {n} buffers is too many to pack exhaustively")
    overlaps = [[a <= bj and aj <= b for (_, aj, bj) in blocks] for (_, a, b) in blocks]
    offsets = [0] * n
    placed: list[int] = []
    left = set(range(n))

    def lowest(i: int) -> int:
        size = blocks[i][0]
        at = 0
        for lo, hi in sorted((offsets[j], offsets[j] + blocks[j][0]) for j in placed if overlaps[i][j]):
            if at + size <= lo:
                break
            at = max(at, hi)
        return at

    def dfs() -> bool:
        if not left:
            return True
        last = placed[-1] if placed else None
        for i in sorted(left):
            if last is not None and i < last and not overlaps[i][last]:
                continue  # same result as placing i before last: tried in that order
            at = lowest(i)
            if at + blocks[i][0] > cap:
                continue
            offsets[i] = at
            placed.append(i)
            left.discard(i)
            if dfs():
                return True
            left.add(i)
            placed.pop()
        return False

    return tuple(offsets) if dfs() else None


def brute_force_schedule(problem: Problem) -> Schedule:
    """The optimal schedule of a small problem by exhaustive search (see the module docstring)."""
    n = len(problem.units)
    eligible = sorted(problem.eligible)
    if n > MAX_UNITS or len(eligible) > MAX_ELIGIBLE:
        raise MappingError(
            f"brute force handles at most {MAX_UNITS} ops and {MAX_ELIGIBLE} residency choices; "
            f"{problem.graph.name!r} has {n} and {len(eligible)}"
        )
    cap = problem.capacity
    orders = topological_orders(problem)
    plans = []
    for k in range(len(eligible) + 1):
        for chosen in itertools.combinations(eligible, k):
            resident = frozenset(chosen)
            loads = sum(problem.input_load_cost(t) for t in resident)
            per_unit = []
            for u, cands in enumerate(problem.cands):
                mode = problem.mode_of(u, resident)
                cost = cands.costs(problem.target, problem.model, mode, problem.output_write_bytes(u))
                staged = cands.staging(problem.target, mode)
                options = sorted((int(cost[c]), int(staged[c]), c) for c in range(len(cands)) if staged[c] <= cap)
                per_unit.append(_undominated(options))
            if any(not options for options in per_unit):
                continue
            plans.append((loads + sum(options[0][0] for options in per_unit), sorted(resident), per_unit, loads))
    plans.sort(key=lambda plan: (plan[0], plan[1]))  # most promising residency sets first
    best: Schedule | None = None
    for floor, chosen, per_unit, loads in plans:
        if best is not None and floor >= best.score:
            break  # every later plan is at least as expensive
        resident = frozenset(chosen)
        for order in orders:
            position = {u: i for i, u in enumerate(order)}
            lifetimes = [(problem.eligible[t], *problem.lifetime(t, position)) for t in chosen]
            if packs(tuple(lifetimes), cap) is None:
                continue
            found = _search(problem, per_unit, order, lifetimes, loads, best.score if best else None)
            if found is not None:
                score, choice, offsets = found
                resident_offset = dict(zip(chosen, offsets[: len(lifetimes)]))
                staging_offset = {}
                k_off = len(lifetimes)
                for u in order:
                    if _staged(per_unit[u], choice[u]) > 0:
                        staging_offset[u] = offsets[k_off]
                        k_off += 1
                best = Schedule(order, choice, resident, resident_offset, staging_offset, score=score)
    if best is None:
        raise MappingError(f"brute force: no schedule of {problem.graph.name!r} fits the scratchpads")
    best.score = schedule_score(problem, best.order, best.choice, best.resident)
    best.info = {"status": "OPTIMAL", "value": float(best.score), "bound": float(best.score), "gap": 0.0}
    return best


def _undominated(options: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Drop an option when another costs no more and stages no more bytes (it can always replace it)."""
    kept: list[tuple[int, int, int]] = []
    for cost, staged, c in options:  # sorted by cost, then staging
        if all(staged < s for _, s, _ in kept):
            kept.append((cost, staged, c))
    return kept


def _staged(options: list[tuple[int, int, int]], c: int) -> int:
    return next(s for _, s, cc in options if cc == c)


def _search(problem, per_unit, order, lifetimes, loads, incumbent):
    """Depth-first over candidate choices in ``order``; returns (score, choice, offsets) beating ``incumbent``."""
    cap = problem.capacity
    n = len(order)
    best: list = [incumbent, None]
    suffix_min = [0] * (n + 1)
    for i in range(n - 1, -1, -1):
        suffix_min[i] = suffix_min[i + 1] + per_unit[order[i]][0][0]
    choice = [0] * len(per_unit)

    def visit(i: int, score: int, stagings: list[tuple[int, int, int]]) -> None:
        if best[0] is not None and score + suffix_min[i] >= best[0]:
            return
        if i == n:
            offsets = packs(tuple(lifetimes + stagings), cap)
            if offsets is not None:
                best[0], best[1] = score, (score, list(choice), offsets)
            return
        u = order[i]
        live = sum(size for size, a, b in lifetimes if a <= i <= b)
        for cost, staged, c in per_unit[u]:
            if live + staged > cap:
                continue  # this slot alone overflows
            choice[u] = c
            block = [(staged, i, i)] if staged > 0 else []
            visit(i + 1, score + cost, stagings + block)

    visit(0, loads, [])
    return best[1]


@dataclass
class BruteForceMapper:
    """Exhaustive optimum for small graphs (tests use it to check CP-SAT)."""

    name: str = "bruteforce"
    objective: str = "dram"
    double_buffer: bool = True  # False: single-buffered tiles (twice the tile in the same SRAM, no overlap)

    def map(self, graph: Graph, arch: SystolicArch) -> Mapping:
        problem = build_problem(graph, arch, self.objective, self.double_buffer)
        return to_mapping(problem, brute_force_schedule(problem), self.name)
