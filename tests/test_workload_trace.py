"""Job-trace CSV reading (every bad input), the Philly trace, and trace workloads."""

from __future__ import annotations

import gzip
import math
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstop.errors import InputError
from evalstop.workload import JobTable, load_philly, read_job_csv, trace_workload
from evalstop.workload.philly import PHILLY_N_JOBS


def packaged_philly_text() -> str:
    return gzip.decompress(
        resources.files("evalstop").joinpath("data/philly.csv.gz").read_bytes()).decode()


def write(tmp_path: Path, text: str, name: str = "jobs.csv") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


# ---------------------------------------------------------------- reading good files

def test_reads_required_columns_in_file_order(tmp_path):
    path = write(tmp_path, "job_id,arrival_s,duration_s,gpus\n"
                           "b,10,100,2\n"
                           "a,5,50.5,1\n"
                           "c,10,7,4\n")
    t = read_job_csv(path)
    assert t.job_id == ["b", "a", "c"]
    np.testing.assert_array_equal(t.arrival_s, [10, 5, 10])
    np.testing.assert_array_equal(t.duration_s, [100, 50.5, 7])
    np.testing.assert_array_equal(t.gpus, [2, 1, 4])
    np.testing.assert_array_equal(t.line, [2, 3, 4])
    assert t.type is None and t.tenant is None and t.est_duration_s is None
    assert t.source == str(path)


def test_optional_columns_bom_blank_lines_spaces_and_extra_columns(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_bytes("\ufeffjob_id, arrival_s ,duration_s,gpus,type,tenant,est_duration_s,note\n"
                     "x, 0 ,60,2.0, RLHF ,acme,55,hello\n"
                     "\n"
                     "y,1,30,1,lora,,31,\n".encode())
    t = read_job_csv(path)
    assert t.job_id == ["x", "y"]
    np.testing.assert_array_equal(t.gpus, [2, 1])
    np.testing.assert_array_equal(t.type, ["rlhf", "lora"])
    np.testing.assert_array_equal(t.tenant, ["acme", "default"])
    np.testing.assert_array_equal(t.est_duration_s, [55, 31])
    np.testing.assert_array_equal(t.line, [2, 4])


# ---------------------------------------------------------------- every bad input

HEADER = "job_id,arrival_s,duration_s,gpus"


@pytest.mark.parametrize("text, line, problem", [
    ("", None, "empty file"),
    ("\n\n", None, "empty file"),
    (HEADER + "\n", None, "no jobs"),
    ("job_id,arrival_s\na,1\n", 1, "missing required column(s): duration_s, gpus"),
    ("job_id,arrival_s,duration_s,gpus,gpus\n", 1, "column 'gpus' appears twice"),
    (HEADER + "\na,abc,10,1\n", 2, "arrival_s is not a number: 'abc'"),
    (HEADER + "\na,0,ten,1\n", 2, "duration_s is not a number: 'ten'"),
    (HEADER + "\na,0,,1\n", 2, "duration_s is not a number: ''"),
    (HEADER + "\na,nan,10,1\n", 2, "arrival_s must be finite"),
    (HEADER + "\na,0,inf,1\n", 2, "duration_s must be finite"),
    (HEADER + "\na,0,NaN,1\n", 2, "duration_s must be finite"),
    (HEADER + "\na,0,0,1\n", 2, "duration_s must be > 0, got '0'"),
    (HEADER + "\na,0,-5,1\n", 2, "duration_s must be > 0, got '-5'"),
    (HEADER + "\na,-1,10,1\n", 2, "arrival_s must be >= 0, got '-1'"),
    (HEADER + "\na,0,10,0\n", 2, "gpus must be a positive integer, got '0'"),
    (HEADER + "\na,0,10,-2\n", 2, "gpus must be a positive integer, got '-2'"),
    (HEADER + "\na,0,10,1.5\n", 2, "gpus must be a positive integer, got '1.5'"),
    (HEADER + "\na,0,10,two\n", 2, "gpus must be a positive integer, got 'two'"),
    (HEADER + "\na,0,10,nan\n", 2, "gpus must be a positive integer, got 'nan'"),
    (HEADER + "\na,0,10,inf\n", 2, "gpus must be a positive integer, got 'inf'"),
    (HEADER + "\na,0,10,1\nb,1,10,1\na,2,10,1\n", 4, "duplicate job_id 'a' (first on line 2)"),
    (HEADER + ",type\na,0,10,1,ppo\n", 2, "unknown type 'ppo'; known: lora, dpo, rlhf"),
    (HEADER + ",type\na,0,10,1,\n", 2, "unknown type ''"),
    (HEADER + ",est_duration_s\na,0,10,1,0\n", 2, "est_duration_s must be > 0"),
    (HEADER + ",est_duration_s\na,0,10,1,x\n", 2, "est_duration_s is not a number"),
    (HEADER + "\na,0,10\n", 2, "expected 4 fields as in the header, found 3"),
    (HEADER + "\n,0,10,1\n", 2, "job_id is empty"),
    (HEADER + "\na,0,10,1\nb,0,10,1,9\n", 3, "expected 4 fields"),
])
def test_bad_input_names_file_line_and_problem(tmp_path, text, line, problem):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as info:
        read_job_csv(path)
    message = str(info.value)
    where = f"{path}:{line}:" if line is not None else f"{path}:"
    assert message.startswith(where)
    assert problem in message
    assert "\n" not in message


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match=r"nope\.csv: cannot read"):
        read_job_csv(tmp_path / "nope.csv")


