"""The known-error catalog behind ``suanli explain``: data, matching and validation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suanli.catalog.loader import CatalogError
from suanli.live.errors import (
    MAX_LINE_CHARS,
    ErrorEntry,
    bundled_errors,
    explain_lines,
    explain_text,
    load_errors,
    parse_errors,
)

ENTRIES = bundled_errors()
SAMPLES = [
    pytest.param(entry.id, sample, id=f"{entry.id}-{n}")
    for entry in ENTRIES
    for n, sample in enumerate(entry.samples, start=1)
]

# ---------------------------------------------------------------------------------------------
# The bundled data
# ---------------------------------------------------------------------------------------------


def test_catalog_has_at_least_35_entries_with_sources() -> None:
    assert len(ENTRIES) >= 35
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids))
    for entry in ENTRIES:
        assert entry.source.startswith("https://"), entry.id
        assert len(entry.cause) > 40 and len(entry.fix) > 40, entry.id


def test_catalog_covers_the_required_errors() -> None:
    required = [
        "cuda-out-of-memory",
        "hip-out-of-memory",
        "torch-out-of-memory-error",
        "cuda-error-out-of-memory",
        "cuda-driver-insufficient",
        "no-kernel-image",
        "torch-not-compiled-with-cuda",
        "nccl-watchdog-timeout",
        "nccl-unhandled-system-error",
        "nccl-unhandled-cuda-error",
        "nccl-invalid-usage",
        "cudnn-not-initialized",
        "cublas-execution-failed",
        "cublas-not-initialized",
        "cublas-not-supported",
        "device-side-assert",
        "tensors-on-different-devices",
        "nvml-driver-library-mismatch",
        "illegal-memory-access",
        "no-cuda-gpus-available",
        "cuda-visible-devices-unknown-error",
        "invalid-device-ordinal",
        "nvml-unknown-error-container",
        "nvidia-smi-no-driver",
        "flash-attention-needs-ampere",
        "bf16-unsupported",
        "input-weight-type-mismatch",
        "expected-scalar-type",
        "bitsandbytes-cuda-setup",
        "address-already-in-use",
        "process-group-not-initialized",
        "dataloader-bus-error-shm",
        "host-oom-killed",
        "too-many-open-files",
        "xid-79-fallen-off-bus",
        "gpu-uncorrectable-ecc",
        "vllm-no-kv-cache-memory",
        "vllm-max-len-exceeds-kv-cache",
        "stream-capture-not-permitted",
        "native-segfault",
        "extension-undefined-symbol",
    ]
    missing = set(required) - {e.id for e in ENTRIES}
    assert not missing


@pytest.mark.parametrize(("entry_id", "sample"), SAMPLES)
def test_every_sample_matches_its_entry_and_only_it(entry_id: str, sample: str) -> None:
    assert [m.id for m in explain_text(sample)] == [entry_id]


@pytest.mark.parametrize("entry", ENTRIES, ids=[e.id for e in ENTRIES])
def test_samples_do_not_just_repeat_pattern_literals(entry: ErrorEntry) -> None:
    """A sample must be a real message, not a pattern written out: it carries more text."""
    for sample in entry.samples:
        for pattern in entry.patterns:
            assert sample.strip() != pattern.pattern


def test_variable_parts_do_not_matter() -> None:
    small = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0"
    big = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 118.31 GiB. GPU 7"
    assert [m.id for m in explain_text(small)] == [m.id for m in explain_text(big)]
    for port in ("29500", "41213"):
        line = f"bind to 0.0.0.0:{port} (errno: 98 - Address already in use)"
        assert [m.id for m in explain_text(line)] == ["address-already-in-use"]


# ---------------------------------------------------------------------------------------------
# Real multi-line logs
# ---------------------------------------------------------------------------------------------

PYTORCH_OOM_TRACEBACK = """\
  0%|          | 0/3750 [00:00<?, ?it/s]
Traceback (most recent call last):
  File "/workspace/train.py", line 212, in <module>
    main()
  File "/workspace/train.py", line 188, in main
    loss = model(**batch).loss
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1736, in _wrapped_call_impl
    return self._call_impl(*args, **kwargs)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/module.py", line 1747, in _call_impl
    return forward_call(*args, **kwargs)
  File "/usr/local/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", line 1190, in forward
    logits = self.lm_head(hidden_states)
  File "/usr/local/lib/python3.11/site-packages/torch/nn/modules/linear.py", line 125, in forward
    return F.linear(input, self.weight, self.bias)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.83 GiB. GPU 0 has a total capacity of 79.25 GiB of which 5.12 GiB is free. Process 88231 has 74.12 GiB memory in use. Of the allocated memory 70.41 GiB is allocated by PyTorch, and 2.96 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""  # noqa: E501

