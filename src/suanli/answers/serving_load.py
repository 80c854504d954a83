"""One serving request's shape, the default of every view that serves a model: ``perf --task
infer``, ``compare``, ``capacity``, ``plan --task infer`` and the page. The same question ("20
requests/s of Llama-3.1-8B on L40S") gets the same requests in each, and each says so.

Why 1,024 prompt and 256 output tokens: the fixed-length shape serving benchmarks use when they
do not replay a dataset (vLLM's ``benchmark_serving --dataset-name random`` defaults to 1,024
input tokens; MLPerf Inference's Llama-2-70B set averages about 1,000 input tokens with a few
hundred output), long enough that the prefill matters, short enough to leave the KV cache room
for a full batch on one card.
"""

from __future__ import annotations

from suanli.i18n import N_

#: Prompt tokens per request (the mean under a length distribution).
PROMPT_TOKENS = 1024
#: Output tokens per request (the mean under a length distribution).
OUTPUT_TOKENS = 256


def request_shape(prompt_tokens: int, output_tokens: int) -> str:
    """The assumption every serving view prints: the requests it answers for."""
    return N_("each request: {prompt:,} prompt tokens and {output:,} output tokens").format(
        prompt=prompt_tokens, output=output_tokens
    )
