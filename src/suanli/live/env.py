"""The environment doctor: what the driver sees, what PyTorch was built for, and the exact fix.

``probe()`` gathers an :class:`Environment` snapshot (imports torch and NVML lazily);
``diagnose(env)`` turns it into verdicts with pure rules, so tests feed table-driven snapshots.
"""

from __future__ import annotations

from dataclasses import replace

from suanli.i18n import N_
from suanli.live.ascend_env import ascend_verdicts, cann_version, torch_npu_version
from suanli.live.devices import DriverInfo, providers
from suanli.live.environment import Environment, Verdict

#: PyTorch wheel CUDA tags (download.pytorch.org/whl/cuXYZ), newest last.
TORCH_CUDA_TAGS = ("11.8", "12.1", "12.4", "12.6", "12.8", "12.9", "13.0")

#: Device providers that read NVIDIA GPUs (NVML, the ``nvidia-smi`` fallback, the kernel module).
NVIDIA_PROVIDERS = ("nvml", "nvidia-smi", "proc-nvidia", "fake")

#: Device vendors the doctor knows (``DeviceSample.vendor``).
GPU_VENDORS = ("nvidia", "amd", "ascend", "hygon")


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
                nccl = torch.cuda.nccl.version()  # type: ignore[no-untyped-call]
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
