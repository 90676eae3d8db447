"""A sweep's folder: sweep.json (loaded, checked and saved) and sweep.log (one line per event).

sweep.json is rewritten atomically (temporary file in the same folder, fsync, rename), so a
controller killed at any moment leaves a readable state that ``--resume`` continues from.

A sweep.json of an older imf is read as today's (``state.KIND``'s named steps, imf/upgrade.py).
Only the controller writes sweep.json, so a load upgrades in memory and leaves the file alone;
the controller's first save writes the upgraded state and one line in sweep.log naming what
changed (a reader beside a running controller never writes it).
"""
from __future__ import annotations

import json
from pathlib import Path

from imf.atomic import atomic_write_json
from imf.clock import now_iso
from imf.errors import SweepError
from imf.store import SWEEP_LOG, SWEEP_STATE
from imf.sweep.state import KIND, SweepState
from imf.sweep.validate import check_sweep_dict


def config_text(config: str) -> str | None:
    """The text of the config file ``config``; None for a preset name."""
    if Path(config).suffix not in (".yaml", ".yml"):
        return None
    try:
        return Path(config).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SweepError(f"cannot read the sweep's config {config} ({exc})") from None


class SweepDir:
    """A sweep's folder: its state file, its master log, one folder per trial."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.upgraded = ""  # what the last load's upgrade changed, until a save writes it

    @property
    def state_file(self) -> Path:
        return self.path / SWEEP_STATE

    def trial_dir(self, tid: str) -> Path:
        return (self.path / tid).resolve()

    def exists(self) -> bool:
        return self.state_file.exists()

    def load(self) -> SweepState:
        """The state in sweep.json, checked field by field (SweepError naming the field)."""
        try:
            data = json.loads(self.state_file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SweepError(f"{self.path}: no sweep.json here (is it a sweep folder?)") from None
        except (OSError, ValueError) as exc:  # ValueError: JSON, UTF-8
            raise SweepError(f"{self.state_file}: unreadable sweep state ({exc})") from None
        if isinstance(data, dict):
            try:
                read = KIND.read(data)
            except ValueError as exc:
                raise SweepError(f"{self.state_file}: state {exc}") from None
            data, self.upgraded = read.data, read.note(KIND, self.state_file.name)
        try:
            check_sweep_dict(data)
        except SweepError as exc:
            raise SweepError(f"{self.state_file}: {exc}") from None
        return SweepState.from_dict(data)

    def save(self, state: SweepState) -> None:
        self.path.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.state_file, state.to_dict())
        if self.upgraded:  # the upgraded state is on disk now: say once what changed
            note, self.upgraded = self.upgraded, ""
            self.log(note)

    def log(self, message: str) -> str:
        return self.log_lines([message])[0]

    def log_lines(self, messages: list[str]) -> list[str]:
        """Append ``messages`` to sweep.log in one write (a plan of 10,000 trials is as many lines)."""
        stamp = now_iso()
        lines = [f"{stamp} {message}" for message in messages]
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / SWEEP_LOG, "a") as f:
            f.write("".join(line + "\n" for line in lines))
        return lines
