"""The systolic family's own surrogate: per-op features, their closed form and the op/design-level model."""