def test_directory_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="a folder, not a regular file"):
        read_job_csv(tmp_path)


def test_binary_file_is_an_input_error(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_bytes(b"job_id,arrival_s,duration_s,gpus\n\xff\xfe\x00\x81,1,1,1\n")
    with pytest.raises(InputError, match="not UTF-8"):
        read_job_csv(path)


def test_input_error_is_a_value_error():
    assert issubclass(InputError, ValueError)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(st.tuples(st.floats(0, 1e7), st.floats(1e-3, 1e7), st.integers(1, 128),
                               st.sampled_from(["lora", "dpo", "rlhf"])),
                     min_size=1, max_size=30))
def test_csv_round_trip(tmp_path, rows):
    lines = [HEADER + ",type"] + [f"j{i},{a!r},{d!r},{g},{k}" for i, (a, d, g, k) in
                                  enumerate(rows)]
    t = read_job_csv(write(tmp_path, "\n".join(lines) + "\n", "round.csv"))
    assert t.job_id == [f"j{i}" for i in range(len(rows))]
    np.testing.assert_array_equal(t.arrival_s, [r[0] for r in rows])
    np.testing.assert_array_equal(t.duration_s, [r[1] for r in rows])
    np.testing.assert_array_equal(t.gpus, [r[2] for r in rows])
    np.testing.assert_array_equal(t.type, [r[3] for r in rows])


# ---------------------------------------------------------------- trace_workload on a CSV

def test_trace_workload_keeps_the_trace_and_sorts_stably(tmp_path):
    path = write(tmp_path, HEADER + ",type,est_duration_s\n"
                                    "late,50,100,2,lora,90\n"
                                    "tie1,10,200,4,rlhf,210\n"
                                    "early,0,300,1,dpo,310\n"
                                    "tie2,10,400,8,rlhf,410\n")
    w = trace_workload(read_job_csv(path), np.random.default_rng(0), hacking_frac=1.0)
    w.validate()
    assert w.job_id == ["early", "tie1", "tie2", "late"]  # ties keep file order
    np.testing.assert_array_equal(w.arrival_s, [0, 10, 10, 50])
    np.testing.assert_array_equal(w.duration_s, [300, 200, 400, 100])
    np.testing.assert_array_equal(w.gpus, [1, 4, 8, 2])
    np.testing.assert_array_equal(w.type, ["dpo", "rlhf", "rlhf", "lora"])
    np.testing.assert_array_equal(w.est_duration_s, [310, 210, 410, 90])
    np.testing.assert_array_equal(w.hacking, [False, True, True, False])
    np.testing.assert_array_equal(w.tenant, ["default"] * 4)
    assert w.meta["types_from"] == "table" and w.meta["source"] == str(path)


