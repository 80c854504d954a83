"""``suanli explain`` on Windows (Chinese and English), Ascend/CANN and download failures: every
new entry recognises real messages (``explain_fixtures.REAL_MESSAGES``) and nothing else, and
ordinary lines from the same environments match nothing."""

from __future__ import annotations

import pytest

from suanli.live.errors import bundled_errors, explain_text

from .explain_fixtures import CHINA_ORDINARY_LINES, REAL_MESSAGES
from .test_errors import ORDINARY_LINES

NEW_ENTRIES = (
    "windows-dll-not-found",
    "windows-dll-init-failed",
    "windows-dll-load-failed-import",
    "windows-paging-file-too-small",
    "windows-spawn-without-main-guard",
    "cuda-checkpoint-on-cpu-only",
    "ascend-ez9999-operator",
    "ascend-ee9999-runtime",
    "ascend-ei9999-device-task",
    "ascend-e19999-graph-engine",
    "ascend-err99999-unknown",
    "ascend-npu-out-of-memory",
    "ascend-aclnn-call-failed",
    "ascend-hccl-socket-timeout",
    "ascend-hccp-init-failed",
    "hf-hub-cannot-connect",
    "hf-hub-timeout",
    "hf-local-entry-not-found",
    "pip-read-timeout",
    "pip-no-matching-distribution",
)


def test_explain_has_the_new_entries_each_with_a_real_message() -> None:
    ids = {e.id for e in bundled_errors()}
    assert len(NEW_ENTRIES) >= 15
    assert set(NEW_ENTRIES) <= ids
    covered = {eid for eid, _ in REAL_MESSAGES}
    assert set(NEW_ENTRIES) <= covered


@pytest.mark.parametrize(
    ("entry_id", "message"),
    REAL_MESSAGES,
    ids=[f"{eid}-{n}" for n, (eid, _) in enumerate(REAL_MESSAGES)],
)
def test_explain_real_message_matches_its_entry_only(entry_id: str, message: str) -> None:
    assert [m.id for m in explain_text(message)] == [entry_id]


@pytest.mark.parametrize("line", CHINA_ORDINARY_LINES)
def test_explain_ordinary_china_lines_match_nothing(line: str) -> None:
    assert explain_text(line) == []


def test_explain_whole_ordinary_corpus_matches_nothing() -> None:
    assert explain_text("\n".join([*ORDINARY_LINES, *CHINA_ORDINARY_LINES])) == []


def test_explain_new_entries_cite_sources_and_give_fixes() -> None:
    by_id = {e.id: e for e in bundled_errors()}
    for eid in NEW_ENTRIES:
        entry = by_id[eid]
        assert entry.source.startswith("https://"), eid
        assert len(entry.fix) > 80, eid


def test_explain_download_fixes_name_the_mirror_settings() -> None:
    by_id = {e.id: e for e in bundled_errors()}
    for eid in ("hf-hub-cannot-connect", "hf-hub-timeout", "hf-local-entry-not-found"):
        assert "HF_ENDPOINT=https://hf-mirror.com" in by_id[eid].fix
        assert "HF_HUB_DOWNLOAD_TIMEOUT" in by_id[eid].fix or "HF_HUB_ETAG_TIMEOUT" in (
            by_id[eid].fix
        )
    assert "HF_HUB_ENABLE_HF_TRANSFER" in by_id["hf-hub-timeout"].fix
    for eid in ("pip-read-timeout", "pip-no-matching-distribution"):
        fix = by_id[eid].fix
        assert "https://pypi.tuna.tsinghua.edu.cn/simple" in fix
        assert "--default-timeout=100" in fix and "--retries 5" in fix
    assert "PIP_INDEX_URL" in by_id["pip-read-timeout"].fix


WINDOWS_LOG = """\
Traceback (most recent call last):
  File "<string>", line 1, in <module>
  File "D:\\Anaconda3\\envs\\wssam\\lib\\multiprocessing\\spawn.py", line 116, in spawn_main
    exitcode = _main(fd, parent_sentinel)
  File "D:\\PycharmProject\\WeCLIP\\scripts\\dist_clip_voc.py", line 10, in <module>
    import torch
  File "D:\\Anaconda3\\envs\\wssam\\lib\\site-packages\\torch\\__init__.py", line 124, in <module>
    raise err
OSError: [WinError 1455] 页面文件太小，无法完成操作。 Error loading "D:\\Anaconda3\\envs\\wssam\\lib\\site-packages\\torch\\lib\\cudnn_cnn_infer64_8.dll" or one of its dependencies.
"""  # noqa: E501

ASCEND_LOG = """\
RuntimeError: RunOpApiV2:../torch_npu/csrc/framework/OpCommand.cpp:281 NPU function error: device error type 3, error code is 507035
[ERROR] 2026-05-21-12:39:23 (PID:697, Device:0, RankID:-1) ERR00100 PTA call acl api failed
[Error]: The vector core execution is abnormal.
        Rectify the fault based on the error information in the ascend log.
EE9999: Inner Error!
EE9999[PID: 697] 2026-05-21-12:39:23.687.932 (EE9999):  rtStreamSynchronizeWithTimeout execution failed, reason=vector core exception[FUNC:FuncErrorReason][FILE:error_message_manage.cc][LINE:65]
        TraceBack (most recent call last):
       synchronize stream with timeout failed, runtime result = 507035[FUNC:ReportCallError][FILE:log_inner.cpp][LINE:148]
"""  # noqa: E501


def test_explain_whole_windows_traceback() -> None:
    assert [m.id for m in explain_text(WINDOWS_LOG)] == ["windows-paging-file-too-small"]


def test_explain_whole_ascend_log() -> None:
    matches = explain_text(ASCEND_LOG)
    assert [m.id for m in matches] == ["ascend-ee9999-runtime"]
    assert matches[0].matched_line == "EE9999: Inner Error!"
