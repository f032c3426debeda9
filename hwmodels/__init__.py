"""Hardware models: (Mapping, Arch) -> Metrics, and the catalogs of outside numbers."""
