"""GGUF headers: written with the ``gguf`` package (llama.cpp's own writer), read by suanli."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf")
np = pytest.importorskip("numpy")

from suanli.answers.memory import MemoryRequest, memory  # noqa: E402
from suanli.answers.perf import InferPerfAnswer, PerfRequest, perf  # noqa: E402
from suanli.answers.request import WorkRequest  # noqa: E402
from suanli.models.gguf import GGML_TYPES, GGUFError, read_gguf  # noqa: E402
from suanli.models.resolve import ModelSourceError, load_model  # noqa: E402

Q = gguf.GGMLQuantizationType
HIDDEN, FFN, LAYERS, HEADS, KV, VOCAB = 256, 512, 2, 4, 2, 512
#: A different quantisation type per tensor kind: 13 types in one file.
TYPES = {
    "token_embd": Q.Q8_0,
    "attn_q": Q.Q4_K,
    "attn_k": Q.Q5_K,
    "attn_v": Q.Q6_K,
    "attn_output": Q.Q4_0,
    "ffn_gate": Q.Q2_K,
    "ffn_up": Q.Q3_K,
    "ffn_down": Q.Q5_0,
    "output": Q.Q4_1,
}
LAYER_TYPES = [Q.IQ4_NL, Q.Q5_1]  # attn_q of layer 1 and ffn_up of layer 1 use these


def _raw(shape: tuple[int, ...], qtype: object) -> object:
    """Bytes of a tensor of logical ``shape`` (rows, cols) in ``qtype``, as gguf expects."""
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    rows, cols = shape
    return np.zeros((rows, cols // block * size), dtype=np.uint8)


def write_llama(path: Path, *, tie: bool = False) -> int:
    """A two-layer Llama GGUF; returns the bytes of its tensor data as gguf's reader sees it."""
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(4096)
    w.add_embedding_length(HIDDEN)
    w.add_block_count(LAYERS)
    w.add_feed_forward_length(FFN)
    w.add_head_count(HEADS)
    w.add_head_count_kv(KV)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list([f"t{i}" for i in range(VOCAB)])

    def add(name: str, shape: tuple[int, ...], qtype: object) -> None:
        if qtype == Q.F32:
            w.add_tensor(name, np.zeros(shape, dtype=np.float32))
        else:
            w.add_tensor(name, _raw(shape, qtype), raw_dtype=qtype)

    add("token_embd.weight", (VOCAB, HIDDEN), TYPES["token_embd"])
    kv = HIDDEN // HEADS * KV
    for i in range(LAYERS):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
        add(b + "attn_q.weight", (HIDDEN, HIDDEN), LAYER_TYPES[0] if i else TYPES["attn_q"])
        add(b + "attn_k.weight", (kv, HIDDEN), TYPES["attn_k"])
        add(b + "attn_v.weight", (kv, HIDDEN), TYPES["attn_v"])
        add(b + "attn_output.weight", (HIDDEN, HIDDEN), TYPES["attn_output"])
        w.add_tensor(b + "ffn_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
        add(b + "ffn_gate.weight", (FFN, HIDDEN), TYPES["ffn_gate"])
        add(b + "ffn_up.weight", (FFN, HIDDEN), LAYER_TYPES[1] if i else TYPES["ffn_up"])
        add(b + "ffn_down.weight", (HIDDEN, FFN), TYPES["ffn_down"])
    w.add_tensor("output_norm.weight", np.zeros(HIDDEN, dtype=np.float32))
    if not tie:
        add("output.weight", (VOCAB, HIDDEN), TYPES["output"])
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return sum(int(t.n_bytes) for t in gguf.GGUFReader(str(path)).tensors)


def test_type_table_matches_ggml() -> None:
    known = {t.value for t in Q}
    for type_id, (name, block, size) in GGML_TYPES.items():
        if type_id not in known:  # newer than this gguf package (MXFP4)
            continue
        qtype = Q(type_id)
        assert qtype.name == name
        assert gguf.GGML_QUANT_SIZES[qtype] == (block, size)


def test_header_gives_exact_weight_bytes_and_types(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    data_bytes = write_llama(path)
    header = read_gguf(path)
    assert header.architecture == "llama"
    assert header.weight_bytes == data_bytes
    kinds = header.types()
    assert len(kinds) >= 12  # F32 norms and 11 quantised types
    assert kinds["Q4_K"] == 1 and kinds["IQ4_NL"] == 1 and kinds["F32"] == 2 * LAYERS + 1


def test_mem_and_perf_read_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    data_bytes = write_llama(path)
    loaded = load_model(str(path))
    assert loaded.spec.num_layers == LAYERS and loaded.spec.vocab_size == VOCAB
    assert loaded.params.total == read_gguf(path).parameters
    mem = memory(MemoryRequest(model=str(path), work=WorkRequest(task="infer", context=512)))
    weights = sum(ln.bytes for ln in mem.lines if ln.key == "weights")
    assert weights == pytest.approx(data_bytes, abs=2)  # exactly the file's tensors
    half = memory(
        MemoryRequest(model=str(path), work=WorkRequest(task="infer", context=512, gpu_layers=1))
    )
    assert half.total_bytes < mem.total_bytes and half.cpu_bytes > 0
    speed = perf(
        PerfRequest(model=str(path), gpu="rtx4090", work=WorkRequest(task="infer", gpu_layers=1))
    )
    assert isinstance(speed, InferPerfAnswer) and speed.tokens_per_s > 0
    with pytest.raises(ValueError, match="--task infer"):
        memory(MemoryRequest(model=str(path), work=WorkRequest(task="lora")))


def test_tied_output_is_read(tmp_path: Path) -> None:
    path = tmp_path / "tied.gguf"
    write_llama(path, tie=True)
    assert load_model(str(path)).spec.tie_word_embeddings


def test_bad_files_get_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "tiny.gguf"
    write_llama(path)
    data = path.read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(data[:200])
    with pytest.raises(GGUFError, match="truncated"):
        read_gguf(cut)
    not_gguf = tmp_path / "x.gguf"
    not_gguf.write_bytes(b"PK\x03\x04" + b"\0" * 60)
    with pytest.raises(ModelSourceError, match="not a GGUF file"):
        load_model(str(not_gguf))
    huge = tmp_path / "huge.gguf"
    huge.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 10**12, 1))
    with pytest.raises(GGUFError, match="not a sane GGUF file"):
        read_gguf(huge)
    odd = tmp_path / "odd.gguf"
    odd.write_bytes(b"GGUF" + struct.pack("<IQQ", 9, 0, 0))
    with pytest.raises(GGUFError, match="version 9"):
        read_gguf(odd)


