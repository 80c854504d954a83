"""`suanli export` on prometheus_client: the text parses for hostile names, values are exact,
a failed read is a metric, and a real server on loopback answers past stalled clients without
a traceback for clients that hang up early."""

from __future__ import annotations

import socket
import struct
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from suanli.live import exporter
from suanli.live.fake_devices import fake_provider
from suanli.live.samples import DeviceSample

H100_BYTES = 85_899_345_920  # 80 GiB: 6 significant digits would make it 85,899,300,000

HOSTILE_NAMES = [
    'NVIDIA "H100"',
    "back\\slash\\",
    "two\nlines",
    'all "of\\ them\n at once',
    "显卡 ☃ 🚀",
    "} 1\nsuanli_scrape_error 0\n#",  # tries to inject a series
    "lone surrogate \udcff",  # what surrogateescape decoding of a bad byte gives
]


def gpu(index: int, name: str = "NVIDIA H100 80GB HBM3", **kw: Any) -> DeviceSample:
    """A fake reading with the fields the exporter writes."""
    fields: dict[str, Any] = dict(
        uuid=f"GPU-{index:08x}-0000-0000-0000-000000000000",
        memory_total_bytes=H100_BYTES,
        memory_used_bytes=H100_BYTES - 1,
        utilization_pct=97.0,
        power_w=650.25,
        power_limit_w=700.0,
        temperature_c=61.0,
        sm_clock_mhz=1980.0,
        pcie_gen=5,
        pcie_width=16,
    )
    fields.update(kw)
    return DeviceSample(index, name, "nvidia", **fields)


