"""The wait for the slowest GPU (docs/speed.md, "Waiting for the slowest GPU").

A synchronous training step moves at the pace of its slowest rank: tensor-parallel all-reduces
every layer, pipeline sends every micro-batch and the gradient reduction every step all wait
for the last GPU to arrive. GPUs of one SKU are not equally fast: manufacturing variation and
power management give each card its own sustained clock. Sinha et al., "Not All GPUs Are
Created Equal" (SC'22, arXiv:2208.11035), measured over 90% of the GPUs of five production
clusters (V100 and MI60; about 18,800 GPU-hours) and report an 8% average performance variation
between GPUs of the same SKU (max 22%), with outliers up to 1.5x slower than the median GPU.

Model (first principles on that published spread, nothing fitted to a training run):

- each GPU's speed is the median card's (which is what one card's kernel measurements give)
  times a factor drawn from a normal distribution; the 8% is read as the range between the
  box plot's whiskers (Tukey's 1.5 IQR, +-2.70 standard deviations of a normal), so the
  standard deviation is ``SPREAD / (2 x 2.698)`` = 1.48%;
- operators drain the outliers beyond the whiskers (the 1.5x cards), so no job waits for more
  than the whisker, ``SPREAD / 2`` = 4% slower than the median;
- a job of ``n`` GPUs waits, each step, for the slowest of ``n`` draws: the expected maximum
  of ``n`` standard normals (Blom's approximation, ``Phi^-1((n - 0.375) / (n + 0.25))``; 0 for
  one GPU) times the standard deviation, capped at the whisker.

So 8 GPUs wait about 2.0% of their busy time, 64 about 3.5%, 1,024 and more 4% (the cap). The
wait is charged on the busy time (compute and memory), not on communication or the bubble.
"""

from __future__ import annotations

from functools import cache
from typing import Any

#: Average performance variation between GPUs of one SKU across five clusters (Sinha et al.,
#: SC'22, arXiv:2208.11035, abstract: "8% (max 22%) average performance variation").
SPREAD = 0.08
#: Half-width, in standard deviations, of a normal distribution's box-plot whiskers
#: (Q3 + 1.5 IQR = 0.6745 + 1.5 x 1.349 = 2.698).
WHISKER_SIGMAS = 2.698
#: Standard deviation of a GPU's speed around the median card's.
SIGMA = SPREAD / (2 * WHISKER_SIGMAS)
#: The slowest card a job keeps: outliers beyond the whisker are drained.
CAP = SPREAD / 2
SOURCE = "Sinha et al., SC'22 (arXiv:2208.11035): 8% average variation between GPUs of one SKU"


@cache
def slowest_share(gpus: int) -> float:
    """Expected extra time of the slowest of ``gpus`` GPUs over the median card, as a share of
    the busy time (0 for one GPU, at most :data:`CAP`)."""
    if gpus <= 1:
        return 0.0
    # statistics pulls in decimal, fractions and random: not at the planning commands' start-up.
    from statistics import NormalDist

    z = NormalDist().inv_cdf((gpus - 0.375) / (gpus + 0.25))
    return min(CAP, SIGMA * z)


def straggler_wait_s(busy_s: Any, gpus: Any) -> Any:
    """Seconds a step waits for its slowest GPU: the busy time times :func:`slowest_share`.

    ``gpus`` is an int or a numpy integer array (the planner's layouts); numpy is imported
    only in the array case."""
    if isinstance(gpus, int):
        return busy_s * slowest_share(gpus)
    import numpy as np

    counts, index = np.unique(gpus, return_inverse=True)
    shares = np.array([slowest_share(int(n)) for n in counts])
    return busy_s * shares[index.reshape(np.shape(gpus))]
