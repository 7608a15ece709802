"""A job trace read whole (``jobcsv._whole_file``) gives what the line-by-line reader gives:
the same table, or the same one-line error from the line-by-line reader itself."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalstop.errors import InputError
from evalstop.workload import jobcsv, read_job_csv

HEADER = "job_id,arrival_s,duration_s,gpus,type,tenant,est_duration_s"
GOOD = [f"j{i},{i * 1.5},{10 + i},{1 + i % 3},rlhf,t{i % 2},{9 + i}" for i in range(6)]
FILES = {
    "plain": "\n".join([HEADER, *GOOD]) + "\n",
    "no last newline": "\n".join([HEADER, *GOOD]),
    "crlf": "\r\n".join([HEADER, *GOOD]) + "\r\n",
    "bom": "\ufeff" + "\n".join([HEADER, *GOOD]) + "\n",
    "spaces": "\n".join([HEADER.replace(",", " , "), *(r.replace(",", " ,") for r in GOOD)]),
    "quoted": "\n".join([HEADER, *GOOD[:3], '"j,9",1,2,1,rlhf,"t ""x""",3']) + "\n",
    "quoted newline": "\n".join([HEADER, *GOOD[:3], '"j\n9",1,2,1,rlhf,t,3']) + "\n",
    "blank lines": "\n\n".join([HEADER, *GOOD]) + "\n\n",
    "blank row of cells": "\n".join([HEADER, *GOOD[:2], " , , , , , , ", *GOOD[2:]]),
    "lone cr": "\r".join([HEADER, *GOOD]) + "\r",
    "short row": "\n".join([HEADER, *GOOD[:2], "j9,1,2", *GOOD[2:]]),
    "long row": "\n".join([HEADER, *GOOD[:2], GOOD[2] + ",x", *GOOD[3:]]),
    "duplicate id": "\n".join([HEADER, *GOOD, GOOD[1]]),
    "bad number": "\n".join([HEADER, *GOOD[:4], "j9,1,x,1,rlhf,t,3"]),
    "bad type": "\n".join([HEADER, *GOOD[:4], "j9,1,2,1,pretrain,t,3"]),
    "empty tenant": "\n".join([HEADER, *GOOD[:4], "j9,1,2,1,RLHF,,3"]),
    "nul": "\n".join([HEADER, *GOOD[:4], "j9,1,2,1,rlhf,t\0,3"]),
    "header only": HEADER + "\n",
    "missing column": "job_id,arrival_s,gpus\nj1,1,2\n",
    "no optional columns": "job_id,arrival_s,duration_s,gpus\nj1,1,2,3\nj2,0,5,1\n",
    "unicode": "\n".join([HEADER, *GOOD[:2], "jé,1,2,1,rlhf,tenant\u2028x,3"]),
    "odd breaks": "\n".join([HEADER, *GOOD[:2], "j\x0c9,1,2,1,rlhf,t\x85,3"]),
    "empty": "",
}


def read(path, whole: bool, monkeypatch):
    monkeypatch.setattr(jobcsv, "WHOLE_FILE_BYTES", jobcsv.WHOLE_FILE_BYTES if whole else -1)
    try:
        t = read_job_csv(path)
    except InputError as e:
        return str(e)
    return (t.job_id, t.arrival_s.tolist(), t.duration_s.tolist(), t.gpus.tolist(),
            None if t.type is None else t.type.tolist(),
            None if t.tenant is None else t.tenant.tolist(),
            None if t.est_duration_s is None else t.est_duration_s.tolist(), t.line.tolist())


@pytest.mark.parametrize("name", sorted(FILES))
def test_whole_file_reads_as_line_by_line(tmp_path, monkeypatch, name):
    path = tmp_path / "jobs.csv"
    path.write_bytes(FILES[name].encode("utf-8"))
    assert read(path, True, monkeypatch) == read(path, False, monkeypatch)


def test_whole_file_is_used_for_a_plain_file(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(FILES["crlf"], encoding="utf-8")
    table = jobcsv._whole_file(str(path))
    assert table is not None and table.line.tolist() == list(range(2, 8))
    path.write_text(FILES["quoted"], encoding="utf-8")
    assert jobcsv._whole_file(str(path)).job_id[-1] == "j,9"  # by the csv module
    path.write_text(FILES["blank lines"], encoding="utf-8")
    assert jobcsv._whole_file(str(path)) is None


def test_a_long_line_is_refused_either_way(tmp_path, monkeypatch):
    monkeypatch.setattr("evalstop.lines.MAX_LINE_CHARS", 40)
    path = tmp_path / "jobs.csv"
    rows = ["job_id,arrival_s,duration_s,gpus", "j1,1,2,3", "j2," + "1" * 60 + ",2,3"]
    path.write_text("\n".join(rows), encoding="utf-8")
    assert jobcsv._whole_file(str(path)) is None
    with pytest.raises(InputError, match="line 3 is longer than 40"):
        read_job_csv(path)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["j1", "j2", "a b", "x,y", 'q"', ""]),
                          st.sampled_from(["0", "1.5", " 2 ", "-1", "nan", "1e3", "x"]),
                          st.sampled_from(["1", "0", "3.5", "inf", "7"]),
                          st.sampled_from(["1", "2.0", "0", "2.5", "4"]),
                          st.sampled_from(["\n", "\r\n", "\n\n"])), max_size=8))
def test_random_files_read_alike(tmp_path, monkeypatch, rows):
    text = "job_id,arrival_s,duration_s,gpus\n" + "".join(
        ",".join(f'"{c}"' if ("," in c or '"' in c) and c != 'q"' else c for c in row[:4])
        + row[4] for row in rows)
    path = tmp_path / "jobs.csv"
    path.write_text(text, encoding="utf-8", newline="")
    assert read(path, True, monkeypatch) == read(path, False, monkeypatch)
