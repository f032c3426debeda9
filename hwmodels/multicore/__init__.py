"""Multicore accelerators: systolic cores on an interconnect with a shared DRAM."""
