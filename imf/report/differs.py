"""What two compared sweeps differ in, beyond the grid axes and the seed.

A comparison of two sweeps means what it says only when the setting the reader thinks moved is
the only one that did: `--mask full` starts from the full-attention preset, whose n_head is 1
where the causal preset's is 4, so "causal against full" can silently be "4 heads against 1"
too. Every setting each sweep holds fixed (its report's shared config) is set against the other
sweep's; a setting one sweep varies is a grid axis there and is left to the cell matching, and a
setting only one side has at all is shown as not set on the other.
"""
from __future__ import annotations

import json
from typing import Any

from imf.report.analysis import SIZE_KEYS
from imf.report.model import Report

NOT_SET = "(not set)"  # a setting one sweep's configs do not have at all


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)


def _varied(report: Report) -> set[str]:
    """The settings that tell the cells of ``report`` apart (its grid axes), n_emb and n_layer too."""
    return {k for cell in report.trends.cells for k in cell.params} | set(SIZE_KEYS)


def config_differences(report_a: Report, report_b: Report) -> dict[str, list[Any]]:
    """{setting: [A's value, B's value]} for each setting both sweeps hold fixed at different
    values, or one holds fixed and the other never sets (NOT_SET); sorted by setting."""
    varied = _varied(report_a) | _varied(report_b)
    out: dict[str, list[Any]] = {}
    for key in sorted(set(report_a.config) | set(report_b.config)):
        if key in varied:
            continue
        # A setting a sweep's trials do not share is one of its cells' params (a grid axis,
        # skipped above), so one missing from a side's shared config is set by none of its trials.
        a, b = report_a.config.get(key, NOT_SET), report_b.config.get(key, NOT_SET)
        if not _same(a, b):
            out[key] = [a, b]
    return out


def shown(value: Any) -> str:
    """A value as a reader wants it: strings bare, the rest as JSON (null, true, [1, 2])."""
    return value if isinstance(value, str) else json.dumps(value, default=str)


def differs_line(differs: dict[str, list[Any]]) -> str:
    """"differs (A | B, beyond the grid axes and the seed): policy.mask causal | full; ..."."""
    what = "; ".join(f"{k} {shown(a)} | {shown(b)}" for k, (a, b) in differs.items())
    return f"differs (A | B, beyond the grid axes and the seed): {what or 'nothing'}"


def confound_note(differs: dict[str, list[Any]]) -> str | None:
    """A note when more than one setting moved: each cell's difference is theirs together."""
    if len(differs) < 2:
        return None
    return (f"the sweeps differ in {len(differs)} settings ({', '.join(differs)}): each cell's "
            "difference is the effect of all of them together, not of one")
