"""The Prometheus exporter behind ``suanli export``, built on ``prometheus_client``.

A :class:`GpuCollector` reads the device providers on each scrape and yields metric families;
``prometheus_client`` writes the exposition text, so label values are escaped and numbers keep
full precision by construction (an H100's memory total is exact to the byte). The families are
served by ``prometheus_client``'s WSGI app on a server with a thread per connection, so a client
that stalls holds its own thread and nobody else's.

This module imports ``prometheus_client`` at import time: import it only when exporting (the
command line does, lazily).
"""

from __future__ import annotations

import logging
import socket
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler
from wsgiref.simple_server import make_server as make_wsgi_server

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import ThreadingWSGIServer, generate_latest, make_wsgi_app
from prometheus_client.registry import Collector, CollectorRegistry

from suanli.live.samples import DeviceSample
from suanli.live.xid import XidWatcher

log = logging.getLogger(__name__)

#: The default port. 9400 is dcgm-exporter's, and the Prometheus wiki's "Default port
#: allocations" filled 9100-9999 by 2023 (later exporters got 10000 onwards, up to about 10050
#: seen); 10422 is past them and is not an IANA service name in /etc/services.
DEFAULT_PORT = 10422

#: Seconds a connection may take to send its request: a client that holds a half-sent request is
#: dropped after this, and, one thread per connection, never delays the other scrapes meanwhile.
CONNECTION_TIMEOUT_S = 5.0

#: The labels of every per-GPU series: the existing ``gpu`` (index) and ``name``, then the
#: device's UUID (empty when the provider has none) and this machine's host name.
LABELS = ("gpu", "name", "uuid", "hostname")

#: Metric name -> (DeviceSample attribute, help text, multiplier, divisor): the exported value is
#: ``reading * multiplier / divisor`` (a percentage / 100 is a ratio; MHz * 10^6 is Hz), and a
#: reading whose factors are 1 is exported as the float of the integer itself.
METRICS: dict[str, tuple[str, str, int, int]] = {
    "suanli_gpu_utilization_ratio": ("utilization_pct", "GPU utilisation (0-1)", 1, 100),
    "suanli_gpu_memory_used_bytes": ("memory_used_bytes", "Device memory used", 1, 1),
    "suanli_gpu_memory_total_bytes": ("memory_total_bytes", "Device memory total", 1, 1),
    "suanli_gpu_power_watts": ("power_w", "Power draw", 1, 1),
    "suanli_gpu_power_limit_watts": ("power_limit_w", "Enforced power limit", 1, 1),
    "suanli_gpu_temperature_celsius": ("temperature_c", "Core temperature", 1, 1),
    "suanli_gpu_sm_clock_hertz": ("sm_clock_mhz", "SM clock", 1_000_000, 1),
    "suanli_gpu_pcie_link_gen": ("pcie_gen", "Current PCIe generation", 1, 1),
    "suanli_gpu_pcie_link_width": ("pcie_width", "Current PCIe width", 1, 1),
}


def label_text(value: object) -> str:
    """A label value as text that always encodes to UTF-8 (a name decoded with
    ``surrogateescape`` would otherwise make the whole scrape fail)."""
    text = "" if value is None else str(value)
    return text.encode("utf-8", "replace").decode("utf-8")


def gpu_families(samples: Sequence[DeviceSample], hostname: str) -> list[GaugeMetricFamily]:
    """The per-GPU families for one reading: a missing field is left out, a lost GPU has only
    ``suanli_gpu_lost 1``."""
    families = []
    for metric, (attr, help_text, multiplier, divisor) in METRICS.items():
        family = GaugeMetricFamily(metric, help_text, labels=LABELS)
        for s in samples:
            value = getattr(s, attr)
            if value is None or s.lost:
                continue
            # float(int) is exact below 2**53 bytes; only scaled readings are multiplied
            scaled = float(value) if multiplier == divisor == 1 else value * multiplier / divisor
            family.add_metric(sample_labels(s, hostname), float(scaled))
        families.append(family)
    lost = GaugeMetricFamily("suanli_gpu_lost", "1 when the GPU stopped answering", labels=LABELS)
    for s in samples:
        lost.add_metric(sample_labels(s, hostname), 1.0 if s.lost else 0.0)
    families.append(lost)
    families.append(throttle_family(samples, hostname))
    families.append(flag_family(samples, hostname))
    families.extend(dcgm_families(samples, hostname))
    return families


