"""imf's own tracker plugins (entry points of group ``imf.trackers``; see imf/train/tracker.py).
Each module imports its library only when a run starts, so a missing library makes the plugin
broken (``requires``), never the package."""
