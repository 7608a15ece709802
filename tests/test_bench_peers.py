"""The peer benchmark's converters and agreement figures (no peer installed)."""

from __future__ import annotations

import csv
import json
import pickle

import pytest
from conftest import load_benchmark
from hypothesis import given
from hypothesis import strategies as st

bp = load_benchmark("bench_peers")

# (job_id, arrival_s, duration_s, gpus), as rows_of gives them
JOBS = [("philly-00007", 0.0, 66.0, 1), ("philly-00003", 0.0, 2951.0, 16),
        ("philly-00001", 47.0, 1.0, 8), ("philly-00010", 3600.0, 860662.0, 2)]


def test_project_csv_is_a_job_csv_evalstop_reads(tmp_path):
    from evalstop.workload import read_job_csv

    bp.write_project(JOBS, tmp_path / "jobs.csv")
    t = read_job_csv(tmp_path / "jobs.csv")
    assert t.job_id == [j for j, *_ in JOBS]
    assert list(t.arrival_s) == [a for _, a, _, _ in JOBS]
    assert list(t.duration_s) == [d for _, _, d, _ in JOBS]
    assert list(t.gpus) == [g for *_, g in JOBS]


def test_helios_gets_its_columns_and_one_vc_of_8_gpu_nodes(tmp_path):
    bp.write_helios(JOBS, 64, tmp_path)
    with open(tmp_path / "cluster_log.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert rows[0] == ["job_id", "user", "vc", "jobname", "gpu_num", "state", "submit_time",
                       "duration"]
    assert rows[1:] == [["0", "u", "pool", "philly-00007", "1", "COMPLETED", "0", "66"],
                        ["1", "u", "pool", "philly-00003", "16", "COMPLETED", "0", "2951"],
                        ["2", "u", "pool", "philly-00001", "8", "COMPLETED", "47", "1"],
                        ["3", "u", "pool", "philly-00010", "2", "COMPLETED", "3600", "860662"]]
    with open(tmp_path / "vc_dict_homo.pkl", "rb") as fh:
        assert pickle.load(fh) == {"pool": 8}


@pytest.mark.parametrize("jobs, gpus, match", [
    (JOBS, 60, "not a multiple of 8"),
    ([("a", 0.5, 10.0, 1)], 8, "job a: 0.5 s is not a whole second"),
    ([("b", 0.0, 10.25, 1)], 8, "job b: 10.25 s"),
])
def test_helios_refuses_what_its_clock_cannot_hold(tmp_path, jobs, gpus, match):
    with pytest.raises(bp.Skip, match=match):
        bp.write_helios(jobs, gpus, tmp_path)


SHIPPED = {"v100": {"('ResNet-50 (batch size 64)', 1)": {"null": 4.0, "x": [1, 2]},
                    "('ResNet-50 (batch size 64)', 8)": {"null": 16.0}},
           "k80": {"('ResNet-50 (batch size 64)', 1)": {"null": 1.0}}}


def test_gavel_throughputs_fill_missing_scale_factors_only():
    out, rate = bp.gavel_throughputs(SHIPPED, [1, 16, 8, 1])
    assert rate == {1: 4.0, 8: 16.0, 16: 4.0}
    assert out["v100"]["('ResNet-50 (batch size 64)', 16)"] == {"null": 4.0}
    assert out["v100"]["('ResNet-50 (batch size 64)', 1)"] == {"null": 4.0, "x": [1, 2]}
    assert "('ResNet-50 (batch size 64)', 16)" not in SHIPPED["v100"]  # not changed in place
    assert out["k80"] == SHIPPED["k80"]


