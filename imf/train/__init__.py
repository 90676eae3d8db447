"""One trial: data, policy, the training loop, rollouts, checkpoints, logs and stopping."""
