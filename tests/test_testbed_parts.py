"""The testbed's parts that need no Slurm: its configuration files, its daemons stopped by
pid only, the worker's eval log, and the one-line error when Slurm is missing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import make_workload

from evalstop.errors import InputError
from evalstop.testbed import config, procs
from evalstop.testbed.cluster import LocalCluster, require_slurm
from evalstop.testbed.specs import job_spec, write_specs
from evalstop.testbed.submit import WORKER


def _settings(tmp_path, gpus=4):
    return config.Settings(root=tmp_path, cluster="tbx", gpus=gpus, cpus=64,
                           ports=config.Ports(*config.free_ports(4)))


def test_config_files(tmp_path):
    s = _settings(tmp_path)
    config.write_all(s)
    conf = (tmp_path / "etc" / "slurm.conf").read_text()
    for line in ("SchedulerType=sched/builtin", "PriorityType=priority/basic",
                 "AccountingStorageEnforce=associations", "SlurmdParameters=config_overrides",
                 f"SlurmctldPort={s.ports.slurmctld}", "Gres=gpu:4"):
        assert line in conf
    gres = (tmp_path / "etc" / "gres.conf").read_text()
    assert f"AutoDetect=off Name=gpu File={tmp_path}/gpus/gpu[0-3]" in gres
    assert sorted(p.name for p in (tmp_path / "gpus").iterdir()) == [f"gpu{i}" for i in range(4)]
    assert (tmp_path / "etc" / "slurmdbd.conf").stat().st_mode & 0o077 == 0
    assert len(set(s.ports.__dict__.values())) == 4


def test_daemons_are_stopped_by_their_pid_only(tmp_path):
    proc = procs.start(tmp_path, "sleeper", [sys.executable, "-c",
                                             "import time; time.sleep(60)", str(tmp_path)])
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        time.sleep(0.3)
        assert procs.alive(proc.pid, str(tmp_path))
        assert not procs.alive(other.pid, str(tmp_path))  # not ours: never signalled
        # A recorded pid reused by a process that is not the testbed's is left alone.
        pids = json.loads((tmp_path / procs.PIDS).read_text())
        pids["stale"] = other.pid
        (tmp_path / procs.PIDS).write_text(json.dumps(pids))
        assert procs.stop_all(tmp_path, ["sleeper"]) == ["sleeper"]
        assert not procs.alive(proc.pid, str(tmp_path)) and other.poll() is None
    finally:
        other.kill()
        other.wait()


def test_missing_slurm_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr("shutil.which", lambda name, path=None: None)
    with pytest.raises(InputError, match="apt-get install -y slurm-wlm slurmdbd munge "
                                         "mariadb-server"):
        require_slurm()
    env = {**os.environ, "PATH": str(tmp_path),
           "PYTHONPATH": str(Path(__file__).resolve().parents[1] / "src")}
    r = subprocess.run([sys.executable, "-m", "evalstop", "testbed", "up", "--dir",
                        str(tmp_path / "tb")], env=env, capture_output=True, text=True,
                       check=False)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "Slurm is not installed" in r.stderr


@pytest.mark.parametrize("tenants", [["A"], ["a b"], ["-x"], []])
def test_bad_tenants(tmp_path, tenants):
    with pytest.raises(InputError):
        LocalCluster(tmp_path, tenants=tenants)


def test_worker_writes_the_simulators_evals_and_stops_on_sigterm(tmp_path):
    w = make_workload([0.0], [3600.0], [1], evals=[[0.1, 0.3, 0.2, 0.4]])
    (spec,) = write_specs(w, tmp_path / "specs", hour_s=2.0)  # the job lasts 2 s
    assert job_spec(w, 0, 2.0)["t"] == [0.5, 1.0, 1.5, 2.0]
    log, ckpt = tmp_path / "t" / "j0.jsonl", tmp_path / "ck"
    t = time.monotonic()
    subprocess.run([sys.executable, "-I", str(WORKER), str(spec), str(log), str(ckpt)],
                   check=True)
    assert 2.0 <= time.monotonic() - t < 10
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(r["step"], r["eval"]) for r in recs] == [(1, 0.1), (2, 0.3), (3, 0.2), (4, 0.4)]
    # The job's GPUs on every record and its end on the last (a shadow score reads them).
    assert [r.get("end", False) for r in recs] == [False, False, False, True]
    assert {r["gpus"] for r in recs} == {1}
    assert sorted(p.name for p in ckpt.iterdir()) == [f"checkpoint-{i}" for i in (1, 2, 3, 4)]
    long = make_workload([0.0], [36000.0], [1])
    (spec,) = write_specs(long, tmp_path / "long", hour_s=10.0)  # 100 s
    proc = subprocess.Popen([sys.executable, "-I", str(WORKER), str(spec),
                             str(tmp_path / "l.jsonl")], stdout=subprocess.PIPE, text=True)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0 and "SIGTERM" in proc.stdout.read()


def test_names_that_cannot_be_replayed(tmp_path):
    w = make_workload([0.0], [60.0], [1])
    w.job_id[0] = "../escape"
    with pytest.raises(InputError, match="cannot be replayed"):
        write_specs(w, tmp_path, 1.0)
    assert np.asarray(w.gpus).tolist() == [1]


def test_docs_name_the_rule_the_committed_slurm_run_ran():
    """The page names the committed run's `default` by its spec, which the summary records:
    once the default moves, the alias alone would name another rule."""
    root = Path(__file__).resolve().parents[1]
    summary = json.loads((root / "benchmarks/results/slurm/summary.json").read_text())
    specs = {name: w["spec"] for name, w in summary["ways"].items()}
    assert specs["base"] is None and specs["k2"] == "evalstop:k=2"
    assert not specs["default"].startswith("default")
    page = " ".join((root / "docs/testbed.md").read_text().split())
    assert f"The `default` rule of this run was `{specs['default']}`" in page


def test_an_accounting_slurmdbd_has_not_finished_is_never_passed_off_as_whole(tmp_path,
                                                                            monkeypatch):
    from evalstop.testbed import sacct

    head = "|".join(sacct.FIELDS)
    row = "{}|a-0|a|{}|0:0|2026-01-01T00:00:00|2026-01-01T00:00:01|{}|00:00:01|gres/gpu=1||"
    text = "\n".join([head, row.format(1, "CANCELLED by 0", "2026-01-01T00:00:02"),
                      row.format(2, "RUNNING", "Unknown"), ""])
    assert sacct.unfinished(text, ["1", "2", "3"]) == ["2", "3"]
    monkeypatch.setattr(sacct, "query", lambda ids, env: text)
    out = tmp_path / "sacct.txt"
    with pytest.raises(RuntimeError, match=r"no final record of job\(s\) 2, 3 after 0 s"):
        sacct.export([1, 2, 3], {}, out, timeout_s=0)
    assert out.read_text() == text  # what slurmdbd had is kept
    assert sacct.export([1], {}, out, timeout_s=0) == text
