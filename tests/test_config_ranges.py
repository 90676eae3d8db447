"""Every number a config holds has an allowed range, checked before anything is written; YAML
keys given twice and grid values that are one number are refused (issue #41)."""
from __future__ import annotations

import dataclasses
import math
import typing

import pytest

from imf.config import Config, load_config, load_preset_dict
from imf.config.ranges import RANGES, Range
from imf.errors import ConfigError, SweepError
from imf.sweep.plan import parse_grids
from imf.typed import kind_of
from imf_process import run_imf

NUMBERS = (int, float)


def numeric_fields(cls: type = Config, prefix: str = "") -> dict[str, typing.Any]:
    """Every dotted key of the schema that holds a number (or a list of numbers), by walking
    the dataclasses themselves: a field added later is found here without anyone listing it."""
    found: dict[str, typing.Any] = {}
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            found.update(numeric_fields(tp, f"{prefix}{f.name}."))
            continue
        kind = kind_of(tp)
        base = kind.item.base if kind.base is list and kind.item is not None else kind.base
        if base in NUMBERS:
            found[f"{prefix}{f.name}"] = kind
    return found


def test_every_numeric_field_of_every_section_declares_its_range():
    fields = numeric_fields()
    sections = {key.split(".")[0] for key in fields}
    assert sections == {"policy", "objective", "data", "training", "eval", "logging", "sweep"}
    missing = sorted(set(fields) - set(RANGES))
    assert not missing, f"numeric config fields without a declared range in imf/config/ranges.py: {missing}"
    assert not sorted(set(RANGES) - set(fields)), "a range for a key the schema does not have"


def test_every_default_and_shipped_preset_is_inside_its_ranges():
    load_config(None)  # the dataclass defaults
    for name in ("smoke", "demo", "pusht_image_cpu", "pusht_lowdim_cpu", "pusht_image_imf",
                 "pusht_lowdim_imf", "pusht_image_imf_fullattn"):
        load_config(name)


def _outside(rng: Range, is_int: bool) -> list[float]:
    """Values just outside ``rng`` (and, for floats, the non-finite ones)."""
    step = 1 if is_int else 1e-9
    bad: list[float] = []
    if rng.low is not None:
        bad.append(rng.low if rng.low_open else rng.low - step)
    if rng.high is not None:
        bad.append(rng.high if rng.high_open else rng.high + step)
    return bad + ([] if is_int else [math.nan, math.inf, -math.inf])


@pytest.mark.parametrize("key", sorted(numeric_fields()))
def test_each_numeric_field_refuses_values_outside_its_range(key):
    kind = numeric_fields()[key]
    is_list = kind.base is list
    is_int = (kind.item.base if is_list else kind.base) is int
    rng = RANGES[key]
    assert rng.low is not None or rng.high is not None, f"{key}: a range must bound something"
    for bad in _outside(rng, is_int):
        value = [bad, bad] if is_list else bad
        text = f"{key}=[{bad},{bad}]" if is_list else f"{key}={bad}"
        with pytest.raises(ConfigError) as info:
            load_config(None, [text])
        message = str(info.value)
        assert f"config key '{key}': " in message and rng.describe() in message, message
        assert str(bad) in message or str(value) in message, message
        assert "\n" not in message


@pytest.mark.parametrize("override, message", [
    ("training.lr=nan", "config key 'training.lr': must be a finite number >= 0, got nan"),
    ("training.lr=inf", "config key 'training.lr': must be a finite number >= 0, got inf"),
    ("training.grad_clip=-1", "config key 'training.grad_clip': must be > 0, got -1.0"),
    ("training.max_train_steps=-3", "config key 'training.max_train_steps': must be >= 1 or null, got -3"),
    ("data.demo_episodes=-2", "config key 'data.demo_episodes': must be >= 1, got -2"),
    ("data.expert_noise=-0.5", "config key 'data.expert_noise': must be >= 0 world units, got -0.5"),
    ("data.expert_finish=0", "config key 'data.expert_finish': must be in (0, 1] or null, got 0.0"),
    ("data.expert_pace=0", "config key 'data.expert_pace': must be in (0, 4], got 0.0"),
    ("data.expert_pace=5", "config key 'data.expert_pace': must be in (0, 4], got 5.0"),
    ("data.val_ratio=1", "config key 'data.val_ratio': must be in [0, 1), got 1.0"),
    ("training.time_budget_s=0", "config key 'training.time_budget_s': must be > 0 or null, got 0.0"),
    ("training.betas=[0.9,1.5]", "config key 'training.betas': each item must be in [0, 1), got [0.9, 1.5]"),
    ("policy.encoder_resolution=4", "config key 'policy.encoder_resolution': must be >= 8 pixels or null, got 4"),
    ("sweep.stall_timeout=-inf", "config key 'sweep.stall_timeout': must be a finite number > 0, got -inf"),
])
def test_the_message_names_the_key_the_value_and_the_range(override, message):
    with pytest.raises(ConfigError) as info:
        load_config("smoke", [override])
    assert str(info.value) == message


