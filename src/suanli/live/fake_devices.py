"""Table-driven fake devices for tests and demos (``SUANLI_FAKE_GPUS=scenario``): several GPUs,
unsupported fields, a lost GPU, processes and the problems ``suanli top`` flags."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from suanli.i18n import N_
from suanli.live.samples import DeviceSample, DriverInfo, ProcessInfo


@dataclass
class FakeProvider:
    """Table-driven devices for tests and demos (``SUANLI_FAKE_GPUS=scenario``)."""

    devices: list[DeviceSample] = field(default_factory=list)
    driver_info: DriverInfo = field(default_factory=lambda: DriverInfo("fake"))
    name: str = "fake"

    def available(self) -> bool:
        """Fakes are always there."""
        return True

    def driver(self) -> DriverInfo:
        """The scripted driver facts."""
        return replace(self.driver_info, device_count=len(self.devices))

    def sample(self) -> list[DeviceSample]:
        """The scripted devices."""
        return list(self.devices)


def _h100(index: int, **kw: Any) -> DeviceSample:
    base = DeviceSample(
        index=index,
        name="NVIDIA H100 80GB HBM3",
        vendor="nvidia",
        uuid=f"GPU-fake-{index}",
        memory_total_bytes=81559 * 2**20,
        memory_used_bytes=1024 * 2**20,
        utilization_pct=0.0,
        memory_utilization_pct=0.0,
        power_w=70.0,
        power_limit_w=700.0,
        temperature_c=35.0,
        sm_clock_mhz=1980.0,
        sm_clock_max_mhz=1980.0,
        memory_clock_mhz=2619.0,
        memory_clock_max_mhz=2619.0,
        pcie_gen=5,
        pcie_gen_max=5,
        pcie_width=16,
        pcie_width_max=16,
        encoder_pct=0.0,
        decoder_pct=0.0,
    )
    return replace(base, **kw)


#: Named fake scenarios: several GPUs, unsupported fields, a lost GPU, processes, problems.
SCENARIOS: dict[str, Callable[[], FakeProvider]] = {
    "healthy-8xh100": lambda: FakeProvider(
        [
            _h100(i, utilization_pct=97.0, memory_used_bytes=70_000 * 2**20, power_w=650.0)
            for i in range(8)
        ],
        DriverInfo("fake", driver_version="550.54.15", cuda_driver_version="12.4"),
    ),
    "problems": lambda: FakeProvider(
        [
            _h100(
                0,
                utilization_pct=8.0,
                memory_used_bytes=78_000 * 2**20,
                processes=(
                    ProcessInfo(4242, "python", "alice", "/usr/bin/python3", 77_000 * 2**20),
                ),
            ),
            _h100(
                1,
                utilization_pct=99.0,
                sm_clock_mhz=1200.0,
                power_w=700.0,
                throttle_reasons=("sw_power_cap", "hw_thermal_slowdown"),
                temperature_c=91.0,
            ),
            _h100(2, pcie_gen=3, pcie_width=8),
            _h100(
                3,
                utilization_pct=100.0,
                memory_used_bytes=6000 * 2**20,
                processes=(ProcessInfo(777, "xmrig", "nobody", "/tmp/.x/xmrig", 5_900 * 2**20),),
            ),
            DeviceSample(4, "unknown (lost)", "nvidia", lost=True),
            DeviceSample(
                5,
                "NVIDIA T4",
                "nvidia",
                memory_total_bytes=15360 * 2**20,
                memory_used_bytes=0,
                utilization_pct=0.0,
            ),  # most fields not supported
        ],
        DriverInfo("fake", driver_version="535.104.05", cuda_driver_version="12.2"),
    ),
    "no-gpu": lambda: FakeProvider([], DriverInfo("fake", error=N_("no NVIDIA driver found"))),
}


def fake_provider(scenario: str) -> FakeProvider:
    """A named fake scenario; ValueError lists the known ones."""
    if scenario not in SCENARIOS:
        raise ValueError(
            N_("unknown fake scenario {scenario!r}; use one of {known}").format(
                scenario=scenario, known=", ".join(SCENARIOS)
            )
        )
    return SCENARIOS[scenario]()
