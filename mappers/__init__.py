"""Mappers: decide how a Graph runs on an Arch (tiling, order, residency)."""
