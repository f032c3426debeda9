"""The systolic-array family's mappers: ``fold`` (SCALE-Sim's mapping, the default), and the tiling
mappers (``cpsat``, ``greedy``, ``bruteforce``) over the tile candidates of ``tiling`` and the
scheduling problem of ``problem``, with ``check`` validating any tiled schedule independently."""
