"""Pure estimators: memory, FLOPs, time. No I/O, no torch."""
