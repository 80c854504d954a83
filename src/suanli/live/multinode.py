"""Multi-node scaling: all-reduce bus bandwidth per tier and a training step on 1 node against N,
next to the speed model (``suanli doctor scaling --nnodes N``).

Under torchrun or srun every process is one rank (:func:`suanli.live.ranks.rendezvous`); a rank's
node is its hostname, or ``SUANLI_NODE`` where containers share one. Without a launcher the
command starts ``nnodes x procs_per_node`` local processes that count as ``nnodes`` simulated
nodes over loopback (how the tests run several "nodes" on one machine; the numbers then describe
loopback, not a network).

Each rank joins the world group and one group per node; the first rank of each node also joins
the "leaders" group. Three tiers are timed at each message size, the nccl-tests way
(:mod:`suanli.live.allreduce_timing`: warm-up, a loop of about :data:`TARGET_S`, the time averaged
over the ranks; bus bandwidth ``2(n-1)/n x size / time``, NVIDIA/nccl-tests
doc/PERFORMANCE.md):

- ``intra-node``: every node's own all-reduce, all nodes at once (the links inside a node);
- ``inter-node``: one rank per node (the network alone);
- ``all``: every rank (what data parallelism across nodes runs).

Then a DistributedDataParallel step of a small MLP runs on node 0 alone and on every node (the
same per-rank batch: weak scaling), and the speed model's data-parallel rule predicts the N-node
step from the 1-node step and the measured all-reduce of the gradients
(:func:`suanli.live.scaling.predicted_step_s`). On NCCL with a catalog GPU each tier also gets
the speed model's all-reduce time for its link (:mod:`suanli.estimate.comm`), so a slow fabric
shows as a measured/predicted ratio well below 1.

PyTorch is imported inside the ranks, never when this module is imported; :func:`placement` is pure.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from suanli.i18n import N_
from suanli.live.allreduce_timing import time_allreduce
from suanli.live.bench.collectives import free_port
from suanli.live.bench.grading import busbw
from suanli.live.ranks import Rendezvous, join_group, rendezvous

#: Where a rank says which node it counts as (containers sharing a hostname, simulated nodes).
NODE_ENV = "SUANLI_NODE"

#: The tiers, in the order measured and shown: inside each node (all nodes at once), one rank
#: per node (the network alone), every rank (data parallelism across nodes).
TIERS: tuple[str, ...] = ("intra-node", "inter-node", "all")

#: Default message sizes (bytes): a latency-bound one, a medium one and a bandwidth-bound one.
DEFAULT_SIZES_BYTES: tuple[int, ...] = (64 * 1024, 1024 * 1024, 16 * 1024 * 1024)
#: The largest message a sweep may use (each rank allocates it once).
MAX_SIZE_BYTES = 1024 * 1024 * 1024
#: The most local processes a simulated run starts (the single-node ``--procs`` cap).
MAX_SIMULATED_PROCESSES = 64
#: How long each size's timed loop lasts (seconds, nccl-tests' way: :mod:`allreduce_timing`).
TARGET_S = 0.2


@dataclass(frozen=True)
class Placement:
    """Which node each rank is on."""

    nodes: tuple[str, ...]
    """Node names, in order of their first rank."""
    node_of_rank: tuple[int, ...]
    """Index into :attr:`nodes`, per rank."""

    @property
    def nnodes(self) -> int:
        """How many nodes the ranks are on."""
        return len(self.nodes)

    @property
    def ranks_per_node(self) -> int:
        """Ranks on each node (the same on every node; :func:`placement` checks)."""
        return len(self.node_of_rank) // len(self.nodes)

    def ranks_of(self, node: int) -> list[int]:
        """The ranks on node ``node``, in order."""
        return [r for r, n in enumerate(self.node_of_rank) if n == node]

    @property
    def leaders(self) -> list[int]:
        """The first rank of each node."""
        return [self.ranks_of(n)[0] for n in range(self.nnodes)]


def placement(node_names: Sequence[str], nnodes: int) -> Placement:
    """Group ranks by node name (``node_names[rank]``); ValueError when the ranks are not on
    ``nnodes`` nodes or the nodes run different numbers of ranks."""
    nodes: list[str] = []
    for name in node_names:
        if name not in nodes:
            nodes.append(name)
    if len(nodes) != nnodes:
        raise ValueError(
            N_(
                "the ranks are on {found} node(s), not {nnodes}: launch --nnodes {nnodes} "
                "(one process per GPU on each node) or set SUANLI_NODE per node"
            ).format(found=len(nodes), nnodes=nnodes)
        )
    counts = {n: list(node_names).count(n) for n in nodes}
    if len(set(counts.values())) > 1:
        raise ValueError(
            N_(
                "the nodes run different numbers of ranks ({counts}): launch the same "
                "--nproc-per-node on every node"
            ).format(counts=", ".join(f"{n}={c}" for n, c in counts.items()))
        )
    return Placement(tuple(nodes), tuple(nodes.index(n) for n in node_names))


@dataclass(frozen=True)
class TierPoint:
    """One message size on one tier."""

    nbytes: int
    seconds: float
    """Seconds per all-reduce, averaged over the tier's ranks (rank 0's group)."""
    bus_bytes_per_s: float
    predicted_s: float | None = None
    """The speed model's all-reduce time for this tier's link (NCCL on a catalog GPU)."""
    predicted_bus_bytes_per_s: float | None = None
    measured_over_predicted: float | None = None
    """Measured bus bandwidth over the predicted one: below 1, the link is slower than the
    speed model assumes."""


def tier_point(nbytes: int, ranks: int, seconds: float, predicted_s: float | None) -> TierPoint:
    """A measured size with its bus bandwidth and, given a prediction, the ratio to it."""
    bus = busbw(nbytes / seconds, ranks) if seconds > 0 else 0.0
    if predicted_s is None or predicted_s <= 0:
        return TierPoint(nbytes, seconds, bus)
    predicted_bus = busbw(nbytes / predicted_s, ranks)
    return TierPoint(nbytes, seconds, bus, predicted_s, predicted_bus, bus / predicted_bus)


@dataclass(frozen=True)
class Tier:
    """One tier: its ranks, the link the speed model gives it, and the sweep."""

    name: str
    """``intra-node``, ``inter-node`` or ``all``."""
    ranks: int
    link: str | None
    """The speed model's link for this group (None without a prediction)."""
    points: tuple[TierPoint, ...]


