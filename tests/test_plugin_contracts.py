"""Every plugin group's contract (the Protocols of imf/contracts.py) and `imf plugins --check`
(imf/registry/contracts.py): the built-ins keep theirs, and so do the helper bases; a
third-party plugin that breaks its group's contract (a fake dist-info on sys.path) fails the
check in one line naming it, in every group."""
from __future__ import annotations

import inspect
import sys

import pytest
from plugin_fakes import fake_distribution

from imf import registry
from imf.cli import main
from imf import contracts
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


class NoPool:  # a curriculum that never says which episodes an epoch draws from
    def __init__(self, options):
        pass

    def check(self, episodes):
        pass
'''
BREAKS = {
    ("imf.masks", "narrow"): "the call must take (n_action, n_time, n_obs)",
    ("imf.stores", "no-read"): "has no method 'read' (contract Store)",
    ("imf.schedulers", "nostop"): "does not implement 'stop' (contract Scheduler)",
    ("imf.trackers", "fn"): "must be a class (contract Tracker), got function",
    ("imf.objectives", "nameless"): "has no attribute 'name' (contract Objective)",
    ("imf.trainers", "run-only"): "has no method 'check' (contract Trainer)",
    ("imf.curricula", "no-pool"): "has no method 'pool' (contract Curriculum)",
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
        "imf.trainers": {"run-only": "imf_fake_contracts:RunOnly"},
        "imf.curricula": {"no-pool": "imf_fake_contracts:NoPool"}})
    monkeypatch.syspath_prepend(str(src))
    yield src
    registry.clear_cache()


def test_every_group_has_a_contract_and_the_built_ins_keep_theirs():
    assert set(CONTRACTS) == set(registry.GROUPS)
    for group in registry.GROUPS:
        assert check_installed(group) == [], group


def test_a_broken_plugin_of_every_group_is_among_the_fakes():
    assert {group for group, _ in BREAKS} == set(registry.GROUPS)


@pytest.mark.parametrize("group", sorted(contracts.CONTRACTS))
def test_every_contract_is_a_typed_protocol_of_the_one_contracts_module(group):
    contract = contract_of(group)
    assert contract is contracts.CONTRACTS[group] and contract.__module__ == "imf.contracts"
    assert getattr(contract, "_is_protocol", False), f"{contract.__name__} is not a typing.Protocol"
    for name, member in vars(contract).items():
        function = member.__func__ if isinstance(member, classmethod) else \
            member.fget if isinstance(member, property) else member
        if not inspect.isfunction(function) or function.__module__ != contracts.__name__ \
                or (name.startswith("_") and name not in ("__init__", "__call__")):
            continue  # typing's own, or not a member
        signature = inspect.signature(function)
        untyped = [p.name for p in list(signature.parameters.values())[1:]
                   if p.annotation is inspect.Parameter.empty]
        assert not untyped, f"{contract.__name__}.{name}: parameters without a type: {untyped}"
        assert signature.return_annotation is not inspect.Signature.empty, f"{contract.__name__}.{name}: no return type"


def test_the_old_contract_names_are_the_protocols_themselves():
    from imf.attention import Mask
    from imf.objectives.base import Objective
    from imf.store import Store
    from imf.trackers import Tracker
    assert (Mask, Objective, Store, Tracker) == (contracts.Mask, contracts.Objective, contracts.Store,
                                                 contracts.Tracker)


def _positional(function) -> list[str]:
    return [p.name for p in inspect.signature(function).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)][1:]


@pytest.mark.parametrize("group, base", [("imf.schedulers", "imf.scheduler:Scheduler"),
                                         ("imf.curricula", "imf.curricula:Curriculum"),
                                         ("imf.trainers", "imf.train.trainers:Trainer")])
def test_each_helper_base_keeps_its_groups_protocol(group, base):
    import importlib
    module, _, name = base.partition(":")
    helper, contract = getattr(importlib.import_module(module), name), contract_of(group)
    assert helper is not contract
    hints = vars(contract).get("__annotations__", {})
    assert all(hasattr(helper, attr) for attr in hints), "an attribute of the contract is missing"
    for member, wanted in vars(contract).items():
        if member.startswith("_") and member not in ("__init__", "__call__") or not (
                inspect.isfunction(wanted) or isinstance(wanted, (classmethod, property))):
            continue
        got = inspect.getattr_static(helper, member)
        if isinstance(wanted, property):
            assert isinstance(got, property), member
            continue
        unwrap = lambda f: f.__func__ if isinstance(f, classmethod) else f  # noqa: E731
        assert isinstance(got, classmethod) == isinstance(wanted, classmethod), member
        if member == "__init__" and got is object.__init__:
            continue  # no constructor of its own: built as cls()
        assert _positional(unwrap(got)) == _positional(unwrap(wanted)), member


def test_the_contracts_module_imports_no_part_of_imf():
    import ast
    tree = ast.parse(inspect.getsource(contracts))
    imported = [n.module if isinstance(n, ast.ImportFrom) else a.name for n in ast.walk(tree)
                if isinstance(n, (ast.Import, ast.ImportFrom)) for a in getattr(n, "names", [])]
    assert not [m for m in imported if m and m.split(".")[0] == "imf"]


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