NCCL_WATCHDOG_LOG = """\
{'loss': 1.2231, 'grad_norm': 0.83, 'learning_rate': 1.8e-05, 'epoch': 0.41}
 41%|████      | 1580/3854 [5:12:09<7:28:41, 11.84s/it]
[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
[rank4]:[E321 02:07:08.414640780 ProcessGroupNCCL.cpp:607] [Rank 4] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600067 milliseconds before timing out.
[rank0]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 1 Rank 0] Exception (either an error or timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.
[rank0]:[E321 02:07:08.465214431 ProcessGroupNCCL.cpp:621] [Rank 0] Some NCCL operations have failed or timed out. Due to the asynchronous nature of CUDA kernels, subsequent GPU operations might run on corrupted/incomplete data.
[rank0]:[E321 02:07:08.465229012 ProcessGroupNCCL.cpp:627] [Rank 0] To avoid data inconsistency, we are taking the entire process down.
terminate called after throwing an instance of 'c10::DistBackendError'
  what():  [PG 1 Rank 0] Process group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1580, OpType=ALLREDUCE, NumelIn=466119168, NumelOut=466119168, Timeout(ms)=600000) ran for 600060 milliseconds before timing out.
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:609 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7f1c7a76c446 in /usr/local/lib/python3.11/site-packages/torch/lib/libc10.so)
W0321 02:07:09.133000 80700 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 80747 closing signal SIGTERM
E0321 02:07:10.209000 80700 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: -6) local_rank: 0 (pid: 80746) of binary: /usr/bin/python3
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
train.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-03-21_02:07:09
  host      : gpu-node-3
  rank      : 0 (local_rank: 0)
  exitcode  : -6 (pid: 80746)
  error_file: <N/A>
  traceback : Signal 6 (SIGABRT) received by PID 80746
============================================================
"""  # noqa: E501

DEVICE_ASSERT_LOG = """\
../aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: [134,0,0], thread: [0,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
../aten/src/ATen/native/cuda/Indexing.cu:1284: indexSelectLargeIndex: block: [134,0,0], thread: [1,0,0] Assertion `srcIndex < srcSelectDimSize` failed.
Traceback (most recent call last):
  File "/app/run.py", line 40, in <module>
    out = model.generate(**inputs)
RuntimeError: CUDA error: device-side assert triggered
CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing CUDA_LAUNCH_BLOCKING=1.
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
"""  # noqa: E501

MULTI_NODE_LOG = """\
gpu-a:41893:42001 [0] NCCL INFO Bootstrap : Using eth0:10.20.1.16<0>
gpu-a:41893:42001 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.20.1.16<0>
[2791034.517203] Out of memory: Killed process 41901 (python3) total-vm:182345608kB, anon-rss:121234567kB
gpu-b:33107:33290 [2] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer gpu-a<41893>
[rank9]:[E1130 04:11:02.100000001 ProcessGroupNCCL.cpp:632] [Rank 9] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600512 milliseconds before timing out.
[2791034.517203] Out of memory: Killed process 41902 (python3) total-vm:182345608kB, anon-rss:121234567kB
"""  # noqa: E501


def test_full_pytorch_oom_traceback() -> None:
    matches = explain_text(PYTORCH_OOM_TRACEBACK)
    assert [m.id for m in matches] == ["cuda-out-of-memory"]
    assert matches[0].matched_line.startswith("torch.OutOfMemoryError: CUDA out of memory.")


def test_nccl_watchdog_log() -> None:
    matches = explain_text(NCCL_WATCHDOG_LOG)
    assert [m.id for m in matches] == ["nccl-watchdog-timeout"]
    assert "[Rank 0]" in matches[0].matched_line  # the first matching line, not a later one


def test_device_side_assert_log() -> None:
    assert [m.id for m in explain_text(DEVICE_ASSERT_LOG)] == ["device-side-assert"]


def test_a_log_reports_each_error_once_in_order_of_first_appearance() -> None:
    matches = explain_text(MULTI_NODE_LOG)
    assert [m.id for m in matches] == [
        "host-oom-killed",
        "nccl-remote-error",
        "nccl-watchdog-timeout",
    ]
    assert "41901" in matches[0].matched_line


