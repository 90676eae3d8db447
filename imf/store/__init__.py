"""Result stores (``imf.stores`` plugins) and the file helpers they share.

Built-ins: ``scoreboard`` (scoreboard.json) and ``iteration-log``
(ITERATION_LOG.md). Both record a finished trial as an upsert by trial id.
"""
from imf.store.base import BEST_METRIC, Store, best_of, record_from_summary
from imf.store.files import locked

__all__ = ["BEST_METRIC", "Store", "best_of", "locked", "record_from_summary"]
