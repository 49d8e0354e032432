"""What the bot and the workers both count for Prometheus: Slack Web API calls (through the
shared client, `contract.slack_client`) and jobs queued (`contract.queue`).

Each process serves its own registry (the bot at /metrics, a worker on its metrics port;
docs/operations.md). Labels take values from small fixed sets: a Web API method the code
calls, a result, a job kind; never a channel, a person or a message.
"""

from __future__ import annotations

from prometheus_client import Counter

# How a Web API call ended: ok; Slack's own `ok: false` (error); HTTP 429 after the client's
# retries (ratelimited); a 5xx or an answer that is not Slack's JSON (server_error); no answer
# at all: a refused or dropped connection, a timeout (network).
SLACK_RESULTS = ("ok", "error", "ratelimited", "server_error", "network")

SLACK_CALLS = Counter(
    "redsearch_slack_api_calls_total",
    "Slack Web API calls by method and how they ended (after the client's retries).",
    ["method", "result"])
SLACK_RATELIMITED = Counter(
    "redsearch_slack_api_ratelimited_total",
    "HTTP 429 answers from the Slack Web API, each one (retried or not).", ["method"])
SLACK_RETRIES = Counter(
    "redsearch_slack_api_retries_total",
    "Slack Web API requests sent again after a 429 or a 5xx.", ["method", "reason"])
SLACK_RETRY_WAIT = Counter(
    "redsearch_slack_api_retry_wait_seconds_total",
    "Seconds spent waiting before Slack Web API retries (Retry-After or back-off).",
    ["method"])

JOBS_QUEUED = Counter(
    "redsearch_jobs_queued_total",
    "Jobs newly queued for the workers, by kind (research, followup, watch, …).", ["kind"])
