"""What the engine counts for Prometheus: model calls (tokens, cost, outcome, latency),
fallbacks, searches, the search cache and pages the reader refused.

The engine only counts; it serves nothing. `prometheus_client` keeps the counts in its
process-wide registry, and the processes that run the engine serve that registry (a worker's
metrics port, docs/operations.md). Every label takes a value from a small fixed set (a tier,
an outcome, a prompt name of prompts.yaml, a configured backend, a reason): never a run id, a
person, a query or a URL.
"""

from __future__ import annotations

import re

from prometheus_client import Counter, Histogram

# What became of one model call: its output was used (ok), was unusable and asked again
# (retried), was unusable again so the step's fallback was used (fallback); the budget had no
# call left (refused: no call was made); the tier raised (error: the endpoint failed).
OUTCOMES = ("ok", "retried", "fallback", "refused", "error")

MODEL_CALLS = Counter(
    "redsearch_model_calls_total", "Model calls by tier and what became of them.",
    ["tier", "outcome"])
MODEL_TOKENS = Counter(
    "redsearch_model_tokens_total", "Tokens of model calls (type: prompt or completion).",
    ["tier", "outcome", "type"])
MODEL_COST = Counter(
    "redsearch_model_cost_usd_total",
    "Cost of model calls in US dollars, at the tier's configured prices.", ["tier", "outcome"])
MODEL_SECONDS = Histogram(
    "redsearch_model_call_seconds", "How long one model call took.", ["tier"],
    buckets=(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 40, 80, 160))
FALLBACKS = Counter(
    "redsearch_model_fallbacks_total",
    "Steps that used their fallback instead of a model's answer, by prompt and why "
    "(unusable: two unusable answers; budget: no model call left).", ["purpose", "reason"])

SEARCH_QUERIES = Counter(
    "redsearch_search_queries_total", "Queries sent to the search backend (cache misses).",
    ["backend"])
SEARCH_CACHE_HITS = Counter(
    "redsearch_search_cache_hits_total", "Queries answered from the search cache.",
    ["backend"])
SEARCH_FAILURES = Counter(
    "redsearch_search_failures_total",
    "Queries a search source failed, by reason (a web service: the next is tried; an MCP "
    "server: its hits are left out); an answer missing a source is never cached.",
    ["backend", "reason"])

PAGES_READ = Counter("redsearch_pages_read_total",
                     "Web pages the safe page reader read, by type (html, text, pdf).", ["type"])
PAGES_REFUSED = Counter(
    "redsearch_pages_refused_total", "Web pages the safe page reader refused, by reason.",
    ["reason"])


def model_call(tier: str, outcome: str, tokens: tuple[int, int], cost_usd: float) -> None:
    """One model call that was made (tokens spent), with its outcome."""
    MODEL_CALLS.labels(tier, outcome).inc()
    prompt, completion = tokens
    MODEL_TOKENS.labels(tier, outcome, "prompt").inc(prompt)
    MODEL_TOKENS.labels(tier, outcome, "completion").inc(completion)
    MODEL_COST.labels(tier, outcome).inc(cost_usd)


def model_refused(tier: str) -> None:
    """A call the budget did not allow: none was made."""
    MODEL_CALLS.labels(tier, "refused").inc()


def backend_label(name: str) -> str:
    """A search backend's name as a label: without the digest of its documents that a corpus
    adds to its name (`corpus:1a2b3c…`, so that a cached response never outlives a change)."""
    return re.sub(r":[0-9a-f]{6,}", "", name)
