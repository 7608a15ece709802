"""The MLflow source's time budget against a store whose requests are slow: a fake tracking
client on a fake clock (each request moves the clock by its cost), so a page that takes
the server 1.5 s costs no real time and the test cannot pass by the machine being fast.
The real server's floods: tests/test_watch_mlflow.py and benchmarks/bench_watch_mlflow.py."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("mlflow")
from mlflow.store.entities.paged_list import PagedList  # noqa: E402
from mlflow.utils.search_utils import SearchUtils  # noqa: E402

from evalstop.integrations.watch.mlflow_budget import MlflowBudget  # noqa: E402
from evalstop.integrations.watch.mlflow_source import MlflowSource  # noqa: E402
from evalstop.integrations.watch.policy import PolicyTenancy, load_policy  # noqa: E402

INTERVAL = 1.0  # the controller's poll interval the bound is in


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


class FakeTracking:
    """Experiments, runs and histories of (step, timestamp ms, value); each request costs
    ``cost[run]`` seconds for a history page of that run, ``LIST`` for a listing."""

    LIST = 0.01

    def __init__(self, clock: Clock, runs: dict[str, str], cost: dict[str, float],
                 experiments: list[str] = (), list_page_cost: float = LIST) -> None:
        self.clock, self.runs, self.cost = clock, runs, cost  # runs: run id -> experiment
        self.experiments = sorted({*runs.values(), *experiments}, key=int)
        self.list_page_cost = list_page_cost
        self.history: dict[str, list[tuple[int, int, float]]] = {r: [] for r in runs}
        self.pages: dict[str, int] = dict.fromkeys(runs, 0)
        self.gate: dict[str, threading.Event] = {}  # run -> its pages wait for this (really)
        self._tracking_client = SimpleNamespace(store=self)

    def log(self, run: str, step: int, value: float) -> None:
        self.history[run].append((step, int(self.clock.t * 1000), value))

    def search_experiments(self, max_results, page_token=None):
        self.clock.t += self.list_page_cost
        offset = int(page_token or 0)
        exps = self.experiments[offset:offset + max_results]
        more = offset + max_results < len(self.experiments)
        return PagedList([SimpleNamespace(experiment_id=e, name=f"e{e}") for e in exps],
                         str(offset + max_results) if more else None)

    def search_runs(self, experiment_ids, max_results, order_by, page_token=None):
        self.clock.t += self.LIST
        out = []
        for run, exp in sorted(self.runs.items()):
            if exp in experiment_ids:
                h = self.history[run]
                latest = [SimpleNamespace(key="eval", step=h[-1][0], timestamp=h[-1][1])] if h else []
                out.append(SimpleNamespace(
                    info=SimpleNamespace(run_id=run, experiment_id=exp, status="RUNNING"),
                    data=SimpleNamespace(_metric_objs=latest, tags={})))
        return PagedList(out, None)

    def get_metric_history(self, run_id, metric, max_results, page_token=None):
        if run_id in self.gate:
            assert self.gate[run_id].wait(30)
        self.clock.t += self.cost[run_id]
        self.pages[run_id] += 1
        offset = SearchUtils.parse_start_offset_from_page_token(page_token)
        h = sorted(self.history[run_id], key=lambda p: (p[1], p[0]))
        page = [SimpleNamespace(step=s, timestamp=ts, value=v)
                for s, ts, v in h[offset:offset + max_results]]
        more = offset + max_results < len(h)
        return PagedList(page, SearchUtils.create_page_token(offset + max_results) if more
                         else None)

    def set_tag(self, *args) -> None:
        self.clock.t += self.LIST


def _source(tmp_path, tracking, clock, budget=None, flood_experiments=("1",), wait=None):
    path = tmp_path / "policy.toml"
    path.write_text('[defaults]\ndetector = "evalstop:k=1000"\n'
                    f'[tenants.flood]\nmlflow_experiments = {json.dumps(flood_experiments)}\n'
                    '[tenants.quiet]\nmlflow_experiments = ["2"]\n')
    return MlflowSource("http://127.0.0.1:1", tenancy=PolicyTenancy(load_policy(str(path))),
                        client=tracking, budget=budget or MlflowBudget(), wait=wait,
                        clock=clock)


def _flood_beside_quiet(tmp_path, page_cost: float, seconds: float = 120.0,
                        experiments: int = 0, list_page_cost: float = FakeTracking.LIST,
                        quiet_cost: float = 0.01, cut: list | None = None):
    """Tenant flood: one run with a 200,000-point history, each page of which costs
    ``page_cost`` s; tenant quiet: 5 runs, one point each every 0.5 s, pages of
    ``quiet_cost`` s (``cut``: each poll's cut tenants are appended to it).
    Polls follow each other at once (the flood always has a backlog), as the controller
    makes them; ``experiments`` more empty ones are the flood's, listed a page of 1,000
    per ``list_page_cost`` s. Returns (quiet lags, flood points fed by each poll, seconds
    the flood's pages took, seconds in all, experiments known at each poll)."""
    clock = Clock()
    quiet = [f"q{i}" for i in range(5)]
    more = [str(e) for e in range(3, 3 + experiments)]
    tracking = FakeTracking(clock, {"f": "1", **dict.fromkeys(quiet, "2")},
                            {"f": page_cost, **dict.fromkeys(quiet, quiet_cost)}, more,
                            list_page_cost)
    tracking.history["f"] = [(s, s, 0.5) for s in range(200_000)]
    src = _source(tmp_path, tracking, clock, flood_experiments=["1", *more])
    first = src.poll()  # the first polls: what is there before the clock starts
    while src._listed is None:  # the first listing, a share a poll: polled again at once
        assert first.pending and not first.records
        first = src.poll()
    t0 = end = clock.t
    step, lags, flood_fed, known = 0, [], [], []
    while clock.t < t0 + seconds:
        while t0 + (step + 1) * 0.5 <= clock.t:  # the quiet points logged meanwhile
            step += 1
            for q in quiet:
                tracking.history[q].append((step, int((t0 + step * 0.5) * 1000), 0.1))
        batch = src.poll()
        clock.t += 0.05  # the controller's own work between two polls
        end = clock.t
        lags += [end - i.rec.time for i in batch.records if i.tenant == "quiet"]
        flood_fed.append(sum(i.tenant == "flood" for i in batch.records))
        if cut is not None:
            cut.append(set(batch.over_budget))
        known.append(len(src._listed[1]))
    return np.array(lags), flood_fed, tracking.pages["f"] * page_cost, end - t0, known


def test_a_slow_history_page_does_not_hold_up_the_quiet_tenant(tmp_path):
    """Each page of the flood's history takes the server 1.5 s (it sorts the whole history
    for each page): read on every poll, every quiet point would wait for it twice (p95
    about 3 s). It is read after the quiet tenant, whose points are handed over first, and
    its overrun is owed and repaid over the next polls, in which it sits out:
    the quiet tenant's p95 lag stays within 2 poll intervals, and the flood still moves."""
    lags, flood_fed, flood_s, wall, _ = _flood_beside_quiet(tmp_path, page_cost=1.5)
    assert len(lags) >= 5 * 2 * 110  # the quiet points of the 120 s, fed as they came
    assert np.percentile(lags, 95) <= 2 * INTERVAL
    assert lags.max() <= 1.5 + 0.5  # at most one flood page and a quiet poll
    b = MlflowBudget()
    # A page, then its overrun (1.5 s less the 0.4 s share) repaid at `repay` s a second.
    cycle = 1.5 + (1.5 - b.seconds) / b.repay
    assert flood_s <= (wall / cycle + 1) * 1.5
    # Still read, a page a cycle (plus the quiet tenant's reads and the polls' steps).
    assert sum(flood_fed) >= (wall / (cycle + 0.2) - 1) * b.page


def test_a_tenant_within_its_share_owes_nothing(tmp_path):
    """Pages that fit the share (0.05 s each) are read on every poll, as before: the debt
    is for overruns only."""
    lags, flood_fed, flood_s, wall, _ = _flood_beside_quiet(tmp_path, page_cost=0.05,
                                                            seconds=30.0)
    b = MlflowBudget()
    first = next(i for i, n in enumerate(flood_fed) if n)  # the first poll may repay 0.01 s
    busy = flood_fed[first:flood_fed.index(0, first)]  # until its 200,000 points are read
    assert sum(busy) >= 150_000
    assert all(n >= (b.seconds / 0.05 - 1) * b.page for n in busy[:-1])  # ~7 pages each
    assert np.percentile(lags, 95) <= 2 * INTERVAL


def test_a_tenant_slower_than_a_whole_poll_still_moves(tmp_path):
    """Every tenant's first page is read whatever it costs, and debt never stops a tenant
    for long: a flood whose every page costs 5 s (past the whole poll's budget) still
    moves, at a page every ~5 / repay s."""
    lags, flood_fed, flood_s, wall, _ = _flood_beside_quiet(tmp_path, page_cost=5.0,
                                                            seconds=120.0)
    b = MlflowBudget()
    assert sum(flood_fed) >= (wall / (5.0 + (5.0 - b.seconds) / b.repay) - 1) * b.page
    assert np.percentile(lags, 95) <= 5.0 + 0.5  # one such page at most: no second wait
    assert np.median(lags) <= INTERVAL


def test_a_small_reading_slowed_by_the_server_finishes_in_its_poll(tmp_path):
    """The server is slow for every run's history (0.1 s a page: MLflow's SQL store finds a
    run's points of a metric through the index on its name, which the flood's 200,000
    points fill): the quiet tenant's listing and 5 pages take 0.51 s, past its 0.4 s share.
    Its reading is small (one page a run), so it finishes in the poll that found it, its
    overrun owed; cut at its share, its last run would wait a whole poll more (the flood's
    share of pages first). The flood, whose backlog is never read past its share, still
    gets its share of every poll."""
    cut: list[set] = []
    lags, flood_fed, flood_s, wall, _ = _flood_beside_quiet(
        tmp_path, page_cost=0.1, seconds=60.0, quiet_cost=0.1, cut=cut)
    b = MlflowBudget()
    assert len(lags) >= 5 * 2 * 55
    assert not any("quiet" in c for c in cut)  # every poll read the quiet tenant whole
    # A poll: the quiet tenant whole, the flood's share (its last page may end past it), the
    # controller's step. A point is fed by the end of the poll after the one it was logged
    # in (here records count from the end of their poll); cut, it waited 2.59 s, p95 2.27 s.
    poll = FakeTracking.LIST + 5 * 0.1 + b.seconds + 0.1 + 0.05
    assert lags.max() <= 2 * poll
    assert np.percentile(lags, 95) <= 2 * INTERVAL
    busy = flood_fed[1:flood_fed.index(0, 1)] if 0 in flood_fed[1:] else flood_fed[1:]
    assert sum(flood_fed) >= 150_000  # until its 200,000 points are read, ~4 pages a poll
    assert all(n >= (b.seconds / 0.1 - 1) * b.page for n in busy[:-1])


def test_a_long_listing_of_experiments_is_spread_over_polls(tmp_path):
    """The flood owns 30,000 empty experiments, and listing a page of 1,000 takes the
    server 0.2 s: a whole listing (6 s) every 10 s would hold up the quiet tenant's polls.
    It is read a share a poll, the last whole listing in use meanwhile (every experiment
    known at every poll), and the quiet tenant's p95 lag stays within 2 poll intervals."""
    lags, flood_fed, flood_s, wall, known = _flood_beside_quiet(
        tmp_path, page_cost=0.05, seconds=60.0, experiments=30_000, list_page_cost=0.2)
    assert set(known) == {30_002}
    assert len(lags) >= 5 * 2 * 55
    assert np.percentile(lags, 95) <= 2 * INTERVAL
    assert lags.max() <= 2 * INTERVAL


def test_the_others_are_handed_over_before_a_slow_tenant_is_read(tmp_path):
    """A tenant whose requests were slow in its last reading is read after the others, and
    what they read is handed to the controller at once, while its request still runs: here
    the flood's page hangs (really) until released, and the quiet tenant's new points come
    back from the controller's poll without waiting for it. The quiet tenant's own reading
    runs past its share too (6 runs, 0.1 s a page): its requests are quick, so it still goes
    first."""
    clock = Clock()
    quiet = [f"q{i}" for i in range(6)]
    tracking = FakeTracking(clock, {"f": "1", **dict.fromkeys(quiet, "2")},
                            {"f": 1.5, **dict.fromkeys(quiet, 0.1)})
    tracking.history["f"] = [(s, s, 0.5) for s in range(5000)]
    for q in quiet:
        tracking.log(q, 1, 0.1)
    src = _source(tmp_path, tracking, clock, wait=5.0)
    first = more = src.poll()  # the flood's first page runs 1.1 s past its share
    while more.pending:  # (handed over as soon as read: the poll may still be running)
        more = src.poll()
        first.records += more.records
    assert {i.tenant for i in first.records} == {"flood", "quiet"}
    assert src._longest == {"flood": pytest.approx(1.5), "quiet": pytest.approx(0.1)}
    assert set(src._owed) == {"flood"}  # the quiet tenant's requests were each quick
    clock.t += 10.0  # its debt repaid: it is read again, but last
    for q in quiet:
        tracking.log(q, 2, 0.1)
    tracking.gate["f"] = threading.Event()
    started = time.monotonic()
    batch = src.poll()
    assert time.monotonic() - started < 4.0  # not the 5 s wait: woken by the hand-over
    assert batch.records and {i.tenant for i in batch.records} == {"quiet"}
    assert batch.pending and any(k.endswith("#q0") for k in batch.offsets)
    tracking.gate["f"].set()
    rest = more = src.poll()
    while more.pending:
        more = src.poll()
        rest.records += more.records
    assert {i.tenant for i in rest.records} == {"flood"}
    assert min(i.rec.step for i in rest.records) == 1000  # from where its last page ended


def test_repay_is_checked():
    with pytest.raises(ValueError, match="repay must be > 0"):
        MlflowBudget(repay=0)


def _one_poll(src):
    batch = more = src.poll()
    while more.pending:
        more = src.poll()
        batch.records += more.records
    return batch


@pytest.mark.parametrize("runs", [10, 30])
def test_only_a_small_reading_goes_past_its_share_and_it_is_owed(tmp_path, runs):
    """Tenant flood has ``runs`` runs with a point each, 0.1 s a page. Ten runs are a small
    reading: past its 0.4 s share it reads first pages for up to ``finish`` s more (8 of
    them, not all 10), and the overrun is owed: right after, it may finish for only what is
    repaid. Thirty runs (past ``finish_runs``) are not small: cut at its share, as before."""
    clock = Clock()
    names = [f"f{i:02d}" for i in range(runs)]
    tracking = FakeTracking(clock, {**dict.fromkeys(names, "1"), "q": "2"},
                            {**dict.fromkeys(names, 0.1), "q": 0.01})
    for r in [*names, "q"]:
        tracking.log(r, 1, 0.5)
    src = _source(tmp_path, tracking, clock)
    b = MlflowBudget()
    first = _one_poll(src)
    fed = {i.rec.job for i in first.records if i.tenant == "flood"}
    assert {i.rec.job for i in first.records if i.tenant == "quiet"} == {"q"}
    if runs > b.finish_runs:
        assert len(fed) == b.seconds / 0.1 and "flood" in first.over_budget
        assert "flood" not in src._finished
        return
    assert len(fed) == round((b.seconds + b.finish) / 0.1)  # 8 pages of 0.1 s
    assert src._finished["flood"][0] == pytest.approx(b.finish + 0.01)  # and the listing
    clock.t += 0.2  # 0.1 s of the overrun repaid: about 0.1 s more than its share next poll
    for r in names:
        tracking.log(r, 2, 0.5)
    again = _one_poll(src)
    n = len({i.rec.job for i in again.records if i.tenant == "flood"})
    assert b.seconds / 0.1 <= n <= b.seconds / 0.1 + 1  # not 8 again: 0.31 s still owed