def test_gavel_trace_lines_are_its_ten_tab_fields():
    lines = bp.gavel_lines(JOBS, {1: 4.0, 16: 4.0, 8: 16.0, 2: 3.3})
    fields = [x.split("\t") for x in lines]
    assert all(len(f) == 10 for f in fields)
    assert fields[0] == ["ResNet-50 (batch size 64)",
                         "python3 main.py -j 2 -a resnet50 -b 64 %s/imagenet/",
                         "image_classification/imagenet", "--num_minibatches", "1", "264", "1",
                         "1", "-1.000000", "0.000000"]
    # steps = duration x the scale factor's rate, so steps / rate gives the duration back
    assert [int(f[5]) for f in fields] == [264, 11804, 16, round(860662 * 3.3)]
    assert [int(f[6]) for f in fields] == [1, 16, 8, 2]
    assert [float(f[9]) for f in fields] == [0.0, 0.0, 47.0, 3600.0]


def test_gavel_files_come_from_the_checkout(tmp_path):
    sched = tmp_path / "scheduler"
    sched.mkdir()
    (sched / "simulation_throughputs.json").write_text(json.dumps(SHIPPED))
    trace, thr = bp.write_gavel(JOBS[:1], sched, tmp_path / "in")
    assert trace.read_text().count("\n") == 1
    assert json.loads(thr.read_text())["v100"] == SHIPPED["v100"]


