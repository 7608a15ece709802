"""What the stops of one simulated run cost the tenants and saved the platform.

``metrics.harm`` (the shared definition) applied to a (Workload, SimResult) pair: the true
curve is ``Workload.eval_true``; a stopped job stops at ``SimResult.stop_eval`` and hands
back ``kept_eval``; a job not stopped runs to its last eval.

* ``harmful`` / ``harmful_rate``: non-hacking jobs whose stop cost more than 2% of their
  gain against running to the end (count; share of all non-hacking jobs);
* ``regret_healthy_mean`` / ``regret_hacking_mean``: mean regret (quality lost against
  running to the end, as a share of the job's gain; negative = the stop saved quality)
  over non-hacking / hacking jobs, jobs not stopped counting 0;
* ``compute_saved``: share of all jobs' eval intervals not run;
* ``tenant_harmful`` / ``tenant_harmful_rate``: the same judged from the observed evals
  alone (``metrics.tenant_harm``, ``Workload.eval_obs``): non-hacking jobs stopped whose
  delivered checkpoint's smoothed eval level is more than 5% of their gain below the mean
  eval of their last tenth. What a platform can measure on real jobs, whose true quality
  it never sees; in the simulator ``harmful_rate`` is the truer figure.

The keys are per seed; ``experiments.aggregate`` gives them their cross-seed means and CIs
like every other metric.
"""

from __future__ import annotations

import numpy as np

from evalstop.metrics._checks import check_pair
from evalstop.metrics.harm import harm
from evalstop.metrics.tenant_harm import tenant_harm
from evalstop.sim.result import SimResult
from evalstop.workload.model import Workload

KEYS = ("harmful", "harmful_rate", "regret_healthy_mean", "regret_hacking_mean",
        "compute_saved", "tenant_harmful", "tenant_harmful_rate")


def stop_cost_metrics(workload: Workload, result: SimResult) -> dict[str, float]:
    check_pair(workload, result)
    stopped = np.asarray(result.stopped, bool)
    stop = np.asarray(result.stop_eval, np.int64)
    # A stopped job without a recorded best checkpoint keeps the checkpoint it stopped at.
    kept = np.where(np.asarray(result.kept_eval, np.int64) < 0, stop, result.kept_eval)
    s = harm(workload.eval_true, stopped, stop, kept, workload.hacking).summary()
    s.update(tenant_harm(workload.eval_obs, stopped, kept, workload.hacking).summary())
    return {k: s[k] for k in KEYS}
