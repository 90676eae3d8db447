"""Replay-buffer data: zarr reader/writer, window sampler, normaliser."""