def test_starts_are_read_back_per_job(tmp_path):
    with open(tmp_path / "p.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "gpus", "start_s"))
        w.writerows([("philly-00003", 16, "0"), ("philly-00007", 1, "0"),
                     ("philly-00001", 8, "")])
    assert bp.project_starts(tmp_path / "p.csv", JOBS) == [0.0, 0.0, None, None]
    import sys
    with open(tmp_path / "h.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(("job_id", "start_time", "gpu_num"))
        w.writerows([(2, 47, 8), (0, 0, 1), (1, sys.maxsize, 16)])
    assert bp.helios_starts(tmp_path / "h.csv", 4) == [0.0, None, 47.0, None]
    (tmp_path / "g.json").write_text(json.dumps({"start": {"0": 360.0, "3": 3960.5},
                                                 "finish": {}}))
    assert bp.gavel_starts(tmp_path / "g.json", 4) == [360.0, None, None, 3960.5]


def test_agreement_counts_within_one_second_and_describes_the_rest():
    ours = [0.0, 10.0, 20.0, 30.0, 40.0, None]
    theirs = [0.5, 10.0, 380.0, 29.0, 20.0, 5.0]
    a = bp.agreement(ours, theirs, [1, 1, 8, 1, 16, 1])
    assert (a["n_jobs"], a["n_compared"], a["n_identical"]) == (6, 5, 3)
    assert a["frac_identical"] == 0.6
    assert a["median_abs_diff_s"] == 1.0  # of 0.5, 0, 360, 1, 20
    assert a["p95_abs_diff_s"] == pytest.approx(292.0)  # 20 + 0.8 x 340
    assert a["max_abs_diff_s"] == 360.0
    assert (a["n_later_in_peer"], a["n_earlier_in_peer"]) == (1, 1)
    assert a["median_delay_of_later_s"] == 360.0
    assert a["differing_by_gpus"] == {"8": 1, "16": 1}
    assert a["n_unstarted_peer"] == 0
    text = bp.describe("gavel", a)
    assert text.startswith("3 of 5 jobs start within 1 s of evalstop's; 1 later (median 360.0")
    assert "rounds of 360 s" in text and "every 1,920 s" in text
    same = bp.agreement([1.0, 2.0], [1.0, 2.0], [1, 2])
    assert bp.describe("helios-random", same).startswith("all 2 jobs start within 1 s")


def test_a_job_the_peer_never_started_is_counted_not_compared():
    a = bp.agreement([0.0, 5.0], [None, 5.0], [1, 1])
    assert (a["n_compared"], a["n_identical"], a["n_unstarted_peer"]) == (1, 1, 1)


@given(st.lists(st.floats(0, 1e7, allow_nan=False), min_size=1, max_size=40),
       st.floats(0, 1.0))
def test_percentile_is_numpys_linear_one(xs, q):
    import numpy as np

    xs = sorted(xs)
    assert bp._percentile(xs, q) == pytest.approx(float(np.percentile(xs, q * 100)),
                                                  rel=1e-9, abs=1e-6)


def test_checkout_check_names_what_is_wrong(tmp_path, capsys):
    assert bp.checkout("--gavel", None, "scheduler", bp.GAVEL_MARKERS) is None
    assert "gavel: skipped" in capsys.readouterr().out
    with pytest.raises(bp.Skip, match="no such directory"):
        bp.checkout("--helios", str(tmp_path / "nope"), bp.HELIOS_SUBDIR, bp.HELIOS_MARKERS)
    with pytest.raises(bp.Skip, match="not the expected checkout .framework/QSSF Service/"):
        bp.checkout("--helios", str(tmp_path), bp.HELIOS_SUBDIR, bp.HELIOS_MARKERS)
    folder = tmp_path / "scheduler"
    for m in bp.GAVEL_MARKERS:
        (folder / m).parent.mkdir(parents=True, exist_ok=True)
        (folder / m).write_text("")
    assert bp.checkout("--gavel", str(tmp_path), "scheduler", bp.GAVEL_MARKERS) == folder
    # The peers run in their own folders: a checkout given relative to here is made absolute.
    with pytest.MonkeyPatch.context() as m:
        m.chdir(tmp_path.parent)
        found = bp.checkout("--gavel", tmp_path.name, "scheduler", bp.GAVEL_MARKERS)
    assert found == folder and found.is_absolute()


def test_jobs_come_in_submit_order_from_a_philly_file_or_a_job_csv(tmp_path):
    philly = tmp_path / "philly.csv"
    philly.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n"
                      "2017-10-09 07:01:55,66.0,1,66.0,a\n"
                      "2017-10-09 06:13:03,2951.0,2,5902.0,b\n"
                      "2017-10-09 07:01:55,0.0,4,0.0,a\n")
    assert bp.rows_of(bp.load_jobs(str(philly), 2)) == [("philly-00001", 0.0, 2951.0, 2),
                                                         ("philly-00000", 2932.0, 66.0, 1)]
    jobs = tmp_path / "jobs.csv"
    jobs.write_text("job_id,arrival_s,duration_s,gpus\nx,50,10,1\ny,20,5,2\nz,90,1,1\n")
    assert bp.rows_of(bp.load_jobs(str(jobs), 2)) == [("y", 0.0, 5.0, 2), ("x", 30.0, 10.0, 1)]


@pytest.mark.parametrize("argv, match", [
    (["--jobs", "0"], "--jobs must be at least 1"),
    (["--repeat", "0"], "--repeat must be at least 1"),
    (["--timeout", "-1"], "--timeout must be positive"),
    (["--trace", "/nonexistent/trace.csv"], "trace.csv"),
    (["--gpus", "4", "--jobs", "50"], "more than --gpus 4"),
    (["--peer-python", "no/such/python"], "--peer-python no/such/python: no such program"),
    (["--helios-placers", "random,spread"], "--helios-placers: spread; choose from"),
    (["--helios-placers", ","], "--helios-placers: none given"),
])
def test_bad_arguments_are_one_line_and_exit_2(argv, match, capsys):
    assert bp.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bench_peers: error: ") and "\n" not in err and match in err


def test_a_run_keeps_only_its_output_tail_and_its_exit_code(tmp_path):
    import sys

    code = "import sys\nfor i in range(20000): print('line', i)\nprint('boom'); sys.exit(3)"
    res = bp.run_timed([sys.executable, "-c", code], tmp_path, timeout=60)
    assert res["rc"] == 3 and not res["timed_out"]
    assert len(res["tail"]) <= bp.TAIL_BYTES and bp.last_line(res["tail"]) == "boom"
    assert res["cpu_s"] > 0


def test_a_run_past_its_timeout_is_killed_with_its_children(tmp_path):
    import sys

    # the child starts a grandchild that holds the pipe open: the whole group must go
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "time.sleep(60)")
    res = bp.run_timed([sys.executable, "-c", code], tmp_path, timeout=1.0)
    assert res["timed_out"] and res["wall_s"] < 30
