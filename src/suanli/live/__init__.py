"""Edges that touch real hardware and frameworks; every module imports torch or NVML lazily."""
