"""Bytes the state file spends per stored eval, as SQLite lays it out: the figure behind
the per-tenant storage quota's reservation (``quota.EVAL_ROW_BYTES``).

Fills the ``evals`` table of a fresh state file with JOBS jobs x EVALS evals for a few
name lengths, then prints the file's growth per row, less the names' own bytes.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile

from evalstop.integrations.watch.quota import eval_row_bytes
from evalstop.integrations.watch.store import StateStore

JOBS, EVALS = 50, 2000


def per_row(name_len: int) -> float:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "s.db")
        store = StateStore(path)
        store.close()
        empty = os.path.getsize(path)
        import sqlite3

        con = sqlite3.connect(path)
        pad = "x" * max(0, name_len - 10)
        with con:
            for j in range(JOBS):
                src, job = f"/r/{pad}{j:06d}.jsonl", f"j{pad}{j:06d}"
                con.executemany("INSERT INTO evals VALUES (?,?,?,?)",
                                ((src, job, s, 0.5) for s in range(EVALS)))
        con.execute("VACUUM")
        con.close()
        grown = os.path.getsize(path) - empty
        names = len(src) + len(job)
        return grown / (JOBS * EVALS) - names, grown / (JOBS * EVALS), eval_row_bytes(src, job)


def main() -> int:
    out = {}
    for n in (16, 64, 256, 1024):
        over, row, reserved = per_row(n)
        out[f"overhead_bytes_names_{n}"] = round(over, 1)
        out[f"row_bytes_names_{n}"] = round(row, 1)
        out[f"reserved_bytes_names_{n}"] = reserved
        assert row <= reserved, f"names of {n}: {row:.0f} bytes stored, {reserved} reserved"

    out["rows"] = JOBS * EVALS
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