@dataclass(frozen=True)
class NodesResult:
    """What rank 0 measured, and the prediction."""

    launcher: str
    """``torchrun``, ``slurm`` or ``simulated`` (local processes as nodes)."""
    backend: str
    nodes: tuple[str, ...]
    ranks_per_node: int
    gpu: str | None
    """The catalog GPU the predictions use (None on the CPU or an unknown GPU)."""
    tiers: tuple[Tier, ...]
    params: int
    step_1_node_s: float
    step_n_nodes_s: float
    allreduce_s: float
    """An all-reduce of the gradient buffer over every rank."""
    predicted_step_n_s: float
    prediction_note: str | None
    """Why the tiers have no speed-model figure, when they have none."""


def _node_name(environ: Mapping[str, str]) -> str:
    return environ.get(NODE_ENV) or socket.gethostname()


def _model_links(
    backend: str, gpu_name: str | None, place: Placement, inter_node: str | None
) -> tuple[str | None, dict[str, Any], str | None]:
    """The catalog GPU and the speed model's link per tier, or why there is none."""
    if backend != "nccl" or not gpu_name:
        return None, {}, N_("the speed model describes NCCL on GPUs: gloo on CPUs has no figure")
    from suanli.estimate.links import network_for
    from suanli.live.bench.profile import local_gpu

    gpu, _gpu_id = local_gpu(gpu_name)
    if gpu is None:
        return (
            None,
            {},
            N_("{gpu} is not in the catalog: no speed-model figure").format(gpu=gpu_name),
        )
    net = network_for(gpu, place.ranks_per_node, inter_node, stripe_nics=True)
    per = place.ranks_per_node
    links = {
        "intra-node": net.link_for(per),
        "inter-node": net.link_for(place.nnodes, per),
        "all": net.link_for(place.nnodes * per),
    }
    return gpu.id, links, None


