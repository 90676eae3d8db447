"""PushT: simulator, renderer, exact coverage, scripted expert and rollout scorer."""
