"""The deployment examples say what they claim: their command lines parse with the real
CLI, their policies pass the policy check, and the Kubernetes RBAC grants exactly the stop
action (get and patch batch Jobs) in the tenant namespaces, nothing cluster-wide."""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path

import pytest

from evalstop.cli.main import build_parser
from evalstop.integrations.watch.policy import load_policy, parse_policy

DEPLOY = Path(__file__).resolve().parent.parent / "examples" / "deploy"


def parse_watch(argv):
    args = build_parser("watch").parse_args(argv)
    assert args.command == "watch" and args.policy and args.db and args.serve
    return args


def test_example_policy_passes_the_check():
    pol = load_policy(str(DEPLOY / "policy.toml"))
    assert [r.tenant for r in pol.rules] == ["team-math", "team-dpo", "team-new"]
    assert pol.rule_for("team-dpo/run.jsonl").mode == "min"
    assert pol.rule_for("shared/team-new-x.jsonl").dry_run


def _command(text: str, start: str) -> list[str]:
    body = text[text.index(start):]
    cmd = []
    for line in body.splitlines():
        cmd.append(line.rstrip("\\").strip())
        if not line.rstrip().endswith("\\"):
            break
    return shlex.split(" ".join(cmd))


def test_systemd_and_slurm_command_lines_parse():
    unit = (DEPLOY / "systemd" / "evalstop-watch.service").read_text()
    (nofile,) = re.findall(r"^LimitNOFILE=(\d+)$", unit, re.MULTILINE)
    assert int(nofile) >= 4096  # systemd's default 1024 ran out under idle connections
    argv = _command(unit, "ExecStart=")
    assert argv[0] == "ExecStart=/usr/local/bin/evalstop" and argv[1] == "watch"
    parse_watch(argv[1:])
    sbatch = (DEPLOY / "slurm" / "evalstop-watch.sbatch").read_text()
    argv = _command(sbatch, "exec evalstop")
    args = parse_watch([a.replace('"$STATE"', "/s").replace("$STATE", "/s") for a in argv[2:]])
    assert args.interval == 30


def test_kubernetes_rbac_is_exactly_the_stop_action():
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "evalstop-watch.yaml").read_text()))
    kinds = [d["kind"] for d in docs]
    assert "ClusterRoleBinding" not in kinds  # the role is granted per namespace only
    (role,) = [d for d in docs if d["kind"] == "ClusterRole"]
    assert role["rules"] == [{"apiGroups": ["batch"], "resources": ["jobs"],
                              "verbs": ["get", "list", "patch"]}]
    bindings = [d for d in docs if d["kind"] == "RoleBinding"]
    assert {b["metadata"]["namespace"] for b in bindings} == {"team-a", "team-b"}
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    assert dep["spec"]["replicas"] == 1
    (box,) = dep["spec"]["template"]["spec"]["containers"]
    parse_watch(box["args"])
    assert box["livenessProbe"]["httpGet"]["path"] == "/healthz"
    (cm,) = [d for d in docs if d["kind"] == "ConfigMap"]
    pol = parse_policy(tomllib.loads(cm["data"]["policy.toml"]), "configmap")
    # every tenant of the policy has a RoleBinding in its namespace (tenant = namespace)
    assert {r.tenant for r in pol.rules} == {b["metadata"]["namespace"] for b in bindings}
    assert all(re.search(r"^evalstop action kubernetes --tenant \{tenant\} --job-id \{job_id\}",
                         r.action) for r in pol.rules)


def test_kubernetes_page_server_is_guarded():
    yaml = pytest.importorskip("yaml")
    docs = list(yaml.safe_load_all((DEPLOY / "kubernetes" / "evalstop-watch.yaml").read_text()))
    (dep,) = [d for d in docs if d["kind"] == "Deployment"]
    pod = dep["spec"]["template"]["spec"]
    (box,) = pod["containers"]
    args = parse_watch(box["args"])
    # Off loopback, so a token (from a Secret volume) guards all but /healthz.
    assert args.serve.startswith("0.0.0.0:") and args.serve_token_file
    mounts = {m["mountPath"]: m["name"] for m in box["volumeMounts"]}
    token_vol = mounts[str(Path(args.serve_token_file).parent)]
    (vol,) = [v for v in pod["volumes"] if v["name"] == token_vol]
    assert "secret" in vol
    limits = box["resources"]["limits"]
    assert {"cpu", "memory"} <= set(limits)
    assert 'ulimit -n "$(ulimit -Hn)"' in " ".join(box["command"])
    (net,) = [d for d in docs if d["kind"] == "NetworkPolicy"]
    assert net["spec"]["podSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"]
    assert "Ingress" in net["spec"]["policyTypes"]
    (rule,) = net["spec"]["ingress"]
    assert rule["ports"] == [{"protocol": "TCP", "port": 9100}] and rule["from"]
