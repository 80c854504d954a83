"""The multi-node doctor: every rank's environment facts, gathered over ``torch.distributed`` and
compared (``suanli doctor --all-ranks``).

Launched by torchrun (``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``) or srun
(``SLURM_PROCID``/``SLURM_NTASKS``, the master from ``MASTER_ADDR`` or the first node of the job),
one process per rank. Each rank probes itself (:func:`suanli.live.env.probe`), the facts travel
with ``all_gather_object`` (gloo without a GPU, NCCL with one) and every rank gets the same
comparison (rank 0 prints it and carries the exit code).

PyTorch is imported when the ranks meet, never when this module is imported; the comparison is
pure, so tests feed it table-driven facts.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from suanli.i18n import N_

#: The facts compared across ranks, in the order shown: name -> (label, critical). A critical
#: disagreement (different driver, CUDA, NCCL, PyTorch or GPU model) is the classic multi-node
#: failure and makes the command exit 1; the others are warnings, because nodes may differ there
#: on purpose (interface names, a spare GPU).
FACTS: dict[str, tuple[str, bool]] = {
    "driver_version": (N_("GPU driver"), True),
    "driver_cuda": (N_("CUDA the driver supports"), True),
    "torch_version": (N_("PyTorch"), True),
    "torch_cuda": (N_("PyTorch's CUDA"), True),
    "torch_hip": (N_("PyTorch's ROCm"), True),
    "nccl_version": (N_("NCCL"), True),
    "gpu_models": (N_("GPU models"), True),
    "python": (N_("Python"), False),
    "gpu_count": (N_("GPUs on the node"), False),
    "gpu_topology": (N_("GPU links (NVLink, PCIe)"), False),
    "network_interfaces": (N_("network interfaces"), False),
    "infiniband": (N_("InfiniBand devices"), False),
    "nccl_env": (N_("NCCL_* environment"), False),
}

#: Tests only: ``RANK:fact=value;...`` overrides a fact on one rank, so a mismatch can be injected
#: into ranks that all run on this one machine.
INJECT_ENV = "SUANLI_RANKS_INJECT"

#: How long a rank waits for the others before giving up (seconds).
RENDEZVOUS_TIMEOUT_S = 120.0

#: The port srun ranks meet on when MASTER_PORT is unset: derived from the job id, so two jobs
#: sharing a node do not collide (the convention of PyTorch Lightning's SLURM environment).
SLURM_PORT_BASE = 10000
SLURM_PORT_SPAN = 20000
DEFAULT_PORT = 29500


@dataclass(frozen=True)
class Rendezvous:
    """Where and as whom this process joins the group."""

    launcher: str
    """``torchrun`` or ``slurm``."""
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int


@dataclass(frozen=True)
class RankFacts:
    """One rank's environment facts (strings, ``None`` when not known)."""

    rank: int
    hostname: str
    local_rank: int
    facts: dict[str, str | None]


@dataclass(frozen=True)
class ValueGroup:
    """One value of a fact and the ranks that have it."""

    value: str | None
    ranks: tuple[int, ...]


@dataclass(frozen=True)
class Disagreement:
    """A fact the ranks do not agree on, its values most common first."""

    fact: str
    label: str
    """What the fact is, in words (a catalog message)."""
    critical: bool
    values: tuple[ValueGroup, ...]


def _int(environ: Mapping[str, str], name: str) -> int:
    text = environ.get(name, "")
    try:
        return int(text)
    except ValueError:
        raise ValueError(
            N_("{name}={value} is not a whole number: check the launcher's environment").format(
                name=name, value=text
            )
        ) from None


def first_slurm_host(nodelist: str) -> str:
    """The first host of a Slurm node list (``gpu[03-04,07],cpu1`` -> ``gpu03``)."""
    match = re.match(r"\s*([^,\[\s]+)(?:\[([^\]\-,]+))?", nodelist)
    if not match:
        raise ValueError(
            N_("cannot read the Slurm node list {nodelist!r}: set MASTER_ADDR").format(
                nodelist=nodelist
            )
        )
    return match.group(1) + (match.group(2) or "")


def rendezvous(environ: Mapping[str, str] | None = None) -> Rendezvous:
    """The rank, world size and master from torchrun's or srun's variables (torchrun's win, so
    torchrun started by srun works); ValueError when neither launcher set them."""
    env = os.environ if environ is None else environ
    if "RANK" in env and "WORLD_SIZE" in env:
        launcher = "torchrun"
        rank, world = _int(env, "RANK"), _int(env, "WORLD_SIZE")
        local = _int(env, "LOCAL_RANK") if "LOCAL_RANK" in env else rank
        addr = env.get("MASTER_ADDR", "127.0.0.1")
        port = _int(env, "MASTER_PORT") if "MASTER_PORT" in env else DEFAULT_PORT
    elif "SLURM_PROCID" in env and "SLURM_NTASKS" in env:
        launcher = "slurm"
        rank, world = _int(env, "SLURM_PROCID"), _int(env, "SLURM_NTASKS")
        local = _int(env, "SLURM_LOCALID") if "SLURM_LOCALID" in env else 0
        nodelist = (
            env.get("SLURM_STEP_NODELIST")
            or env.get("SLURM_JOB_NODELIST")
            or env.get("SLURM_NODELIST")
            or ""
        )
        if env.get("MASTER_ADDR"):
            addr = env["MASTER_ADDR"]
        elif nodelist:
            addr = first_slurm_host(nodelist)
        else:
            raise ValueError(
                N_("srun set no node list: set MASTER_ADDR to the first node's address")
            )
        if "MASTER_PORT" in env:
            port = _int(env, "MASTER_PORT")
        elif "SLURM_JOB_ID" in env:
            port = SLURM_PORT_BASE + _int(env, "SLURM_JOB_ID") % SLURM_PORT_SPAN
        else:
            port = DEFAULT_PORT
    else:
        raise ValueError(
            N_(
                "--all-ranks runs one process per rank under a launcher: "
                "torchrun --nproc-per-node N -m suanli doctor --all-ranks, "
                "or srun python -m suanli doctor --all-ranks"
            )
        )
    if world < 1 or not 0 <= rank < world:
        raise ValueError(
            N_("rank {rank} is outside a world of {world} ranks: check the launcher").format(
                rank=rank, world=world
            )
        )
    return Rendezvous(launcher, rank, world, local, addr, port)