def test_long_log_from_an_iterable_of_lines() -> None:
    noise = [f"step {i} loss {1.0 / (i + 1):.4f} lr 3e-4\n" for i in range(20_000)]
    lines = [*noise, "RuntimeError: CUDA error: invalid device ordinal\n", *noise]
    assert [m.id for m in explain_lines(iter(lines))] == ["invalid-device-ordinal"]


def test_matched_line_is_stripped_and_clipped() -> None:
    line = "    RuntimeError: CUDA error: an illegal memory access was encountered " + "x" * 2000
    (match,) = explain_text(line)
    assert match.matched_line.startswith("RuntimeError")
    assert len(match.matched_line) == MAX_LINE_CHARS


def test_match_as_dict_has_the_json_keys() -> None:
    (match,) = explain_text("AssertionError: Torch not compiled with CUDA enabled")
    assert list(match.as_dict()) == ["id", "error", "cause", "fix", "source", "line"]


ORDINARY_LINES = [
    "Epoch 3/10: 100%|██████████| 1563/1563 [04:12<00:00,  6.19it/s, loss=0.231, acc=0.914]",
    "{'loss': 1.8734, 'grad_norm': 0.912, 'learning_rate': 0.00024, 'epoch': 1.37}",
    "[rank3]: step=1200 loss=2.3141 lr=3.0e-04 tokens/s=48213 mem_reserved=61.2GiB",
    "Saving model checkpoint to /ckpt/checkpoint-1200",
    "Loading checkpoint shards: 100%|██████████| 4/4 [00:07<00:00,  1.86s/it]",
    "Successfully installed nvidia-cudnn-cu12-9.1.0.70 nvidia-nccl-cu12-2.21.5 torch-2.5.1",
    "Requirement already satisfied: bitsandbytes in ./venv/lib/python3.11/site-packages (0.44.1)",
    "Collecting flash-attn==2.6.3",
    "  Downloading flash_attn-2.6.3.tar.gz (2.6 MB)",
    "Building wheels for collected packages: flash-attn",
    "INFO:     Started server process [4312]",
    "INFO:     Uvicorn running on http://0.0.0.0:8000 (Press CTRL+C to quit)",
    "INFO 11-30 02:35:04 [gpu_model_runner.py:1580] Model loading took 15.0 GiB and 7.21 seconds",
    "INFO 11-30 02:35:19 [worker.py:267] Memory profiling takes 3.11 seconds; "
    "total_gpu_memory (79.19GiB) x gpu_memory_utilization (0.90) = 71.27GiB",
    "INFO 11-30 02:35:19 [executor_base.py:112] # cuda blocks: 27845, # CPU blocks: 2048",
    "INFO 11-30 02:35:19 [executor_base.py:117] Maximum concurrency for 32768 tokens per "
    "request: 13.60x",
    "INFO 11-30 02:35:41 [model_runner.py:1562] Graph capturing finished in 22 secs.",
    "gpu-a:41893:42001 [0] NCCL INFO Bootstrap : Using eth0:10.20.1.16<0>",
    "gpu-a:41893:42001 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB eth0:10.20.1.16<0>",
    "gpu-a:41893:42001 [0] NCCL INFO comm 0x5581 rank 0 nranks 16 cudaDev 0 busId 18000 "
    "- Init COMPLETE",
    "torch.distributed.init_process_group(backend='nccl', timeout=0:30:00) done on rank 0",
    "Using device: cuda:0 (NVIDIA H100 80GB HBM3), compute capability 9.0, bf16 supported",
    "torch.cuda.is_available(): True, device_count: 8",
    "| NVIDIA-SMI 550.54.15    Driver Version: 550.54.15    CUDA Version: 12.4     |",
    "| GPU  Name        Persistence-M | Bus-Id   Disp.A | Volatile Uncorr. ECC |",
    "WARNING: Setting OMP_NUM_THREADS environment variable for each process to be 1 in default",
    "Killed 0 stale workers before starting the run",
    "Evaluating semantic segmentation: mIoU 47.3",
    "Downloading data: 100%|██████████| 1.12G/1.12G [00:21<00:00, 52.6MB/s]",
    "wandb: Run summary: train/loss 1.102, train/global_step 3854",
]


def test_ordinary_log_lines_match_nothing() -> None:
    assert len(ORDINARY_LINES) == 30
    for line in ORDINARY_LINES:
        assert explain_text(line) == [], line
    assert explain_text("\n".join(ORDINARY_LINES)) == []


