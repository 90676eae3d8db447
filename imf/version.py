"""The running imf's version: the package version, plus the git commit in a checkout."""
from __future__ import annotations

import functools
import subprocess
from importlib import metadata
from pathlib import Path

import imf


@functools.cache
def git_commit() -> str:
    """The short commit of the checkout imf runs from, or "" when it is not one (read once per
    process: it is stamped into every summary and checkpoint)."""
    root = Path(imf.__file__).resolve().parent.parent
    if not (root / ".git").exists():
        return ""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def code_version() -> str:
    """``0.1.0+abc1234`` in a checkout, ``0.1.0`` otherwise."""
    sha = git_commit()
    return f"{imf.__version__}+{sha}" if sha else imf.__version__


def version_text() -> str:
    """What ``imf --version`` prints: imf, its commit, torch and python (torch is not imported)."""
    import platform
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = "not installed"
    sha = git_commit()
    commit = f" (git {sha})" if sha else ""
    return f"imf {imf.__version__}{commit}\ntorch {torch}\npython {platform.python_version()}"
