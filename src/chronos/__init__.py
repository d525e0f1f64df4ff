"""Chronos: learn which PTX-level transforms make GPU kernels faster."""

__version__ = "0.1.0"
