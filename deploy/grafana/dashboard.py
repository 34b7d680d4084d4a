#!/usr/bin/env python3
"""Generates deploy/grafana/kinference.json, the Grafana dashboard for Kinference.

    python3 deploy/grafana/dashboard.py > deploy/grafana/kinference.json
    cp deploy/grafana/kinference.json deploy/helm/kinference/dashboards/

The JSON is what Grafana imports (and what the Helm chart ships, with
grafanaDashboard.enabled, as a ConfigMap labelled grafana_dashboard); this file is its
source: edit here, regenerate, and commit all three (tests/deploy/dashboard_test.py fails
when they differ). Every query is evaluated
against a real Prometheus scraping a gateway and two engine-sims under load by that test.

Series come from the gateway's /metrics (src/gateway/stats.h lists them) and, for the
engine panels, from vLLM's own /metrics scraped by the same Prometheus (vllm:* names).
Variables: datasource (a Prometheus), model (the gateway's models; All by default).
Standard library only.
"""
import json
import sys

DS = {"type": "prometheus", "uid": "${datasource}"}
RATE = "$__rate_interval"
MODEL = 'model=~"$model"'


class Layout:
    """Places panels left to right in rows of 24 grid columns."""

    def __init__(self):
        self.panels = []
        self.x = 0
        self.y = 0
        self.row_h = 0
        self.next_id = 1

    def _id(self):
        i = self.next_id
        self.next_id += 1
        return i

    def row(self, title):
        if self.x:
            self.y += self.row_h
        self.panels.append({"type": "row", "title": title, "id": self._id(), "collapsed": False,
                            "panels": [], "gridPos": {"h": 1, "w": 24, "x": 0, "y": self.y}})
        self.y += 1
        self.x = 0
        self.row_h = 0

    def panel(self, title, description, targets, unit="short", w=8, h=8, kind="timeseries",
              extra=None):
        if self.x + w > 24:
            self.y += self.row_h
            self.x = 0
            self.row_h = 0
        p = {
            "type": kind,
            "title": title,
            "description": description,
            "id": self._id(),
            "datasource": DS,
            "gridPos": {"h": h, "w": w, "x": self.x, "y": self.y},
            "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
            "options": {"legend": {"displayMode": "list", "placement": "bottom",
                                   "showLegend": True},
                        "tooltip": {"mode": "multi", "sort": "desc"}},
            "targets": [{"datasource": DS, "expr": expr, "legendFormat": legend,
                         "refId": chr(ord("A") + i)}
                        for i, (expr, legend) in enumerate(targets)],
        }
        if extra:
            p.update(extra)
        self.panels.append(p)
        self.x += w
        self.row_h = max(self.row_h, h)


def quantiles(metric, by, selector="", qs=(0.5, 0.9, 0.99)):
    sel = "{" + selector + "}" if selector else ""
    label = " ".join("{{" + b + "}}" for b in by.split(", "))
    return [(f"histogram_quantile({q}, sum by (le, {by}) (rate({metric}_bucket{sel}[{RATE}])))",
             f"p{int(q * 100)} {label}") for q in qs]


