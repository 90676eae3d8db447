"""Every plugin group's contract (imf/registry/contracts.py) and `imf plugins --check`: the
built-ins keep theirs; a third-party plugin that breaks its group's contract (a fake dist-info on
sys.path) fails the check in one line naming it."""
from __future__ import annotations

import sys

import pytest
from plugin_fakes import fake_distribution

from imf import registry
from imf.cli import main
from imf.registry.contracts import CONTRACTS, check_installed, contract_of, problem

BROKEN = '''
from imf.scheduler.base import Scheduler


def narrow(n_action, n_time):  # a mask takes (n_action, n_time, n_obs)
    return None


class NoRead:  # a store needs record and read
    def __init__(self, root):
        self.root = root

    def record(self, record):
        pass


class NoStop(Scheduler):  # a scheduler that never says how to stop its jobs
    def job_dir(self, job):
        return ""

    def start(self, job):
        raise NotImplementedError

    def poll(self, handle, offset=0):
        raise NotImplementedError


def tracker(options):  # a tracker is a class
    return None


class Nameless:  # an objective names itself
    uses_v_head = False

    def __init__(self, cfg, options=None):
        pass

    def loss(self, model, actions, cond, generator=None):
        pass

    def sample(self, model, cond, n_steps=None, generator=None):
        pass


class RunOnly:  # a trainer that cannot check a request before it runs
    def run(self, request):
        return 0
'''
BREAKS = {
    ("imf.masks", "narrow"): "the call must take (n_action, n_time, n_obs)",
    ("imf.stores", "no-read"): "has no method 'read' (contract Store)",
    ("imf.schedulers", "nostop"): "does not implement 'stop' (contract Scheduler)",
    ("imf.trackers", "fn"): "must be a class (contract Tracker), got function",
    ("imf.objectives", "nameless"): "has no attribute 'name' (contract Objective)",
    ("imf.trainers", "run-only"): "has no method 'check' (contract Trainer)",
}


@pytest.fixture
def broken(tmp_path, monkeypatch):
    src = tmp_path / "src"
    fake_distribution(src, "imf-fake-contracts", "imf_fake_contracts", BROKEN, {
        "imf.masks": {"narrow": "imf_fake_contracts:narrow"},
        "imf.stores": {"no-read": "imf_fake_contracts:NoRead"},
        "imf.schedulers": {"nostop": "imf_fake_contracts:NoStop"},
        "imf.trackers": {"fn": "imf_fake_contracts:tracker"},
        "imf.objectives": {"nameless": "imf_fake_contracts:Nameless"},
        "imf.trainers": {"run-only": "imf_fake_contracts:RunOnly"}})
    monkeypatch.syspath_prepend(str(src))
    yield src
    registry.clear_cache()


def test_every_group_has_a_contract_and_the_built_ins_keep_theirs():
    assert set(CONTRACTS) == set(registry.GROUPS)
    for group in registry.GROUPS:
        assert check_installed(group) == [], group


@pytest.mark.parametrize("group, name", sorted(BREAKS))
def test_a_plugin_that_breaks_its_contract_is_named_with_what_it_lacks(broken, group, name):
    lines = check_installed(group)
    assert len(lines) == 1 and lines[0].startswith(f"plugin '{name}' in {group} (from imf-fake-contracts) "
                                                   "breaks its contract: ")
    assert BREAKS[(group, name)] in lines[0]


def test_options_are_one_more_argument_where_the_contract_does_not_pass_them():
    class Opts:
        pass

    def mask(n_action, n_time, n_obs, options):
        return None
    mask.Options = Opts
    assert problem(mask, contract_of("imf.masks")) is None
    del mask.Options
    assert "the call must take" in problem(mask, contract_of("imf.masks"))


def test_plugins_check_passes_for_the_built_ins(monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["imf", "plugins", "--check"])
    with pytest.raises(SystemExit) as done:
        main()
    assert done.value.code == 0
    assert capsys.readouterr().out.endswith("plugins in 7 groups keep their group's contract\n")


def test_plugins_check_fails_in_one_line_for_a_plugin_that_breaks_its_contract(broken, monkeypatch, capsys):
    monkeypatch.setenv("IMF_PLUGINS", "imf-fake-contracts")
    monkeypatch.setattr(sys, "argv", ["imf", "plugins", "--check"])
    with pytest.raises(SystemExit) as done:
        main()
    err = capsys.readouterr().err
    assert done.value.code == 2 and err.count("\n") == 1 and err.startswith("imf: error: ")
    assert all(f"plugin '{name}' in {group}" in err for group, name in BREAKS)
