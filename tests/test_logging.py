"""The log: silent unless --debug or SUANLI_LOG asks, then short lines on stderr."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from suanli.cli.main import main, take_debug
from suanli.log import configure, level_from_environment


@pytest.fixture(autouse=True)
def _quiet_afterwards(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("SUANLI_LOG", raising=False)
    yield
    configure(None)


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize(
    "args", [("--debug", "gpu", "4090"), ("gpu", "4090", "--debug"), ("gpu", "--debug", "4090")]
)
def test_debug_before_or_after_the_subcommand_prints_debug_records(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...]
) -> None:
    code, out, err = _run(capsys, *args)
    assert code == 0
    assert "RTX 4090" in out
    assert "DEBUG suanli.cli.main: suanli " in err
    assert "--debug" not in err  # the option is taken before the command sees its arguments


def test_without_debug_nothing_extra_is_printed(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(capsys, "gpu", "4090")
    assert code == 0 and "RTX 4090" in out
    assert err == ""


def test_a_library_warning_stays_quiet_unless_asked(capsys: pytest.CaptureFixture[str]) -> None:
    configure(None)
    logging.getLogger("suanli.live.devices").warning("nvmlDeviceGetPowerUsage failed")
    assert capsys.readouterr().err == ""  # not even logging's last-resort handler
    configure(logging.WARNING)
    logging.getLogger("suanli.live.devices").warning("nvmlDeviceGetPowerUsage failed")
    logging.getLogger("suanli.live.devices").info("not shown at warning")
    assert (
        capsys.readouterr().err == "WARNING suanli.live.devices: nvmlDeviceGetPowerUsage failed\n"
    )


def test_configure_twice_prints_each_record_once(capsys: pytest.CaptureFixture[str]) -> None:
    configure(logging.DEBUG)
    configure(logging.DEBUG)
    logging.getLogger("suanli.x").debug("once")
    assert capsys.readouterr().err.count("once") == 1


@pytest.mark.parametrize(("value", "shown"), [("debug", True), ("INFO", False), ("warning", False)])
def test_suanli_log_sets_the_level(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, value: str, shown: bool
) -> None:
    monkeypatch.setenv("SUANLI_LOG", value)
    code, _, err = _run(capsys, "gpu", "4090")
    assert code == 0
    assert ("DEBUG suanli.cli.main" in err) is shown
    assert logging.getLogger("suanli").getEffectiveLevel() == logging.getLevelName(value.upper())


def test_a_bad_suanli_log_is_one_sentence_and_exit_2(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SUANLI_LOG", "loud")
    code, out, err = _run(capsys, "gpu", "4090")
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [
        "error: SUANLI_LOG='loud' is not a log level; use debug, info, warning or error, or "
        "unset it"
    ]
    with pytest.raises(ValueError, match="not a log level"):
        level_from_environment({"SUANLI_LOG": "verbose"})
    assert level_from_environment({"SUANLI_LOG": ""}) is None


def test_debug_shows_where_bad_input_was_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "--debug", "gpu", "no-such-gpu")
    assert code == 2
    assert "Traceback" in err and "find_gpu" in err
    assert err.rstrip().splitlines()[-1].startswith("error: unknown GPU 'no-such-gpu'")
    code, _, err = _run(capsys, "gpu", "no-such-gpu")
    assert code == 2 and "Traceback" not in err


def test_debug_after_a_script_or_double_dash_is_the_script_s() -> None:
    assert take_debug(["doctor", "run", "train.py", "--debug"]) == (
        False,
        ["doctor", "run", "train.py", "--debug"],
    )
    assert take_debug(["--debug", "explain", "--", "--debug"]) == (
        True,
        ["explain", "--", "--debug"],
    )
