"""The live sweep view (rich Live on a terminal) and the status table, rendered into a captured
console; plain text (no bars, no control codes) when not on a terminal."""
from __future__ import annotations

import io

from rich.console import Console

from imf.sweep.live import LiveView, sweep_view
from imf.sweep.live import watch
from imf.sweep.status import render_status, status_view
from imf.sweep.launch import SweepRequest, plan_sweep


def _terminal() -> tuple[Console, io.StringIO]:
    out = io.StringIO()
    return Console(file=out, force_terminal=True, width=200, color_system="truecolor"), out


def _sweep(tmp_path, status="running"):
    req = SweepRequest(config="smoke", grids=["32,64x1"], queues=["local:cpu"], name="lv",
                       out=tmp_path, epochs=4)
    sdir, state, _ = plan_sweep(req)
    first, second = state.trials
    first.state, first.epoch, first.last_score, first.best_score = "running", 2, 0.25, 0.5
    first.best_success = 0.12
    second.state, second.epoch = "completed", 4
    state.status = status
    sdir.path.mkdir(parents=True)
    sdir.save(state)
    return sdir, first, second


def test_status_view_on_a_terminal_has_an_epoch_bar_per_trial(tmp_path):
    sdir, first, second = _sweep(tmp_path)
    console, out = _terminal()
    console.print(status_view(sdir, bars=True))
    text = out.getvalue()
    assert "━" in text and "\x1b[" in text  # bars, drawn in colour
    row = next(line for line in text.splitlines() if first.id in line)
    assert "running" in row and "2/4" in row and "0.2500" in row and "0.5000" in row


def test_plain_status_has_no_bars_and_no_control_codes(tmp_path):
    sdir, first, _ = _sweep(tmp_path)
    text = render_status(sdir)
    assert "━" not in text and "\x1b" not in text
    lines = text.splitlines()
    assert lines[1].split() == ["queue", "trial", "state", "epoch", "val_mse", "last", "best",
                                "success", "elapsed", "eta"]
    row = next(line.split() for line in lines if first.id in line)
    assert row[1:4] == [first.id, "running", "2/4"] and row[5:8] == ["0.2500", "0.5000", "0.12"]


def test_live_view_prints_log_lines_above_the_table(tmp_path):
    sdir, first, second = _sweep(tmp_path)
    console, out = _terminal()
    with LiveView(console) as view:
        view.echo("12:00:00 start lv-x on local:cpu [user@]")  # markup-looking text stays as is
        view.follow(sdir)
    text = out.getvalue()
    assert "start lv-x on local:cpu [user@]" in text
    assert text.index("[user@]") < text.rindex(first.id) and second.id in text


def test_sweep_view_off_a_terminal_is_plain_lines(capsys):
    with sweep_view(False) as (echo, on_start):
        echo("one line")
    assert on_start is None and capsys.readouterr().out == "one line\n"


def test_watch_uses_the_same_renderer_live_and_returns_when_the_sweep_ended(tmp_path):
    sdir, first, _ = _sweep(tmp_path, status="finished")
    console, out = _terminal()
    watch(tmp_path, 0.1, lambda s: None, sleep=lambda s: None, console=console)
    assert first.id in out.getvalue() and "━" in out.getvalue()
    printed = []
    watch(tmp_path, 0.1, printed.append, sleep=lambda s: None)
    assert printed == [render_status(sdir)]
