"""A complex rotary embedding (torchtitan's ``apply_rotary_emb``) under torch.compile: Inductor
cannot generate code for complex operators, so the rotary stays as eager kernels (``--rope
complex``); a real one (transformers' ``rotate_half``) is fused. Checked here on the compiler
itself, on the CPU, and through the element-wise model and the command line."""

from __future__ import annotations

import warnings

import pytest
from click.testing import CliRunner

from suanli.answers.request import WorkRequest, build_work
from suanli.catalog import find_gpu, load_catalog
from suanli.cli.main import cli
from suanli.estimate.device import device_for
from suanli.estimate.elementwise import (
    elementwise_kernels_per_layer,
    elementwise_seconds,
    training_op_bytes,
)
from suanli.estimate.workload import TrainWork
from suanli.models.resolve import load_model

from ..cli.test_cli import run

SPEC = load_model("llama-3.1-8b").spec
DEVICE = device_for(find_gpu("h100-sxm-80gb", load_catalog()), "bf16", auto_calibration=False)


def _seconds(work: TrainWork) -> float:
    return float(elementwise_seconds(SPEC, work, DEVICE.bandwidth, DEVICE.gemm_model, 32, 16384, 1))


def test_inductor_falls_back_to_eager_kernels_for_a_complex_rotary() -> None:
    torch = pytest.importorskip("torch")
    from torch._inductor.utils import run_and_get_code

    def complex_rope(xq: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        return torch.view_as_real(xq_ * freqs).flatten(3).type_as(xq)

    def real_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), dim=-1) * sin

    xq = torch.randn(2, 16, 4, 64, dtype=torch.bfloat16)
    freqs = torch.polar(torch.ones(16, 1, 32), torch.randn(16, 1, 32))
    cos, sin = (torch.randn(16, 1, 64, dtype=torch.bfloat16) for _ in range(2))
    torch._dynamo.reset()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Inductor warns about the complex operators
            _, complex_code = run_and_get_code(torch.compile(complex_rope), xq, freqs)
            _, real_code = run_and_get_code(torch.compile(real_rope), xq, cos, sin)
    except Exception as exc:  # pragma: no cover - a machine without a C++ compiler
        pytest.skip(f"torch.compile cannot build kernels here: {exc!r:.200}")
    complex_src, real_src = "\n".join(complex_code), "\n".join(real_code)
    # The complex multiply is PyTorch's own (eager) kernel, called from the compiled graph.
    assert "torch.ops.aten.mul.Tensor(" in complex_src
    assert "torch.ops.aten.view_as_complex" in complex_src
    assert "torch.ops.aten." not in real_src


def test_a_complex_rotary_under_compile_costs_what_eager_does() -> None:
    real = TrainWork(task="full", batch=2, seq=8192, kernels="compiled")
    cplx = TrainWork(task="full", batch=2, seq=8192, kernels="compiled", rope="complex")
    eager = TrainWork(task="full", batch=2, seq=8192, kernels="eager", rope="complex")
    assert cplx.rope_kernels == "eager" and real.rope_kernels == "compiled"
    fused_bytes = training_op_bytes(SPEC, cplx, fused=True)
    assert fused_bytes["rope"] == training_op_bytes(SPEC, eager, fused=False)["rope"]
    assert fused_bytes["rope"] == 5 * training_op_bytes(SPEC, real, fused=True)["rope"]
    # Only the rotary changes: the other kinds keep the compiled bytes.
    for kind in ("norm", "activation", "add"):
        assert fused_bytes[kind] == training_op_bytes(SPEC, real, fused=True)[kind]
    assert _seconds(real) < _seconds(cplx) < _seconds(eager)
    # Three kernels each for q and k (upcast, complex multiply, cast back), not one.
    count = elementwise_kernels_per_layer
    assert count(SPEC, cplx) == count(SPEC, real) + 5


def test_hand_fused_kernels_replace_the_models_rotary() -> None:
    fused = TrainWork(task="full", batch=2, seq=8192, kernels="fused", rope="complex")
    assert fused.rope_kernels == "fused"
    plain = TrainWork(task="full", batch=2, seq=8192, kernels="fused")
    assert _seconds(fused) == pytest.approx(_seconds(plain))


def test_an_eager_complex_rotary_moves_the_same_bytes_in_fewer_kernels() -> None:
    real = TrainWork(task="full", batch=2, seq=8192)
    cplx = TrainWork(task="full", batch=2, seq=8192, rope="complex")
    assert training_op_bytes(SPEC, cplx, fused=False) == training_op_bytes(SPEC, real, fused=False)
    count = elementwise_kernels_per_layer
    assert count(SPEC, real) - count(SPEC, cplx) == 4


def test_torchtitan_brings_its_complex_rotary() -> None:
    work = build_work(WorkRequest(task="pretrain", kernels="compiled", framework="torchtitan"))
    assert isinstance(work, TrainWork) and work.rope == "complex"
    assert build_work(WorkRequest(task="pretrain", kernels="compiled")).rope == "real"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_bad_rope_is_one_sentence_and_exit_2(lang: str) -> None:
    result = run("--lang", lang, "perf", "llama-3.1-8b", "--gpu", "h100", "--rope", "quaternion")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and not result.stdout
    assert "quaternion" in result.stderr
    assert len([line for line in result.stderr.strip().splitlines() if line]) == 1


def test_explain_says_the_rotary_ran_eager() -> None:
    args = ["perf", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--zero", "3", "--batch", "2"]
    args += ["--seq", "8192", "--recompute", "op", "--kernels", "compiled", "--explain"]
    plain = CliRunner().invoke(cli, args)
    titan = CliRunner().invoke(cli, [*args, "--rope", "complex"])
    assert plain.exit_code == titan.exit_code == 0, titan.output
    assert "complex rotary" in titan.output and "complex rotary" not in plain.output


def test_explain_says_it_in_chinese_too() -> None:
    args = ["--lang", "zh", "perf", "llama-3.1-8b", "--gpu", "h100", "--gpus", "8", "--zero", "3"]
    args += ["--batch", "2", "--seq", "8192", "--recompute", "op", "--kernels", "compiled"]
    result = run(*args, "--rope", "complex", "--explain")
    assert result.returncode == 0, result.stderr
    # The whole memory formula is translated, the note on the rotary with it.
    assert "复数旋转位置编码" in result.stdout and "优化器步字节数" in result.stdout
    assert "complex rotary" not in result.stdout