def series(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """(sample name, sorted labels) -> value, as prometheus_client's own parser reads ``text``."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def values(text: str, metric: str) -> dict[str, float]:
    """``gpu`` label -> value of one metric."""
    return {dict(k[1])["gpu"]: v for k, v in series(text).items() if k[0] == metric}


def test_hostile_names_parse_and_come_back_unchanged() -> None:
    samples = [gpu(i, name) for i, name in enumerate(HOSTILE_NAMES)]
    text = exporter.render(samples, hostname='host"with\\odd\nchars')
    got = series(text)
    names = {
        dict(labels)["gpu"]: dict(labels)["name"]
        for (metric, labels) in got
        if metric == "suanli_gpu_memory_total_bytes"
    }
    assert len(names) == len(HOSTILE_NAMES)
    for i, name in enumerate(HOSTILE_NAMES):
        expected = name.encode("utf-8", "replace").decode("utf-8")
        assert names[str(i)] == expected
    # suanli's series spell the label "hostname", the DCGM-named ones "Hostname" (dcgm-exporter's)
    hosts = {
        dict(k[1]).get("hostname", dict(k[1]).get("Hostname"))
        for k in got
        if k[0] != "suanli_scrape_error"
    }
    assert hosts == {'host"with\\odd\nchars'}
    # the injection attempt stayed inside its label: one scrape-error series, still 0
    assert [v for k, v in got.items() if k[0] == "suanli_scrape_error"] == [0.0]


def test_values_are_exact_to_the_byte() -> None:
    text = exporter.render([gpu(0), gpu(1, memory_total_bytes=2**53 - 1)])
    assert values(text, "suanli_gpu_memory_total_bytes") == {"0": H100_BYTES, "1": 2**53 - 1}
    assert values(text, "suanli_gpu_memory_used_bytes")["0"] == H100_BYTES - 1
    assert values(text, "suanli_gpu_power_watts")["0"] == 650.25
    assert values(text, "suanli_gpu_utilization_ratio")["0"] == 0.97
    assert values(text, "suanli_gpu_sm_clock_hertz")["0"] == 1_980_000_000


def test_uuid_and_hostname_labels_next_to_gpu_and_name() -> None:
    text = exporter.render([gpu(3), gpu(4, uuid=None)], hostname="node-7")
    labels = [dict(k[1]) for k in series(text) if k[0] == "suanli_gpu_temperature_celsius"]
    assert sorted(labels, key=lambda d: d["gpu"]) == [
        {
            "gpu": "3",
            "name": "NVIDIA H100 80GB HBM3",
            "uuid": "GPU-00000003-0000-0000-0000-000000000000",
            "hostname": "node-7",
        },
        {"gpu": "4", "name": "NVIDIA H100 80GB HBM3", "uuid": "", "hostname": "node-7"},
    ]
    assert exporter.GpuCollector().hostname == socket.gethostname()


def test_missing_fields_are_left_out_and_a_lost_gpu_reported() -> None:
    text = exporter.render(fake_provider("problems").sample())
    power = values(text, "suanli_gpu_power_watts")
    assert power["0"] == 70.0
    assert "5" not in power  # the T4 does not report power
    lost = values(text, "suanli_gpu_lost")
    assert lost["4"] == 1.0 and lost["0"] == 0.0
    assert "4" not in values(text, "suanli_gpu_memory_total_bytes")  # a lost GPU has no reading
    assert values(text, "suanli_gpu_utilization_ratio")  # the other series are there


def test_a_read_error_is_the_scrape_error_metric() -> None:
    def broken() -> Sequence[DeviceSample]:
        raise RuntimeError("NVML: GPU is lost")

    for text in (
        exporter.render([], read_error="boom"),
        exporter.render([], read_error="boom"),
        exporter.generate_latest(exporter.registry_for(exporter.GpuCollector(broken))).decode(),
    ):
        assert series(text) == {("suanli_scrape_error", ()): 1.0}
    assert series(exporter.render([gpu(0)]))[("suanli_scrape_error", ())] == 0.0


def test_the_cli_default_port_is_the_exporters_own() -> None:
    from suanli.cli.live import export_cmd

    (port,) = [p for p in export_cmd.params if p.name == "port"]
    assert port.default == exporter.DEFAULT_PORT != 9400
    (host,) = [p for p in export_cmd.params if p.name == "host"]
    assert host.default == "127.0.0.1"


def test_planning_and_monitor_imports_leave_prometheus_client_out() -> None:
    code = (
        "import sys, suanli.cli.main, suanli.live.monitor, suanli.answers.live\n"
        "print('prometheus_client' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- a real server on loopback -----------------------------------------------------------------


@pytest.fixture()
def server() -> Iterator[exporter.ExporterServer]:
    """The exporter over a fake 8-GPU reading, serving on a free loopback port."""
    samples = [gpu(i) for i in range(8)]
    srv = exporter.make_server("127.0.0.1", 0, exporter.GpuCollector(lambda: samples))
    thread = threading.Thread(target=srv.serve_forever, daemon=True)
    thread.start()
    yield srv
    srv.shutdown()
    srv.server_close()
    thread.join(timeout=5)


def get(srv: exporter.ExporterServer, path: str = "/metrics") -> tuple[int, str]:
    """Status and body of one GET."""
    url = f"http://127.0.0.1:{srv.server_address[1]}{path}"
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def test_server_answers_metrics_and_404_elsewhere(server: exporter.ExporterServer) -> None:
    status, body = get(server)
    assert status == 200
    assert len(values(body, "suanli_gpu_memory_total_bytes")) == 8
    assert get(server, "/")[0] == 200
    assert get(server, "/secret")[0] == 404


def test_server_answers_while_fifty_clients_stall(server: exporter.ExporterServer) -> None:
    """50 clients that connect and never send hold 50 threads; a scrape still gets its own."""
    port = server.server_address[1]
    stalled = [socket.create_connection(("127.0.0.1", port)) for _ in range(50)]
    half = socket.create_connection(("127.0.0.1", port))
    half.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")  # no blank line: never ends
    try:
        for _ in range(3):
            status, body = get(server)
            assert status == 200 and len(values(body, "suanli_gpu_lost")) == 8
    finally:
        for s in [*stalled, half]:
            s.close()


def reset(sock: socket.socket) -> None:
    """Close with an RST (SO_LINGER 0), the rudest way a client can hang up."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


def test_early_disconnects_print_no_traceback(
    server: exporter.ExporterServer, capsys: pytest.CaptureFixture[str]
) -> None:
    port = server.server_address[1]
    for request in (b"", b"GET /met", b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"):
        sock = socket.create_connection(("127.0.0.1", port))
        if request:
            sock.sendall(request)
        reset(sock)
    for _ in range(5):  # hang up while the answer is being written
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1024)
        sock.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
        sock.recv(16)
        reset(sock)
    status, _ = get(server)  # answered after each of them: the handler threads are done
    assert status == 200
    err = capsys.readouterr().err
    assert "Traceback" not in err and "Exception" not in err, err


def test_serve_answers_its_requests_then_stops(monkeypatch: pytest.MonkeyPatch) -> None:
    """``serve`` as the command runs it, reading the devices through the providers."""
    monkeypatch.setenv("SUANLI_FAKE_GPUS", "healthy-8xh100")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    thread = threading.Thread(target=exporter.serve, args=("127.0.0.1", port, 1), daemon=True)
    thread.start()
    body = ""
    for _ in range(100):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
                body = resp.read().decode()
            break
        except OSError:
            threading.Event().wait(0.05)
    thread.join(timeout=5)
    assert values(body, "suanli_gpu_utilization_ratio") == {str(i): 0.97 for i in range(8)}


def test_the_command_serves_and_writes_only_its_one_line() -> None:
    """``suanli export`` as a user runs it: a client resetting mid-request, then a scrape; stderr
    holds the "serving" line and nothing else."""
    import os

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "SUANLI_FAKE_GPUS": "healthy-8xh100"}
    args = ["-m", "suanli", "--lang", "en", "export", "--port", str(port), "--max-requests", "2"]
    child = subprocess.Popen([sys.executable, *args], stderr=subprocess.PIPE, text=True, env=env)
    try:
        for _ in range(200):
            try:
                rude = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                threading.Event().wait(0.05)
        rude.sendall(b"GET /metr")
        reset(rude)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as resp:
            body = resp.read().decode()
        _, err = child.communicate(timeout=30)
    finally:
        child.kill()
    assert len(values(body, "suanli_gpu_memory_total_bytes")) == 8
    assert child.returncode == 0
    assert err.strip().splitlines() == [
        f"serving metrics on http://127.0.0.1:{port}/metrics (Ctrl-C to stop)"
    ]
