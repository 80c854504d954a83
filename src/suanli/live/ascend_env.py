"""The doctor's Ascend checks: Huawei's CANN / torch_npu / HDK compatibility tables, the rules
that compare an :class:`~suanli.live.environment.Environment` with them, and the probes that
read the CANN toolkit and torch_npu versions."""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

from suanli.i18n import N_
from suanli.live.environment import Environment, Verdict

#: Huawei's compatibility table, "Ascend Auxiliary Software" in the Ascend Extension for PyTorch
#: README (https://github.com/Ascend/pytorch#ascend-auxiliary-software, read 2026-12): for each
#: CANN release, the torch_npu versions built for it. torch_npu's version starts with the
#: PyTorch version it extends (``2.5.1.post1`` needs torch 2.5.1).
ASCEND_TORCH_NPU = {
    "8.2.RC1": ("2.6.0", "2.5.1.post1", "2.1.0.post13"),
    "8.1.RC1": ("2.5.1", "2.4.0.post4", "2.3.1.post6", "2.1.0.post12"),
    "8.0.0": ("2.4.0.post2", "2.3.1.post4", "2.1.0.post10"),
    "8.0.RC3": ("2.4.0", "2.3.1.post2", "2.1.0.post8"),
    "8.0.RC2": ("2.3.1", "2.2.0.post2", "2.1.0.post6", "1.11.0.post14"),
    "8.0.RC1": ("2.2.0", "2.1.0.post4", "1.11.0.post11"),
    "7.0.0": ("2.1.0", "2.0.1.post1", "1.11.0.post8"),
}

#: The Ascend HDK (driver and firmware) release Huawei pairs with each CANN release, from the
#: version table of Ascend's Torchvision Adapter (https://github.com/Ascend/vision#版本说明, read
#: 2026-12). A driver older than this is reported as a mismatch.
ASCEND_HDK_FOR_CANN = {
    "8.5.0": "25.3.0",
    "8.2.RC1": "25.2.0",
    "8.1.RC1": "25.0.RC1",
    "8.0.0": "24.1.RC3",
    "8.0.RC3": "24.1.RC3",
    "8.0.RC2": "24.1.RC2",
}

#: Where the CANN toolkit and the Ascend driver install by default.
ASCEND_ROOT = "/usr/local/Ascend"
ASCEND_COMPAT_SOURCE = (
    "https://github.com/Ascend/pytorch#ascend-auxiliary-software; https://github.com/Ascend/vision"
)


def _hdk_key(version: str) -> tuple[int, ...]:
    """Order Ascend HDK versions: ``24.1.RC3`` < ``24.1.0`` < ``24.1.0.3`` < ``25.0.RC1``."""
    key: list[int] = []
    for i, part in enumerate(version.strip().lower().split(".")):
        rc = re.fullmatch(r"rc(\d+)", part)
        if rc:
            key += [0, int(rc.group(1))]
        elif part.isdigit():
            key += [1, int(part)] if i == 2 else [int(part)]
        else:
            break
    return tuple(key)


def _cann_key(version: str) -> str:
    return version.strip().upper()


