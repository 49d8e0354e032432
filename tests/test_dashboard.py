"""The metrics follow Prometheus's conventions, and the Grafana dashboard in docs/ and the
queries of docs/operations.md name only metrics the code exports (a renamed metric breaks
this test, not an operator's dashboard)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from prometheus_client import REGISTRY
from prometheus_client.metrics_core import Metric

import bot.metrics
import contract.metrics
import redsearch.supervisor
import research_core.metrics
import workers.metrics

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "docs" / "grafana-dashboard.json"
OPERATIONS = ROOT / "docs" / "operations.md"
MODULES = (bot.metrics, contract.metrics, research_core.metrics, workers.metrics,
           redsearch.supervisor)
# Labels whose values would grow without bound: one series per run, person, thread or query.
UNBOUNDED = {"run", "run_id", "job", "job_id", "user", "requester", "channel", "team",
             "thread", "ts", "question", "query", "url", "source", "source_id", "text"}
UNITLESS_HISTOGRAMS = {"redsearch_run_steps"}  # a count per run, not a measure
PROMQL_WORDS = {
    "sum", "min", "max", "avg", "count", "topk", "bottomk", "rate", "irate", "increase",
    "delta", "histogram_quantile", "clamp_min", "clamp_max", "abs", "round", "by", "without",
    "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool", "offset",
    "vector", "scalar", "time", "le"}
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum",
                                                                "_created"),
            "gauge": ("",), "summary": ("_count", "_sum", "_created"), "info": ("_info",)}


def families() -> list[Metric]:
    return list(REGISTRY.collect())


def ours() -> list[Metric]:
    return [f for f in families() if f.name.startswith("redsearch_")]


def exported() -> set[str]:
    """Every sample name the processes can export (a labelled family without a child yet
    has no samples, so the names come from each family's type)."""
    names: set[str] = set()
    for family in families():
        names |= {family.name + s for s in SUFFIXES.get(family.type, ("",))}
        names |= {s.name for s in family.samples}
    return names


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads: what is left once label matchers, `by`
    and `without` lists, ranges, strings, numbers and PromQL's own words are taken out."""
    bare = re.sub(r'"[^"]*"', "", expr)
    bare = re.sub(r"\{[^}]*\}|\[[^\]]*\]", "", bare)
    bare = re.sub(r"\b(by|without|on|ignoring)\s*\([^)]*\)", "", bare)
    words = set(re.findall(r"[A-Za-z_:][A-Za-z0-9_:]*", bare))
    return {w for w in words if w not in PROMQL_WORDS}


def dashboard_queries() -> list[str]:
    dashboard: dict[str, Any] = json.loads(DASHBOARD.read_text("utf-8"))
    return [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]


def documented_queries() -> list[str]:
    blocks = re.findall(r"```promql\n(.*?)```", OPERATIONS.read_text("utf-8"), re.S)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_metric_names_units_and_labels_follow_prometheus_conventions() -> None:
    found = ours()
    assert len(found) >= 30
    for family in found:
        assert re.fullmatch(r"redsearch_[a-z0-9_]+", family.name), family.name
        assert family.documentation.strip(), f"{family.name} has no help text"
        assert not family.name.endswith("_total") or family.type == "counter"
        if family.type == "histogram" and family.name not in UNITLESS_HISTOGRAMS:
            assert family.name.endswith("_seconds"), f"{family.name}: a histogram of what unit?"
    for module in MODULES:
        for value in vars(module).values():
            labels = set(getattr(value, "_labelnames", ()))
            assert not labels & UNBOUNDED, f"{getattr(value, '_name', value)}: {labels}"


def test_every_query_of_the_dashboard_names_metrics_the_code_exports() -> None:
    known = exported()
    queries = dashboard_queries()
    assert len(queries) >= 20
    for expr in queries:
        names = metric_names(expr)
        assert names, f"no metric in {expr!r}"
        assert names <= known, f"{sorted(names - known)} in {expr!r} are not exported"


def test_every_query_of_the_operations_page_names_metrics_the_code_exports() -> None:
    known = exported()
    queries = documented_queries()
    assert len(queries) >= 10
    for expr in queries:
        assert metric_names(expr) <= known, f"{expr!r} names a metric not exported"
        assert metric_names(expr), expr


def test_the_dashboard_covers_every_metric_of_ours() -> None:
    read = set().union(*(metric_names(q) for q in dashboard_queries()))
    for family in ours():
        assert any(name.startswith(family.name) for name in read), \
            f"{family.name} is on no panel"


def test_a_misspelt_metric_is_found() -> None:
    assert metric_names('sum by (tier) (rate(redsearch_model_cost_usd_totl{tier="x"}[5m]))') \
        == {"redsearch_model_cost_usd_totl"}
    assert "redsearch_model_cost_usd_totl" not in exported()
