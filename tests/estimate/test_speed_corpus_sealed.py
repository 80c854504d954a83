"""The sealed speed corpus (tests/fixtures/speed-corpus-sealed.csv) parses with the corpus loader,
its ids are unique, every model and GPU id resolves, and its sources are not the open corpus's.

Nothing here estimates a sealed row: the sealed file is scored once, at the end of an issue
(``benchmarks/accuracy_speed.py --sealed``), and never iterated against.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from suanli import find_gpu, load_catalog, load_model
from suanli.answers.devices import resolve_gpu
from suanli.answers.recompute import settle_work
from suanli.answers.request import with_file_format
from suanli.estimate.workload import TrainWork

from ..scripts import load_script

sc = load_script("benchmarks/speed_corpus.py")
SEALED = sc.load_corpus(sc.SEALED)
OPEN = sc.load_corpus()
CATALOG = load_catalog()
DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")


def test_sealed_file_has_rows_from_several_sources() -> None:
    assert len(SEALED) >= 20
    assert len({row.source_id for row in SEALED}) >= 5


def test_sealed_ids_are_unique_and_distinct_from_the_open_corpus() -> None:
    ids = [row.id for row in SEALED]
    assert len(ids) == len(set(ids)), sorted(i for i in set(ids) if ids.count(i) > 1)
    assert not set(ids) & {row.id for row in OPEN}


def test_sealed_sources_are_not_in_the_open_corpus() -> None:
    assert not {row.source_id for row in SEALED} & {row.source_id for row in OPEN}


@pytest.mark.parametrize("row", SEALED, ids=lambda row: row.id)
def test_sealed_row_is_cited_dated_and_resolves(row: sc.Row) -> None:
    assert row.source and ("http" in row.source or "arXiv" in row.source), row.id
    assert DATE.match(row.date) and "2021" <= row.date[:4] <= "2025", row.date
    assert row.value > 0
    assert find_gpu(row.gpu, CATALOG).id == row.gpu
    assert load_model(row.model).spec.num_layers > 0


def test_coverage_buckets() -> None:
    assert [sc.scale_bucket(n) for n in (1, 2, 8, 9, 64, 65, 1024, 1025)] == [
        "1",
        "2-8",
        "2-8",
        "9-64",
        "9-64",
        "65-1024",
        "65-1024",
        ">1024",
    ]
    assert sc.family("Megatron-LM") == "Megatron/NeMo"
    assert sc.family("something-new") == "other"
    assert sc.generation("CDNA 3", "amd") == "AMD CDNA"
    assert sc.generation("Ada Lovelace", "nvidia") == "Ada"
    assert sc.generation("Turing", "nvidia") == "other"


@pytest.mark.parametrize("row", SEALED, ids=lambda row: row.id)
def test_sealed_row_builds_a_valid_work_request(row: sc.Row) -> None:
    """The row's request settles into a workload suanli accepts (no speed is estimated)."""
    req = sc.request(row)
    loaded = load_model(req.model)
    work = with_file_format(req.work, loaded.weight_format)
    if work.task == "infer":
        work = replace(work, context=req.prompt + req.output)
    gpu, _ = resolve_gpu(req.gpu, req.catalog_file)
    settled, _ = settle_work(work, loaded.spec, gpu.memory_bytes)
    if isinstance(settled, TrainWork):
        assert settled.parallel.gpus == row.gpus
    else:
        assert settled.tp * settled.pp <= row.gpus