def ascend_verdicts(env: Environment) -> list[Verdict]:
    """CANN / torch_npu / driver agreement on an Ascend machine (Huawei's compatibility
    tables, :data:`ASCEND_TORCH_NPU` and :data:`ASCEND_HDK_FOR_CANN`)."""
    out: list[Verdict] = []
    driver = env.driver.driver_version
    cann = env.cann_version
    if cann is None:
        out.append(
            Verdict(
                "cann",
                "warn",
                N_("no CANN toolkit found under {root}/ascend-toolkit (driver {driver})").format(
                    root=ASCEND_ROOT, driver=driver or "?"
                ),
                N_(
                    "install the CANN toolkit (and kernels) release paired with this driver and "
                    "run `source /usr/local/Ascend/ascend-toolkit/set_env.sh`; see {source}"
                ).format(source=ASCEND_COMPAT_SOURCE),
            )
        )
    else:
        paired = ASCEND_HDK_FOR_CANN.get(_cann_key(cann))
        if paired and driver and _hdk_key(driver) < _hdk_key(paired):
            out.append(
                Verdict(
                    N_("cann-vs-driver"),
                    "fail",
                    N_(
                        "CANN {cann} is paired with Ascend HDK {paired} or newer, but the driver "
                        "is {driver}"
                    ).format(cann=cann, paired=paired, driver=driver),
                    N_(
                        "upgrade the Ascend HDK driver and firmware to {paired} or newer, or "
                        "install the CANN release paired with driver {driver}; see {source}"
                    ).format(paired=paired, driver=driver, source=ASCEND_COMPAT_SOURCE),
                )
            )
        elif paired and driver:
            out.append(
                Verdict(
                    N_("cann-vs-driver"),
                    "ok",
                    N_("CANN {cann} with driver {driver} (>= {paired})").format(
                        cann=cann, driver=driver, paired=paired
                    ),
                )
            )
        else:
            out.append(
                Verdict(
                    N_("cann-vs-driver"),
                    "info",
                    N_("CANN {cann} with driver {driver}: not in suanli's pairing table").format(
                        cann=cann, driver=driver or "?"
                    ),
                    N_("check Huawei's version table: {source}").format(
                        source=ASCEND_COMPAT_SOURCE
                    ),
                )
            )
    npu = env.torch_npu_version
    if npu is None:
        out.append(
            Verdict(
                "torch-npu",
                "warn",
                N_("torch_npu is not installed: PyTorch cannot use the NPUs"),
                N_(
                    "pip install torch_npu==<the version for your CANN and torch> "
                    "(Huawei's table: {source})"
                ).format(source=ASCEND_COMPAT_SOURCE),
            )
        )
        return out
    npu_torch = ".".join(npu.split("+")[0].split(".")[:3])
    if env.torch_version and env.torch_version.split("+")[0] != npu_torch:
        out.append(
            Verdict(
                N_("torch-vs-torch-npu"),
                "fail",
                N_(
                    "torch_npu {npu} is built for torch {built}, but torch {torch} is installed"
                ).format(npu=npu, built=npu_torch, torch=env.torch_version),
                N_(
                    "pip install torch=={built} (on x86: torch=={built}+cpu --index-url "
                    "https://download.pytorch.org/whl/cpu), or the torch_npu built for your torch"
                ).format(built=npu_torch),
            )
        )
    if cann is None:
        return out
    built_for = ASCEND_TORCH_NPU.get(_cann_key(cann))
    if built_for is None:
        out.append(
            Verdict(
                N_("cann-vs-torch-npu"),
                "info",
                N_("torch_npu {npu} with CANN {cann}: CANN release not in suanli's table").format(
                    npu=npu, cann=cann
                ),
                N_("check Huawei's table: {source}").format(source=ASCEND_COMPAT_SOURCE),
            )
        )
    elif npu.split("+")[0] in built_for:
        out.append(
            Verdict(
                N_("cann-vs-torch-npu"),
                "ok",
                N_("torch_npu {npu} is built for CANN {cann}").format(npu=npu, cann=cann),
            )
        )
    else:
        torch_base = (env.torch_version or npu_torch).split("+")[0]
        same_torch = [v for v in built_for if v.startswith(torch_base)]
        want = same_torch[0] if same_torch else built_for[0]
        homes = [c for c, versions in ASCEND_TORCH_NPU.items() if npu.split("+")[0] in versions]
        out.append(
            Verdict(
                N_("cann-vs-torch-npu"),
                "fail",
                N_(
                    "torch_npu {npu} is not built for CANN {cann} (it is listed for {homes}); "
                    "CANN {cann} supports torch_npu {supported}"
                ).format(
                    npu=npu,
                    cann=cann,
                    homes=", ".join("CANN " + c for c in homes)
                    or N_("no CANN release in the table"),
                    supported=", ".join(built_for),
                ),
                (
                    N_(
                        "pip install torch_npu=={want}, or install the CANN release your "
                        "torch_npu was built for; see {source}"
                    )
                    if same_torch
                    else N_(
                        "pip install torch_npu=={want} torch=={torch}, or install the CANN "
                        "release your torch_npu was built for; see {source}"
                    )
                ).format(
                    want=want, torch=".".join(want.split(".")[:3]), source=ASCEND_COMPAT_SOURCE
                ),
            )
        )
    return out


def cann_version(root: str | os.PathLike[str] | None = None) -> str | None:
    """The CANN toolkit release: ``toolkit_running_version=[7.5.0.1.129:8.0.RC3]`` in
    ``<root>/ascend-toolkit/latest/version.cfg``, else ``version=`` in a ``version.info`` /
    ``ascend_toolkit_install.info`` under it. Without ``root``: $ASCEND_HOME_PATH (set by CANN's
    set_env.sh), else /usr/local/Ascend/ascend-toolkit/latest."""
    if root is not None:
        latest = Path(root) / "ascend-toolkit" / "latest"
    else:
        home = os.environ.get("ASCEND_HOME_PATH") or os.environ.get("ASCEND_TOOLKIT_HOME")
        latest = Path(home) if home else Path(ASCEND_ROOT) / "ascend-toolkit" / "latest"
    try:
        text = (latest / "version.cfg").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for key in ("toolkit_running_version", "runtime_running_version"):
        match = re.search(key + r"=\[[^:\]]*:([^\]]+)\]", text)
        if match:
            return match.group(1).strip()
    for pattern in ("*/ascend_toolkit_install.info", "version.info", "*/version.info"):
        for path in sorted(glob.glob(str(latest / pattern))):
            try:
                info = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            match = re.search(r"^\s*version\s*=\s*(\S+)", info, re.IGNORECASE | re.MULTILINE)
            if match:
                return match.group(1).strip()
    return None


def torch_npu_version() -> str | None:
    """The installed torch_npu distribution's version (importlib.metadata), or None."""
    from importlib import metadata

    for name in ("torch_npu", "torch-npu"):
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None