def build():
    d = Layout()
    d.row("Traffic")
    d.panel("Requests by outcome",
            "Routed requests per second by outcome (success, error, cancelled, retried: a failed "
            "first attempt, rejected: by an InferencePolicy).",
            [(f"sum by (outcome) (rate(kinference_requests_total[{RATE}]))", "{{outcome}}")],
            unit="reqps")
    d.panel("Error ratio",
            "Share of routed requests that ended in error (upstream failure, timeout), and of "
            "those an InferencePolicy rejected.",
            [(f'(sum(rate(kinference_requests_total{{outcome="error"}}[{RATE}])) or vector(0)) / '
              f"sum(rate(kinference_requests_total[{RATE}]))", "error"),
             (f'(sum(rate(kinference_requests_total{{outcome="rejected"}}[{RATE}])) or vector(0))'
              f" / sum(rate(kinference_requests_total[{RATE}]))", "rejected by policy")],
            unit="percentunit")
    d.panel("Requests by endpoint and strategy",
            "Where the router sent requests, per routing strategy.",
            [(f"sum by (endpoint, strategy) (rate(kinference_requests_total[{RATE}]))",
              "{{endpoint}} {{strategy}}")], unit="reqps")

    d.row("Latency (gateway view, model seconds)")
    d.panel("Time to first token by model",
            "TTFT percentiles as the gateway saw them (request dispatched to first token), "
            "from vLLM's TTFT buckets.",
            quantiles("kinference_time_to_first_token_seconds", "model", MODEL), unit="s")
    d.panel("Inter-token latency by model", "Gap between streamed tokens.",
            quantiles("kinference_inter_token_latency_seconds", "model", MODEL), unit="s")
    d.panel("End-to-end latency by model", "Request dispatched to last token.",
            quantiles("kinference_e2e_request_latency_seconds", "model", MODEL), unit="s")

    d.row("TTFT prediction")
    d.panel("Prediction error |predicted - observed|",
            "How far the router's predicted TTFT was from the TTFT then observed, per strategy.",
            quantiles("kinference_ttft_prediction_abs_error_seconds", "strategy", "",
                      (0.5, 0.9)), unit="s", w=12)
    d.panel("Prediction bias (predicted - observed), median",
            "Positive: the router predicts slower than it gets; negative: faster.",
            quantiles("kinference_ttft_prediction_error_seconds", "strategy", "", (0.5,)),
            unit="s", w=12)

    d.row("Prefix cache and tokens")
    d.panel("Cached-token ratio by model",
            "Prompt tokens served from vLLM's prefix cache / all prompt tokens (upstream usage).",
            [(f"sum by (model) (rate(kinference_cached_tokens_total{{{MODEL}}}[{RATE}])) / "
              f"sum by (model) (rate(kinference_prompt_tokens_total{{{MODEL}}}[{RATE}]))",
              "{{model}}")], unit="percentunit")
    d.panel("Prompt tokens by tenant",
            "Prompt tokens per second, split into cached and uncached, per tenant.",
            [(f"sum by (tenant) (rate(kinference_cached_tokens_total[{RATE}]))",
              "{{tenant}} cached"),
             (f"sum by (tenant) (rate(kinference_uncached_tokens_total[{RATE}]))",
              "{{tenant}} uncached")], unit="short")
    d.panel("Completion tokens by tenant", "Generated tokens per second per tenant.",
            [(f"sum by (tenant) (rate(kinference_completion_tokens_total[{RATE}]))",
              "{{tenant}}")], unit="short")
    d.panel("Cost by tenant",
            "What each tenant's requests cost, USD per hour, at the gateway's accounting.prices "
            "(docs/accounting.md; cached tokens at the cached price).",
            [(f"sum by (tenant) (rate(kinference_cost_usd_total[{RATE}])) * 3600",
              "{{tenant}}")], unit="currencyUSD")

    d.row("Endpoints")
    d.panel("Endpoint health",
            "1: the gateway routes to the endpoint; 0: its metrics scrape or health check is "
            "failing (or, for a provider, its circuit breaker is open).",
            [("kinference_endpoint_healthy", "{{endpoint}}")], unit="bool", w=8,
            kind="state-timeline",
            extra={"options": {"showValue": "never", "mergeValues": True,
                               "legend": {"displayMode": "list", "placement": "bottom",
                                          "showLegend": True}}})
    d.panel("vLLM requests running and waiting",
            "Per engine, from vLLM's /metrics (Prometheus scrapes the engines itself).",
            [("sum by (instance) (vllm:num_requests_running)", "{{instance}} running"),
             ("sum by (instance) (vllm:num_requests_waiting)", "{{instance}} waiting")], w=8)
    d.panel("vLLM KV-cache usage", "Per engine: share of KV-cache blocks in use.",
            [("max by (instance) (vllm:kv_cache_usage_perc)", "{{instance}}")],
            unit="percentunit", w=8)

    d.row("Refusals, admission and accounting")
    d.panel("Requests refused before routing",
            "Per second, by outcome: overloaded (admission control's queue full or timed out, "
            "or every endpoint cooling down after an upstream Retry-After) and rate_limited "
            "(a tenant's limits or budgets): the gateway's own 429/503/529 answers.",
            [(f'sum by (outcome) (rate(kinference_requests_total{{outcome=~"overloaded|rate_limited"}}[{RATE}]))'
              " or vector(0)", "{{outcome}}")], unit="reqps")
    d.panel("Admission queue",
            "Requests waiting for room per pool (pools with max_in_flight), and refusals per "
            "second by reason (queue_full, timeout, evicted).",
            [("sum by (pool) (kinference_admission_waiting) or vector(0)", "{{pool}} waiting"),
             (f"sum by (pool, reason) (rate(kinference_admission_refused_total[{RATE}])) or vector(0)",
              "{{pool}} refused {{reason}}")])
    d.panel("Usage ledger",
            "Records per second by state (written, spooled, replayed), records not yet in the "
            "store, and records lost in the last hour (docs/accounting.md).",
            [(f"sum by (state) (rate(kinference_ledger_records_total[{RATE}])) or vector(0)",
              "{{state}}"),
             ("sum(kinference_ledger_backlog_records) or vector(0)", "backlog"),
             ("sum(increase(kinference_ledger_lost_records_total[1h])) or vector(0)",
              "lost (1 h)")])
    d.panel("Shared limits and KV-event feeds",
            "Gateways whose Redis for shared tenant limits is down, and endpoints whose "
            "KV-event feed is not live (approximate prefix index in use); 0 when all are up "
            "or none is configured.",
            [("count(kinference_limits_redis_up == 0) or vector(0)", "Redis down"),
             ("count(kinference_kv_events_live == 0) or vector(0)", "KV-event feeds down")],
            kind="stat", w=24)

    d.row("Policies")
    d.panel("Policy decisions",
            "Per InferencePolicy and outcome (matched, removed candidates, rejected, "
            "dry-run would-reject), per second.",
            [(f"sum by (policy, outcome) (rate(kinference_policy_decisions_total[{RATE}]))",
              "{{policy}} {{outcome}}")], unit="ops", w=16)
    d.panel("Policy set", "Generation of the loaded policy set and reloads rejected (last hour).",
            [("max(kinference_policy_generation)", "generation"),
             ("sum(increase(kinference_policy_reload_failures_total[1h])) or vector(0)",
              "reload failures")], kind="stat", w=8)

    return {
        "uid": "kinference",
        "title": "Kinference",
        "description": "Kinference gateway: traffic, latency, TTFT prediction, prefix cache, "
                       "tokens, endpoints, policies.",
        "tags": ["kinference", "vllm", "inference"],
        "timezone": "browser",
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "graphTooltip": 1,
        "refresh": "30s",
        "time": {"from": "now-1h", "to": "now"},
        "annotations": {"list": []},
        "links": [],
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource",
             "query": "prometheus", "current": {}, "hide": 0},
            {"name": "model", "label": "Model", "type": "query", "datasource": DS,
             "query": {"query": "label_values(kinference_time_to_first_token_seconds_count, "
                                "model)", "refId": "model"},
             "definition": "label_values(kinference_time_to_first_token_seconds_count, model)",
             "refresh": 2, "includeAll": True, "allValue": ".*", "multi": True,
             "current": {"text": "All", "value": "$__all"}, "hide": 0, "sort": 1},
        ]},
        "panels": d.panels,
    }


if __name__ == "__main__":
    json.dump(build(), sys.stdout, indent=2)
    sys.stdout.write("\n")
