"""The test environment is locked (issue 38): requirements/test.lock pins every package with its
hashes, covers every requirement pyproject.toml states, and scripts/test.sh installs exactly it."""

from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "test.lock"
#: The second environment, for the tests that compare with transformers (its 4.x generation).
LOCK_4 = ROOT / "requirements" / "test-transformers4.lock"
LOCKS = [LOCK, LOCK_4]
TEST_SH = ROOT / "scripts" / "test.sh"

#: One locked package: its name, its pin and the hash lines after it.
_ENTRY = re.compile(
    r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:[ \\\n]+--hash=sha256:[0-9a-f]{64})*)", re.M
)


def _pins(lock: Path = LOCK) -> dict[str, tuple[str, int]]:
    """Canonical name -> (version, number of hashes)."""
    text = lock.read_text()
    return {
        canonicalize_name(m.group(1)): (m.group(2), m.group(3).count("--hash=sha256:"))
        for m in _ENTRY.finditer(text)
    }


def _stated() -> list[Requirement]:
    """What pyproject.toml asks: the dependencies, the web and hub extras, the test group."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    lines = list(config["project"]["dependencies"])
    for extra in ("web", "hub"):
        lines += config["project"]["optional-dependencies"][extra]
    lines += config["dependency-groups"]["test"]
    return [Requirement(line) for line in lines]


@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: p.name)
def test_every_locked_package_is_pinned_with_hashes(lock: Path) -> None:
    pins = _pins(lock)
    assert len(pins) > 50
    unhashed = [name for name, (_, hashes) in pins.items() if hashes == 0]
    assert unhashed == []
    # Every requirement line of the file is one of the parsed entries (nothing unpinned).
    listed = [ln.split()[0] for ln in lock.read_text().splitlines() if re.match(r"^[A-Za-z]", ln)]
    assert len(listed) == len(pins)


@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: p.name)
def test_the_lock_satisfies_everything_pyproject_asks(lock: Path) -> None:
    """A requirement added to pyproject.toml without refreshing the lock fails here."""
    pins = _pins(lock)
    missing, outside = [], []
    for req in _stated():
        if req.marker is not None and not req.marker.evaluate({"python_version": "3.11"}):
            continue
        pin = pins.get(canonicalize_name(req.name))
        if pin is None:
            missing.append(req.name)
        elif not req.specifier.contains(Version(pin[0]), prereleases=True):
            outside.append(f"{req} (locked {pin[0]})")
    assert missing == []
    assert outside == []


@pytest.mark.parametrize("lock", LOCKS, ids=lambda p: p.name)
def test_torch_is_the_cpu_build_the_project_pins(lock: Path) -> None:
    version = Version(_pins(lock)["torch"][0])
    assert version.public == "2.13.0"
    assert version.local in (None, "cpu")


def test_the_two_locks_hold_the_two_transformers_generations() -> None:
    assert Version(_pins(LOCK)["transformers"][0]).major >= 5
    assert Version(_pins(LOCK_4)["transformers"][0]).major == 4


def test_the_test_command_installs_the_lock_and_nothing_else() -> None:
    script = TEST_SH.read_text()
    installs = [
        ln for ln in script.splitlines() if "pip install" in ln and not ln.lstrip().startswith("#")
    ]
    assert any("--require-hashes" in ln and "--no-deps" in ln for ln in installs)
    assert "--group" not in script
    assert "-U" not in " ".join(installs).split()
    assert "--upgrade" in script  # the documented way to move the lock


@pytest.mark.skipif(
    Path(sys.prefix).resolve() != (ROOT / ".venv").resolve(),
    reason="runs in the .venv scripts/test.sh builds",
)
def test_the_environment_running_the_suite_is_the_lock() -> None:
    """Every locked package is installed at its locked version (scripts/test.sh's .venv)."""
    differ = []
    for name, (version, _) in _pins().items():
        try:
            installed = metadata.version(name)
        except metadata.PackageNotFoundError:
            differ.append(f"{name}: not installed")
            continue
        if Version(installed) != Version(version):
            differ.append(f"{name}: {installed} installed, {version} locked")
    assert differ == []
