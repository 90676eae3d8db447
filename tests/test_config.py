import pytest
import yaml

from imf.config import Config, all_keys, list_presets, load_config, load_resolved
from imf.errors import ConfigError


def test_shipped_presets_load_and_inherit():
    assert {"pusht_image_imf", "pusht_image_imf_fullattn", "smoke"} <= set(list_presets())
    ref = load_config("pusht_image_imf")
    full = load_config("pusht_image_imf_fullattn")
    assert (ref.policy.mask, ref.policy.n_head) == ("causal", 4)
    assert (full.policy.mask, full.policy.n_head) == ("full", 1)
    # The child changes the mask and the head count, nothing else.
    a, b = ref.to_dict(), full.to_dict()
    a["policy"].update(mask="full", n_head=1)
    a["name"] = b["name"]
    assert a == b


def test_reference_numbers():
    cfg = load_config("pusht_image_imf")
    assert (cfg.policy.horizon, cfg.policy.n_obs_steps, cfg.policy.n_action_steps) == (10, 2, 8)
    assert cfg.training.batch_size == 64 and cfg.training.lr == pytest.approx(1e-4)
    assert cfg.training.betas == [0.9, 0.95] and cfg.training.seed == 42
    assert (cfg.eval.n_test, cfg.eval.test_start_seed, cfg.eval.max_steps) == (50, 100000, 300)


def test_dotted_overrides_are_typed():
    cfg = load_config("smoke", ["policy.n_emb=256", "training.lr=3e-4", "training.use_ema=false",
                                "data.path=null", "logging.stores=scoreboard"])
    assert cfg.policy.n_emb == 256 and isinstance(cfg.policy.n_emb, int)
    assert cfg.training.lr == pytest.approx(3e-4)
    assert cfg.training.use_ema is False and cfg.data.path is None
    assert cfg.logging.stores == ["scoreboard"]


def test_causal_attn_alias():
    assert load_config("smoke", ["policy.causal_attn=false"]).policy.mask == "full"
    assert load_config("pusht_image_imf_fullattn", ["policy.causal_attn=true"]).policy.mask == "causal"
    assert load_config("smoke", json_overrides='{"policy": {"causal_attn": false}}').policy.mask == "full"


def test_json_deep_merge_keeps_siblings():
    cfg = load_config("smoke", json_overrides='{"policy": {"n_layer": 12}}')
    assert cfg.policy.n_layer == 12 and cfg.policy.n_emb == 64


def test_dotted_wins_over_json():
    cfg = load_config("smoke", ["policy.n_layer=3"], '{"policy": {"n_layer": 12}}')
    assert cfg.policy.n_layer == 3


def test_resolved_config_round_trips(tmp_path):
    cfg = load_config("pusht_image_imf_fullattn", ["policy.n_emb=384", "training.patience=3"])
    path = tmp_path / "config.yaml"
    cfg.save(path)
    assert load_resolved(path) == cfg
    assert yaml.safe_load(path.read_text())["policy"]["n_emb"] == 384


def test_user_yaml_with_base(tmp_path):
    (tmp_path / "mine.yaml").write_text("base: smoke\npolicy:\n  n_layer: 5\n")
    cfg = load_config(str(tmp_path / "mine.yaml"))
    assert cfg.policy.n_layer == 5 and cfg.policy.encoder == "small"


@pytest.mark.parametrize("override, pattern", [
    (["policy.n_emd=256"], r"unknown config key 'policy.n_emd' \(did you mean 'policy.n_emb'\?\)"),
    (["policy.n_emb=big"], r"config key 'policy.n_emb': expected an integer, got 'big'"),
    (["training.use_ema=maybe"], r"config key 'training.use_ema': expected true or false"),
    (["policy.n_emb"], r"override 'policy.n_emb': expected key.path=value"),
    (["policy.n_head=3"], r"config key 'policy.n_head': 3 must divide policy.n_emb=64"),
    (["policy.encoder=vit"], r"config key 'policy.encoder': got 'vit', allowed: resnet18, small"),
])
def test_bad_overrides_name_key_and_value(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config("smoke", override)


def test_malformed_json_and_missing_preset():
    with pytest.raises(ConfigError, match="--overrides is not valid JSON"):
        load_config("smoke", json_overrides='{"policy": ')
    with pytest.raises(ConfigError, match="--overrides must be a JSON object"):
        load_config("smoke", json_overrides="[1, 2]")
    with pytest.raises(ConfigError, match=r"unknown preset 'smok' \(did you mean 'smoke'\?\)"):
        load_config("smok")
    with pytest.raises(ConfigError, match="unknown config key 'policy.widht'"):
        load_config("smoke", json_overrides='{"policy": {"widht": 3}}')


def test_base_loop_and_bad_yaml(tmp_path):
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(ConfigError, match="loops back"):
        load_config(str(tmp_path / "a.yaml"))
    (tmp_path / "bad.yaml").write_text("policy: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(tmp_path / "bad.yaml"))


def test_all_keys_cover_tree():
    keys = all_keys()
    assert "policy.n_emb" in keys and "training.num_epochs" in keys and "eval.n_test" in keys
    assert len(keys) == len(set(keys))
    assert Config().policy.mask == "causal"


def test_removed_keys_load_from_old_files_only_with_the_value_imf_now_uses(tmp_path):
    # A config.yaml saved by an older imf carries the removed keys with their old defaults.
    old = load_config("smoke").to_dict()
    old["training"]["resume"] = False
    old["policy"]["image_size"] = 96
    old["logging"]["metric"] = "test_mean_score"
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(old))
    assert load_resolved(path).to_dict() == load_config("smoke").to_dict()


@pytest.mark.parametrize("override, pattern", [
    ("training.resume=true", r"'training.resume' was removed \(resume a run with `imf trial --resume"),
    ("policy.image_size=128", r"'policy.image_size' was removed .*got 128, only 96"),
    ("logging.metric=train_mean_score", r"'logging.metric' was removed \(checkpoints are always ranked"),
])
def test_removed_keys_with_another_value_say_what_replaced_them(override, pattern):
    with pytest.raises(ConfigError, match=pattern):
        load_config("smoke", [override])


def test_log_interval_must_be_at_least_one_step():
    with pytest.raises(ConfigError, match="logging.every_steps': must be >= 1, got 0"):
        load_config("smoke", ["logging.every_steps=0"])
