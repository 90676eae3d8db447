"""Typer conventions of the ``imf`` command line: completion, -h, --version, flags, help markup."""
from __future__ import annotations

import re

import pytest
import typer
from typer.testing import CliRunner

import imf
from imf.cli import app

runner = CliRunner()
# What rich reads as a markup tag (and then drops from the help): [word...] not preceded by "\".
RICH_TAG = re.compile(r"(?<!\\)\[([a-z#/@][^[]*?)\]")


def _commands() -> list[list[str]]:
    """The path of every command, e.g. ["sweep"], ["data", "info"]."""
    root = typer.main.get_command(app)
    paths = []

    def walk(group, prefix):
        for name, cmd in group.commands.items():
            if hasattr(cmd, "commands"):
                walk(cmd, prefix + [name])
            else:
                paths.append(prefix + [name])
    walk(root, [])
    return paths


def _command(path: list[str]):
    cmd = typer.main.get_command(app)
    for name in path:
        cmd = cmd.commands[name]
    return cmd


def _complete(words: str, cword: int) -> list[str]:
    env = {"_IMF_COMPLETE": "complete_bash", "COMP_WORDS": words, "COMP_CWORD": str(cword)}
    result = runner.invoke(app, [], env=env, prog_name="imf")
    return result.output.split()


@pytest.mark.parametrize("shell, marker", [("bash", "complete -o default -F _imf_completion imf"),
                                           ("zsh", "#compdef imf"), ("fish", "complete --command imf")])
def test_completion_scripts_are_generated(monkeypatch, shell, marker):
    import typer.completion
    monkeypatch.setattr(typer.completion, "_get_shell_name", lambda: shell)  # the shell it detects
    result = runner.invoke(app, ["--show-completion"], prog_name="imf")
    assert result.exit_code == 0 and marker in result.output and "_IMF_COMPLETE" in result.output


@pytest.mark.slow
def test_completion_of_presets_overrides_plugins_and_queues():
    assert "smoke" in _complete("imf trial s", 2) and "pusht_image_imf" not in _complete("imf trial s", 2)
    assert "policy.n_emb=" in _complete("imf trial smoke policy.n_", 3)
    assert _complete("imf sweep --mask ", 3)[:2] == ["causal", "full"]
    assert _complete("imf sweep --queue ", 3) == ["local:0", "local:cpu", "ssh://", "slurm://"]
    assert _complete("imf sweep --queue loc", 3) == ["local:0", "local:cpu"]
    assert {"scoreboard", "iteration-log", "none"} <= set(_complete("imf trial --store ", 3))


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p))
def test_dash_h_is_help_and_flags_show_no_type(path):
    result = runner.invoke(app, [*path, "-h"], prog_name="imf", env={"TERMINAL_WIDTH": "240"})
    assert result.exit_code == 0 and "Usage: imf " + " ".join(path) in result.output
    assert "<bool>" not in result.output


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p))
def test_help_texts_survive_rich_markup(path):
    cmd = _command(path)
    texts = [cmd.help or ""] + [p.help or "" for p in cmd.params]
    eaten = [t for t in texts if RICH_TAG.search(t)]
    assert not eaten, f"rich would read these as markup: {eaten}"
    shown = runner.invoke(app, [*path, "--help"], prog_name="imf", env={"TERMINAL_WIDTH": "400"}).output
    for text in texts:
        for bracket in re.findall(r"\\\[[^\]]*\]", text):
            assert bracket[1:] in shown, f"{bracket[1:]} missing from imf {' '.join(path)} --help"


def test_sweep_help_shows_the_ssh_spec_whole():
    shown = runner.invoke(app, ["sweep", "--help"], env={"TERMINAL_WIDTH": "400"}).output
    assert "ssh://[user@]host[:port]/gpu:N" in shown


def test_version_names_imf_and_torch():
    result = runner.invoke(app, ["--version"])
    lines = result.output.splitlines()
    assert result.exit_code == 0 and lines[0].startswith(f"imf {imf.__version__}")
    assert lines[1].startswith("torch ") and lines[2].startswith("python ")
