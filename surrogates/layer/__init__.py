"""The layer-level contract surrogate: the expensive mapper's correction of its cheap mapper, per layer."""
