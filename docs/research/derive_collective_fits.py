"""Fit the measured NCCL collective curves and compare the speed model with them (developer tool).

Reads the collective times the Vidur project measured (microsoft/vidur commit 7d47513,
data/profiling/network/<cluster>/{all_reduce,send_recv}.csv, MIT licence; copied into the
steering repository's shared/reference/kernel-profiles/network/), and:

- fits ``t = a + 2(n-1)/n * S / B`` per cluster and group (least squares on relative errors,
  i.e. weights 1/t), for all-reduce; ``t = a + S / B`` for send/recv;
- compares the model's ``all_reduce_s`` (with the links of ``catalog/data/interconnect.toml``)
  with every measured point: the 1-64 KiB window by medians (the small-message times are
  bimodal), and each point of 48 MiB and more;
- writes ``tests/fixtures/collectives-vidur.csv`` (a subset of the measured points, the test set)
  and prints the ``[[collective_fit]]`` rows for interconnect.toml and a Markdown error table;
- fits each link's per-collective base latency and per-step latency (``base_latency_s``,
  ``latency_s``) jointly on the small-message all-reduces of 2, 4 and 8 GPUs
  (:func:`fit_base_latency`, printed as ``# base-latency fit`` lines);
- with ``--oneshot``, fits the serving engines' custom all-reduce on the H100 latencies of
  ``tests/fixtures/oneshot-allreduce.csv`` (:func:`fit_oneshot`; sgl-project/sglang#2904) and on
  the MI300X latencies of ``tests/fixtures/oneshot-allreduce-mi300x.csv`` (ROCm/aiter#801,
  vllm-project/vllm#19744; full-mesh form), and NVLink 3's on TensorRT-LLM's kernels timed under
  CUDA graphs on A100 by aiconfigurator (``tests/fixtures/oneshot-allreduce-aiconfigurator.csv``,
  relative errors, up to 512 KiB);
- with ``--protocols [folder]``, thins Vidur's 8xA100 curve into
  ``tests/fixtures/collectives-vidur-a100-curve.csv`` and fits NVLink 3's two NCCL protocols
  (:func:`fit_protocols`);
- with ``--nvls``, fits NCCL's in-switch NVLS all-reduce on the 8-GPU ND H200 v5 curve of
  ``tests/fixtures/azure-kernel-benchmarks.csv`` from 32 MiB up (:func:`fit_nvls`).

Times in the CSVs are milliseconds (median of three runs of the median of 11 back-to-back
kernels, kineto kernel time on rank 0); ``size`` is bytes (fp16 elements x 2).
Nothing in the package or the tests reads the shared folder; this script is run by hand:
``python docs/research/derive_collective_fits.py /path/to/shared/reference/kernel-profiles``.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCE = "microsoft/vidur 7d47513 data/profiling/network/{cluster}/{collective}.csv (MIT)"
DATE = "2024-11"  # vidur commit 7d47513 (2024-11-19); the network CSVs date from 2024-05 to 2024-07
SMALL = 64 * 1024
LARGE = 48 * 2**20
#: Large sizes kept in the fixture (nearest measured size to each).
LARGE_TARGETS = [48 * 2**20, 56 * 2**20, 64 * 2**20, 128 * 2**20, 256 * 2**20, 512 * 2**20]
#: (cluster, n, devices_per_node) -> (catalog GPU id whose intra link applies, or link id).
MODELLED = {
    ("a100_dgx", 2, 2): ("gpu", "a100-sxm-80gb"),
    ("a100_dgx", 4, 4): ("gpu", "a100-sxm-80gb"),
    ("a100_dgx", 8, 8): ("gpu", "a100-sxm-80gb"),
    ("h100_dgx", 2, 2): ("gpu", "h100-sxm-80gb"),
    ("h100_dgx", 4, 4): ("gpu", "h100-sxm-80gb"),
    ("h100_dgx", 8, 8): ("gpu", "h100-sxm-80gb"),
    ("a100_pairwise_nvlink", 2, 2): ("link", "nvlink-bridge-a100"),
    ("a100_pairwise_nvlink", 4, 4): ("gpu", "a100-pcie-80gb"),
    ("h100_pairwise_nvlink", 2, 2): ("link", "nvlink-bridge-h100"),
    ("h100_pairwise_nvlink", 4, 4): ("gpu", "h100-pcie-80gb"),
}


def read(path: Path, collective: str) -> dict[tuple[int, int], list[tuple[int, float]]]:
    out: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    with path.open() as f:
        for row in csv.DictReader(f):
            key = (int(row["num_workers"]), int(row["devices_per_node"]))
            ms = float(row[f"time_stats.{collective}.median"])
            out[key].append((int(row["size"]), ms * 1e-3))
    return {k: sorted(v) for k, v in out.items()}


def fit(points: list[tuple[int, float]], factor: float) -> tuple[float, float, float, float]:
    """(a, B, max |rel err|, median |rel err|) of t = a + factor * S / B, relative residuals,
    a >= 0."""
    sxx = sxy = sx = s1 = sy = 0.0
    for size, t in points:  # minimise sum ((a + x*c)/t - 1)^2 with x = factor * size
        u, v = 1 / t, factor * size / t
        s1 += u * u
        sx += u * v
        sxx += v * v
        sy += u
        sxy += v
    det = s1 * sxx - sx * sx
    a = (sy * sxx - sx * sxy) / det
    c = (s1 * sxy - sx * sy) / det
    if a < 0:  # a superlinear curve: keep the latency physical (a = 0), refit the slope
        a, c = 0.0, sxy / sxx
    errs = [abs((a + factor * s * c) / t - 1) for s, t in points]
    return a, 1 / c, max(errs), statistics.median(errs)


#: nccl-tests small-message all-reduce times quoted in interconnect.toml (8 GPUs, 1 KiB, Azure
#: AI-benchmarking-guide): (link id, ranks, seconds). Fitted together with Vidur's medians.
NCCL_TESTS_SMALL = [
    ("nvlink4", 8, 25.6e-6),  # ND H100 v5
    ("nvlink4", 8, 29.9e-6),  # ND H200 v5
    ("nvlink3", 8, 44.8e-6),  # ND A100 v4
]
#: Links fitted jointly over group sizes: link id -> Vidur (cluster, n) groups that use it.
JOINT_FITS = {
    "nvlink3": [("a100_dgx", 2), ("a100_dgx", 4), ("a100_dgx", 8)],
    "nvlink4": [("h100_dgx", 2), ("h100_dgx", 4), ("h100_dgx", 8)],
}
#: Links measured at one group size only: the per-step latency is the NVLink generation's fit,
#: the base latency alone is fitted.
BASE_ONLY_FITS = {
    "nvlink-bridge-a100": ("nvlink3", ("a100_pairwise_nvlink", 2)),
    "nvlink-bridge-h100": ("nvlink4", ("h100_pairwise_nvlink", 2)),
}
#: Lower bound of the per-step latency: NCCL's smallest NVLink hop latency (src/graph/tuning.cc
#: hwLat, LL protocol, 0.6 us); without it the A100 fit runs to 0.
MIN_ALPHA = 0.6e-6


def fit_base_latency(
    groups: list[tuple[int, float, float]],
    bus_bytes_per_s: float,
    alpha: float | None = None,
) -> tuple[float, float]:
    """(base, alpha) minimising sum (log model - log measured)^2 over ``groups``, each
    (ranks, message bytes, measured seconds), with the model ``base + all_reduce`` of
    estimate/comm.py (min of ring and tree, bandwidth term included); base >= 0 and
    alpha >= MIN_ALPHA, grid of 0.05 us. A fixed ``alpha`` fits the base alone."""
    import math

    def model(base: float, a: float, n: int, size: float) -> float:
        ring = 2 * (n - 1) / n * size / bus_bytes_per_s + 2 * (n - 1) * a
        tree = 2 * size / bus_bytes_per_s + 2 * math.log2(n) * a
        return base + min(ring, tree)

    step = 0.05e-6
    alphas = [alpha] if alpha is not None else [MIN_ALPHA + i * step for i in range(200)]
    best = (math.inf, 0.0, 0.0)
    for a in alphas:
        for i in range(2000):
            base = i * step
            err = sum((math.log(model(base, a, n, s)) - math.log(t)) ** 2 for n, s, t in groups)
            if err < best[0]:
                best = (err, base, a)
    return best[1], best[2]


def _small_median(points: list[tuple[int, float]]) -> tuple[float, float]:
    """(median size, median time) of the 1-64 KiB window (the times are bimodal)."""
    small = [(s, t) for s, t in points if s <= SMALL]
    return statistics.median(s for s, _ in small), statistics.median(t for _, t in small)


def base_latency_fits(base: Path) -> list[str]:
    """``# base-latency fit`` lines: each link's fitted base_latency_s and latency_s."""
    from suanli.catalog.network import get_link

    def medians(cluster: str, n: int) -> tuple[int, float, float]:
        points = read(base / cluster / "all_reduce.csv", "all_reduce")[(n, n)]
        size, t = _small_median(points)
        return n, size, t

    out: list[str] = []
    alphas: dict[str, float] = {}
    for lid, groups in JOINT_FITS.items():
        spec = get_link(lid)
        bus = spec.unidirectional_bytes_per_s * spec.bus_efficiency
        data = [medians(c, n) for c, n in groups]
        data += [(n, 1024, t) for link, n, t in NCCL_TESTS_SMALL if link == lid]
        b, a = fit_base_latency(data, bus)
        alphas[lid] = a
        out.append(f"# base-latency fit {lid}: base_latency_s = {b:.3g}, latency_s = {a:.3g}")
    for lid, (generation, group) in BASE_ONLY_FITS.items():
        spec = get_link(lid)
        bus = spec.unidirectional_bytes_per_s * spec.bus_efficiency
        b, a = fit_base_latency([medians(*group)], bus, alpha=alphas[generation])
        out.append(f"# base-latency fit {lid}: base_latency_s = {b:.3g}, latency_s = {a:.3g}")
    return out


