"""The clock every record is stamped with: UTC, ISO 8601 to the second (a leaf anyone may import)."""
from __future__ import annotations

from datetime import datetime, timezone


def now_iso() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
