"""Policy files for ``evalstop watch``: good files give the effective rule per tenant; each
bad file is one ``PolicyError`` line naming the file, the key and the problem."""

from __future__ import annotations

import pytest

from evalstop.integrations.watch.policy import PolicyError, load_policy, single_rule

GOOD = """
[defaults]
detector = "evalstop:k=3"
action = "echo stop {job}"
dry_run = false

[tenants.alice]
mode = "min"
metric = "eval_loss"

[tenants.bob]
sources = ["teams/bob/**"]
dry_run = true
allow = ["bob-*"]
"""


def write(tmp_path, text, name="policy.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_good_policy_gives_each_tenant_its_rule(tmp_path):
    pol = load_policy(write(tmp_path, GOOD))
    alice = pol.rule_for("alice/run1.jsonl")
    bob = pol.rule_for("teams/bob/x/y.jsonl")
    assert (alice.tenant, alice.mode, alice.metric, alice.dry_run) == ("alice", "min",
                                                                       "eval_loss", False)
    assert (bob.tenant, bob.mode, bob.dry_run) == ("bob", "max", True)
    assert alice.detector == bob.detector == "evalstop:k=3"  # from [defaults]
    assert bob.allows("bob-7") and not bob.allows("alice-1")
    assert pol.rule_for("carol/run.jsonl") is None  # nobody owns it: refused, not defaulted
    assert pol.rule_for("bob/run.jsonl") is None  # bob's sources were overridden
    text = pol.describe()
    assert "[tenants.alice]" in text and "[tenants.bob]" in text and "evalstop:k=3" in text


def test_first_matching_tenant_wins(tmp_path):
    pol = load_policy(write(tmp_path, '[tenants.a]\nsources=["x/**"]\n'
                                      '[tenants.b]\nsources=["x/**", "y/**"]\n'))
    assert pol.rule_for("x/1.jsonl").tenant == "a"
    assert pol.rule_for("y/1.jsonl").tenant == "b"


def test_stated_noise_folds_into_the_spec():
    pol = single_rule(detector="evalstop:k=2")
    assert pol.rules[0].detector_spec() == "evalstop:k=2"
    assert pol.rule_for("anything/at/all.jsonl") is not None


@pytest.mark.parametrize("text, words", [
    ("[tenants.a]\nmode = 'up'\n", ["tenants.a.mode", "max"]),
    ("[tenants.a]\ncolour = 1\n", ["tenants.a.colour", "unknown key"]),
    ("[tenants.a]\ndetector = 'nope'\n", ["tenants.a.detector", "unknown detector"]),
    ("[tenants.a]\ndetector = 'evalstop:k=zero'\n", ["tenants.a.detector"]),
    ("[tenants.a]\neval_n = -3\n", ["tenants.a.eval_n"]),
    ("[tenants.a]\nsigma = nan\n", ["tenants.a.sigma"]),
    ("[tenants.a]\nsigma = 0.1\neval_n = 10\n", ["eval_n or sigma"]),
    ("[tenants.a]\ndry_run = 'yes'\n", ["tenants.a.dry_run"]),
    ("[tenants.a]\nallow = []\n", ["tenants.a.allow"]),
    ("[tenants.a]\nsources = ['../etc/**']\n", ["tenants.a.sources"]),
    ("[tenants.a]\nsources = ['/abs/**']\n", ["tenants.a.sources"]),
    ("[tenants.a]\ncheckpoint_root = 'rel/path'\n", ["checkpoint_root", "absolute"]),
    ("[tenants.a]\naction = 'echo {nope}'\n", ["tenants.a.action", "placeholder"]),
    ("[tenants.'-x']\n", ["tenants.-x", "tenant names"]),
    ("[tenants.a]\nmetric = \"e\\u0000val\"\n", ["tenants.a.metric", "control"]),
    ("[defaults]\nmode = 3\n[tenants.a]\n", ["defaults.mode"]),
    ("[defaults]\n", ["tenants", "at least one"]),
    ("[tenant.a]\n", ["tenant", "unknown table"]),
    ("[tenants.a\n", ["not valid TOML"]),
    ("[tenants.ab]\n[tenants.AB]\n", ["tenants.AB", "only in case"]),
    ("[tenants.a]\neval_group='g'\n[eval_groups.h]\nshared=true\n",
     ["eval_groups.h", "no tenant's eval_group"]),
    ("[tenants.a]\neval_group='g'\n[eval_groups.g]\nshared='yes'\n",
     ["eval_groups.g.shared", "true or false"]),
    ("[tenants.a]\neval_group='g'\n[eval_groups.g]\nmax_factor=2\n",
     ["eval_groups.g.max_factor", "only a shared group"]),
    ("[tenants.a]\neval_group='g'\n[eval_groups.g]\nshared=true\nmax_factor=0.5\n",
     ["eval_groups.g.max_factor", "1..10"]),
    ("[tenants.a]\neval_group='g'\n[eval_groups.g]\nshared=true\nmax_factor=inf\n",
     ["eval_groups.g.max_factor"]),
    ("[tenants.a]\neval_group='g'\n[eval_groups.g]\nshared=true\nmembers=['a']\n",
     ["eval_groups.g.members", "unknown key"]),
    ("[tenants.a]\neval_group='g'\neval_groups=1\n", ["tenants.a.eval_groups"]),
    ("eval_groups=1\n[tenants.a]\n", ["eval_groups", "must be a table"]),
])
def test_bad_policy_is_one_line_naming_file_and_key(tmp_path, text, words):
    path = write(tmp_path, text)
    with pytest.raises(PolicyError) as info:
        load_policy(path)
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith(path)
    for w in words:
        assert w in msg, msg


def test_eval_groups_are_private_unless_declared_shared(tmp_path):
    pol = load_policy(write(tmp_path, '[defaults]\neval_group = "math"\n[tenants.a]\n'
                                      '[tenants.b]\neval_group = "code"\n'
                                      '[eval_groups.code]\nshared = true\nmax_factor = 2\n'))
    assert pol.group("math").max_factor == 1.0 and not pol.group("math").shared
    assert pol.group("code").shared and pol.group("code").max_factor == 2.0
    shared = load_policy(write(tmp_path, '[defaults]\neval_group = "m"\n[tenants.a]\n'
                                         '[eval_groups.m]\nshared = true\n', "p2.toml"))
    assert shared.group("m").max_factor == 1.5  # the default bound
    assert '[eval_groups."code"]' in pol.describe() and "max_factor = 2.0" in pol.describe()


def test_unreadable_and_binary_files(tmp_path):
    with pytest.raises(PolicyError, match="cannot read"):
        load_policy(str(tmp_path / "missing.toml"))
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe[tenants.a]\n")
    with pytest.raises(PolicyError, match="not UTF-8"):
        load_policy(str(p))


def test_checkpoint_root_is_checked_as_the_controller_uses_it(tmp_path):
    """A template that starts with a placeholder needs checkpoint_root; given it, the
    policy check accepts what the controller will build."""
    text = ('[tenants.a]\naction = "echo {best_checkpoint}"\n'
            'checkpoint_template = "{job}/checkpoint-{best_step}"\n')
    with pytest.raises(PolicyError, match="tenants.a.action"):
        load_policy(write(tmp_path, text))
    pol = load_policy(write(tmp_path, text + 'checkpoint_root = "/ckpt"\n', "ok.toml"))
    assert pol.rules[0].shell_action().checkpoint_root is not None