ONESHOT_FIXTURE = ROOT / "tests" / "fixtures" / "oneshot-allreduce.csv"
#: vLLM's custom all-reduce on MI300X, 2 and 4 GPUs (ROCm/aiter#801, vllm#19744).
ONESHOT_MI300X_FIXTURE = ROOT / "tests" / "fixtures" / "oneshot-allreduce-mi300x.csv"
#: The engines' custom all-reduce under CUDA graphs on A100 and H100 (aiconfigurator,
#: scripts/extract_aic_oneshot.py); the A100's TensorRT-LLM rows up to ONESHOT_A100_MAX_BYTES fit
#: nvlink3, the rest validate.
ONESHOT_AIC_FIXTURE = ROOT / "tests" / "fixtures" / "oneshot-allreduce-aiconfigurator.csv"
ONESHOT_A100_MAX_BYTES = 512 * 1024
ONESHOT_A100_FIT = {"gpu_id": "a100-sxm-80gb", "engine": "trtllm"}
ONESHOT_H100_FIT = {"gpu_id": "h100-sxm-80gb", "engine": "trtllm"}
AZURE_FIXTURE = ROOT / "tests" / "fixtures" / "azure-kernel-benchmarks.csv"
#: The NVLS fit uses one VM's curve (ND H200 v5, NCCL 2.20.5) from this size up, where NCCL runs
#: NVLS; the ND H100 v5 curve (NCCL 2.18.5) is kept to validate it.
NVLS_FIT_GPU = "h200-sxm-141gb"
NVLS_FIT_MIN_BYTES = 32 * 2**20


