"""One forward pass of a component, walked op by op: parameters, GEMM shapes, attention calls,
element-wise traffic and the activations alive at the peak.

The walk follows the diffusers / transformers modules' forward code (one PyTorch kernel per op in
eager mode). FLOPs are counted as ``torch.utils.flop_counter.FlopCounterMode`` counts them:
``2·M·N·K`` per GEMM and convolution (a convolution is the implicit GEMM
``M = batch·H_out·W_out``, ``N = C_out``, ``K = C_in·k²``; biases are not counted) and
``4·B·H·L_q·L_kv·d`` per attention call, so a test can compare the two exactly.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Gemm:
    """``count`` GEMMs ``(m x k) @ (k x n)`` (a convolution as its implicit GEMM)."""

    m: int
    n: int
    k: int
    count: int = 1

    @property
    def flops(self) -> float:
        """``2·m·n·k`` per GEMM, times the count."""
        return 2.0 * self.m * self.n * self.k * self.count


@dataclass(frozen=True)
class Attention:
    """One scaled-dot-product attention call (non-causal, fused: no score matrix stored)."""

    batch: int
    heads: int
    q_len: int
    kv_len: int
    head_dim: int

    @property
    def flops(self) -> float:
        """``QKᵀ`` and ``PV``: ``4·B·H·L_q·L_kv·d``."""
        return 4.0 * self.batch * self.heads * self.q_len * self.kv_len * self.head_dim


@dataclass
class Graph:
    """What one forward pass of one component holds and does, accumulated by the walk."""

    name: str
    batch: int
    dtype_bytes: float = 2.0
    nchw: bool = False
    """Convolutions take NCHW tensors (diffusers' default layout): cuDNN's tensor-core kernels
    work in NHWC, so each convolution transposes its input and its output (NVIDIA, "Convolutional
    Layers User's Guide", section "Tensor Layouts In Memory: NCHW vs NHWC")."""
    params: int = 0
    gemms: list[Gemm] = field(default_factory=list)
    attentions: list[Attention] = field(default_factory=list)
    elementwise_ops: list[tuple[float, int]] = field(default_factory=list)
    """The non-matmul ops (norms, activations, adds, resampling): (read + write bytes, kernels)."""
    held_bytes: float = 0.0
    """Activations kept alive across ops right now (skip connections, residuals)."""
    peak_bytes: float = 0.0
    """The largest live set seen: held tensors + one op's inputs and outputs."""

    # -- parameters and ops -------------------------------------------------------------------
    def weights(self, count: int) -> None:
        """Parameters that do no GEMM of their own (embeddings tables, positional tables)."""
        self.params += count

    def linear(self, tokens: int, d_in: int, d_out: int, bias: bool = True) -> int:
        """``nn.Linear(d_in, d_out)`` over ``tokens`` per sample; returns the output width."""
        self.params += d_in * d_out + (d_out if bias else 0)
        self.gemms.append(Gemm(self.batch * tokens, d_out, d_in))
        self._live(self.batch * tokens * (d_in + d_out))
        return d_out

    def conv(self, c_in: int, c_out: int, kernel: int, h_out: int, w_out: int) -> int:
        """``nn.Conv2d(c_in, c_out, kernel)`` producing ``h_out x w_out``; returns ``c_out``."""
        self.params += c_in * c_out * kernel * kernel + c_out
        self.gemms.append(Gemm(self.batch * h_out * w_out, c_out, c_in * kernel * kernel))
        if self.nchw:  # in and out of NHWC; a strided input is as large as the output grid's
            self.elementwise(h_out * w_out * (c_in + c_out), passes=2, kernels=2)
        # The input is about as large as the output times the channel ratio (stride 1 or 2).
        self._live(self.batch * h_out * w_out * c_out + self.batch * h_out * w_out * c_in)
        return c_out

    def attention(self, q_len: int, kv_len: int, width: int, heads: int) -> None:
        """One fused attention call of ``heads`` heads over ``width`` channels."""
        self.attentions.append(Attention(self.batch, heads, q_len, kv_len, width // heads))
        self._live(self.batch * width * (2 * q_len + 2 * kv_len))

    # -- memory-bound ops ---------------------------------------------------------------------
    def norm(self, channels: int, elements: int, params_per_channel: int = 2) -> None:
        """GroupNorm / LayerNorm / RMSNorm over ``elements`` per sample (reads twice: statistics,
        then normalise; writes once); ``params_per_channel`` 2 with a bias, 1 without, 0 plain."""
        self.params += params_per_channel * channels
        self.elementwise(elements, passes=3)

    def rms_norm_fp32(self, channels: int, elements: int) -> None:
        """diffusers' eager ``RMSNorm``: ``x.to(float32).pow(2).mean(-1)``, ``x * rsqrt(var)``
        (promoted to fp32), ``.to(dtype)``, ``* weight``: six kernels moving ``5b + 24`` bytes
        per element (``b`` the activation bytes)."""
        self.params += channels
        self.traffic(elements, 5 * self.dtype_bytes + 24, kernels=6)

    def rotary_fp32(self, elements: int) -> None:
        """diffusers' ``apply_rotary_emb`` on one of q or k: ``stack([-x_imag, x_real])`` then
        ``(x.float() * cos + x_rotated.float() * sin).to(dtype)``: eight kernels moving
        ``6b + 40`` bytes per element."""
        self.traffic(elements, 6 * self.dtype_bytes + 40, kernels=8)

    def traffic(self, elements: int, bytes_per_element: float, kernels: int) -> None:
        """``kernels`` element-wise kernels moving ``bytes_per_element`` per element in all."""
        self.elementwise_ops.append((self.batch * elements * bytes_per_element, kernels))
        self._live(self.batch * elements * 3)

    def elementwise(self, elements: int, passes: int = 2, kernels: int = 1) -> None:
        """``kernels`` element-wise kernels moving ``passes`` tensors of ``elements`` per
        sample (an activation reads and writes: 2; an add reads two and writes: 3)."""
        self.elementwise_ops.append((self.dtype_bytes * self.batch * elements * passes, kernels))
        self._live(self.batch * elements * min(passes, 3))

    # -- live activations ---------------------------------------------------------------------
    def hold(self, elements: int) -> None:
        """Keep a tensor of ``elements`` per sample alive (a residual or a skip connection)."""
        self.held_bytes += self.dtype_bytes * self.batch * elements

    def release(self, elements: int) -> None:
        """Free what :meth:`hold` kept."""
        self.held_bytes = max(0.0, self.held_bytes - self.dtype_bytes * self.batch * elements)

    def _live(self, elements: float) -> None:
        live = self.held_bytes + self.dtype_bytes * elements
        if live > self.peak_bytes:
            self.peak_bytes = live

    # -- totals -------------------------------------------------------------------------------
    @property
    def elementwise_bytes(self) -> float:
        """Read + write traffic of all the non-matmul ops."""
        return sum(nbytes for nbytes, _ in self.elementwise_ops)

    @property
    def flops(self) -> float:
        """Forward FLOPs of the walk (GEMMs, convolutions and attention)."""
        return sum(g.flops for g in self.gemms) + sum(a.flops for a in self.attentions)
