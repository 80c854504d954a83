"""The bounds every number entering suanli is held to, shared by the command line, the web API
and the Python API: large enough for any real job, small enough that no conversion to a C or
numpy type overflows and no search, simulation or expansion runs unbounded (docs/security.md)."""

from __future__ import annotations

#: Tokens of one sequence, prompt, output or context (4,194,304).
MAX_TOKENS = 1 << 22
#: GPUs of one job or one catalog comparison.
MAX_GPUS = 1 << 20
#: Sequences of one micro-batch or concurrent requests.
MAX_BATCH = 1 << 20
#: Default ceiling of an integer option that names no bound of its own (2**31 - 1).
MAX_INT = (1 << 31) - 1
#: Default ceiling of a float option that names no bound of its own.
MAX_FLOAT = 1e18
#: Requests one capacity simulation may generate (rate x duration, over all replicas).
MAX_SIMULATED_REQUESTS = 2_000_000
#: Replicas one capacity simulation may run.
MAX_REPLICAS = 4096
#: Cells of one stencil grid (nx x ny x nz).
MAX_GRID_CELLS = 10**15
#: Decoder layers, experts and other per-layer expansions a config may ask for.
MAX_LAYERS = 100_000
MAX_EXPERTS = 1 << 16
#: Scale-out NICs of one node (``--nics-per-node``): the largest nodes carry 8 to 16.
MAX_NICS_PER_NODE = 64
#: Width of a hidden state, MLP or vocabulary a config may state.
MAX_WIDTH = 1 << 24
#: Bytes of a name that may be looked up as a path (POSIX NAME_MAX is 255 per component).
MAX_PATH_CHARS = 4096
MAX_NAME_CHARS = 255
#: Nesting of a JSON document suanli reads (configs are 2-3 levels deep).
MAX_JSON_DEPTH = 64

#: Connections ``suanli serve`` accepts in one burst: its listen backlog, and the room its
#: connection cap leaves under the open-file limit (web/protocol.py).
SERVER_ACCEPT_BURST = 50

#: Ceilings by option / field name (the CLI's option names are the web's field names).
BY_NAME: dict[str, float] = {
    "seq": MAX_TOKENS,
    "context": MAX_TOKENS,
    "prompt": MAX_TOKENS,
    "output": MAX_TOKENS,
    "output_tokens": MAX_TOKENS,
    "prefill_chunk": MAX_TOKENS,
    "max_sequence_length": 1 << 16,
    "batch": MAX_BATCH,
    "global_batch": MAX_BATCH * 1024,
    "grad_accum": 1 << 20,
    "gpus": MAX_GPUS,
    "exact_gpus": MAX_GPUS,
    "max_gpus": MAX_GPUS,
    "gpus_per_node": 1024,
    "nics_per_node": MAX_NICS_PER_NODE,
    "tp": 1 << 16,
    "pp": 1 << 16,
    "vpp": 1024,
    "ep": 1 << 16,
    "cp": 1 << 16,
    "shard_group": MAX_GPUS,
    "lora_rank": 1 << 16,
    "images": 1 << 12,
    "gpu_layers": MAX_LAYERS,
    "recompute_every": MAX_LAYERS,
    "replicas": MAX_REPLICAS,
    "requests": MAX_SIMULATED_REQUESTS,
    "step_overhead_ms": 1e6,
    "rate": 1e9,
    "denoise_steps": 10_000,
    "cuda_context": 1024.0,
    "nccl": 1024.0,
    "min_memory": 1e6,
    "price": 1e12,
    "tokens": 1e18,
}