#: The A100 curve of Vidur thinned for the two-protocol fit: medians per group size and half
#: octave of message size, from 64 KiB (written by ``--protocols``, read by the tests).
CURVE_FIXTURE = ROOT / "tests" / "fixtures" / "collectives-vidur-a100-curve.csv"
CURVE_MIN_BYTES = 64 * 1024


def thin_curve(path: Path) -> list[tuple[int, int, float]]:
    """(ranks, bytes, seconds): the medians of an intra-node all-reduce curve per group size
    and half octave of size, from ``CURVE_MIN_BYTES`` (the dense 48-64 MiB sweep would
    otherwise outweigh everything else)."""
    import math

    buckets: dict[tuple[int, int], list[tuple[int, float]]] = defaultdict(list)
    for (n, dpn), points in read(path, "all_reduce").items():
        if n != dpn:  # groups that span nodes are another link
            continue
        for size, t in points:
            if size >= CURVE_MIN_BYTES:
                buckets[(n, round(2 * math.log2(size)))].append((size, t))
    out = [
        (n, int(statistics.median(s for s, _ in v)), statistics.median(t for _, t in v))
        for (n, _), v in buckets.items()
    ]
    return sorted(out)


def fit_protocols(
    points: list[tuple[int, int, float]], link_id: str = "nvlink3"
) -> tuple[float, float, float, float]:
    """(small_efficiency, bulk_base_latency_s, median |error| with one protocol, with two) of
    the link's all-reduce, least squares in log space over ``points`` (ranks, bytes, seconds),
    the link's rate, bus efficiency, base and per-step latency held: the low-latency protocols
    pay the base latency at ``small_efficiency`` of the rate, the bulk protocol pays
    ``bulk_base_latency_s`` at the bus efficiency (grid of 0.01 and 2 us)."""
    import math

    from suanli.catalog.network import get_link

    spec = get_link(link_id)
    rate, eff = spec.unidirectional_bytes_per_s, spec.bus_efficiency
    base, alpha = spec.base_latency_s, spec.latency_s

    def ring_or_tree(n: int, size: float, bw: float) -> float:
        ring = 2 * (n - 1) / n * size / bw + 2 * (n - 1) * alpha
        return min(ring, 2 * size / bw + 2 * math.log2(n) * alpha)

    def model(n: int, size: float, small: float | None, bulk_base: float) -> float:
        one = ring_or_tree(n, size, rate * eff)
        if small is None:
            return one + base
        return min(ring_or_tree(n, size, rate * small) + base, one + bulk_base)

    best = (math.inf, 0.0, 0.0)
    steps = round(eff * 100) - 19
    for i in range(steps):
        small = 0.20 + 0.01 * i
        for j in range(200):
            bulk_base = base + 2e-6 * j
            err = sum(
                (math.log(model(n, s, small, bulk_base)) - math.log(t)) ** 2 for n, s, t in points
            )
            if err < best[0]:
                best = (err, small, bulk_base)
    _, small, bulk_base = best
    before = statistics.median(abs(model(n, s, None, 0) / t - 1) for n, s, t in points)
    after = statistics.median(abs(model(n, s, small, bulk_base) / t - 1) for n, s, t in points)
    return small, bulk_base, before, after


