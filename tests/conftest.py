"""Shared test setup: one thread per process (two cores are shared by the whole suite)."""
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")
os.environ.setdefault("SWANLAB_MODE", "offline")
