"""The environment doctor: what the driver sees, what PyTorch was built for, and the exact fix.

``probe()`` gathers an :class:`Environment` snapshot (imports torch and NVML lazily);
``diagnose(env)`` turns it into verdicts with pure rules, so tests feed table-driven snapshots.
"""

from __future__ import annotations

import glob
import os
import platform
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from suanli.i18n import N_
from suanli.live.devices import DriverInfo, providers

#: PyTorch wheel CUDA tags (download.pytorch.org/whl/cuXYZ), newest last.
TORCH_CUDA_TAGS = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0")

#: Device providers that read NVIDIA GPUs (NVML, the ``nvidia-smi`` fallback, the kernel module).
NVIDIA_PROVIDERS = ("nvml", "nvidia-smi", "proc-nvidia", "fake")

#: Device vendors the doctor knows (``DeviceSample.vendor``).
GPU_VENDORS = ("nvidia", "amd", "ascend", "hygon")

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


@dataclass(frozen=True)
class Environment:
    """Everything the doctor looks at."""

    python: str = platform.python_version()
    driver: DriverInfo = field(default_factory=lambda: DriverInfo("none"))
    gpu_names: tuple[str, ...] = ()
    """GPUs the driver reports."""
    gpu_capabilities: tuple[str, ...] = ()
    """``sm_90`` style, per driver GPU, when known."""
    torch_version: str | None = None
    torch_build_tag: str | None = None
    """The local part of ``torch.__version__`` (``cpu``, ``cu124``, ``rocm6.2``), if any."""
    torch_cuda: str | None = None
    """``torch.version.cuda`` (None on CPU-only and ROCm builds)."""
    torch_hip: str | None = None
    torch_cuda_available: bool = False
    torch_device_count: int = 0
    torch_arch_list: tuple[str, ...] = ()
    torch_error: str | None = None
    """Why ``torch.cuda`` failed to initialise, if it did."""
    nccl_version: str | None = None
    mps_available: bool = False
    xpu_available: bool = False
    directml_available: bool = False
    gpu_vendors: tuple[str, ...] = ()
    """``nvidia``/``amd`` per driver GPU, when known."""
    nvml_error: str | None = None
    """Why the NVML library did not load, when the GPUs were read another way."""
    cann_version: str | None = None
    """The CANN toolkit release (``8.0.RC3``), read from its install directory (Ascend only)."""
    torch_npu_version: str | None = None
    """The installed ``torch_npu`` distribution's version (Ascend only)."""


@dataclass(frozen=True)
class Verdict:
    """One check: ``ok``, ``warn``, ``fail`` or ``info``, what was seen, and the fix."""

    check: str
    status: str
    detail: str
    fix: str = ""


def _version_tuple(text: str | None) -> tuple[int, ...]:
    if not text:
        return ()
    parts = []
    for piece in text.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def torch_wheel_tag(driver_cuda: str | None) -> str | None:
    """The newest PyTorch CUDA wheel the driver can run (``cu124`` for a 12.4 driver)."""
    supported = _version_tuple(driver_cuda)
    if not supported:
        return None
    fitting = [t for t in TORCH_CUDA_TAGS if _version_tuple(t) <= supported]
    return "cu" + fitting[-1].replace(".", "") if fitting else None


def pip_command(driver_cuda: str | None) -> str:
    """The pip command for a PyTorch build this driver runs."""
    tag = torch_wheel_tag(driver_cuda)
    if tag is None:
        return N_("upgrade the NVIDIA driver to one supporting CUDA 11.8 or newer")
    return f"pip install --force-reinstall torch --index-url https://download.pytorch.org/whl/{tag}"


def _is_nvidia(env: Environment) -> bool:
    return "nvidia" in env.gpu_vendors or (
        not env.gpu_vendors and env.driver.provider in NVIDIA_PROVIDERS
    )