def read_curve(path: Path = CURVE_FIXTURE) -> list[tuple[int, int, float]]:
    """The thinned curve written by ``--protocols``."""
    with path.open(encoding="utf-8") as f:
        return [(int(r["ranks"]), int(r["bytes"]), float(r["seconds"])) for r in csv.DictReader(f)]


def fit_nvls(
    path: Path = AZURE_FIXTURE, gpu: str = NVLS_FIT_GPU, min_bytes: int = NVLS_FIT_MIN_BYTES
) -> tuple[float, float, float]:
    """(base_s, bytes_per_s, median relative error) of ``t = base + S / B`` (B the algorithm
    bandwidth per GPU) on ``gpu``'s 8-GPU nccl-tests all-reduce times from ``min_bytes`` up
    (times from the bus bandwidth: t = 2 (n-1)/n x S / busbw), least squares on relative
    errors: the ``nvls_*`` fields of the nvlink4 link."""
    points: list[tuple[int, float]] = []
    with path.open(encoding="utf-8") as f:
        for r in csv.DictReader(f):
            if r["kind"] != "all_reduce" or r["gpu"] != gpu or int(r["bytes"]) < min_bytes:
                continue
            n, size = int(r["ranks"]), int(r["bytes"])
            points.append((size, 2 * (n - 1) / n * size / (float(r["measured"]) * 1e9)))
    base, bandwidth, _, median = fit(points, 1.0)
    return base, bandwidth, median


def read_oneshot(path: Path, **match: str) -> list[tuple[int, float, float]]:
    """(GPUs, bytes, seconds) of the custom all-reduce latencies of ``path``
    (``gpus,bytes,latency_us``), only the rows whose columns equal ``match`` (e.g.
    ``gpu_id="a100-sxm-80gb", engine="trtllm"`` in the aiconfigurator fixture)."""
    with path.open(encoding="utf-8") as f:
        return [
            (int(r["gpus"]), float(r["bytes"]), float(r["latency_us"]) * 1e-6)
            for r in csv.DictReader(f)
            if all(r[k] == v for k, v in match.items())
        ]