def test_optional_numbers_take_null():
    cfg = load_config("smoke", ["training.max_train_steps=null", "training.patience=none",
                                "data.max_train_episodes=null", "training.time_budget_s=null"])
    assert cfg.training.max_train_steps is None and cfg.training.patience is None


def test_a_saved_config_is_checked_again_when_read(tmp_path):
    from imf.config import load_resolved
    path = tmp_path / "config.yaml"
    cfg = load_config("smoke")
    cfg.training.grad_clip = -1.0
    cfg.save(path)
    with pytest.raises(ConfigError, match="'training.grad_clip': must be > 0, got -1.0"):
        load_resolved(path)


# --- a YAML key given twice in one mapping ------------------------------------------------------

def test_a_key_twice_in_a_user_yaml_is_refused_with_file_line_and_key(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("base: smoke\ntraining:\n  lr: 0.001\n  batch_size: 8\n  lr: 0.01\n")
    with pytest.raises(ConfigError) as info:
        load_config(str(path))
    assert str(info.value) == (f"config file {path}, line 5: key 'lr' is given twice in one mapping "
                               f"(first at line 3); keep one")


def test_a_section_twice_is_refused_and_the_same_key_in_two_sections_is_not(tmp_path):
    path = tmp_path / "two.yaml"
    path.write_text("base: smoke\ntraining:\n  seed: 1\neval:\n  n_test: 2\ntraining:\n  lr: 0.1\n")
    with pytest.raises(ConfigError, match=r"line 6: key 'training' is given twice .*first at line 2"):
        load_config(str(path))
    path.write_text("base: smoke\ntraining:\n  seed: 1\ndata:\n  split_seed: 1\neval:\n  max_steps: 5\n")
    cfg = load_config(str(path))
    assert (cfg.training.seed, cfg.data.split_seed, cfg.eval.max_steps) == (1, 1, 5)


def test_a_key_twice_in_a_base_preset_is_refused(tmp_path):
    (tmp_path / "parent.yaml").write_text("base: smoke\npolicy:\n  n_emb: 32\n  n_emb: 64\n")
    (tmp_path / "child.yaml").write_text("base: parent.yaml\ntraining:\n  lr: 0.001\n")
    with pytest.raises(ConfigError, match=r"parent.yaml, line 4: key 'n_emb' is given twice"):
        load_config(str(tmp_path / "child.yaml"))


def test_yaml_merge_keys_still_override(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text("shared: &d {n_emb: 32, n_head: 4}\npolicy:\n  <<: *d\n  n_emb: 64\n")
    assert load_preset_dict(str(path))["policy"] == {"n_emb": 64, "n_head": 4}


def test_a_key_twice_in_json_overrides_is_refused():
    with pytest.raises(ConfigError, match=r"--overrides: key 'lr' is given twice in one object"):
        load_config("smoke", json_overrides='{"training": {"lr": 0.1, "lr": 0.2}}')


# --- grid values that are one number ------------------------------------------------------------

@pytest.mark.parametrize("grid, message", [
    ("training.lr=1e-4,0.0001", "--grid 'training.lr=1e-4,0.0001': 1e-4 and 0.0001 are one value of "
                                "training.lr (0.0001); give each value once"),
    ("training.lr=3e-4,1e-4,0.00030", "--grid 'training.lr=3e-4,1e-4,0.00030': 3e-4 and 0.00030 are one "
                                      "value of training.lr (0.0003); give each value once"),
    ("policy.n_emb=64,64.0", "--grid 'policy.n_emb=64,64.0': 64 and 64.0 are one value of policy.n_emb (64); "
                             "give each value once"),
    ("64,128,0128x2", "--grid '64,128,0128x2': 128 and 0128 are one value of policy.n_emb (128); give each "
                      "value once"),
    ("training.use_ema=true,yes", "--grid 'training.use_ema=true,yes': true and yes are one value of "
                                  "training.use_ema (True); give each value once"),
    ("seed=1,01", "--grid 'seed=1,01': 1 and 01 are one value of training.seed (1); give each value once"),
])
def test_grid_values_equal_after_coercion_are_refused(grid, message):
    with pytest.raises(SweepError) as info:
        parse_grids([grid])
    assert str(info.value) == message


def test_distinct_grid_values_pass_and_keep_their_spelling():
    assert parse_grids(["training.lr=1e-4,3e-4", "64,128x2"]) == [
        ("training.lr", ["1e-4", "3e-4"]), ("policy.n_emb", ["64", "128"]), ("policy.n_layer", ["2"])]
    assert parse_grids(["objective.options.time_mu=-0.4,0.0"])[0][1] == ["-0.4", "0.0"]


# --- through the command line: one line, exit 2, nothing made ----------------------------------

@pytest.mark.slow  # starts imf as a process
def test_trial_with_a_bad_number_is_one_line_and_makes_no_folder(tmp_path):
    cache = tmp_path / "cache"
    for override, line in (
            ("training.lr=nan", "imf: error: config key 'training.lr': must be a finite number >= 0, got nan"),
            ("data.demo_episodes=-3", "imf: error: config key 'data.demo_episodes': must be >= 1, got -3")):
        out_dir = tmp_path / "X"
        out = run_imf("trial", "smoke", override, f"data.cache_dir={cache}", "--out", str(out_dir),
                      cwd=tmp_path)
        assert out.returncode == 2, out.stderr
        assert out.stderr.splitlines() == [line]
        assert not out_dir.exists() and not cache.exists()


@pytest.mark.slow  # starts imf as a process
def test_sweep_dry_run_refuses_bad_numbers_and_duplicate_grid_values(tmp_path):
    cases = (
        (["--grid", "training.grad_clip=1,-1"], "imf: error: config key 'training.grad_clip': must be > 0, got -1.0"),
        (["--grid", "training.lr=1e-4,0.0001"], "imf: error: --grid 'training.lr=1e-4,0.0001': 1e-4 and 0.0001 "
                                                "are one value of training.lr (0.0001); give each value once"),
        (["training.max_train_steps=-3"], "imf: error: config key 'training.max_train_steps': must be >= 1 or "
                                          "null, got -3"))
    for args, line in cases:
        out = run_imf("sweep", "smoke", *args, "--queue", "local:cpu", "--name", "bad", "--out",
                      str(tmp_path / "runs"), "--dry-run", cwd=tmp_path)
        assert out.returncode == 2, out.stdout + out.stderr
        assert out.stderr.splitlines() == [line]
        assert not (tmp_path / "runs").exists()


def test_a_sweeps_seed_outside_the_seed_range_is_refused_at_planning(tmp_path):
    from imf.sweep.plan import build_trials
    for kwargs in ({"seed": -5}, {"seeds": [1, 2 ** 32]}):
        with pytest.raises(ConfigError, match=r"config key 'training.seed': must be from 0 to 4294967295"):
            build_trials("s", "smoke", ["32x1"], [], **kwargs)


def test_a_key_twice_in_a_hosts_file_is_refused(tmp_path):
    from imf.sweep.queues import load_hosts
    path = tmp_path / "hosts.yaml"
    path.write_text("hosts:\n  box:\n    workdir: /a\n    workdir: /b\n")
    with pytest.raises(SweepError) as info:
        load_hosts(path)
    assert str(info.value) == (f"--hosts {path}: not valid YAML (line 4: key 'workdir' is given twice in one "
                               f"mapping (first at line 3))")


@pytest.mark.parametrize("override, key", [
    ("objective.options.time_mu=nan", "objective.options.time_mu"),
    ("objective.options.time_sigma=inf", "objective.options.time_sigma"),
    ("objective.options.adaptive_c=-inf", "objective.options.adaptive_c"),
])
def test_a_plugins_float_option_is_never_nan_or_inf(override, key):
    from imf.registry.options import fill_options
    cfg = load_config("smoke", [override])
    with pytest.raises(ConfigError) as info:
        fill_options(cfg)
    assert str(info.value) == f"config key '{key}': must be a finite number, got {override.split('=')[1]}"


def test_a_demo_recipe_beside_a_data_set_is_refused():
    """data.expert_noise, data.expert_finish and data.expert_pace shape the scripted demos: with
    data.path there are none."""
    for key, value in (("data.expert_noise", "5"), ("data.expert_finish", "0.98"), ("data.expert_pace", "2")):
        with pytest.raises(ConfigError) as info:
            load_config("smoke", ["data.path=/data/pusht.zarr", f"{key}={value}"])
        assert str(info.value).startswith(f"config key '{key}': it shapes the scripted demonstrations, and "
                                          "data.path=/data/pusht.zarr gives a data set instead")
