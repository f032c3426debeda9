"""The design-level contract surrogate of every template: one feature row per design, one regressor."""
