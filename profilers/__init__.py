"""Profilers: per-kernel time, FLOPs/bytes, roofline position, memory (see README.md).

Import the submodules (`profilers.profile`, `profilers.report`, ...): `report` and `calibrate` stay
importable without TVM, so a router or a tree viewer can read reports cheaply.
"""