def measure_rank(
    rdv: Rendezvous,
    nnodes: int,
    *,
    sizes_bytes: Sequence[int] = DEFAULT_SIZES_BYTES,
    hidden: int = 1024,
    layers: int = 4,
    batch: int = 16,
    steps: int = 12,
    backend: str = "auto",
    inter_node: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> NodesResult | None:
    """Run this rank's part; rank 0 returns the result, the others None. ValueError when the
    ranks are not on ``nnodes`` even nodes (every rank raises it)."""
    import torch
    import torch.distributed as dist

    env = os.environ if environ is None else environ
    backend = join_group(rdv, backend)
    device = (
        torch.device("cuda", torch.cuda.current_device())
        if backend == "nccl"
        else torch.device("cpu")
    )
    try:
        return _measure(
            dist,
            rdv,
            nnodes,
            backend,
            device,
            sizes_bytes,
            hidden,
            layers,
            batch,
            steps,
            inter_node,
            env,
        )
    finally:
        dist.destroy_process_group()


def _measure(
    dist: Any,
    rdv: Rendezvous,
    nnodes: int,
    backend: str,
    device: Any,
    sizes_bytes: Sequence[int],
    hidden: int,
    layers: int,
    batch: int,
    steps: int,
    inter_node: str | None,
    env: Mapping[str, str],
) -> NodesResult | None:
    import torch

    from suanli.estimate.comm import all_reduce_s
    from suanli.live.scaling import build_mlp, predicted_step_s, time_ddp_steps

    names: list[str | None] = [None] * rdv.world_size
    dist.all_gather_object(names, _node_name(env))
    place = placement([str(n) for n in names], nnodes)
    node = place.node_of_rank[rdv.rank]
    # Every rank creates every group, in the same order (torch.distributed requires it).
    node_groups = [dist.new_group(place.ranks_of(n)) for n in range(place.nnodes)]
    leaders = dist.new_group(place.leaders)
    my_tiers = {"intra-node": node_groups[node], "all": None}
    if rdv.rank in place.leaders:
        my_tiers["inter-node"] = leaders
    gpu_name = torch.cuda.get_device_name(device) if backend == "nccl" else None
    gpu_id, links, note = _model_links(backend, gpu_name, place, inter_node)
    sizes = {
        "intra-node": place.ranks_per_node,
        "inter-node": place.nnodes,
        "all": place.nnodes * place.ranks_per_node,
    }
    tiers = []
    for tier in TIERS:
        if sizes[tier] < 2:
            continue  # one rank per node: nothing to reduce inside a node
        points = []
        for nbytes in sizes_bytes:
            buf = torch.zeros(max(nbytes // 4, 1), dtype=torch.float32, device=device)
            dist.barrier()
            seconds = (
                time_allreduce(buf, my_tiers[tier], warmup=2, target_s=TARGET_S).seconds
                if tier in my_tiers
                else 0.0
            )
            link = links.get(tier)
            predicted = all_reduce_s(nbytes, sizes[tier], link) if link else None
            points.append(tier_point(nbytes, sizes[tier], seconds, predicted))
            del buf
        name = links[tier].name if tier in links else None
        tiers.append(Tier(tier, sizes[tier], name, tuple(points)))
    # The training step: node 0 alone (the others wait), then every node.
    torch.manual_seed(rdv.rank)
    dist.barrier()
    step_1 = 0.0
    if node == 0:
        model = build_mlp(hidden, layers, device)
        step_1 = time_ddp_steps(model, batch, hidden, steps, device, node_groups[0])
    dist.barrier()
    model = build_mlp(hidden, layers, device)
    step_n = time_ddp_steps(model, batch, hidden, steps, device)
    params = sum(p.numel() for p in model.parameters())
    grads = torch.zeros(params, dtype=torch.float32, device=device)
    dist.barrier()
    allreduce = time_allreduce(grads, warmup=2, target_s=TARGET_S).seconds
    dist.barrier()
    if rdv.rank != 0:
        return None
    return NodesResult(
        launcher=rdv.launcher,
        backend=backend,
        nodes=place.nodes,
        ranks_per_node=place.ranks_per_node,
        gpu=gpu_id,
        tiers=tuple(tiers),
        params=params,
        step_1_node_s=step_1,
        step_n_nodes_s=step_n,
        allreduce_s=allreduce,
        predicted_step_n_s=predicted_step_s(step_1, allreduce),
        prediction_note=note,
    )


def _simulated_worker(
    rank: int, world: int, per_node: int, port: int, nnodes: int, kwargs: dict[str, Any], queue: Any
) -> None:
    import torch

    torch.set_num_threads(1)
    env = {NODE_ENV: f"node{rank // per_node}"}
    rdv = Rendezvous("simulated", rank, world, rank % per_node, "127.0.0.1", port)
    result = measure_rank(rdv, nnodes, environ=env, **kwargs)
    if result is not None:
        queue.put(result)
    # As in suanli.live.scaling: leave without the interpreter's teardown, which can abort a
    # gloo rank whose peer is still closing its connection. The result is already queued.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def measure_simulated(nnodes: int, procs_per_node: int, **kwargs: Any) -> NodesResult:
    """Start ``nnodes x procs_per_node`` local processes that count as ``nnodes`` nodes
    (loopback, gloo unless ``backend`` says otherwise) and return rank 0's result."""
    import torch.multiprocessing as mp
    from torch.multiprocessing.spawn import start_processes

    world = nnodes * procs_per_node
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    kwargs.setdefault("backend", "gloo")
    # torch.multiprocessing re-exports it without annotations: typed by its own module.
    start_processes(  # type: ignore[no-untyped-call]
        _simulated_worker,
        args=(world, procs_per_node, free_port(), nnodes, kwargs, queue),
        nprocs=world,
        join=True,
        start_method="spawn",
    )
    result: NodesResult = queue.get()
    return result


def measure_nodes(
    nnodes: int,
    procs_per_node: int = 2,
    environ: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> NodesResult | None:
    """``suanli doctor scaling --nnodes N``: this process as one rank under torchrun or srun,
    or (without a launcher) simulated nodes of ``procs_per_node`` local processes each.
    Rank 0 gets the result, the other ranks None; ValueError on bad counts or sizes."""
    if nnodes < 2:
        raise ValueError(N_("--nnodes must be at least 2 to compare nodes"))
    sizes = kwargs.get("sizes_bytes", DEFAULT_SIZES_BYTES)
    if not sizes or len(sizes) > 8 or any(not 4 <= s <= MAX_SIZE_BYTES for s in sizes):
        raise ValueError(
            N_("--sizes takes 1 to 8 message sizes from 4 bytes to 1 GiB, e.g. 0.0625,1,16 (MiB)")
        )
    inter = kwargs.get("inter_node")
    if inter is not None:
        from suanli.catalog.network import get_link

        get_link(inter)  # an unknown link is one sentence listing the known ones, before any rank
    env = os.environ if environ is None else environ
    try:
        rdv = rendezvous(env)
    except ValueError:
        if "RANK" in env or "SLURM_PROCID" in env:
            raise  # a launcher set something unreadable: say so
        if nnodes * procs_per_node > MAX_SIMULATED_PROCESSES:
            raise ValueError(
                N_(
                    "simulating {nnodes} nodes of {per} processes starts {total} processes here "
                    "(at most {cap}): lower --nnodes or --procs-per-node, or launch with torchrun "
                    "or srun"
                ).format(
                    nnodes=nnodes,
                    per=procs_per_node,
                    total=nnodes * procs_per_node,
                    cap=MAX_SIMULATED_PROCESSES,
                )
            ) from None
        return measure_simulated(nnodes, procs_per_node, **kwargs)
    return measure_rank(rdv, nnodes, environ=env, **kwargs)
