"""LEKA: Layered Edge Kernel Agent."""

__version__ = "0.1.0"
