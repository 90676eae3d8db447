"""Result stores (``imf.stores`` plugins) and the file helpers they share.

Built-ins: ``scoreboard`` (scoreboard.json) and ``iteration-log``
(ITERATION_LOG.md). Both record a finished trial as an upsert by trial id.

This is the store's face: other parts of imf import only the names below, never a module of it.
"""
from imf.store.base import BEST_METRIC, ENSEMBLE, Store, best_of, is_ensemble, record_from_summary
from imf.store.files import locked
from imf.store.holdout import append_look, read_looks
from imf.store.identity import (ID_HASH_CHARS, SIZED_ID, cell_hash, checkpoint_hash, default_trial_id, differences,
                                flatten, override_pairs, readable_id, run_only, trial_hash)
from imf.store.iteration_log import FILENAME, IterationLogStore
from imf.store.layout import (ATTEMPTS, BEST, CHECKPOINTS, CONFIG, ENSEMBLES, EXIT_CODE, FINAL_EVAL, HOLDOUT, LATEST,
                              LOGS, PID, PROGRESS, SNAPSHOTS, STDOUT, SUMMARY, SWANLOG, SWEEP_LOG, SWEEP_STATE,
                              TENSORBOARD, TRIAL_FILES, RunLayout, checkpoint_name, ensemble_id, run_dir_of,
                              topk_files, topk_name)
from imf.store.records import check_identity, numbered, project_root
from imf.store.runlock import RunLock, live_holder, process_start_time
from imf.store.runs import (HYDRA_CONFIG, PROGRAM_SCORE, SCORE_KEYS, find_run_dirs, first_number, is_epoch_row,
                            is_run_dir, log_segments, model_size, parse_log, read_json_object, read_log,
                            read_sweep_trials, read_yaml_mapping, row_episode_scores, row_score, row_success,
                            samples_trained)
from imf.store.scoreboard import ScoreboardStore
from imf.store.summary import PARAM_KEYS, PARAMS, Checkpoints, RunSummary, observed_status, params_of, read_summary

__all__ = [
    # results and the stores that keep them
    "BEST_METRIC", "ENSEMBLE", "FILENAME", "IterationLogStore", "ScoreboardStore", "Store", "best_of",
    "is_ensemble", "locked", "record_from_summary", "append_look", "read_looks", "check_identity", "numbered",
    "project_root",
    # trial ids
    "ID_HASH_CHARS", "SIZED_ID", "cell_hash", "checkpoint_hash", "default_trial_id", "differences", "flatten",
    "override_pairs", "readable_id", "run_only", "trial_hash",
    # a run folder's files
    "ATTEMPTS", "BEST", "CHECKPOINTS", "CONFIG", "ENSEMBLES", "EXIT_CODE", "FINAL_EVAL", "HOLDOUT", "LATEST", "LOGS",
    "PID", "PROGRESS", "SNAPSHOTS", "STDOUT", "SUMMARY", "SWANLOG", "SWEEP_LOG", "SWEEP_STATE", "TENSORBOARD",
    "TRIAL_FILES", "RunLayout", "checkpoint_name", "ensemble_id", "run_dir_of", "topk_files", "topk_name",
    "RunLock", "live_holder", "process_start_time",
    # reading run folders
    "HYDRA_CONFIG", "PROGRAM_SCORE", "SCORE_KEYS", "find_run_dirs", "first_number", "is_epoch_row", "is_run_dir",
    "log_segments", "model_size", "parse_log", "read_json_object", "read_log", "read_sweep_trials",
    "read_yaml_mapping", "row_episode_scores", "row_score", "row_success", "samples_trained",
    "PARAM_KEYS", "PARAMS", "Checkpoints", "RunSummary", "observed_status", "params_of", "read_summary",
]
