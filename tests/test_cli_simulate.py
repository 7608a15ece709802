"""`evalstop simulate`: its documented CSV contract, and one-line errors on bad input."""

import csv
import os

import pytest

from evalstop.cli.main import main


def trace(tmp_path, text, name="jobs.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


def rows(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def test_fifo_contract(tmp_path, capsys):
    jobs = trace(tmp_path, "job_id,arrival_s,duration_s,gpus\n"
                           "a,0,10,2\nb,0,20,2\nc,5,5,4\nd,10,3,1\n")
    out = tmp_path / "per_job.csv"
    assert main(["simulate", "--jobs", str(jobs), "--gpus", "4", "--scheduler", "fifo",
                 "--out", str(out)]) == 0
    got = rows(out)
    assert [r["job_id"] for r in got] == ["a", "b", "c", "d"]
    assert [float(r["start_s"]) for r in got] == [0, 0, 20, 25]
    assert [float(r["finish_s"]) for r in got] == [10, 20, 25, 28]
    assert [float(r["jct_s"]) for r in got] == [10, 20, 20, 18]
    assert [r["stopped"] for r in got] == ["0"] * 4
    assert {"arrival_s", "type", "gpu_hours", "kept_step"} <= set(got[0])


def test_rows_keep_file_order_for_unsorted_trace(tmp_path):
    jobs = trace(tmp_path, "job_id,arrival_s,duration_s,gpus\nlate,50,1,1\nearly,0,1,1\n")
    out = tmp_path / "o.csv"
    assert main(["simulate", "--jobs", str(jobs), "--gpus", "1", "--scheduler", "fifo",
                 "--out", str(out)]) == 0
    got = rows(out)
    assert [(r["job_id"], float(r["start_s"])) for r in got] == [("late", 50), ("early", 0)]


def test_detector_stops_and_same_seed_same_file(tmp_path):
    jobs = trace(tmp_path, "job_id,arrival_s,duration_s,gpus,type\n" + "".join(
        f"j{i},{i * 100},{3600 + 60 * i},8,rlhf\n" for i in range(40)))
    outs = []
    for name in ("a.csv", "b.csv"):
        out = tmp_path / name
        assert main(["simulate", "--jobs", str(jobs), "--gpus", "16", "--scheduler",
                     "srtf-est", "--detector", "evalstop:k=2", "--seed", "3",
                     "--out", str(out)]) == 0
        outs.append(out.read_text())
    assert outs[0] == outs[1]
    assert any(r["stopped"] == "1" for r in rows(tmp_path / "a.csv"))


@pytest.mark.parametrize("text, gpus, extra, message", [
    ("job_id,arrival_s,duration_s\na,0,10\n", 4, [], "missing required column(s): gpus"),
    ("job_id,arrival_s,duration_s,gpus\na,0,10,8\n", 4, [], "asks for 8 GPUs but the cluster has 4"),
    ("job_id,arrival_s,duration_s,gpus\na,0,-10,1\n", 4, [], "duration"),
    ("job_id,arrival_s,duration_s,gpus\na,0,nan,1\n", 4, [], "duration"),
    ("job_id,arrival_s,duration_s,gpus\na,0,ten,1\n", 4, [], "duration"),
    ("job_id,arrival_s,duration_s,gpus\na,0,10,1\n", 4, ["--detector", "nope"],
     "unknown detector 'nope'"),
    ("job_id,arrival_s,duration_s,gpus\na,0,10,1\n", 0, [], "--gpus must be >= 1"),
    ("", 4, [], "jobs.csv"),
    # A control character copied raw into the output CSV would corrupt it for its readers.
    ("job_id,arrival_s,duration_s,gpus\nok,0,10,1\na\x00b,0,10,1\n", 4, [],
     "jobs.csv:3: job_id 'a\\x00b' holds a control or non-printing character (U+0000)"),
    ("job_id,arrival_s,duration_s,gpus\na\x1b[2Jb,0,10,1\n", 4, [], "jobs.csv:2: job_id"),
    ("job_id,arrival_s,duration_s,gpus,tenant\na,0,10,1,t\x07\n", 4, [],
     "jobs.csv:2: tenant 't\\x07' holds a control"),
])
def test_bad_input_one_line_error(tmp_path, capsys, text, gpus, extra, message):
    jobs = trace(tmp_path, text)
    out = tmp_path / "o.csv"
    out.write_text("earlier results\n")
    rc = main(["simulate", "--jobs", str(jobs), "--gpus", str(gpus), "--scheduler", "fifo",
               "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1
    assert out.read_text() == "earlier results\n"  # never lose what was already written


def test_unknown_scheduler_is_one_line(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", "--jobs", "x.csv", "--gpus", "4", "--scheduler", "nope",
              "--out", "o.csv"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "invalid choice: 'nope'" in err and err.count("\n") == 1


def test_eval_interval_sets_the_number_of_evals(tmp_path):
    jobs = trace(tmp_path, "job_id,arrival_s,duration_s,gpus\na,0,100,1\n")
    out = tmp_path / "o.csv"
    assert main(["simulate", "--jobs", str(jobs), "--gpus", "1", "--scheduler", "fifo",
                 "--eval-interval", "0.25", "--out", str(out)]) == 0
    assert rows(out)[0]["kept_step"] == "4"  # 4 evals; a finished job keeps its last


def test_bad_eval_interval_is_one_line(tmp_path, capsys):
    jobs = trace(tmp_path, "job_id,arrival_s,duration_s,gpus\na,0,100,1\n")
    rc = main(["simulate", "--jobs", str(jobs), "--gpus", "1", "--scheduler", "fifo",
               "--eval-interval", "0", "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and "eval_interval" in err and err.count("\n") == 1


HEADER = "job_id,arrival_s,duration_s,gpus\n"


@pytest.mark.parametrize("text, extra, message", [
    (HEADER + "a,0,10,99999999999999999999999\n", [], "gpus must be at most"),
    (HEADER + "a,0,10,1\n", ["--seed", "-1"], "--seed must be >= 0, got -1"),
    (HEADER + "a,0,10,1\n", ["--detector", "evalstop:k=2", "--only-types", "rlfh"],
     "--only-types: unknown job type(s) 'rlfh'"),
    (HEADER + "a,0,10,1\n", ["--restart-overhead", "inf"], "--restart-overhead must be finite"),
    # 1e-9 used to allocate a billion evals per job until the kernel killed the process.
    (HEADER + "a,0,10,1\n", ["--eval-interval", "1e-9"], "eval_interval must be >= 0.0001"),
    (HEADER + "".join(f"j{i},0,10,1\n" for i in range(3000)), ["--eval-interval", "1e-4"],
     "eval points; use a larger eval_interval"),
])
def test_bad_input_found_in_the_sweep_is_one_line(tmp_path, capsys, text, extra, message):
    jobs = trace(tmp_path, text)
    out = tmp_path / "o.csv"
    out.write_text("earlier results\n")
    rc = main(["simulate", "--jobs", str(jobs), "--gpus", "4", "--scheduler", "fifo",
               "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1 and "Traceback" not in err
    assert out.read_text() == "earlier results\n"


@pytest.mark.parametrize("out, message", [
    ("DIR", "is a folder, not a file"),  # used to name os.replace's temporary file
    ("missing/o.csv", "does not exist"),
    ("", "--out must name a file"),  # used to be "Device or resource busy"
])
def test_bad_out_path_is_one_line(tmp_path, capsys, out, message):
    jobs = trace(tmp_path, HEADER + "a,0,10,1\n")
    (tmp_path / "DIR").mkdir()
    out = str(tmp_path / out) if out else out
    rc = main(["simulate", "--jobs", str(jobs), "--gpus", "4", "--scheduler", "fifo",
               "--out", out])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1
    assert list((tmp_path / "DIR").iterdir()) == []


# Traces as spreadsheets and other tools write them are accepted, not rejected.
@pytest.mark.parametrize("data", [
    b"\xef\xbb\xbf" + HEADER.encode() + b"a,0,10,1\n",  # Excel's "CSV UTF-8" byte-order mark
    b"job_id,arrival_s,duration_s,gpus\r\na,0,10,1\r\n",  # Windows line endings
    b'"job_id","arrival_s","duration_s","gpus"\n"a,1","0","10","1"\n',  # quoted fields
    b"job_id,arrival_s,duration_s,gpus,owner,note\na,0,10,1,ann,x\n",  # extra columns
    b"job_id,arrival_s,duration_s,gpus,type\na,0,10,1,RLHF\n",  # type in capitals
])
def test_real_tool_csv_variants_are_accepted(tmp_path, data):
    jobs = tmp_path / "jobs.csv"
    jobs.write_bytes(data)
    out = tmp_path / "o.csv"
    assert main(["simulate", "--jobs", str(jobs), "--gpus", "4", "--scheduler", "fifo",
                 "--out", str(out)]) == 0
    assert len(rows(out)) == 1 and rows(out)[0]["jct_s"] == "10"


def test_only_types_is_case_insensitive(tmp_path):
    jobs = trace(tmp_path, "job_id,arrival_s,duration_s,gpus,type\na,0,10,1,rlhf\n")
    assert main(["simulate", "--jobs", str(jobs), "--gpus", "4", "--scheduler", "fifo",
                 "--detector", "evalstop:k=2", "--only-types", "RLHF, dpo",
                 "--out", str(tmp_path / "o.csv")]) == 0


@pytest.mark.parametrize("ids", [["a", "b"], ["a b", " x", "y ", "é", "t\tab"], ["a,b", "c"],
                                 ['q"', "r"], ["x\ny", "z"], ["", "e"], []])
def test_rows_are_written_as_csv_writer_writes_them(ids):
    """The per-job CSV joined at once is byte for byte csv.writer's (ids that need quoting
    go through csv.writer itself)."""
    import csv
    import io

    from evalstop.cli.simulate import COLUMNS, _write

    n = len(ids)
    cols = [ids, ["rlhf"] * n, [1] * n, ["1.5"] * n, [""] * n, ["2"] * n, ["3"] * n, [0] * n,
            [""] * n, [20] * n, ["1"] * n, ["0.5"] * n, [0] * n, [1] * n]
    ref = io.StringIO()
    w = csv.writer(ref)
    w.writerow(COLUMNS)
    w.writerows(zip(*cols))
    out = io.StringIO()
    _write(out, cols)
    assert out.getvalue() == ref.getvalue()


@pytest.mark.parametrize("make, kind", [
    (lambda p: os.mkfifo(p), "a FIFO (named pipe)"),
    (lambda p: p.mkdir(), "a folder"),
])
def test_jobs_that_is_not_a_regular_file_is_one_line_not_a_hang(tmp_path, capsys, make, kind):
    jobs = tmp_path / "jobs"
    make(jobs)  # opening a FIFO for reading would wait for a writer for ever
    rc = main(["simulate", "--jobs", str(jobs), "--gpus", "1", "--scheduler", "fifo",
               "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert rc == 2 and err == f"evalstop: error: {jobs}: {kind}, not a regular file\n"
