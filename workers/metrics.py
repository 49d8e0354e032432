"""What a worker counts for Prometheus, and its metrics endpoint.

Jobs (started, how they ended, resumed by the reconciler, recovered by the sweep, how long
they waited in the queue), runs in flight against the worker's job slots, and the duration and
steps of finished runs by mode. With RED_WORKER_METRICS_PORT set, the worker serves its
process's registry (these, the engine's model, search and page counts, its Slack calls) at
`http://host:port/metrics` from a thread of its own, which answers even while a local model
holds the event loop; with RED_METRICS_TOKEN set, only to a scrape that brings it as
`Authorization: Bearer …`. Labels take values from small fixed sets: never a run id, a channel
or a person.
"""

from __future__ import annotations

import hmac
import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import REGISTRY, Counter, Gauge, Histogram, make_wsgi_app
from prometheus_client.exposition import ThreadingWSGIServer

from research_core.errors import PortBusy

# How a job that went to work ended: finished (its work is done: a research finished, a
# follow-up answered); failed (a run failure, the time limit, an internal error, Slack kept
# failing); stopped (the requester's Stop); refused (the policy's spending caps); given_up
# (it crashed its worker RED_WORKER_MAX_CRASHES times); deferred (Slack away: it runs again
# later); handed_over (the worker shut down: another resumes it); lease_lost (another worker
# took the run over).
JOB_OUTCOMES = ("finished", "failed", "stopped", "refused", "given_up", "deferred",
                "handed_over", "lease_lost")

JOBS_STARTED = Counter(
    "redsearch_jobs_started_total", "Jobs that took their run's lease and went to work.",
    ["kind"])
JOBS_ENDED = Counter(
    "redsearch_jobs_ended_total", "Jobs that ended, by kind and outcome.", ["kind", "outcome"])
JOBS_RESUMED = Counter(
    "redsearch_jobs_resumed_total",
    "Jobs the reconciler queued again because their run lost its worker (cause: crash, or "
    "handover by a worker shutting down).", ["cause"])
JOBS_RECOVERED = Counter(
    "redsearch_jobs_recovered_total",
    "Jobs the sweep queued again from the SQL record after Redis lost them.")
QUEUE_WAIT = Histogram(
    "redsearch_job_queue_wait_seconds", "How long a job waited in the queue for a worker.",
    ["kind"], buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800))
RUNS_IN_FLIGHT = Gauge(
    "redsearch_runs_in_flight", "Runs (research, follow-ups, watch cycles) this worker is "
    "working on now.")
JOB_SLOTS = Gauge(
    "redsearch_worker_job_slots", "Jobs this worker runs at once (RED_WORKER_JOBS).")
RUN_SECONDS = Histogram(
    "redsearch_run_duration_seconds",
    "Active time of a finished research run (across resumes), by requested mode.", ["mode"],
    buckets=(30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 5400))
RUN_STEPS = Histogram(
    "redsearch_run_steps", "Planner steps of a finished research run, by requested mode.",
    ["mode"], buckets=(1, 2, 4, 8, 12, 16, 24, 36, 54, 81))


WsgiApp = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


class _Quiet(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # the base class names it so
        """No line per scrape."""


def bearer_only(app: WsgiApp, token: str) -> WsgiApp:
    """`app`, answering 401 to a request without `Authorization: Bearer <token>`."""
    expected = f"Bearer {token}".encode()

    def guarded(environ: dict[str, Any], start: Callable[..., Any]) -> Iterable[bytes]:
        given = str(environ.get("HTTP_AUTHORIZATION", "")).encode()
        if hmac.compare_digest(given, expected):
            return app(environ, start)
        start("401 Unauthorized", [("Content-Type", "text/plain; charset=utf-8"),
                                   ("WWW-Authenticate", 'Bearer realm="metrics"')])
        return [b"a bearer token is required\n"]

    return guarded


def serve_metrics(host: str, port: int, token: str = "") -> WSGIServer:
    """The process's metrics at http://host:port/metrics, served from a daemon thread (stop it
    with `shutdown()`); with `token`, only to a scrape that brings it as a bearer token;
    PortBusy naming the setting when the port cannot be had."""
    app: WsgiApp = make_wsgi_app(REGISTRY)
    if token:
        app = bearer_only(app, token)
    try:
        family, *_, address = socket.getaddrinfo(host or None, port, type=socket.SOCK_STREAM,
                                                 flags=socket.AI_PASSIVE)[0]

        class Server(ThreadingWSGIServer):
            address_family = family

        server = make_server(str(address[0]), port, app, Server, handler_class=_Quiet)
    except OSError as exc:
        raise PortBusy(f"RED_WORKER_METRICS_PORT={port}: cannot serve metrics on "
                       f"{host}:{port} ({exc.strerror or exc})") from exc
    threading.Thread(target=server.serve_forever, daemon=True,
                     name="metrics").start()
    return server


def stop_metrics(server: WSGIServer | None) -> None:
    if server is not None:
        server.shutdown()
        server.server_close()
