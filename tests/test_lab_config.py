"""RunConfig (evalstop.lab.config): checks, names, round trip. No torch needed."""

import pytest

from evalstop.lab.config import RunConfig
from evalstop.lab.generate import grid


def test_run_id_and_round_trip():
    cfg = RunConfig(pairs=300, beta=0.05, seed=3)
    assert cfg.run_id == "p300-b0.05-s3"
    assert RunConfig.from_dict(cfg.to_dict()) == cfg
    assert cfg.world_draw == 3 and RunConfig(pairs=1, beta=0, seed=3, world_seed=7).world_draw == 7


@pytest.mark.parametrize("kwargs, match", [
    ({"pairs": 0}, "pairs"),
    ({"pairs": 2.5}, "pairs"),
    ({"beta": -0.1}, "beta"),
    ({"beta": float("nan")}, "beta"),
    ({"seed": -1}, "seed"),
    ({"steps": 25}, "multiple of eval_every"),
    ({"steps": 20}, "at least 4 evals"),
    ({"lr": 0.0}, "lr"),
    ({"group": 1}, "group"),
    ({"d_model": 30, "n_heads": 4}, "divisible"),
    ({"world_seed": -2}, "world_seed"),
])
def test_bad_values_are_value_errors_naming_them(kwargs, match):
    base = {"pairs": 100, "beta": 0.0, "seed": 0}
    with pytest.raises(ValueError, match=match):
        RunConfig(**{**base, **kwargs})


def test_unknown_key_in_a_saved_config():
    with pytest.raises(ValueError, match="unknown run config key"):
        RunConfig.from_dict({"pairs": 1, "beta": 0.0, "seed": 0, "bogus": 1})


def test_grid_order_and_overrides():
    g = grid((100, 1000), (0.0, 0.1), range(2), steps=30)
    assert [c.run_id for c in g[:3]] == ["p100-b0-s0", "p100-b0-s1", "p100-b0.1-s0"]
    assert len(g) == 8 and all(c.steps == 30 for c in g)