def test_empty_text_matches_nothing() -> None:
    assert explain_text("") == []
    assert explain_text("\n\n   \n") == []


# ---------------------------------------------------------------------------------------------
# Validation of errors files
# ---------------------------------------------------------------------------------------------

GOOD_ENTRY = """
[[error]]
id = "demo-error"
title = "Demo error"
patterns = ['demo failure \\d+']
samples = ['RuntimeError: demo failure 42 happened']
cause = "A demo cause."
fix = "A demo fix."
source = "https://example.org/demo"
date = "2026-11-30"
"""


def test_a_valid_entry_parses() -> None:
    (entry,) = parse_errors(GOOD_ENTRY, "demo.toml")
    assert entry.id == "demo-error"
    assert [m.id for m in explain_text("xx demo failure 7 yy", (entry,))] == ["demo-error"]


def test_load_errors_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(GOOD_ENTRY, encoding="utf-8")
    assert [e.id for e in load_errors(path)] == ["demo-error"]
    assert load_errors() is bundled_errors()


def test_unreadable_errors_file_raises_catalog_error(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match="cannot read errors file"):
        load_errors(tmp_path / "missing.toml")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD_ENTRY + 'color = "red"\n', r"demo\.toml, error 'demo-error': unknown key 'color'"),
        (GOOD_ENTRY.replace("\\d+", "(unclosed"), r"pattern '.*' does not compile"),
        (GOOD_ENTRY + GOOD_ENTRY, r"duplicate error id 'demo-error'"),
        (GOOD_ENTRY.replace('cause = "A demo cause."\n', ""), r"missing 'cause'"),
        (GOOD_ENTRY.replace("patterns = ['demo failure \\d+']", "patterns = []"), "patterns"),
        (GOOD_ENTRY.replace("failure 42", "success 42"), r"sample 1 matches none"),
        (GOOD_ENTRY.replace('"2026-11-30"', '"last week"'), r"date 'last week'"),
        (GOOD_ENTRY.replace('"demo-error"', '"Demo Error"'), r"id must be lowercase"),
        (GOOD_ENTRY.replace('title = "Demo error"', "title = 3"), r"'title' must be"),
        ("version = 2\n" + GOOD_ENTRY, r"unknown top-level key 'version'"),
        ("", r"no \[\[error\]\] entries"),
        ("[[error]\n", r"not valid TOML"),
    ],
)
def test_invalid_errors_files_are_rejected(text: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message) as info:
        parse_errors(text, "demo.toml")
    assert "demo.toml" in str(info.value) or "combine" in str(info.value)


def test_leading_inline_flags_are_allowed_anywhere_in_the_catalog() -> None:
    """A leading (?i) is scoped when patterns are combined, so its entry need not come first."""
    text = GOOD_ENTRY.replace("'demo failure \\d+'", "'(?i)demo failure \\d+'").replace(
        "failure 42", "FAILURE 42"
    )
    (entry,) = parse_errors(text, "demo.toml")
    other = ErrorEntry(
        id="other",
        title="t",
        patterns=(re.compile("CaseSensitive"),),
        samples=("CaseSensitive",),
        cause="c",
        fix="f",
        source="s",
        date="2026-11",
    )
    found = explain_text("DEMO FAILURE 1 casesensitive", (other, entry))
    assert [m.id for m in found] == ["demo-error"]


def _plain_scan(text: str) -> list[str]:
    """The definition of the result: first matching line per entry, ordered by line then file."""
    first: dict[str, tuple[int, int]] = {}
    for number, line in enumerate(text.splitlines()):
        for order, entry in enumerate(ENTRIES):
            if entry.id not in first and entry.matches(line):
                first[entry.id] = (number, order)
    return sorted(first, key=lambda eid: first[eid])


@pytest.mark.parametrize("chunk_lines", [1, 7, 20_000])
def test_fast_scan_agrees_with_a_plain_line_by_line_scan(
    chunk_lines: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("suanli.live.errors.CHUNK_LINES", chunk_lines)
    samples = [s for e in reversed(ENTRIES) for s in e.samples]
    text = "\n".join([*ORDINARY_LINES, *samples, MULTI_NODE_LOG, NCCL_WATCHDOG_LOG])
    expected = _plain_scan(text)
    assert len(expected) == len(ENTRIES)
    assert [m.id for m in explain_text(text)] == expected
