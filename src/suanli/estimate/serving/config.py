"""The serving engine's configuration: scheduling policy, batch limits and KV policy.

The policies are described in :mod:`suanli.estimate.serving`. Part of that package.
"""

from __future__ import annotations

from dataclasses import dataclass

from suanli.estimate.workload import KERNELS, check_choice
from suanli.i18n import N_

POLICIES = ("static", "continuous", "chunked", "prefill-first")
KV_POLICIES = ("preempt", "reserve")


@dataclass(frozen=True, kw_only=True)
class EngineConfig:
    """How the serving engine schedules (see :mod:`suanli.estimate.serving`)."""

    policy: str = "continuous"
    max_batch: int = 256
    """Most sequences in flight (vLLM ``max_num_seqs``; the static batch size)."""
    max_batched_tokens: int | None = None
    """Tokens per iteration: prompt tokens for ``continuous`` and ``prefill-first`` (default
    8192), all tokens for ``chunked`` (default 2048); unused by ``static``."""
    batch_timeout_s: float = 0.5
    """``static``: the longest a waiting request holds the batch back."""
    kv_policy: str = "preempt"
    block_size: int = 16
    gpu_memory_utilization: float = 0.9
    step_overhead_s: float = 0.0
    """Fixed time per iteration (scheduling, sampling, launches); 0 in the pure roofline."""
    kernels: str = "eager"
    """The element-wise kernels (``InferWork.kernels``): ``fused`` and ``compiled`` run each
    residual add inside the next norm, two kernel floors fewer per layer and iteration."""

    def __post_init__(self) -> None:
        check_choice("policy", self.policy, POLICIES)
        if self.kv_policy not in KV_POLICIES:
            raise ValueError(
                N_("kv policy {value!r} is not one of {allowed}").format(
                    value=self.kv_policy, allowed=KV_POLICIES
                )
            )
        check_choice("kernels", self.kernels, KERNELS)
        if self.max_batch < 1:
            raise ValueError(
                N_("--{option} must be >= 1, got {value}").format(
                    option="max-batch", value=self.max_batch
                )
            )
        if self.max_batched_tokens is not None and self.max_batched_tokens < 1:
            raise ValueError(
                N_("--{option} must be >= 1, got {value}").format(
                    option="max-batched-tokens", value=self.max_batched_tokens
                )
            )
        if self.batch_timeout_s < 0 or self.step_overhead_s < 0:
            raise ValueError(N_("batch timeout and step overhead must be >= 0"))
        if self.block_size < 1:
            raise ValueError(
                N_("block size must be >= 1, got {value}").format(value=self.block_size)
            )
        if not 0 < self.gpu_memory_utilization <= 1:
            raise ValueError(
                N_("--gpu-memory-utilization must be in (0, 1], got {value}").format(
                    value=self.gpu_memory_utilization
                )
            )

    @property
    def token_budget(self) -> int:
        """Tokens per iteration for the prefill scheduler."""
        if self.max_batched_tokens is not None:
            return self.max_batched_tokens
        return 2048 if self.policy == "chunked" else 8192
