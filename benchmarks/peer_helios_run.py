"""Run Helios's FIFO simulator on one converted job list (run by bench_peers.py).

    PYTHON peer_helios_run.py QSSF_DIR DATA_DIR PLACER LOG_DIR

Runs under the peer's own Python (pandas, numpy; no evalstop). QSSF_DIR is a checkout's
``framework/QSSF Service``; DATA_DIR holds what bench_peers.write_helios wrote:
``cluster_log.csv`` (Helios's columns, submit_time already in seconds from the first
submit) and ``vc_dict_homo.pkl`` (one virtual cluster of G/8 nodes of 8 GPUs).

This does what Helios's ``simulator.py`` does for one VC and one policy, with Helios's
own functions (``utils.trace_parser``, ``cluster.Cluster``, ``utils.simulate_vc``, which
writes ``LOG_DIR/VC/fifo_PLACER_VC_log.csv`` with each job's start_time). It skips three
steps of ``simulator.py`` that would change the jobs or cannot run for FIFO alone:
``trace_philly_process``'s window (it keeps only 2017-10-01..11-30 and renumbers time
from it), its ``multiprocessing.Pool`` over VCs (there is one), and ``cluster_analysis``
(it reads the logs of all four policies).
"""

import os
import sys


def main(qssf_dir, data_dir, placer, log_dir):
    sys.path.insert(0, qssf_dir)
    import cluster
    import pandas as pd
    import utils

    vc_dict = pd.read_pickle(os.path.join(data_dir, "vc_dict_homo.pkl"))
    df = pd.read_csv(os.path.join(data_dir, "cluster_log.csv"))
    # The columns trace_philly_process adds before its window, with the same values.
    df["remain"] = df["duration"]
    df["start_time"] = sys.maxsize
    df["end_time"] = sys.maxsize
    df["ckpt_times"] = 0
    df["queue"] = 0
    df["jct"] = 0
    df["status"] = None
    df.sort_values(by="submit_time", inplace=True, kind="stable")
    df.reset_index(inplace=True, drop=True)
    trace = utils.trace_parser(df)
    clu = cluster.Cluster(vc_dict, 8, 96)
    os.makedirs(log_dir, exist_ok=True)
    logger = utils.logger_init(file=os.path.join(log_dir, f"fifo_{placer}"))
    for vc in clu.vc_list:
        utils.simulate_vc(trace, vc, placer, log_dir, "fifo", logger, 0)


if __name__ == "__main__":
    main(*sys.argv[1:5])
