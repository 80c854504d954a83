"""``suanli doctor run script.py`` on a real script with a slow DataLoader (CPU)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .test_cli import run

pytest.importorskip("torch")

SCRIPT = """
import sys, time, torch
from torch.utils.data import Dataset, DataLoader
torch.set_num_threads(1)
delay = float(sys.argv[1])
class Data(Dataset):
    def __len__(self): return 100_000
    def __getitem__(self, i):
        time.sleep(delay)
        return torch.randn(64), torch.randn(1)
# The fast case keeps the data in memory, as a well-fed loop does.
data = Data() if delay > 0 else torch.utils.data.TensorDataset(torch.randn(8192, 64),
                                                               torch.randn(8192, 1))
model = torch.nn.Sequential(torch.nn.Linear(64, 1024), torch.nn.ReLU(), torch.nn.Linear(1024, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for x, y in DataLoader(data, batch_size=32):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
"""


def test_doctor_run_finds_the_slow_loader(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = run("doctor", "run", "--steps", "20", "--replay", "5", "--json", str(script), "0.002")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["verdict"] == "input-bound"
    assert doc["fixes"] and doc["fixes"][0]["expected_speedup"] > 2
    assert set(doc["shares"]) >= {"data", "forward", "backward", "optimizer"}
    assert doc["steps"] >= 10
    fast = run("doctor", "run", "--steps", "16", "--replay", "4", "--json", str(script), "0")
    assert json.loads(fast.stdout)["verdict"] != "input-bound"


def test_doctor_run_bad_input(tmp_path: Path) -> None:
    out = run("doctor", "run", str(tmp_path / "missing.py"))
    assert out.returncode == 2 and "no such script" in out.stderr
    empty = tmp_path / "empty.py"
    empty.write_text("print('no training here')\n")
    out = run("doctor", "run", str(empty))
    assert out.returncode == 2 and "optimizer steps" in out.stderr


ENDINGS = """
import sys, torch
model = torch.nn.Linear(8, 8)
opt = torch.optim.SGD(model.parameters(), lr=0.01)
print("the script's own line")
how, after = sys.argv[1], int(sys.argv[2])
for step in range(1000):
    try:
        loss = model(torch.randn(4, 8)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    except Exception:  # a script that swallows every Exception must not swallow suanli's stop
        pass
    if step == after:
        if how == "exit":
            sys.exit(3)
        if how == "raise":
            raise RuntimeError("boom")
"""


@pytest.mark.parametrize(
    ("how", "after", "code", "error"),
    [
        ("exit", 12, 3, "sys.exit(3)"),
        ("raise", 12, 1, "RuntimeError: boom"),
        ("none", 10**6, 0, None),  # runs until suanli stops it: the except cannot swallow that
    ],
)
def test_doctor_run_passes_the_scripts_exit_status_through(
    tmp_path: Path, how: str, after: int, code: int, error: str | None
) -> None:
    script = tmp_path / "train.py"
    script.write_text(ENDINGS)
    out = run(
        "doctor", "run", "--steps", "30", "--replay", "2", "--json", str(script), how, str(after)
    )
    assert out.returncode == code, out.stderr
    doc = json.loads(out.stdout)  # stdout is the answer alone: the script printed to stderr
    assert "the script's own line" in out.stderr
    assert doc["script_exit_code"] == code
    assert doc.get("script_error") == error
    assert doc["steps"] >= 5
