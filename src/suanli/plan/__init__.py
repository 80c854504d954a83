"""Planning: layout search, the OOM remedy chain, and cost."""