def fit_oneshot(
    path: Path = ONESHOT_FIXTURE,
    *,
    per_peer: bool = False,
    relative: bool = False,
    max_bytes: float = float("inf"),
    **match: str,
) -> tuple[float, float, float]:
    """(base_s, step_s, bytes_per_s) of ``t = base + step · log2(n) + (n-1)/n · S / B``, least
    squares on the custom all-reduce latencies of ``path`` (:func:`read_oneshot`, rows matching
    ``match`` up to ``max_bytes``): the ``oneshot_*`` fields of a link. The default reproduces
    the nvlink4 fit (H100, ``tests/fixtures/oneshot-allreduce.csv``, sgl-project/sglang#2904:
    absolute errors). ``per_peer`` fits the full-mesh form ``t = base + step · log2(n) + S /
    (n · B)`` (xGMI: each peer adds a link); ``relative`` weights each point by 1/t (sizes
    spanning 2 KiB-8 MiB)."""
    import math

    rows = [r for r in read_oneshot(path, **match) if r[1] <= max_bytes]

    def per_byte(n: int, size: float) -> float:
        return size / n if per_peer else (n - 1) / n * size

    weights = [1 / t if relative else 1.0 for _, _, t in rows]
    xs = [
        (w, w * math.log2(n), w * per_byte(n, size))
        for (n, size, _), w in zip(rows, weights, strict=True)
    ]
    ys = [w * t for (_, _, t), w in zip(rows, weights, strict=True)]
    # Normal equations of the 3-parameter linear model (no numpy in this tool).
    ata = [[sum(x[i] * x[j] for x in xs) for j in range(3)] for i in range(3)]
    aty = [sum(x[i] * y for x, y in zip(xs, ys, strict=True)) for i in range(3)]
    for col in range(3):  # Gauss-Jordan elimination
        pivot = ata[col][col]
        ata[col] = [v / pivot for v in ata[col]]
        aty[col] /= pivot
        for row in range(3):
            if row != col:
                factor = ata[row][col]
                ata[row] = [a - factor * b for a, b in zip(ata[row], ata[col], strict=True)]
                aty[row] -= factor * aty[col]
    base, step, seconds_per_byte = aty
    return base, step, 1 / seconds_per_byte


def main(folder: str) -> int:
    sys.path.insert(0, str(ROOT / "src"))
    from suanli.catalog import bundled_gpus, find_gpu
    from suanli.catalog.network import get_link
    from suanli.estimate.comm import all_reduce_s
    from suanli.estimate.links import intra_node_link, link_of

    gpus = bundled_gpus()
    base = Path(folder) / "network"
    fixture: list[list[object]] = []
    rows: list[str] = []
    table: list[str] = []
    for cluster in sorted(p.name for p in base.iterdir() if p.is_dir()):
        for collective in ("all_reduce", "send_recv"):
            path = base / cluster / f"{collective}.csv"
            if not path.is_file():
                continue
            for (n, dpn), points in sorted(read(path, collective).items()):
                factor = 2 * (n - 1) / n if collective == "all_reduce" else 1.0
                a, bus, worst, median = fit(points, factor)
                model = MODELLED.get((cluster, n, dpn)) if collective == "all_reduce" else None
                small_err = large_err = None
                link_id = ""
                if model is not None:
                    kind, ref = model
                    link = (
                        intra_node_link(find_gpu(ref, gpus))
                        if kind == "gpu"
                        else link_of(get_link(ref))
                    )
                    link_id = ref if kind == "link" else _link_id(link.name)
                    small = [(s, t) for s, t in points if s <= SMALL]
                    meas = statistics.median(t for _, t in small)
                    pred = statistics.median(all_reduce_s(s, n, link) for s, _ in small)
                    small_err = pred / meas - 1
                    large = [all_reduce_s(s, n, link) / t - 1 for s, t in points if s >= LARGE]
                    large_err = max(large, key=abs)
                    keep = {s for s, _ in small}
                    for target in LARGE_TARGETS:
                        if target <= points[-1][0] * 1.01:
                            keep.add(min((s for s, _ in points), key=lambda s: abs(s - target)))
                    for s, t in points:
                        if s in keep:
                            fixture.append([cluster, collective, n, dpn, s, f"{t:.6g}"])
                    table.append(
                        f"| {cluster} | {n} | {link.name} | {a * 1e6:.1f} | {bus / 1e9:.1f} | "
                        f"{meas * 1e6:.1f} | {pred * 1e6:.1f} | {small_err:+.0%} | "
                        f"{min(large):+.0%} .. {max(large):+.0%} |"
                    )
                rows.append(
                    _toml(
                        cluster,
                        collective,
                        n,
                        dpn,
                        link_id,
                        points,
                        a,
                        bus,
                        worst,
                        median,
                        small_err,
                        large_err,
                    )
                )
    out = ROOT / "tests" / "fixtures" / "collectives-vidur.csv"
    with out.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["cluster", "collective", "num_workers", "devices_per_node", "size_bytes", "seconds"]
        )
        w.writerows(fixture)
    print(f"# wrote {len(fixture)} rows to {out.relative_to(ROOT)}\n")
    print("\n".join(base_latency_fits(base)) + "\n")
    print("\n".join(rows))
    print(
        "\n| cluster | n | model link | fit a (us) | fit busbw (GB/s) | 1-64 KiB measured (us) "
        "| model (us) | error | >= 48 MiB error |"
    )
    print("|---|---:|---|---:|---:|---:|---:|---:|---|")
    print("\n".join(table))
    return 0