def throttle_family(samples: Sequence[DeviceSample], hostname: str) -> GaugeMetricFamily:
    """``suanli_gpu_throttle_reason{reason=...} 1`` for each clock-event reason a GPU reports now
    (NVML's bits decoded: ``sw_power_cap``, ``hw_thermal_slowdown`` ...); a GPU that is not held
    back, or whose provider cannot tell, has no series (so the alert rules need no ``== 1``)."""
    family = GaugeMetricFamily(
        "suanli_gpu_throttle_reason",
        "1 for each reason the GPU's clocks are held back now",
        labels=(*LABELS, "reason"),
    )
    for s in samples:
        if s.lost:
            continue
        for reason in s.throttle_reasons:
            family.add_metric([*sample_labels(s, hostname), reason], 1.0)
    return family


def flag_family(samples: Sequence[DeviceSample], hostname: str) -> GaugeMetricFamily:
    """``suanli_gpu_flag{kind=...} 1`` for each problem ``suanli top`` flags on a GPU now
    (``idle-memory-full``: memory over 80% full at under 30% utilisation, the idle-but-allocated
    GPU; ``throttling``, ``pcie-downtrained``, ``unknown-process``, ``lost``), the same rules
    (:func:`suanli.live.monitor.flags`); no series for a GPU without any."""
    from suanli.live.monitor import flags

    family = GaugeMetricFamily(
        "suanli_gpu_flag",
        "1 for each problem suanli top flags on the GPU now",
        labels=(*LABELS, "kind"),
    )
    for s in samples:
        for kind in sorted({f.kind for f in flags(s)}):
            family.add_metric([*sample_labels(s, hostname), kind], 1.0)
    return family


#: The labels of the DCGM-compatible series, spelled as NVIDIA's dcgm-exporter spells them, so
#: that its dashboards and alert rules work unchanged.
DCGM_LABELS = ("gpu", "UUID", "modelName", "Hostname")

MIB = 2**20

#: DCGM field -> (help text as in dcgm-exporter's counters CSV, the value in DCGM's unit or None).
#: Units are DCGM's, not Prometheus' base units: %, MiB, C, W, MHz (dcgm-exporter's
#: etc/default-counters.csv; PCIe link and power limit from dcgm_fields.h).
DCGM_METRICS: dict[str, tuple[str, Callable[[DeviceSample], float | None]]] = {
    "DCGM_FI_DEV_GPU_UTIL": ("GPU utilization (in %).", lambda s: s.utilization_pct),
    "DCGM_FI_DEV_MEM_COPY_UTIL": ("Memory utilization (in %).", lambda s: s.memory_utilization_pct),
    "DCGM_FI_DEV_ENC_UTIL": ("Encoder utilization (in %).", lambda s: s.encoder_pct),
    "DCGM_FI_DEV_DEC_UTIL": ("Decoder utilization (in %).", lambda s: s.decoder_pct),
    "DCGM_FI_DEV_FB_USED": (
        "Framebuffer memory used (in MiB).",
        lambda s: None if s.memory_used_bytes is None else s.memory_used_bytes // MIB,
    ),
    "DCGM_FI_DEV_FB_FREE": ("Framebuffer memory free (in MiB).", lambda s: fb_free_mib(s)),
    "DCGM_FI_DEV_FB_TOTAL": (
        "Framebuffer memory total (in MiB).",
        lambda s: None if s.memory_total_bytes is None else s.memory_total_bytes // MIB,
    ),
    "DCGM_FI_DEV_GPU_TEMP": ("GPU temperature (in C).", lambda s: s.temperature_c),
    "DCGM_FI_DEV_POWER_USAGE": ("Power draw (in W).", lambda s: s.power_w),
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": ("Power management limit (in W).", lambda s: s.power_limit_w),
    "DCGM_FI_DEV_SM_CLOCK": ("SM clock frequency (in MHz).", lambda s: s.sm_clock_mhz),
    "DCGM_FI_DEV_MEM_CLOCK": ("Memory clock frequency (in MHz).", lambda s: s.memory_clock_mhz),
    "DCGM_FI_DEV_PCIE_LINK_GEN": ("PCIe current link generation.", lambda s: s.pcie_gen),
    "DCGM_FI_DEV_PCIE_LINK_WIDTH": ("PCIe current link width.", lambda s: s.pcie_width),
    "DCGM_FI_DEV_PCIE_MAX_LINK_GEN": ("PCIe maximum link generation.", lambda s: s.pcie_gen_max),
    "DCGM_FI_DEV_PCIE_MAX_LINK_WIDTH": ("PCIe maximum link width.", lambda s: s.pcie_width_max),
    # ECC totals are counters in DCGM but keep its names (no "_total" suffix prometheus_client's
    # counters would add), so they are written as gauges: increase() reads them the same.
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": (
        "Total number of single-bit volatile ECC errors.",
        lambda s: s.ecc_corrected_volatile,
    ),
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": (
        "Total number of double-bit volatile ECC errors.",
        lambda s: s.ecc_uncorrected_volatile,
    ),
    "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL": (
        "Total number of single-bit persistent ECC errors.",
        lambda s: s.ecc_corrected_aggregate,
    ),
    "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL": (
        "Total number of double-bit persistent ECC errors.",
        lambda s: s.ecc_uncorrected_aggregate,
    ),
    "DCGM_FI_DEV_XID_ERRORS": ("Value of the last XID error encountered.", lambda s: s.xid_last),
}


