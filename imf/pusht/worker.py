"""A scoring worker: a fresh interpreter that runs PushT episodes for the scorer.

Started as `python -m imf.pusht.worker`; it reads pickled (command, payload) pairs on stdin and
answers ("ok", value) or ("error", message) on stdout. A fresh interpreter inherits nothing
from its caller (no torch state, no re-import of the caller's main script).
"""
from __future__ import annotations

import pickle
import signal
import sys


def serve(reader, writer) -> None:
    from imf.pusht.scorer import EnvGroup
    group = None
    while True:
        try:
            command, payload = pickle.load(reader)
        except EOFError:
            return
        if command == "close":
            return
        try:
            if command == "init":
                group = EnvGroup(*payload)
                value = None
            else:
                value = getattr(group, command)(payload)
            answer = ("ok", value)
        except Exception as exc:  # hand the error to the caller instead of dying silently
            answer = ("error", f"{type(exc).__name__}: {exc}")
        pickle.dump(answer, writer, protocol=pickle.HIGHEST_PROTOCOL)
        writer.flush()


if __name__ == "__main__":
    # Ctrl-C and SIGTERM are for the trial, which stops at its next safe point; a worker ends
    # when the trial closes its stdin (or dies), never in the middle of an episode.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    channel_out = sys.stdout.buffer
    sys.stdout = sys.stderr  # stray prints must not corrupt the channel
    serve(sys.stdin.buffer, channel_out)
