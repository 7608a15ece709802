"""Hostile tenants, findings 1-3 of issue 10: each bad record is refused in one line,
counted, and skipped; another tenant's declining job is still stopped in the same poll;
restarts converge (a refused line is never read again); a tenant cannot reach another
tenant's job. Findings 4-6 are in test_watch_hostile_fs.py."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from watch_hostile_util import Site, append, declining, line, tenancy

from evalstop.cli.main import main
from evalstop.integrations.watch import ShellAction
from evalstop.integrations.watch.records import Refused, parse_line

# Finding 1: each of these used to roll back every poll, for every tenant, forever.
POISON = {
    "step 2**63": (b'{"job": "x", "step": 9223372036854775808, "eval": 0.1}', "step"),
    "step 1e308": (b'{"job": "x", "step": 1e308, "eval": 0.1}', "step"),
    "negative step": (b'{"job": "x", "step": -1, "eval": 0.1}', "step"),
    "huge int eval": (b'{"job": "x", "step": 1, "eval": 1' + b"0" * 400 + b"}", "value"),
    "huge int loss": (b'{"job": "x", "step": 1, "eval": 1, "loss": 1' + b"0" * 400 + b"}",
                      "value"),
    "4301 digits": (b'{"job": "x", "step": 1' + b"0" * 4301 + b', "eval": 0.1}', "value"),
    "inf eval": (b'{"job": "x", "step": 1, "eval": Infinity}', "value"),
    "lone surrogate": (b'{"job": "\\ud800", "step": 1, "eval": 0.1}', "name"),
    "NUL in name": (b'{"job": "a\\u0000b", "step": 1, "eval": 0.1}', "name"),
    "escape in name": (b'{"job": "\\u001b[2J", "step": 1, "eval": 0.1}', "name"),
    "leading dash": (b'{"job": "--all", "step": 1, "eval": 0.1}', "name"),
    "not utf-8": (b'{"job": "\xff", "step": 1, "eval": 0.1}', "utf8"),
}


@pytest.mark.parametrize("name", sorted(POISON))
def test_one_poisoned_line_is_refused_and_others_are_stopped(tmp_path, name):
    raw, reason = POISON[name]
    site = Site(tmp_path)
    append(site.path("evil/x.jsonl"), raw + b"\n" + line("fine", 1, 0.5))
    append(site.path("good/run.jsonl"), declining())
    res = site.ctl.run_until_idle()[0]
    assert site.stopped() == {("good", "train"): 5}  # the other tenant, same poll
    assert res.refused == {reason: 1} and site.ctl.refused == {reason: 1}
    (msg,) = site.err_lines()
    assert msg.startswith(f"evalstop watch: {site.path('evil/x.jsonl')}:1: ")
    assert msg.endswith("; refused") and msg.isprintable() and len(msg) < 400
    assert site.acts() == ["good train"]
    # Restarts converge: the refused line's offset was committed; nothing is re-read.
    site.restart()
    assert site.ctl.run_until_idle()[0].refused == {} and site.err.getvalue() == ""
    assert {j.job for j in site.ctl.store.jobs().values()} == {"fine", "train"}
    site.ctl.close()


def test_poison_in_live_mode_does_not_exit(tmp_path):
    logs = tmp_path / "logs"
    append(str(logs / "evil/x.jsonl"), POISON["step 2**63"][0] + b"\n")
    append(str(logs / "good/run.jsonl"), declining())
    db = tmp_path / "s.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalstop.cli.main", "watch", "--jsonl", str(logs), "--db",
         str(db), "--detector", "evalstop:k=2", "--interval", "0.05"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    guard = threading.Timer(120, proc.kill)  # never hang the suite on a silent controller
    guard.start()
    try:
        out = proc.stdout.readline()  # the stop of the good tenant's job
        assert out.startswith("stop train at step 5")
        assert proc.poll() is None  # still running
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=20)
        guard.cancel()
    assert proc.returncode == 0 and "Traceback" not in err
    assert err.count("refused") == 1


def test_non_utf8_file_name_is_refused_once(tmp_path):
    site = Site(tmp_path)
    bad = os.path.join(os.fsencode(site.root), b"evil", b"\xff\xfe.jsonl")
    os.makedirs(os.path.dirname(bad))
    with open(bad, "wb") as fh:
        fh.write(line("x", 1, 0.1))
    append(site.path("good/run.jsonl"), declining())
    res = site.ctl.run_until_idle()[0]
    assert site.stopped() == {("good", "train"): 5} and res.refused == {"file-name": 1}
    (msg,) = site.err_lines()
    assert "\\udcff\\udcfe.jsonl: file name" in msg and msg.isprintable()
    site.ctl.run_until_idle()
    assert len(site.err_lines()) == 1  # logged once
    site.ctl.close()


def test_over_long_line_is_refused_without_reading_it_whole(tmp_path):
    site = Site(tmp_path, max_bytes=4096, max_line=1024)
    append(site.path("evil/x.jsonl"), b'{"job": "' + b"a" * 50_000 + b'"}\n'
           + line("after", 1, 0.5))
    append(site.path("good/run.jsonl"), declining())
    site.ctl.run_until_idle()
    assert site.stopped() == {("good", "train"): 5}
    assert site.ctl.refused == {"too-long": 1}
    assert ("evil", "after") in {(j.tenant, j.job) for j in site.ctl.store.jobs().values()}
    site.ctl.close()


# ---- finding 2: a NUL byte reaching the action ------------------------------------------
def test_nul_name_never_reaches_an_action_and_others_are_stopped(tmp_path):
    site = Site(tmp_path)
    append(site.path("evil/x.jsonl"), b"".join(
        (b'{"job": "a\\u0000b", "step": %d, "eval": %s}\n' % (s, str(e).encode()))
        for s, e in enumerate([0.1, 0.3, 0.5, 0.4, 0.2], 1)))
    append(site.path("good/run.jsonl"), declining())
    site.ctl.run_until_idle()
    assert site.ctl.refused == {"name": 5}
    assert [(a.job, a.status) for a in site.ctl.store.actions()] == [("train", "done")]
    site.ctl.close()


def test_unrunnable_command_is_recorded_failed_not_running(tmp_path):
    action = ShellAction("echo {job}")
    assert action.run("echo a\0b").rc == 127  # a NUL byte: "could not run", no exception

    class Broken(ShellAction):
        def run(self, command):
            raise ValueError("embedded null byte")

    site = Site(tmp_path, action=Broken("echo {job}"))
    append(site.path("good/run.jsonl"), declining())
    site.ctl.run_until_idle()
    (row,) = site.ctl.store.actions()
    assert (row.status, row.rc) == ("failed", 127) and "embedded null byte" in row.output
    site.ctl.close()


# ---- finding 3: one tenant reaching another's job -----------------------------------------
def test_records_cannot_address_another_sources_job(tmp_path):
    site = Site(tmp_path)
    append(site.path("tenantB/run.jsonl"), line("tenantB-train", 1, 0.1)
           + line("tenantB-train", 2, 0.9))  # B's job is rising
    # A writes a declining curve under B's job name, in A's own folder.
    append(site.path("tenantA/mine.jsonl"), declining("tenantB-train"))
    site.ctl.run_until_idle()
    # Only A's own (source, name) job stopped, and its action carries tenant A.
    assert site.stopped() == {("tenantA", "tenantB-train"): 5}
    assert site.acts() == ["tenantA tenantB-train"]
    jobs = site.ctl.store.jobs()
    assert jobs[(site.path("tenantB/run.jsonl"), "tenantB-train")].stopped is False
    site.ctl.close()


def test_job_prefix_refuses_another_tenants_name(tmp_path):
    site = Site(tmp_path, tenancy=tenancy(prefix="{tenant}-"))
    append(site.path("tenantA/mine.jsonl"), declining("tenantB-train"))
    append(site.path("tenantB/run.jsonl"), declining("tenantB-train"))
    site.ctl.run_until_idle()
    assert site.stopped() == {("tenantB", "tenantB-train"): 5}
    assert site.ctl.refused == {"prefix": 5}
    assert "does not start with its tenant's prefix 'tenantA-'" in site.err.getvalue()
    site.ctl.close()


def test_tenant_pattern(tmp_path):
    site = Site(tmp_path, tenancy=tenancy(pattern=r"org/(?P<tenant>[a-z]+)/"))
    append(site.path("org/teama/x/run.jsonl"), declining())
    append(site.path("stray.jsonl"), declining())
    site.ctl.run_until_idle()
    assert site.stopped() == {("teama", "train"): 5}
    assert site.ctl.refused == {"tenant": 1} and "matches no tenant" in site.err.getvalue()
    site.ctl.close()


def test_checkpoint_escape_is_refused_and_recorded(tmp_path):
    action = ShellAction(f"echo {{job}} {{best_checkpoint}} >> {tmp_path / 'acts.txt'}",
                         checkpoint_template="/ckpt/{tenant}/{job}/ck-{best_step}")
    site = Site(tmp_path, action=action)
    append(site.path("evil/x.jsonl"), declining("../../../etc"))
    append(site.path("good/run.jsonl"), declining("a/../b"))  # normalised, still inside
    site.ctl.run_until_idle()
    rows = {a.job: a for a in site.ctl.store.actions()}
    assert rows["../../../etc"].status == "failed" and rows["../../../etc"].command == ""
    assert "is not under the checkpoint root '/ckpt'" in rows["../../../etc"].output
    assert site.acts() == ["a/../b /ckpt/good/b/ck-3"]
    site.ctl.close()


@pytest.mark.parametrize("template", ["echo '{job}'", 'echo "{job}"', 'scancel --name="{job}"',
                                      "echo 'a' \"x {tenant}\""])
def test_quoted_placeholder_is_refused_at_start(tmp_path, capsys, template):
    (tmp_path / "logs").mkdir()
    rc = main(["watch", "--once", "--jsonl", str(tmp_path / "logs"), "--db",
               str(tmp_path / "s.db"), "--action", template])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1
    assert "quotes; values are quoted for you" in err
    assert not (tmp_path / "s.db").exists()


def test_parse_line_refusals_carry_a_reason():
    for raw, reason in POISON.values():
        with pytest.raises(Refused) as exc:
            parse_line(raw, "f:1")
        assert exc.value.refusal.reason == reason
