"""Arrivals and traces: the requests a serving simulation replays.

Request generation (Poisson, bursty or evenly spaced arrivals, all at once for an offline
benchmark), token length distributions, and trace loading (CSV). Part of
:mod:`suanli.estimate.serving`.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from suanli.i18n import N_

ARRIVALS = ("poisson", "bursty", "even", "trace")
LENGTH_DISTS = ("fixed", "uniform", "lognormal")
#: Simulated requests above which the CLI shows a progress bar and the simulation refuses.
MAX_REQUESTS = 5_000_000


@dataclass(frozen=True, kw_only=True)
class Lengths:
    """A distribution of token counts: ``fixed``, ``uniform`` or ``lognormal`` around ``mean``.

    ``uniform``: integers in ``[mean (1 - spread), mean (1 + spread)]``; ``lognormal``: mean
    ``mean`` and log-space sigma ``spread`` (a heavy right tail, like chat prompts); both at
    least 1 and at most ``maximum`` when given.
    """

    mean: int
    dist: str = "fixed"
    spread: float = 0.5
    maximum: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.mean, bool) or not isinstance(self.mean, int) or self.mean < 1:
            raise ValueError(
                N_("token lengths must be integers >= 1, got {value!r}").format(value=self.mean)
            )
        if self.dist not in LENGTH_DISTS:
            raise ValueError(
                N_("length distribution {dist!r} is not one of {allowed}").format(
                    dist=self.dist, allowed=LENGTH_DISTS
                )
            )
        if not 0 <= self.spread <= 3 or (self.dist == "uniform" and self.spread > 1):
            raise ValueError(
                N_(
                    "--spread must be in [0, 1] for uniform and [0, 3] for lognormal, got {value}"
                ).format(value=self.spread)
            )

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """``n`` lengths as int64."""
        if self.dist == "fixed" or self.spread == 0:
            out = np.full(n, self.mean, dtype=np.int64)
        elif self.dist == "uniform":
            lo = max(1, round(self.mean * (1 - self.spread)))
            hi = max(lo, round(self.mean * (1 + self.spread)))
            out = rng.integers(lo, hi + 1, size=n, dtype=np.int64)
        else:
            sigma = self.spread
            mu = math.log(self.mean) - sigma * sigma / 2
            out = np.rint(rng.lognormal(mu, sigma, size=n)).astype(np.int64)
        out = np.maximum(out, 1)
        if self.maximum is not None:
            out = np.minimum(out, self.maximum)
        return out


@dataclass(frozen=True, kw_only=True)
class Requests:
    """Arrival times (seconds, sorted), prompt and output tokens of each request."""

    arrival_s: np.ndarray
    prompt: np.ndarray
    output: np.ndarray

    def __len__(self) -> int:
        return len(self.arrival_s)


def _poisson_times(rng: np.random.Generator, rate: float, n: int | None, end: float | None) -> Any:
    if n is not None:
        return np.cumsum(rng.exponential(1 / rate, size=n))
    assert end is not None
    times: list[np.ndarray] = []
    t = 0.0
    while t <= end:
        chunk = t + np.cumsum(rng.exponential(1 / rate, size=max(16, int(rate * end / 4) + 16)))
        times.append(chunk)
        t = float(chunk[-1])
    out = np.concatenate(times)
    return out[out <= end]


def _bursty_times(
    rng: np.random.Generator,
    rate: float,
    n: int | None,
    end: float | None,
    ratio: float,
    period_s: float,
) -> Any:
    """A two-state Markov-modulated Poisson process: equal mean time in a high and a low state
    (exponential sojourns of mean ``period_s``), rates in ratio ``ratio``, overall mean ``rate``."""
    high, low = rate * 2 * ratio / (1 + ratio), rate * 2 / (1 + ratio)
    out: list[float] = []
    t, state = 0.0, 0
    limit = n if n is not None else MAX_REQUESTS
    while len(out) < limit:
        stay = rng.exponential(period_s)
        r = high if state == 0 else low
        count = rng.poisson(r * stay)
        times = np.sort(t + rng.uniform(0, stay, size=count))
        if end is not None:
            times = times[times <= end]
        out.extend(times.tolist())
        t += stay
        state ^= 1
        if end is not None and t > end:
            break
    return np.asarray(out[:limit] if n is not None else out, dtype=np.float64)


def parse_trace(text: str, source: str = "trace") -> Requests:
    """Requests from trace CSV text: a header row with ``arrival_s``, ``prompt_tokens`` and
    ``output_tokens``, then one row per request (sorted by arrival here)."""
    rows = list(csv.DictReader(text.splitlines()))
    need = ("arrival_s", "prompt_tokens", "output_tokens")
    if not rows or any(k not in rows[0] for k in need):
        raise ValueError(
            N_("{source}: a trace needs a header row with {columns} and data rows").format(
                source=source, columns=", ".join(need)
            )
        )
    try:
        arr = np.asarray([float(r["arrival_s"]) for r in rows])
        prompt = np.asarray([int(r["prompt_tokens"]) for r in rows], dtype=np.int64)
        output = np.asarray([int(r["output_tokens"]) for r in rows], dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError(
            N_("{source}: arrival_s must be numbers and token counts integers").format(
                source=source
            )
        ) from None
    if not np.isfinite(arr).all() or (arr < 0).any() or (prompt < 1).any() or (output < 1).any():
        raise ValueError(
            N_("{source}: arrival times must be >= 0 and token counts >= 1").format(source=source)
        )
    order = np.argsort(arr, kind="stable")
    return Requests(arrival_s=arr[order], prompt=prompt[order], output=output[order])


def make_requests(
    *,
    rate: float,
    prompt: Lengths,
    output: Lengths,
    requests: int | None = None,
    duration_s: float | None = None,
    arrivals: str = "poisson",
    seed: int = 0,
    trace: Requests | None = None,
    burst_ratio: float = 4.0,
    burst_period_s: float = 10.0,
) -> Requests:
    """Requests for a simulation, deterministic for a ``seed``.

    ``rate``: requests per second (``math.inf``: all arrive at time 0, an offline benchmark).
    Give ``requests`` or ``duration_s``; ``arrivals="trace"`` takes ``trace`` as it is
    (:func:`parse_trace`).
    """
    if arrivals not in ARRIVALS:
        raise ValueError(
            N_("--{option} {value!r} is not one of {allowed}").format(
                option="arrivals", value=arrivals, allowed=", ".join(ARRIVALS)
            )
        )
    if arrivals == "trace":
        if trace is None:
            raise ValueError(N_("--arrivals trace needs --trace FILE"))
        return trace
    if not rate > 0:
        raise ValueError(N_("--rate must be > 0 requests/s, got {value}").format(value=rate))
    if requests is None and duration_s is None:
        raise ValueError(N_("give --requests or --duration"))
    if requests is not None and (requests < 1 or requests > MAX_REQUESTS):
        raise ValueError(
            N_("--requests must be in [1, {limit:,}], got {value}").format(
                limit=MAX_REQUESTS, value=requests
            )
        )
    if duration_s is not None:
        if not duration_s > 0:
            raise ValueError(
                N_("--duration must be > 0 seconds, got {value}").format(value=duration_s)
            )
        if math.isinf(rate):
            raise ValueError(N_("an infinite --rate needs --requests, not --duration"))
        if rate * duration_s > MAX_REQUESTS:
            raise ValueError(
                N_("--rate x --duration is {requests:,.0f} requests; at most {limit:,}").format(
                    requests=rate * duration_s, limit=MAX_REQUESTS
                )
            )
    if burst_ratio < 1 or burst_period_s <= 0:
        raise ValueError(N_("burst ratio must be >= 1 and burst period > 0"))
    rng = np.random.default_rng(seed)
    if math.isinf(rate):
        assert requests is not None
        times = np.zeros(requests)
    elif arrivals == "poisson":
        times = _poisson_times(rng, rate, requests, duration_s)
    elif arrivals == "even":
        # One request every 1/rate seconds (a load generator's constant rate).
        count = requests if requests is not None else int(rate * (duration_s or 0.0))
        times = np.arange(count) / rate
    else:
        times = _bursty_times(rng, rate, requests, duration_s, burst_ratio, burst_period_s)
    n = len(times)
    if n == 0:
        raise ValueError(N_("no request arrives within --duration; raise --rate or --duration"))
    return Requests(
        arrival_s=np.asarray(times, dtype=np.float64),
        prompt=prompt.sample(rng, n),
        output=output.sample(rng, n),
    )
