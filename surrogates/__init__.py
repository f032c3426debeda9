"""Surrogate models (scikit-learn) that predict Metrics from design features."""
