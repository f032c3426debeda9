"""The multicore mappers: CP-SAT layer/tile scheduling across cores, its greedy and brute-force baselines and
its balanced hint (the surrogates' closed form)."""
