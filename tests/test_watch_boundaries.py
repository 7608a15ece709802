"""Tenant boundaries as the security model states them: a job prefix ends on a separator
no tenant name may hold, a best checkpoint stays in its tenant's own folder, and a
backslash cannot undo a placeholder's quoting."""

from __future__ import annotations

import pytest
from watch_hostile_util import Site, append, declining, line, tenancy

from evalstop.integrations.watch import ShellAction
from evalstop.integrations.watch.policy import PolicyError, PolicyTenancy, parse_policy
from evalstop.integrations.watch.tenants import Tenancy


def test_a_tenant_name_holding_the_separator_is_refused(tmp_path):
    # With '{tenant}-', tenant 'team' owns every name 'team-...', 'team-a-train' too: a
    # tenant 'team-a' beside it would share its names, so that tenant is refused.
    site = Site(tmp_path, tenancy=tenancy(prefix="{tenant}-"))
    append(site.path("team/run.jsonl"), declining("team-a-train"))
    append(site.path("team-a/run.jsonl"), declining("team-a-train"))
    site.ctl.run_until_idle()
    assert site.stopped() == {("team", "team-a-train"): 5}
    assert site.acts() == ["team team-a-train"]  # team-a's log was never taken
    assert site.ctl.refused == {"tenant": 1}
    (msg,) = site.err_lines()
    assert "tenant 'team-a' holds '-', the character after {tenant}" in msg
    site.ctl.close()


def test_a_separator_no_tenant_holds_keeps_prefixes_apart(tmp_path):
    site = Site(tmp_path, tenancy=tenancy(prefix="{tenant}."))
    append(site.path("team/run.jsonl"), declining("team-a.train"))
    append(site.path("team-a/run.jsonl"), line("team-a.train", 1, 0.1)
           + line("team-a.train", 2, 0.9))
    site.ctl.run_until_idle()
    assert site.stopped() == {} and site.acts() == []
    assert site.ctl.refused == {"prefix": 5}
    site.ctl.close()


@pytest.mark.parametrize("prefix, message", [
    ("{tenant}", "needs a separator right after {tenant}"),
    ("{tenant}x-", "needs a separator right after {tenant}"),
    ("x-", "must contain {tenant}"),
    ("{tenant", "bad --job-prefix"),
])
def test_bad_prefix_templates(prefix, message):
    with pytest.raises(ValueError, match=message):
        Tenancy(None, prefix)


def test_a_policy_tenant_holding_the_separator_is_refused_at_start():
    policy = parse_policy({"tenants": {"team": {}, "team-a": {}}}, "p.toml")
    with pytest.raises(PolicyError, match=r"p.toml: tenants.team-a: tenant 'team-a' holds '-'"):
        PolicyTenancy(policy, "{tenant}-")
    PolicyTenancy(policy, "{tenant}:")  # ':' is in no tenant name


def checkpoint_site(tmp_path, root):
    action = ShellAction(f"echo {{job}} {{best_checkpoint}} >> {tmp_path / 'acts.txt'}",
                         checkpoint_template="/ckpt/{tenant}/{job}/ck-{best_step}",
                         checkpoint_root=root)
    return Site(tmp_path, action=action)


@pytest.mark.parametrize("root", ["/ckpt", "/ckpt/{tenant}", None])
def test_a_checkpoint_cannot_point_into_another_tenants_folder(tmp_path, root):
    site = checkpoint_site(tmp_path, root)
    append(site.path("teamA/x.jsonl"), declining("../teamB/x"))
    append(site.path("teamA/y.jsonl"), declining("a/../b"))  # normalised, still its own
    site.ctl.run_until_idle()
    rows = {a.job: a for a in site.ctl.store.actions()}
    assert rows["../teamB/x"].status == "failed" and rows["../teamB/x"].command == ""
    assert "is not under the checkpoint root '/ckpt/teamA'" in rows["../teamB/x"].output
    assert site.acts() == ["a/../b /ckpt/teamA/b/ck-3"]
    site.ctl.close()


@pytest.mark.parametrize("template, root, tenant_root", [
    ("/ckpt/{tenant}/{job}/ck-{best_step}", "/ckpt", "/ckpt/{tenant}"),
    ("/ckpt/{tenant}/x/{job}", "/ckpt", "/ckpt/{tenant}"),
    ("s3://bucket/{tenant}-ckpt/{job}/{best_step}", None, "s3://bucket/{tenant}-ckpt"),
    ("/ckpt/{job}/{tenant}/ck", "/ckpt", None),
])
def test_the_tenants_own_checkpoint_folder(template, root, tenant_root):
    act = ShellAction("echo {best_checkpoint}", checkpoint_template=template,
                      checkpoint_root=root or "s3://bucket")
    assert act.tenant_root == tenant_root


@pytest.mark.parametrize("template", ["echo \\{job}", "scancel --name=\\{job}",
                                      "echo \\\\\\{tenant}", "echo a\\{reason}"])
def test_a_backslash_before_a_placeholder_is_refused(template):
    with pytest.raises(ValueError, match="a backslash before"):
        ShellAction(template)


def test_an_escaped_backslash_before_a_placeholder_is_fine(tmp_path):
    act = ShellAction("printf %s \\\\{job}")  # \\ is a literal backslash, then the value
    cmd = act.render(job="x; touch pwned", best_step=1, best_score=0.5, stop_step=2,
                     reason="r")
    res = act.run(f"cd {tmp_path} && {cmd}")
    assert res.rc == 0 and res.output == "\\x; touch pwned"
    assert not (tmp_path / "pwned").exists()
