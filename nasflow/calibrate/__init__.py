"""Calibration of the speedup stack (see the package docstring in a later commit)."""
