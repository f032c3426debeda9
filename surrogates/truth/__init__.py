"""Truths other than the analytical models: SCALE-Sim runs and real measurements (wa-hls4ml, GPUs)."""