def fb_free_mib(sample: DeviceSample) -> int | None:
    """Free device memory in whole MiB (total - used: the total already excludes what the driver
    reserves when the provider reads memory info v2), or None when either is unknown."""
    if sample.memory_total_bytes is None or sample.memory_used_bytes is None:
        return None
    return max(sample.memory_total_bytes - sample.memory_used_bytes, 0) // MIB


def dcgm_labels(sample: DeviceSample, hostname: str) -> list[str]:
    """The values of :data:`DCGM_LABELS` for one device."""
    return [str(sample.index), label_text(sample.uuid), label_text(sample.name), hostname]


def dcgm_families(samples: Sequence[DeviceSample], hostname: str) -> list[GaugeMetricFamily]:
    """The DCGM-exporter-compatible families: only the fields a GPU reports, none for a lost one.
    A family no GPU has is left out entirely (dcgm-exporter writes no empty families either)."""
    families = []
    for metric, (help_text, read) in DCGM_METRICS.items():
        family = GaugeMetricFamily(metric, help_text, labels=DCGM_LABELS)
        for s in samples:
            value = None if s.lost else read(s)
            if value is not None:
                family.add_metric(dcgm_labels(s, hostname), float(value))
        if family.samples:
            families.append(family)
    return families


def sample_labels(sample: DeviceSample, hostname: str) -> list[str]:
    """The values of :data:`LABELS` for one device."""
    return [str(sample.index), label_text(sample.name), label_text(sample.uuid), hostname]


def scrape_error_family(failed: bool) -> GaugeMetricFamily:
    """The process-level ``suanli_scrape_error``: 1 when reading the devices failed."""
    return GaugeMetricFamily(
        "suanli_scrape_error", "1 when reading the devices failed", value=1.0 if failed else 0.0
    )


def read_gpu_samples() -> list[DeviceSample]:
    """The default reader: every GPU the device providers see on this machine."""
    from suanli.live.devices import gpu_samples

    return gpu_samples()


class GpuCollector(Collector):
    """Reads the devices on each scrape; a failing read is ``suanli_scrape_error 1``, never an
    HTTP error."""

    def __init__(
        self,
        read: Callable[[], Iterable[DeviceSample]] = read_gpu_samples,
        hostname: str | None = None,
        xid: XidWatcher | None = None,
        jobs: Callable[[], Iterable[Metric]] | None = None,
    ) -> None:
        self.read = read
        """Returns one reading of the GPUs (a fake in tests)."""
        self.hostname = label_text(socket.gethostname() if hostname is None else hostname)
        """The ``hostname`` label of every per-GPU series."""
        self.xid = xid
        """The Xid events watched while serving (None: not watched, no XID series)."""
        self.jobs = jobs
        """The training jobs' families (:func:`suanli.live.jobs.job_families` over the reports
        in the jobs folder), or None."""

    def _samples(self) -> list[DeviceSample]:
        samples = list(self.read())
        if self.xid is None:
            return samples
        watcher = self.xid
        return [replace(s, xid_last=watcher.last(s.index)) for s in samples]

    def collect(self) -> Iterator[Metric]:
        """The families of one scrape."""
        if self.jobs is not None:
            try:
                yield from self.jobs()
            except Exception as exc:  # a job's report never breaks the GPU series
                log.debug("reading the job reports failed: %s", exc, exc_info=True)
        try:
            families = gpu_families(self._samples(), self.hostname)
            failed = False
        except Exception as exc:  # keep serving: the failure is a metric
            log.debug("reading the devices failed: %s", exc, exc_info=True)
            families, failed = [], True
        yield from families
        yield scrape_error_family(failed)


