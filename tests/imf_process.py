"""The one way the tests run the command line as a real process: `python -m imf ARGS`."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def run_imf(*args: str, cwd: Path | str | None = None, timeout: float = 600,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One torch thread (the tests share 2 cores), SwanLab offline; ``env`` adds to both."""
    full_env = {**os.environ, "OMP_NUM_THREADS": "1", "SWANLAB_MODE": "offline", **(env or {})}
    return subprocess.run([sys.executable, "-m", "imf", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout, env=full_env)


def run_in_process(monkeypatch, capsys, *args: str) -> tuple[int, str, str]:
    """``imf ARGS`` in this process (the unit tier starts no process): (exit code, stdout, stderr)."""
    import pytest
    from imf.cli import main
    monkeypatch.setattr(sys, "argv", ["imf", *args])
    with pytest.raises(SystemExit) as done:
        main()
    out = capsys.readouterr()
    return done.value.code, out.out, out.err
