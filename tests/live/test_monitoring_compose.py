"""monitoring/compose.yaml runs Prometheus and Grafana next to `suanli export`: it parses, pins
its images, mounts files that exist, and points Prometheus at the configuration the real-server
test checks (tests/live/test_prometheus_real.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

MONITORING = Path(__file__).resolve().parents[2] / "monitoring"


def test_the_compose_file_is_complete_and_pinned() -> None:
    compose = yaml.safe_load((MONITORING / "compose.yaml").read_text())
    services = compose["services"]
    assert set(services) == {"prometheus", "grafana"}
    for name, service in services.items():
        image = service["image"]
        assert ":" in image and not image.endswith(":latest"), name  # pinned versions
        assert service["network_mode"] == "host"  # reaches the exporter on loopback
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if source.startswith("./"):
                assert (MONITORING / source[2:]).is_file(), volume
            else:
                assert source in compose["volumes"], volume
    prometheus = services["prometheus"]
    assert "--config.file=/etc/prometheus/prometheus.yml" in prometheus["command"]
    # the rules file sits next to the config, where prometheus.yml's rule_files expects it
    config = yaml.safe_load((MONITORING / "prometheus.yml").read_text())
    mounted = {v.split(":")[1] for v in prometheus["volumes"] if v.startswith("./")}
    for rules in config["rule_files"]:
        assert f"/etc/prometheus/{rules}" in mounted
    # both listen on loopback only
    assert any("127.0.0.1:9090" in arg for arg in prometheus["command"])
    assert services["grafana"]["environment"]["GF_SERVER_HTTP_ADDR"] == "127.0.0.1"