def test_trace_workload_draws_types_and_estimates_when_absent(tmp_path):
    text = HEADER + "\n" + "".join(f"j{i},{i},{60 + i},1\n" for i in range(400))
    table = read_job_csv(write(tmp_path, text))
    a = trace_workload(table, np.random.default_rng(4), preset="balanced")
    b = trace_workload(table, np.random.default_rng(4), preset="balanced")
    assert set(np.unique(a.type).tolist()) == {"lora", "dpo", "rlhf"}
    assert a.meta["types_from"] == "preset mix" and a.meta["load"] is None
    for name in ("type", "est_duration_s", "eval_obs", "hacking"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert not np.array_equal(a.est_duration_s, a.duration_s)


def test_trace_workload_rejects_a_non_table():
    with pytest.raises(TypeError, match="JobTable"):
        trace_workload([1, 2], np.random.default_rng(0))


# ---------------------------------------------------------------- Philly

@pytest.fixture(scope="module")
def philly() -> JobTable:
    return load_philly()


def test_philly_has_every_job_sorted_by_arrival(philly):
    assert len(philly) == PHILLY_N_JOBS == 82_247
    assert philly.arrival_s[0] == 0.0
    assert np.all(np.diff(philly.arrival_s) >= 0)
    assert len(set(philly.job_id)) == len(philly)
    assert len(np.unique(philly.tenant)) == 15
    assert philly.gpus.min() == 1 and philly.gpus.max() == 128
    assert np.mean(philly.gpus == 1) == pytest.approx(0.93, abs=0.01)
    assert np.all(philly.duration_s >= 1.0)
    # 2017-09-04 10:30:41 to 2017-12-22 08:02:11
    assert philly.arrival_s[-1] == (np.datetime64("2017-12-22T08:02:11")
                                    - np.datetime64("2017-09-04T10:30:41")).astype(int)


def test_philly_ties_keep_file_order(philly):
    same = np.flatnonzero(np.diff(philly.arrival_s) == 0)
    assert len(same) > 0
    assert np.all(philly.line[same] < philly.line[same + 1])


def test_philly_rows_match_the_source_file(philly):
    rows = packaged_philly_text().splitlines()
    for k in (0, 1, 500, len(philly) - 1):
        ts, dur, gpus, _, cluster = rows[philly.line[k] - 1].split(",")
        assert philly.job_id[k] == f"philly-{philly.line[k] - 2:05d}"
        first = np.datetime64("2017-09-04T10:30:41")
        assert philly.arrival_s[k] == (np.datetime64(ts.replace(" ", "T")) - first).astype(int)
        assert philly.duration_s[k] == max(float(dur), 1.0)
        assert philly.gpus[k] == int(gpus) and philly.tenant[k] == cluster


def test_packaged_philly_is_the_trace_its_provenance_names():
    """The gzip holds the source file's bytes unchanged: its SHA-256 is the one recorded."""
    import hashlib
    import re

    note = resources.files("evalstop").joinpath("data/PHILLY_PROVENANCE.md").read_text()
    recorded = re.search(r"SHA-256 is\s+`([0-9a-f]{64})`", note).group(1)
    assert hashlib.sha256(packaged_philly_text().encode()).hexdigest() == recorded


def test_philly_limit_takes_the_earliest_jobs(philly):
    head = load_philly(limit=100)
    assert head.job_id == philly.job_id[:100]
    np.testing.assert_array_equal(head.arrival_s, philly.arrival_s[:100])


@pytest.mark.parametrize("bad", [0, -5, 2.5, True])
def test_philly_limit_must_be_a_positive_integer(bad):
    with pytest.raises(ValueError, match="limit"):
        load_philly(limit=bad)


def test_parse_philly_reads_the_packaged_text_the_same(philly):
    from evalstop.workload.philly import parse_philly

    got = parse_philly(packaged_philly_text(), 200, name="x.csv")
    assert got.job_id == philly.job_id[:200]
    np.testing.assert_array_equal(got.arrival_s, philly.arrival_s[:200])
    np.testing.assert_array_equal(got.duration_s, philly.duration_s[:200])


@pytest.mark.parametrize("text, match", [
    ("timestamp,duration\n2017-10-09 07:01:55,66\n", "x.csv has columns"),
    ("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,66,1\n",
     "x.csv: 3 fields in 1 rows"),
    ("timestamp,duration,num_gpus,gpu_time,cluster\n2017-10-09 07:01:55,-6,1,6,a\n",
     "x.csv has a negative"),
])
def test_parse_philly_names_the_file_it_refuses(text, match):
    from evalstop.workload.philly import parse_philly

    with pytest.raises(ValueError, match=match):
        parse_philly(text, name="x.csv")


def test_philly_workload_keeps_trace_fields(philly):
    w = trace_workload(philly, np.random.default_rng(0))
    w.validate()
    assert w.n_jobs == len(philly) and w.job_id == philly.job_id
    np.testing.assert_array_equal(w.gpus, philly.gpus)
    np.testing.assert_array_equal(w.duration_s, philly.duration_s)
    np.testing.assert_array_equal(w.tenant, philly.tenant)
    assert np.mean(w.type == "rlhf") == pytest.approx(0.8, abs=0.01)
    assert math.isclose(w.meta["hacking_frac"], 0.6) and w.meta["source"] == "philly"
