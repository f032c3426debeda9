"""Mapping a graph onto an RDU: fused sections, PCU/PMU allocation and three-tier placement in one CP-SAT model.

How a graph runs on an RDU, as this mapper decides it:

* **Sections.** The ops (in graph order) are cut into runs of consecutive ops. A section is placed spatially
  at once: each op gets ``pcus`` PCUs (its parallelism) and ``pmus`` PMUs (its stream buffers), and the
  section's PCUs and PMUs must fit the chip. Activations between ops of one section stream through PMUs
  over the on-chip network; a tensor whose consumer sits in a later section is written to the spill tier
  (HBM, or DDR on a chip without HBM) and read back. Between sections the chip reconfigures
  (``reconfig_us``).
* **Section time.** Ops stream in chunks (rows/tokens). A pipeline of stages with per-chunk times t_i/C_i
  takes ``sum_i t_i/C_i + max_i t_i (1 - 1/C_i)``: the fill (first chunk through every stage) plus the
  steady state set by the slowest stage; with one chunk (a decode step) it is the plain sum. The section
  also cannot finish before its HBM, DDR and on-chip traffic has moved at each tier's bandwidth (tiers
  work in parallel, so the section takes the largest of these times).
* **Tiers.** Weights (per op) and persistent graph inputs (KV caches, constant filters: every graph input
  but the activation stream) are placed in SRAM, HBM or DDR by capacity. SRAM-resident data occupies PMUs
  that the largest section then cannot use: ``resident bytes + max section PMUs x PMU size <= SRAM``.
* **Op costs on PCUs** come from ``hwmodels.rdu.cost`` (see its docstring).

The CP-SAT model (:func:`mappers.rdu.cpsat.solve_sections`) holds the cuts, the allocation choice per op and the
tier of every placed item together, with the objective latency, energy or their weighted sum; it reports status,
objective, bound and gap. The greedy one-op-per-section plan (:func:`mappers.rdu.heuristics.unfused_plan`) is the
unfused baseline; it and a fused dynamic-programming plan (:func:`mappers.rdu.heuristics.fused_plan`) are the
candidates the best of which hints the solver and is returned if the time limit leaves CP-SAT behind it, so the
fused answer is never slower than unfused. :func:`hwmodels.rdu.cost.plan_cost` is the one cost function: the
CP-SAT model is its exact linearisation (same integer picoseconds), the hardware model and the brute-force check
call it too.

Modules: ``problem`` (the section problem of a graph), ``heuristics`` (unfused and fused plans), ``cpsat`` (the
exact model), ``bruteforce`` (its reference on small graphs), ``sections`` (the two mappers).
"""
