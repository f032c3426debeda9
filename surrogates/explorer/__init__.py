"""Surrogates inside the explorer: ``evaluator: surrogate`` and the hybrid screening."""
