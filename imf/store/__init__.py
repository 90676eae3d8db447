"""Result stores (``imf.stores`` plugins) and the file helpers they share.

Built-ins: ``scoreboard`` (scoreboard.json) and ``iteration-log``
(ITERATION_LOG.md). Both record a finished trial as an upsert by trial id.
"""
from imf.store.base import BEST_METRIC, Store, best_of, record_from_summary
from imf.store.files import atomic_write_bytes, atomic_write_json, atomic_write_text, locked

__all__ = ["BEST_METRIC", "Store", "atomic_write_bytes", "atomic_write_json",
           "atomic_write_text", "best_of", "locked", "record_from_summary"]
