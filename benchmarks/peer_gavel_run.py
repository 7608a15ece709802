"""Run Gavel's simulator with its FIFO policy on one converted trace (run by bench_peers.py).

    PYTHON peer_gavel_run.py SCHEDULER_DIR TRACE THROUGHPUTS GPUS ROUND_S OUT.json

Runs under the peer's own Python (Gavel's requirements; no evalstop). SCHEDULER_DIR is a
checkout's ``scheduler/`` (with ``make rpc_stubs`` done). This is the ``main`` of Gavel's
``scripts/drivers/simulate_scheduler_with_trace.py`` (policy ``fifo``, solver ECOS, seed 0,
GPUS V100s, one GPU per server, rounds of ROUND_S seconds) plus one thing it does not
record: the time each job is first placed on workers. ``_schedule_jobs_on_workers`` is
wrapped (not changed) to note, at the round a job first appears in, the scheduler's
current time. OUT.json gets ``{"start": {index: s}, "finish": {index: s}}``, index being
the job's line in TRACE (Gavel's job id).
"""

import json
import sys


def main(sched_dir, trace, throughputs, gpus, round_s, out):
    sys.path.insert(0, sched_dir)
    import scheduler
    import utils

    jobs, arrivals = utils.parse_trace(trace)
    policy = utils.get_policy("fifo", solver="ECOS", seed=0)
    sched = scheduler.Scheduler(policy, throughputs_file=throughputs, simulate=True, seed=0,
                                time_per_iteration=int(round_s))
    start = {}
    place = sched._schedule_jobs_on_workers

    def placed_and_noted():
        scheduled = place()
        now = sched.get_current_timestamp()
        for job_id in scheduled:
            for single in job_id.singletons():
                start.setdefault(single[0], now)
        return scheduled

    sched._schedule_jobs_on_workers = placed_and_noted
    sched.simulate({"v100": int(gpus), "p100": 0, "k80": 0}, arrivals, jobs,
                   num_gpus_per_server={"v100": 1, "p100": 1, "k80": 1})
    sched.get_average_jct()
    finish = {k[0]: v for k, v in sched._per_job_latest_timestamps.items()}
    with open(out, "w") as fh:
        json.dump({"start": start, "finish": finish}, fh)
    sched.shutdown()


if __name__ == "__main__":
    main(*sys.argv[1:7])