def _link_id(name: str) -> str:
    from suanli.catalog.network import links

    for lid, spec in links().items():
        if spec.name == name:
            return lid
    raise LookupError(name)


def _toml(
    cluster: str,
    collective: str,
    n: int,
    dpn: int,
    link_id: str,
    points: list[tuple[int, float]],
    a: float,
    bus: float,
    worst: float,
    median: float,
    small_err: float | None,
    large_err: float | None,
) -> str:
    lines = [
        "[[collective_fit]]",
        f'cluster = "{cluster}"',
        f'collective = "{collective}"',
        f"num_workers = {n}",
        f"devices_per_node = {dpn}",
        f'link = "{link_id}"',
        f"points = {len(points)}",
        f"min_bytes = {points[0][0]}",
        f"max_bytes = {points[-1][0]}",
        f"latency_s = {a:.3g}",
        f"bus_bytes_per_s = {bus:.4g}",
        f"fit_max_rel_error = {worst:.2f}",
        f"fit_median_rel_error = {median:.3f}",
    ]
    if small_err is not None and large_err is not None:
        lines += [
            f"model_small_rel_error = {small_err:.2f}",
            f"model_large_rel_error = {large_err:.2f}",
        ]
    lines += [
        f'source = "{SOURCE.format(cluster=cluster, collective=collective)}"',
        f'date = "{DATE}"',
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:] == ["--oneshot"]:
        b, st, bw = fit_oneshot(ONESHOT_AIC_FIXTURE, relative=True, **ONESHOT_H100_FIT)
        print(f"# nvlink4\noneshot_base_s = {b:.4g}\noneshot_step_s = {st:.3g}")
        print(f"oneshot_bytes_per_s = {bw:.3g}")
        b, st, bw = fit_oneshot(
            ONESHOT_AIC_FIXTURE, relative=True, max_bytes=ONESHOT_A100_MAX_BYTES, **ONESHOT_A100_FIT
        )
        print(f"# nvlink3\noneshot_base_s = {b:.3g}\noneshot_step_s = {st:.3g}")
        print(f"oneshot_bytes_per_s = {bw:.3g}\noneshot_max_bytes = {ONESHOT_A100_MAX_BYTES}")
        b, st, bw = fit_oneshot(ONESHOT_MI300X_FIXTURE, per_peer=True, relative=True)
        print(f"# infinity-fabric-mi300x\noneshot_base_s = {b:.3g}\noneshot_step_s = {st:.3g}")
        print(f"oneshot_bytes_per_s = {bw:.3g}\noneshot_per_peer = true")
        sys.exit(0)
    if sys.argv[1:2] == ["--protocols"]:
        folder = Path(sys.argv[2] if len(sys.argv) > 2 else "../shared/reference/kernel-profiles")
        curve = thin_curve(folder / "network" / "a100_dgx" / "all_reduce.csv")
        with CURVE_FIXTURE.open("w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["ranks", "bytes", "seconds"])
            w.writerows([n, s, f"{t:.6g}"] for n, s, t in curve)
        small, bulk, before, after = fit_protocols(read_curve())
        print(f"small_efficiency = {small:.2f}\nbulk_base_latency_s = {bulk:.3g}")
        print(f"# {len(curve)} points; median error {before:.1%} with one protocol, {after:.1%}")
        sys.exit(0)
    if sys.argv[1:] == ["--nvls"]:
        b, bw, med = fit_nvls()
        print(f"nvls_base_s = {b:.3g}\nnvls_bytes_per_s = {bw:.3g}  # median error {med:.1%}")
        sys.exit(0)
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "../shared/reference/kernel-profiles"))
