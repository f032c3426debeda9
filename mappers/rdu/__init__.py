"""Mapping a graph onto an RDU: fused sections, PCU/PMU allocation and three-tier placement, with a proven gap.

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

**Latency (the default objective) by bounds** (:func:`mappers.rdu.exact.solve_exact`): the latency is a sum
over the sections of the fixed op order, so a lower bound on every section (``threshold``: the section's compute
by the max-steady threshold, exact over the distinct steady times, with Lagrangian bounds on the fills; ``bound``:
the traffic with a fluid placement priced by a Lagrange multiplier on the shared SRAM) becomes a lower bound on
the whole by a shortest path over the cut positions, per interval of the largest section's PMUs. The covers that
attain it are realised exactly (a knapsack over PCUs or PMUs per threshold for each section, the placed items by
``placement``), and the open intervals are refined (exact section computes, a finer SRAM price, split
intervals) until the best plan is within ``gap_tolerance`` of the bound or the step limit is reached.

The CP-SAT model (:func:`mappers.rdu.cpsat.solve_sections`) holds the cuts, the allocation choice per op and the
tier of every placed item together; it solves the energy and weighted objectives, and closes the gap of small
graphs. The greedy one-op-per-section plan (:func:`mappers.rdu.heuristics.unfused_plan`) is the unfused
baseline and always a candidate, so the fused answer is never slower than unfused.
:func:`hwmodels.rdu.cost.plan_cost` is the one cost function: every plan is priced by it, the CP-SAT model is its
exact linearisation (same integer picoseconds), the hardware model and the brute-force check call it too.

Modules: ``problem`` (the section problem of a graph), ``threshold`` (section compute bounds and knapsacks),
``bound`` (the cover bound), ``exact`` (bounds to plans), ``placement`` (tiers for fixed sections),
``heuristics`` (unfused and fused DP plans), ``cpsat`` (the one-model CP-SAT), ``bruteforce`` (the reference on
small graphs), ``sections`` (the two mappers), ``cover`` (the bound's covers realised once: the closed form the
surrogates learn against).
"""
