"""The GPU hardware model: ``cost`` (the kernel formulas mappers query), ``model`` (evaluate), ``calibrate``."""
