"""Every Redis key the bot and the workers use, and how long each lives.

Requests and their threads, the job markers of the queue and the reconciler, leases, and the
counters are kept for a week (`KEEP_S`): long enough for any run and its follow-ups, short
enough that Redis never fills up with old threads. Delivered event ids are kept for an hour,
longer than Slack retries a delivery; signed commands and interactions as long as their
signature would let the same bytes in again. docs/architecture.md lists them with their meaning.
"""

from __future__ import annotations

import re

KEEP_S = 7 * 24 * 3600
EVENT_DEDUP_S = 3600
GREETED_S = 365 * 24 * 3600  # the agent view greets a person once (a year)

# the requests (bot): one record per mention, and what points at it
REQUEST_KEY = re.compile(r"red:req:[A-Za-z0-9._-]{1,80}:[0-9.]{1,40}")


def request_key(channel: str, ts: str) -> str:
    """The request record (JSON) of a mention."""
    return f"red:req:{channel}:{ts}"


def request_channel(key: str) -> str:
    """The channel of a request key ("" when `key` is not one)."""
    return key.split(":")[2] if REQUEST_KEY.fullmatch(key) else ""


def chosen_key(request: str) -> str:
    """The depth chosen for a request: set once (NX), so two racing clicks queue one job."""
    return f"{request}:chosen"


def event_key(event_id: str) -> str:
    """A delivered Slack event id: a retried delivery finds it and is dropped."""
    return f"red:event:{event_id}"


def signed_key(digest: str) -> str:
    """A signed command or interaction handled already (a digest of its timestamp and body):
    the same bytes posted again while their signature holds find it and are dropped. Kept
    until that timestamp leaves the window in which it is accepted (five minutes at most)."""
    return f"red:signed:{digest}"


def thread_key(channel: str, thread_ts: str) -> str:
    """The request that owns a thread (follow-ups find it through this)."""
    return f"red:thread:{channel}:{thread_ts}"


def stop_key(request: str) -> str:
    """The requester pressed Stop."""
    return f"red:stop:{request}"


def steer_key(request: str) -> str:
    """List (oldest first) of the steers written in the thread while its research works
    (JSON: who, what, the message's ts); the run reads those it has not read at its next
    step, and keeps how many it read in its checkpoint."""
    return f"red:steer:{request}"


def greeted_key(team: str | None, user: str) -> str:
    """The agent view greeted this person already (its Chat tab opened before)."""
    return f"red:greeted:{team or 'default'}:{user}"


# the queue (bot and workers): jobs that must run until they end
ACTIVE_KEY = "red:active"  # hash: job id -> payload
# depth pickers Slack did not take, posted again later (bot/pickers.py)
PICKERS_KEY = "red:pickers"  # sorted set: request key -> when to try again (epoch s)
PICKER_TRIES_KEY = "red:picker-tries"  # hash: request key -> tries so far


def started_key(job_id: str) -> str:
    """Set when a job first holds its run's lease: from then on it is the reconciler's care."""
    return f"red:started:{job_id}"


def claim_key(job_id: str) -> str:
    """A reconciler re-enqueued this job; the resumed job deletes it once it holds the lease."""
    return f"red:reconcile:{job_id}"


def resumes_key(job_id: str) -> str:
    """How many times the reconciler resumed this job."""
    return f"red:resumes:{job_id}"


def crashes_key(job_id: str) -> str:
    """How many times this job's worker died under it (a graceful hand-over is no crash)."""
    return f"red:crashes:{job_id}"


def reach_key(job_id: str) -> str:
    """The furthest model call a job had reached when its worker died: a crash counts
    against the job only when the job got no further than that."""
    return f"red:reach:{job_id}"


def handover_key(job_id: str) -> str:
    """Set by a job that gave its lease back on shutdown: its resume is not a crash."""
    return f"red:handover:{job_id}"


def outages_key(job_id: str) -> str:
    """How many times this job was put off because Slack was away (`workers/jobs.py`)."""
    return f"red:outages:{job_id}"


def doing_key(job_id: str) -> str:
    """What the job is doing right now ("step 7: executor/followup"), for crash reports."""
    return f"red:doing:{job_id}"


# the workers
def lease_key(run_id: str) -> str:
    """The worker holding a run right now (renewed every heartbeat)."""
    return f"red:lease:{run_id}"


def progress_key(job_id: str) -> str:
    """The ts of a job's progress message, so a resumed job edits the same message."""
    return f"red:progress:{job_id}"


def stream_key(job_id: str) -> str:
    """Hash: publication key -> ts of the message an answer was streamed into, so that the
    part (and a resumed job) edits that message instead of posting another."""
    return f"red:stream:{job_id}"


def chart_key(run_id: str) -> str:
    """Hash: part key -> "<series digest> <file id>" of the chart shown in that part, so that
    a revision (in any job of the run) replaces that file instead of adding a second one."""
    return f"red:chart:{run_id}"


def keep_key(run_id: str) -> str:
    """A canvas or export job of the run is at work (one at a time: two quick clicks make
    one canvas); expires after a minute should its worker die."""
    return f"red:keep:{run_id}"


# the Home tab (bot and workers)
def user_runs_key(user: str) -> str:
    """Sorted set: a person's request keys, scored by when they asked."""
    return f"red:user-runs:{user}"


def stats_key(request: str) -> str:
    """JSON: a request's run as the Home tab shows it (steps, tokens, cost, thread link)."""
    return f"{request}:stats"


def costs_key(team: str | None) -> str:
    """List (newest first) of what this workspace's recent finished runs cost, per tier."""
    return f"red:costs:{team or 'default'}"


def before_key(job_id: str) -> str:
    """The request's status before a follow-up job set it to running (restored after)."""
    return f"red:before:{job_id}"


# The asking person's Slack action token (the Real-time Search API): kept only for the job that
# searches with it, until it starts (an hour: a depth not chosen by then is not searched), then
# for the job's time limit, and deleted when the job ends.
SEARCH_TOKEN_WAIT_S = 3600


def search_token_key(job_id: str) -> str:
    return f"red:searchtoken:{job_id}"


RATE_PREFIX = "redsearch:rate:"  # + backend + window: the search rate limit all workers share
