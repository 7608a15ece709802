"""The startup line of ``evalstop watch``: sources, the rule per tenant, the page."""

from __future__ import annotations

from evalstop.integrations.watch.jsonl import JsonlDirSource
from evalstop.integrations.watch.policy import parse_policy, single_rule
from evalstop.integrations.watch.startup import startup_line


def test_policy_rules_per_tenant_and_page(tmp_path):
    policy = parse_policy({
        "defaults": {"detector": "evalstop:k=2"},
        "tenants": {"alice": {"metric": "val-core/gsm8k/reward/mean@1",
                              "action": "scancel {job}"},
                    "bob": {"mode": "min", "metric": "eval_loss", "dry_run": True}},
    })
    src = JsonlDirSource(str(tmp_path))
    line = startup_line([src], policy, page="http://127.0.0.1:9100/", db="/var/w.db")
    assert line == (
        f"evalstop watch: following jsonl:{src.root}; rules: tenant alice: evalstop:k=2, "
        "mode max, metric 'val-core/gsm8k/reward/mean@1', action 'scancel {job}'; tenant "
        "bob: evalstop:k=2, mode min, metric 'eval_loss', no action, dry run; page "
        "http://127.0.0.1:9100/; state /var/w.db")


def test_flags_rule_shows_the_full_spec_and_no_page(tmp_path):
    line = startup_line([JsonlDirSource(str(tmp_path))], single_rule(detector="evalstop"),
                        dry_run=True, db="s.db")
    assert "rules: every tenant: evalstop:k=" in line
    assert "no page (give --serve HOST:PORT for one)" in line
    assert line.endswith("; dry run: no action is run") and "\n" not in line