def diagnose(env: Environment) -> list[Verdict]:
    """Verdicts for a snapshot, most important first."""
    out: list[Verdict] = []
    drv = env.driver
    has_gpu = bool(env.gpu_names)
    nvidia = has_gpu and _is_nvidia(env)
    if drv.error and "mismatch" in drv.error.lower():
        out.append(
            Verdict(
                N_("driver"),
                "fail",
                N_("NVML: {error}").format(error=drv.error),
                N_(
                    "the kernel driver and the user-space library differ after an "
                    "update: reboot, or reload the module (sudo rmmod nvidia_uvm "
                    "nvidia_drm nvidia_modeset nvidia && sudo modprobe nvidia)"
                ),
            )
        )
    elif has_gpu:
        out.append(
            Verdict(
                N_("driver"),
                "ok",
                (
                    N_(
                        "{provider} driver {version} (supports CUDA up to {cuda}), "
                        "{count} GPU(s): {names}"
                    )
                    if nvidia or drv.cuda_driver_version
                    else N_("{provider} driver {version}, {count} GPU(s): {names}")
                ).format(
                    provider=drv.provider,
                    version=drv.driver_version or "?",
                    cuda=drv.cuda_driver_version or "?",
                    count=len(env.gpu_names),
                    names=", ".join(sorted(set(env.gpu_names))),
                ),
            )
        )
        if nvidia and drv.provider in ("nvidia-smi", "proc-nvidia"):
            out.append(
                Verdict(
                    "nvml",
                    "warn",
                    N_(
                        "the NVML library did not load ({error}); "
                        "the GPUs were read through {provider}, with fewer fields"
                    ).format(error=env.nvml_error or N_("unknown error"), provider=drv.provider),
                    N_("pip install nvidia-ml-py (a suanli dependency)")
                    if "nvidia-ml-py" in (env.nvml_error or "")
                    else N_(
                        "make the driver's NVML library loadable (libnvidia-ml.so.1 on the "
                        "library path, nvml.dll on Windows; in a container, run it with the "
                        "NVIDIA container toolkit)"
                    ),
                )
            )
    else:
        out.append(
            Verdict(
                N_("driver"),
                "info",
                N_("no GPU driver or GPU found ({error})").format(error=drv.error)
                if drv.error
                else N_("no GPU driver or GPU found"),
                N_("if this machine has an NVIDIA GPU, install the driver (nvidia-smi must work)"),
            )
        )
    if drv.provider == "npu-smi" and has_gpu:
        out.extend(ascend_verdicts(env))
    if env.torch_version is None:
        out.append(
            Verdict(
                "pytorch",
                "warn" if has_gpu else "info",
                N_("PyTorch is not installed"),
                pip_command(drv.cuda_driver_version) if has_gpu else "pip install 'suanli[torch]'",
            )
        )
        return out
    cpu_only = (env.torch_cuda is None and env.torch_hip is None) or env.torch_build_tag == "cpu"
    version = env.torch_version + (f"+{env.torch_build_tag}" if env.torch_build_tag else "")
    if cpu_only:
        seen = N_("torch {version}, CPU-only build").format(version=version)
    else:
        seen = N_("torch {version}, {build} build").format(
            version=version,
            build="CUDA " + str(env.torch_cuda) if env.torch_cuda else "ROCm " + str(env.torch_hip),
        )
    out.append(Verdict("pytorch", "info", seen))
    if nvidia and cpu_only:
        out.append(
            Verdict(
                N_("cpu-only-build"),
                "fail",
                N_(
                    "a CPU-only PyTorch (torch {version}, torch.version.cuda is None) on a "
                    "machine with an NVIDIA GPU ({gpu}): torch.cuda.is_available() is False "
                    "and every tensor runs on the CPU (reinstalling in a fresh virtual "
                    "environment is cleanest)"
                ).format(version=version, gpu=env.gpu_names[0]),
                pip_command(drv.cuda_driver_version),
            )
        )
        return out
    if has_gpu and not nvidia and "amd" in env.gpu_vendors and cpu_only:
        out.append(
            Verdict(
                N_("cpu-only-build"),
                "fail",
                N_(
                    "a CPU-only PyTorch (torch {version}) on a machine with an AMD GPU "
                    "({gpu}): every tensor runs on the CPU"
                ).format(version=version, gpu=env.gpu_names[0]),
                N_(
                    "install the ROCm build that matches the installed ROCm, e.g. pip install "
                    "--force-reinstall torch --index-url https://download.pytorch.org/whl/rocm6.4"
                ),
            )
        )
        return out
    if env.torch_cuda and drv.cuda_driver_version:
        if _version_tuple(env.torch_cuda)[:2] > _version_tuple(drv.cuda_driver_version)[:2]:
            out.append(
                Verdict(
                    N_("cuda-vs-driver"),
                    "fail",
                    N_(
                        "PyTorch was built for CUDA {cuda} but the driver supports up to {driver}"
                    ).format(cuda=env.torch_cuda, driver=drv.cuda_driver_version),
                    N_("upgrade the NVIDIA driver, or {command}").format(
                        command=pip_command(drv.cuda_driver_version)
                    ),
                )
            )
        else:
            out.append(
                Verdict(
                    N_("cuda-vs-driver"),
                    "ok",
                    N_("CUDA {cuda} runtime <= driver's {driver}").format(
                        cuda=env.torch_cuda, driver=drv.cuda_driver_version
                    ),
                )
            )
    if env.torch_cuda and has_gpu:
        if env.torch_device_count != len(env.gpu_names):
            fix = (
                N_("check CUDA_VISIBLE_DEVICES and the container's --gpus flag")
                if env.torch_device_count
                else N_(
                    "torch.cuda failed: {error}; check the driver and CUDA_VISIBLE_DEVICES"
                ).format(error=env.torch_error or N_("unknown error"))
            )
            out.append(
                Verdict(
                    N_("device-count"),
                    "warn" if env.torch_device_count else "fail",
                    (
                        N_("driver sees {gpus} GPU(s), PyTorch sees {torch}")
                        if env.torch_device_count
                        else N_(
                            "driver sees {gpus} GPU(s), PyTorch sees {torch} "
                            "(torch.cuda.is_available() is False)"
                        )
                    ).format(gpus=len(env.gpu_names), torch=env.torch_device_count),
                    fix,
                )
            )
        else:
            out.append(
                Verdict(
                    N_("device-count"),
                    "ok",
                    N_("PyTorch sees all {count} GPU(s)").format(count=env.torch_device_count),
                )
            )
        missing = sorted(
            {
                cap
                for cap in env.gpu_capabilities
                if cap and env.torch_arch_list and not _arch_supported(cap, env.torch_arch_list)
            }
        )
        if missing:
            out.append(
                Verdict(
                    N_("gpu-architecture"),
                    "fail",
                    N_(
                        "{missing} not in this build's architectures ({built}): 'no kernel "
                        "image is available for execution on the device'"
                    ).format(missing=", ".join(missing), built=" ".join(env.torch_arch_list)),
                    N_(
                        "install a newer PyTorch build that lists this architecture: {command}"
                    ).format(command=pip_command(drv.cuda_driver_version)),
                )
            )
        elif env.gpu_capabilities and env.torch_arch_list:
            out.append(
                Verdict(
                    N_("gpu-architecture"),
                    "ok",
                    N_("{archs} supported").format(
                        archs=", ".join(sorted(set(env.gpu_capabilities)))
                    ),
                )
            )
        if env.nccl_version:
            out.append(Verdict("nccl", "info", f"NCCL {env.nccl_version}"))
    if env.torch_hip:
        out.append(
            Verdict(
                "rocm",
                "info",
                N_("ROCm build (HIP {hip}); {count} device(s) visible").format(
                    hip=env.torch_hip, count=env.torch_device_count
                ),
            )
        )
    if env.mps_available:
        out.append(Verdict("mps", "info", N_("Apple MPS backend available (torch.device('mps'))")))
    if env.xpu_available:
        out.append(Verdict("xpu", "info", N_("Intel XPU backend available (torch.device('xpu'))")))
    if env.directml_available:
        out.append(Verdict("directml", "info", N_("DirectML backend available (torch_directml)")))
    return out


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