def _listing(folder: str) -> list[str]:
    try:
        return sorted(p.name for p in Path(folder).iterdir())
    except OSError:
        return []


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        return ""


def infiniband_devices(root: str = "/sys/class/infiniband") -> str | None:
    """``mlx5_0:1=4X HDR ACTIVE,...``: each HCA port's rate and state (None without any)."""
    found = []
    for dev in _listing(root):
        for port in _listing(f"{root}/{dev}/ports"):
            base = Path(root, dev, "ports", port)
            rate = _read(base / "rate").split("(")[0].strip()  # "200 Gb/sec (4X HDR)"
            state = _read(base / "state").split(":")[-1].strip()  # "4: ACTIVE"
            found.append(f"{dev}:{port}={rate} {state}".strip())
    return ",".join(found) or None


def network_interfaces(root: str = "/sys/class/net") -> str | None:
    """The network interfaces but loopback, by name (None where /sys is not there)."""
    names = [n for n in _listing(root) if n != "lo"]
    return ",".join(names) or None


def _topology() -> str | None:
    from suanli.live import nvml

    try:
        return nvml.topology_summary()
    except Exception:  # a fact, not a reason to fail the gathering
        return None


def _injected(rank: int, environ: Mapping[str, str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in environ.get(INJECT_ENV, "").split(";"):
        where, _, pair = item.partition(":")
        fact, eq, value = pair.partition("=")
        if eq and where.strip() == str(rank):
            out[fact.strip()] = value
    return out


def collect_facts(
    rank: int, local_rank: int, environ: Mapping[str, str] | None = None
) -> RankFacts:
    """This process's facts, probed now (imports PyTorch and NVML through the doctor)."""
    from suanli.live.env import probe

    env_vars = os.environ if environ is None else environ
    env = probe()
    torch_full = env.torch_version
    if torch_full and env.torch_build_tag:
        torch_full = f"{torch_full}+{env.torch_build_tag}"
    nccl = sorted(f"{k}={v}" for k, v in env_vars.items() if k.startswith("NCCL_"))
    facts: dict[str, str | None] = {
        "driver_version": env.driver.driver_version,
        "driver_cuda": env.driver.cuda_driver_version,
        "torch_version": torch_full,
        "torch_cuda": env.torch_cuda,
        "torch_hip": env.torch_hip,
        "nccl_version": env.nccl_version,
        "gpu_models": ",".join(sorted(set(env.gpu_names))) or None,
        "python": ".".join(platform.python_version_tuple()[:2]),
        "gpu_count": str(len(env.gpu_names)),
        "gpu_topology": _topology(),
        "network_interfaces": network_interfaces(),
        "infiniband": infiniband_devices(),
        "nccl_env": " ".join(nccl) or None,
    }
    facts.update(_injected(rank, env_vars))
    return RankFacts(rank, socket.gethostname(), local_rank, facts)


def compare(ranks: Sequence[RankFacts]) -> list[Disagreement]:
    """The facts on which the ranks disagree, in :data:`FACTS` order (pure)."""
    out = []
    for fact, (label, critical) in FACTS.items():
        groups: dict[str | None, list[int]] = {}
        for r in sorted(ranks, key=lambda r: r.rank):
            groups.setdefault(r.facts.get(fact), []).append(r.rank)
        if len(groups) > 1:
            # Most common value first: the odd ranks out are the ones listed last.
            ordered = sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))
            values = tuple(ValueGroup(v, tuple(rs)) for v, rs in ordered)
            out.append(Disagreement(fact, label, critical, values))
    return out


def rank_ranges(ranks: Sequence[int]) -> str:
    """``0-3,6`` for ranks 0, 1, 2, 3 and 6."""
    parts: list[str] = []
    ordered = sorted(ranks)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def join_group(rdv: Rendezvous, backend: str = "auto") -> str:
    """Join the default process group as ``rdv`` says (``auto``: NCCL when this rank sees a GPU,
    else gloo; 120 s to meet the others) and return the backend. With NCCL the current device is
    the local rank's GPU, where NCCL's object collectives run."""
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    if backend == "auto":
        backend = "nccl" if torch.cuda.is_available() and dist.is_nccl_available() else "gloo"
    if backend == "nccl":
        torch.cuda.set_device(rdv.local_rank % torch.cuda.device_count())
    dist.init_process_group(
        backend,
        init_method=f"tcp://{rdv.master_addr}:{rdv.master_port}",
        rank=rdv.rank,
        world_size=rdv.world_size,
        timeout=timedelta(seconds=RENDEZVOUS_TIMEOUT_S),
    )
    return backend


def gather(rdv: Rendezvous, mine: RankFacts) -> tuple[str, list[RankFacts]]:
    """Every rank's facts, in rank order, and the backend used (joins and leaves the group)."""
    import torch.distributed as dist

    backend = join_group(rdv)
    try:
        everyone: list[RankFacts | None] = [None] * rdv.world_size
        dist.all_gather_object(everyone, mine)
    finally:
        dist.destroy_process_group()
    return backend, sorted((r for r in everyone if r is not None), key=lambda r: r.rank)
