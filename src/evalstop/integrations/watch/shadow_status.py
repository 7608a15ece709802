"""The shadow score where a team looks: ``--status`` (and ``--json``), the status page
and Prometheus, per tenant and rule (``shadow_store.summary``)."""

from __future__ import annotations

from html import escape
from typing import Any

from evalstop.integrations.watch import shadow_store
from evalstop.integrations.watch.records import show
from evalstop.integrations.watch.store import StateStore


def shadow_rows(store: StateStore) -> list[dict[str, Any]]:
    """Per (tenant, rule): the score so far (``shadow_store.summary``)."""
    return shadow_store.summary(store)


def hours_text(r: dict[str, Any]) -> str:
    text = f"{r['gpu_hours_freed']:.3g}"
    if r["gpu_hours_unknown"]:
        text += f" (+{r['gpu_hours_unknown']} stops of unknown GPUs)"
    return text


def cost_text(r: dict[str, Any]) -> str:
    return "-" if r["median_cost"] is None else f"{100 * r['median_cost']:+.1f}%"


def format_shadow(rows: list[dict[str, Any]]) -> str:
    """The score as text, one line per tenant and rule."""
    if not rows:
        return ""
    lines = ["shadow score by tenant and rule (runs followed to their end; cost: median "
             "tenant cost of the stops, share of the run's gain):"]
    for r in rows:
        live = " [its own rule, dry run]" if r["live"] else ""
        more = []
        if r["pending"]:
            more.append(f"{r['pending']} stops awaiting their job's end")
        if r["censored"]:
            more.append(f"{r['censored']} runs cut short by a live stop, not scored")
        lines.append(
            f"  {show(r['tenant'], 80)} {show(r['rule'], 80)}{live}: {r['stops']} stops of "
            f"{r['runs']} runs: {r['right']} right, {r['harmful']} harmful, "
            f"{r['neutral']} neutral; freed {r['evals_freed']} evals, "
            f"{r['wall_s_freed'] / 3600:.3g} h, {hours_text(r)} GPU-hours; cost {cost_text(r)}"
            + (f" ({'; '.join(more)})" if more else ""))
    return "\n".join(lines) + "\n"


_HEAD = ("tenant", "rule", "shadow stops", "right", "harmful", "neutral", "evals freed",
         "GPU-hours freed", "median cost", "awaiting end")


def shadow_html(rows: list[dict[str, Any]],
                tenant_rules: dict[str, tuple[str, bool]] | None = None) -> str:
    """The score as an HTML table (every tenant-derived string escaped). With
    ``tenant_rules`` (tenant -> (its rule as the policy names it, dry run?)), each
    tenant's own rule comes first with its shadow record next to it, marked live or dry
    run, also when it has no record yet."""
    tenant_rules = tenant_rules or {}
    rows = list(rows)
    have = {(r["tenant"], r["rule"]) for r in rows}
    for tenant, (rule, _dry) in tenant_rules.items():
        if tenant != "*" and (tenant, rule) not in have:
            rows.append({"tenant": tenant, "rule": rule, "live": False, "none": True})
    if not rows:
        return ""

    def own(r):
        mine = tenant_rules.get(r["tenant"]) or tenant_rules.get("*")
        return mine if mine is not None and mine[0] == r["rule"] else None

    out = ['<h2>Shadow score</h2><p class="muted">Stops each rule would have made, '
           "followed to the job's end. Right: the run fell and stayed down; harmful: the "
           "stop would have cost more than 5% of the run's gain; cost: median share of the "
           'gain lost (negative: gained).</p><table class="shadow"><tr>'
           + "".join(f"<th>{h}</th>" for h in _HEAD) + "</tr>"]
    for r in sorted(rows, key=lambda r: (r["tenant"], own(r) is None and not r["live"],
                                         r["rule"])):
        rule = escape(show(r["rule"], 200))
        mine = own(r)
        if mine is not None or r["live"]:
            how = "live" if mine is not None and not mine[1] else "dry run"
            rule += f' <span class="own-rule">its rule ({how})</span>'
        if r.get("none"):
            cells = ["no shadow record yet"] + [""] * (len(_HEAD) - 3)
        else:
            cells = [r["stops"], r["right"], r["harmful"], r["neutral"], r["evals_freed"],
                     escape(hours_text(r)), cost_text(r), r["pending"]]
        out.append(f'<tr class="shadow-rule" data-own="{int(mine is not None)}">'
                   f"<td>{escape(show(r['tenant'], 80))}</td><td>{rule}</td>"
                   + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return "\n".join(out)


class ShadowMetrics:
    """Prometheus gauges of the score, per tenant and rule, set from the state database
    after each poll that decided a would-be stop or ended a job (so they survive a
    restart): ``evalstop_shadow_stops``, ``evalstop_shadow_verdicts{verdict}``,
    ``evalstop_shadow_evals_freed``, ``evalstop_shadow_gpu_hours_freed``,
    ``evalstop_shadow_tenant_cost_median`` and ``evalstop_shadow_pending``."""

    def __init__(self, metrics: Any, store: StateStore) -> None:
        prom, r = metrics._prom, metrics.registry
        labels = ["tenant", "rule"]
        self.store = store
        self.stops = prom.Gauge("evalstop_shadow_stops", "shadow stops of runs followed to "
                                "their end", labels, registry=r)
        self.verdicts = prom.Gauge("evalstop_shadow_verdicts", "shadow stops by verdict",
                                   [*labels, "verdict"], registry=r)
        self.evals = prom.Gauge("evalstop_shadow_evals_freed", "evals after shadow stops",
                                labels, registry=r)
        self.hours = prom.Gauge("evalstop_shadow_gpu_hours_freed", "GPU-hours after shadow "
                                "stops (jobs of known GPU count)", labels, registry=r)
        self.cost = prom.Gauge("evalstop_shadow_tenant_cost_median", "median tenant cost "
                               "of shadow stops (share of the run's gain)", labels,
                               registry=r)
        self.pending = prom.Gauge("evalstop_shadow_pending", "shadow stops whose job has "
                                  "not ended", labels, registry=r)

    def refresh(self) -> None:
        from evalstop.integrations.watch.shadow_score import VERDICTS

        for row in shadow_rows(self.store):
            key = {"tenant": row["tenant"], "rule": row["rule"]}
            self.stops.labels(**key).set(row["stops"])
            for v in VERDICTS:
                self.verdicts.labels(**key, verdict=v).set(row[v])
            self.evals.labels(**key).set(row["evals_freed"])
            self.hours.labels(**key).set(row["gpu_hours_freed"])
            self.pending.labels(**key).set(row["pending"])
            if row["median_cost"] is not None:
                self.cost.labels(**key).set(row["median_cost"])
