"""Thoth: a knowledge engine whose answers are grounded in reviewed evidence and fail visibly."""

__version__ = "0.1.0"
