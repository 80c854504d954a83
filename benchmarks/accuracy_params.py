"""Print the parameter-count accuracy table of docs/models.md.

For every bundled preset: suanli's count, the published count (exact or rounded, with its
source) and, when transformers is installed, ``sum(p.numel())`` of the model built on the meta
device. Run: python benchmarks/accuracy_params.py > /tmp/table.md
"""

from __future__ import annotations

import sys

from suanli.models.config import spec_from_config
from suanli.models.params import count_params
from suanli.models.presets import presets


def _meta(cfg: dict) -> int | None:  # type: ignore[type-arg]
    try:
        sys.path.insert(0, "tests")
        from models.test_params_transformers import _meta_count
    except ImportError:
        return None
    return int(_meta_count(cfg))


def main() -> None:
    try:
        import transformers

        transformers.logging.set_verbosity_error()
    except ImportError:
        pass
    print("| preset | suanli total | published | kind | diff | transformers (meta) | active |")
    print("|---|---:|---:|---|---:|---:|---:|")
    for p in sorted(presets().values(), key=lambda p: (p.family, p.name)):
        cfg = p.config()
        counts = count_params(spec_from_config(cfg, p.name))
        pub = p.published_params_total
        kind = "exact" if p.params_exact else "rounded"
        if pub is None:
            diff, pub_s, kind = "", "n/a", ""
        else:
            params_pub = pub - p.published_buffers
            diff = f"{100 * (counts.total - params_pub) / pub:+.2f}%"
            if counts.total == params_pub:
                diff = "0"
            if p.published_buffers:
                diff += f" (total holds {p.published_buffers:,} buffer elements)"
            pub_s = f"{pub:,}"
        meta = _meta(cfg)
        meta_s = "" if meta is None else ("equal" if meta == counts.total else f"{meta:,}")
        print(
            f"| {p.name} | {counts.total:,} | {pub_s} | {kind} | {diff} | {meta_s} | "
            f"{counts.active:,} |"
        )


if __name__ == "__main__":
    main()
