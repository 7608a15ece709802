"""One identity per tenant (issue 43): a tenant name is in Unicode NFC and compared
exactly; two tenants whose names differ only in case or Unicode form cannot coexist, in a
policy (refused at load) or as folders (the first spelling seen owns the name, across
restarts; a later twin is refused and never read)."""

from __future__ import annotations

import io
import json
import os

import pytest

from evalstop.evallog import EvalRecord
from evalstop.identity import Claims, first_twins, fold, nfc_problem, same_owner
from evalstop.integrations.watch import Controller, JsonlDirSource, StateStore
from evalstop.integrations.watch.actions import ShellAction
from evalstop.integrations.watch.policy import PolicyError, parse_policy
from evalstop.integrations.watch.sources import Batch, Item
from evalstop.integrations.watch.tenants import JobKey

DOWN = [0.1, 0.3, 0.5, 0.4, 0.2]  # evalstop:k=2 stops it at step 5


def write(path, job, values):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a", encoding="utf-8") as fh:
        for step, v in enumerate(values, 1):
            fh.write(json.dumps({"job": job, "step": step, "eval": v}) + "\n")


def controller(tmp_path, sources=None):
    marker = tmp_path / "acted.txt"
    err = io.StringIO()
    store = StateStore(str(tmp_path / "state.db"))
    ctl = Controller(store, sources or [JsonlDirSource(str(tmp_path / "logs"))],
                     detector="evalstop:k=2", action=ShellAction(f"echo {{tenant}} >> {marker}"),
                     out=io.StringIO(), err=err)
    return ctl, marker, err


def acted(marker):
    return marker.read_text().split() if marker.exists() else []


def test_the_compare_key_folds_case_and_unicode_form_and_owners_compare_exactly():
    assert fold("Alice") == fold("alice") == fold("ALICE")
    assert fold("\ufb01le") == fold("file")  # the ligature fi: a compatibility form
    assert fold("Stra\u00dfe") == fold("strasse")
    assert fold("alice") != fold("alicf")
    assert nfc_problem("caf\u00e9") is None
    assert "NFC" in nfc_problem("cafe\u0301")  # the same word, decomposed
    assert same_owner("alice", "alice") and not same_owner("Alice", "alice")
    assert not same_owner("caf\u00e9", "cafe\u0301")
    assert first_twins(["a", "b", "B"]) == ("B", "b") and first_twins(["a", "b"]) is None


def test_claims_keep_the_first_spelling_and_say_what_is_new():
    claims = Claims({fold("bob"): "bob"})
    assert claims.claim("bob") is None and claims.fresh() == {}  # remembered, not new
    assert claims.claim("alice") is None and claims.fresh() == {"alice": "alice"}
    assert "differs from tenant 'alice' only in case" in claims.claim("ALICE")
    assert "differs from tenant 'bob'" in claims.claim("Bob")
    claims.saved()
    assert claims.fresh() == {} and claims.claim("alice") is None


def test_a_policy_with_case_twins_is_refused_at_load():
    with pytest.raises(PolicyError) as e:
        parse_policy({"tenants": {"alice": {}, "bob": {}, "Alice": {}}}, "p.toml")
    msg = str(e.value)
    assert msg.startswith("p.toml: tenants.Alice: ") and "'alice'" in msg
    assert "\n" not in msg


def test_a_folder_twin_of_a_tenant_already_seen_is_refused_and_never_read(tmp_path):
    logs = tmp_path / "logs"
    write(logs / "b" / "train.jsonl", "train", DOWN[:3])
    ctl, marker, err = controller(tmp_path)
    ctl.run_until_idle()  # tenant b is seen first
    write(logs / "B" / "train.jsonl", "train", DOWN)  # folder B: b's name, another case
    write(logs / "b" / "train.jsonl", "train", [])
    ctl.run_until_idle()
    ctl.close()
    assert acted(marker) == []  # B's declining job reached no action
    lines = [x for x in err.getvalue().splitlines() if "only in case" in x]
    assert len(lines) == 1 and "B/train.jsonl" in lines[0] and "'b'" in lines[0]
    assert ctl.refused["tenant"] == 1
    ro = StateStore(str(tmp_path / "state.db"), readonly=True)
    assert {j.tenant for j in ro.jobs().values()} == {"b"}  # nothing of B in shared state
    assert ro.tenant_names() == {"b": "b"}


def test_the_first_spelling_owns_the_name_across_restarts(tmp_path):
    logs = tmp_path / "logs"
    write(logs / "b" / "run.jsonl", "run", DOWN[:2])
    ctl, marker, err = controller(tmp_path)
    ctl.run_until_idle()
    ctl.close()
    # Restart with the twin present: "B" is listed before "b" now, yet b keeps the name.
    write(logs / "B" / "run.jsonl", "run", DOWN)
    with open(logs / "b" / "run.jsonl", "a") as fh:
        for step, v in ((3, 0.5), (4, 0.4), (5, 0.2)):
            fh.write(json.dumps({"job": "run", "step": step, "eval": v}) + "\n")  # b declines
    ctl, marker, err = controller(tmp_path)
    ctl.run_until_idle()
    ctl.close()
    assert acted(marker) == ["b"]  # only b's own job was acted on, as tenant b
    assert "tenant 'B' differs from tenant 'b'" in err.getvalue()


def test_a_tenant_name_not_in_nfc_is_refused(tmp_path):
    write(tmp_path / "logs" / "cafe\u0301" / "x.jsonl", "x", DOWN)
    ctl, marker, err = controller(tmp_path)
    ctl.run_until_idle()
    ctl.close()
    assert acted(marker) == [] and ctl.refused["tenant"] == 1
    assert "not in Unicode NFC" in err.getvalue()


class _Source:
    """A source that names tenants without the shared claims (as a tracking-server
    source may): the controller still refuses a twin when a job first appears."""

    def __init__(self, tenants):
        self.tenants = tenants

    def load(self, offsets):
        pass

    def poll(self):
        b = Batch("fake")
        for t in self.tenants:
            for step, v in enumerate(DOWN, 1):
                b.records.append(Item(EvalRecord(f"{t}-job", step, v), f"{t}:{step}",
                                      JobKey(f"fake/{t}", f"{t}-job"), t))
        self.tenants = []
        return b


def test_every_source_passes_the_twin_check_when_a_job_first_appears(tmp_path):
    ctl, marker, err = controller(tmp_path, [_Source(["alice", "ALICE"])])
    ctl.run_until_idle()
    ctl.close()
    assert acted(marker) == ["alice"]
    assert ctl.refused["tenant"] == len(DOWN)
    assert {j.tenant for j in ctl.jobs.values()} == {"alice"}


def test_the_cli_refuses_a_twin_policy_in_one_line(tmp_path, capsys):
    from evalstop.cli.main import main

    pol = tmp_path / "p.toml"
    pol.write_text("[tenants.alice]\n[tenants.ALICE]\n")
    assert main(["watch", "--policy", str(pol), "--check-policy"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tenants.ALICE" in err and "Traceback" not in err