def test_ollama_name_resolves_to_its_gguf_blob(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    digest = "ab" * 32
    blob = tmp_path / "blobs" / f"sha256-{digest}"
    blob.parent.mkdir(parents=True)
    write_llama(blob)
    manifest = tmp_path / "manifests" / "registry.ollama.ai" / "library" / "tinyllama" / "q4"
    manifest.parent.mkdir(parents=True)
    layer = {"mediaType": "application/vnd.ollama.image.model", "digest": f"sha256:{digest}"}
    manifest.write_text(json.dumps({"layers": [layer]}))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path))
    loaded = load_model("tinyllama:q4")
    assert loaded.source == "ollama" and loaded.spec.num_layers == LAYERS
    assert loaded.weight_format is not None and loaded.weight_format.startswith("gguf-bits-")
    with pytest.raises(ModelSourceError):
        load_model("tinyllama:missing")


class _CountingFile:
    """A local file standing in for HfFileSystem's remote file: counts the bytes read."""

    def __init__(self, path: Path, log: dict[str, int]) -> None:
        self.f = path.open("rb")
        self.log = log

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.log["bytes"] += len(data)
        return data

    def __enter__(self) -> _CountingFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.f.close()


def test_hub_gguf_reads_only_the_header_and_keeps_it_by_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.models.fake_hub import FakeHub, hf

    path = tmp_path / "tiny.gguf"
    data_bytes = write_llama(path)
    log = {"bytes": 0, "opens": 0}
    opened: list[str] = []

    class FakeFS:
        def open(self, name: str, mode: str, block_size: int) -> _CountingFile:
            assert mode == "rb" and block_size > 0
            opened.append(name)
            return _CountingFile(path, log)

    fake = FakeHub(tmp_path / "hf-cache").install(monkeypatch)
    monkeypatch.setattr(hf, "HfFileSystem", FakeFS)
    commit = fake.add("someone/tiny-GGUF", {"sub/tiny-Q4_K_M.gguf": "binary"}, "v1")
    local = load_model(str(path))
    first = load_model("someone/tiny-GGUF/sub/tiny-Q4_K_M.gguf", revision="v1")
    assert fake.info_calls == [("someone/tiny-GGUF", "v1")]  # the revision reaches the hub
    assert opened == [f"someone/tiny-GGUF@{commit}/sub/tiny-Q4_K_M.gguf"]
    assert first.source == "hub" and first.params.total == local.params.total
    assert first.quantization == local.quantization
    # the header only: far less than the file's tensor data
    assert 0 < log["bytes"] < path.stat().st_size - data_bytes + 64
    second = load_model("someone/tiny-GGUF/sub/tiny-Q4_K_M.gguf", revision="v1")
    assert len(opened) == 1 and second.params.total == first.params.total  # same commit
    monkeypatch.setenv("HF_HUB_OFFLINE", "yes")  # offline: the commit noted last time
    third = load_model("someone/tiny-GGUF/sub/tiny-Q4_K_M.gguf", revision="v1")
    assert len(opened) == 1 and len(fake.info_calls) == 2 and third.params == first.params
    monkeypatch.delenv("HF_HUB_OFFLINE")
    fake.add("someone/tiny-GGUF", {"sub/tiny-Q4_K_M.gguf": "moved"}, "v1")
    load_model("someone/tiny-GGUF/sub/tiny-Q4_K_M.gguf", revision="v1")
    assert len(opened) == 2  # the branch moved: read again


def test_hub_gguf_offline_is_one_sentence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("SUANLI_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "true")
    with pytest.raises(
        ModelSourceError,
        match=r"not cached from the Hugging Face hub and offline mode is on \(HF_HUB_OFFLINE\)",
    ):
        load_model("someone/tiny-GGUF/tiny.gguf")


def test_hub_gguf_missing_file_and_gated_repo(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from tests.models.fake_hub import FakeHub, hf, hub_exception

    class MissingFS:
        def open(self, name: str, mode: str, block_size: int) -> None:
            raise FileNotFoundError(name)

    fake = FakeHub(tmp_path / "hf-cache").install(monkeypatch)
    monkeypatch.setattr(hf, "HfFileSystem", MissingFS)
    fake.add("someone/tiny-GGUF", {"a.gguf": "x"})
    with pytest.raises(ModelSourceError, match=r"has no file b\.gguf at main"):
        load_model("someone/tiny-GGUF/b.gguf")
    fake.fail = hub_exception("GatedRepoError")
    with pytest.raises(ModelSourceError, match="gated model"):
        load_model("someone/tiny-GGUF/b.gguf")