def _arch_supported(cap: str, arch_list: tuple[str, ...]) -> bool:
    """A GPU runs a build that has its exact SASS, or PTX (``compute_XY``) of an older arch."""
    if cap in arch_list:
        return True
    digits = cap.replace("sm_", "")
    value = int(digits) if digits.isdigit() else 0
    return any(
        a.startswith("compute_") and int(a.split("_")[1]) <= value
        for a in arch_list
        if a.split("_")[-1].isdigit()
    )


def _no_module_hint(error: str | None) -> str | None:
    """NVML's import error, said as the broken install it is."""
    if error and ("No module named" in error or "ModuleNotFoundError" in error):
        return N_("nvidia-ml-py is missing from this install (pip install nvidia-ml-py)")
    return error


def probe() -> Environment:
    """Read this machine: driver through the providers, then PyTorch (imported here)."""
    from suanli.live.devices import NvmlProvider

    provs = providers()
    gpu_provider = next((p for p in provs if p.name != "cpu"), None)
    samples = gpu_provider.sample() if gpu_provider else []
    nvml_error: str | None = None
    if gpu_provider is not None and gpu_provider.name != "nvml":
        nvml_error = _no_module_hint(NvmlProvider().driver().error)
    if gpu_provider is not None and samples:
        driver = gpu_provider.driver()
    else:
        driver = _no_gpu_driver(gpu_provider)
        samples = []
    if nvml_error and "mismatch" in nvml_error.lower():  # the fallback must not hide it
        driver = replace(driver, error=nvml_error)
    names = tuple(s.name for s in samples)
    vendors = tuple(s.vendor for s in samples if s.vendor in GPU_VENDORS)
    caps: tuple[str, ...] = ()
    ascend: dict[str, str | None] = {}
    if gpu_provider is not None and gpu_provider.name == "npu-smi":
        ascend = {"cann_version": cann_version(), "torch_npu_version": torch_npu_version()}
    env = Environment(
        driver=driver,
        gpu_names=names,
        gpu_vendors=vendors,
        nvml_error=nvml_error,
        **ascend,  # type: ignore[arg-type]
    )
    try:
        import torch
    except ImportError:
        return env
    full = str(torch.__version__)
    values: dict[str, object] = {
        "torch_version": full.split("+")[0],
        "torch_build_tag": full.split("+", 1)[1] if "+" in full else None,
        "torch_cuda": torch.version.cuda,
        "torch_hip": getattr(torch.version, "hip", None),
    }
    try:
        available = bool(torch.cuda.is_available())
        values["torch_cuda_available"] = available
        values["torch_device_count"] = torch.cuda.device_count() if available else 0
        values["torch_arch_list"] = tuple(torch.cuda.get_arch_list()) if available else ()
        if available:
            caps = tuple(
                f"sm_{a}{b}"
                for a, b in (
                    torch.cuda.get_device_capability(i) for i in range(torch.cuda.device_count())
                )
            )
            try:
                nccl = torch.cuda.nccl.version()
                values["nccl_version"] = (
                    ".".join(str(x) for x in nccl) if isinstance(nccl, tuple) else str(nccl)
                )
            except Exception:
                pass
    except Exception as exc:
        values["torch_error"] = str(exc)
    mps = getattr(torch.backends, "mps", None)
    values["mps_available"] = bool(mps and mps.is_available())
    xpu = getattr(torch, "xpu", None)
    values["xpu_available"] = bool(xpu and hasattr(xpu, "is_available") and xpu.is_available())
    try:
        import torch_directml  # noqa: F401

        values["directml_available"] = True
    except ImportError:
        pass
    return Environment(
        driver=driver,
        gpu_names=names,
        gpu_vendors=vendors,
        nvml_error=nvml_error,
        gpu_capabilities=caps,
        **ascend,  # type: ignore[arg-type]
        **values,  # type: ignore[arg-type]
    )


def _no_gpu_driver(provider: object | None) -> DriverInfo:
    """The driver facts when no GPU answered: why each way of finding one failed."""
    from suanli.live.devices import NvmlProvider
    from suanli.live.smi import NvidiaSmiProvider

    nvml = NvmlProvider().driver()
    if nvml.error and "mismatch" in nvml.error.lower():
        return nvml
    smi = NvidiaSmiProvider().driver()
    reasons = N_("NVML: {nvml}; {smi}; /proc/driver/nvidia lists no GPU").format(
        nvml=_no_module_hint(nvml.error) or N_("no GPU"),
        smi=smi.error or N_("nvidia-smi lists no GPU"),
    )
    return DriverInfo("none", error=reasons)
