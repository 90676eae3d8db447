"""Install plugins the way pip would, but into a temp folder: a module plus a dist-info."""
from __future__ import annotations

import shutil
from pathlib import Path

from imf import registry


def fake_distribution(root: Path, dist: str, module: str, source: str,
                      entry_points: dict[str, dict[str, str]], version: str = "1.0") -> Path:
    """Write ``module.py`` and ``<dist>-<version>.dist-info`` under ``root``; return root."""
    root.mkdir(parents=True, exist_ok=True)
    (root / f"{module}.py").write_text(source)
    return _dist_info(root, dist, entry_points, version)


def fake_install(root: Path, package: Path, dist: str, entry_points: dict[str, dict[str, str]],
                 version: str = "0.1.0") -> Path:
    """Copy the package folder ``package`` under ``root`` and write its dist-info; return root."""
    shutil.copytree(package, root / package.name)
    return _dist_info(root, dist, entry_points, version)


def _dist_info(root: Path, dist: str, entry_points: dict[str, dict[str, str]], version: str) -> Path:
    info = root / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = []
    for group, names in entry_points.items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in names.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")
    registry.clear_cache()  # the registry reads installed plugins once per process and sys.path
    return root


WINDOW_PLUGIN_DIR = Path(__file__).resolve().parents[1] / "examples" / "imf_window_mask"
NOHUP_PLUGIN_DIR = Path(__file__).resolve().parents[1] / "examples" / "imf_nohup_scheduler"