def registry_for(collector: Collector) -> CollectorRegistry:
    """A registry holding only ``collector`` (no process or GC metrics of this Python)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def render(
    samples: Sequence[DeviceSample], read_error: str | None = None, hostname: str | None = None
) -> str:
    """The exposition text for a reading already taken (``read_error``: it failed)."""

    def read() -> Sequence[DeviceSample]:
        if read_error:
            raise RuntimeError(read_error)
        return samples

    return generate_latest(registry_for(GpuCollector(read, hostname))).decode("utf-8")


def scrape() -> str:
    """Read the devices and render the metrics; a failing read is reported, not raised."""
    return generate_latest(registry_for(GpuCollector())).decode("utf-8")


def make_app(collector: Collector) -> Callable[..., Any]:
    """``prometheus_client``'s WSGI app for ``collector`` at ``/`` and ``/metrics``; any other
    path is a 404 (the library would answer metrics on every path)."""
    metrics = make_wsgi_app(registry_for(collector))

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO", "").rstrip("/") not in ("", "/metrics"):
            start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"not found: the metrics are at /metrics\n"]
        result: Iterable[bytes] = metrics(environ, start_response)
        return result

    return app


class QuietHandler(WSGIRequestHandler):
    """One connection: a socket timeout of :data:`CONNECTION_TIMEOUT_S`, no access log."""

    timeout = CONNECTION_TIMEOUT_S  # applied to the socket by StreamRequestHandler.setup

    def log_message(self, format: str, *args: Any) -> None:
        """Log nothing: a scrape every few seconds is not news."""


class ExporterServer(ThreadingWSGIServer):
    """``prometheus_client``'s thread-per-connection WSGI server (daemon threads)."""

    # socketserver's default backlog of 5 drops the SYN of a 7th connection arriving while the
    # accept loop is busy, and that client waits a 1-second retransmission: measured with 50
    # clients connecting at once, 7 of them waited 1 s each.
    request_queue_size = socket.SOMAXCONN

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hung up, reset or timed out is not worth a traceback on stderr."""
        if isinstance(sys.exc_info()[1], OSError):
            return
        super().handle_error(request, client_address)


class ExporterServer6(ExporterServer):
    """The same, for an IPv6 address."""

    address_family = socket.AF_INET6


def make_server(host: str, port: int, collector: Collector | None = None) -> ExporterServer:
    """The exporter's server, bound (port 0: any free port) but not yet serving.

    An IPv6 literal (``::1``) binds IPv6; any other host IPv4, as before.
    """
    server_class = ExporterServer6 if ":" in host else ExporterServer
    app = make_app(collector if collector is not None else GpuCollector())
    server = make_wsgi_server(host, port, app, server_class, handler_class=QuietHandler)
    return server


def serving_collector() -> tuple[GpuCollector, XidWatcher]:
    """The collector ``suanli export`` serves: the devices, Xid events watched from now on, and
    the training jobs' reports in :func:`suanli.live.jobs.jobs_dir`."""
    from suanli.live.jobs import jobs_collector

    watcher = XidWatcher()
    watched = watcher.start()
    return GpuCollector(xid=watcher if watched else None, jobs=jobs_collector()), watcher


def serve(host: str, port: int, max_requests: int | None = None) -> None:
    """Serve until interrupted (or ``max_requests`` requests, for tests)."""
    collector, watcher = serving_collector()
    server = make_server(host, port, collector)
    try:
        if max_requests is None:
            server.serve_forever()
        else:
            # the answers must be written before the process exits: join the handler threads
            server.daemon_threads = False
            server.block_on_close = True
            for _ in range(max_requests):
                server.handle_request()
    finally:
        server.server_close()
        watcher.stop()
