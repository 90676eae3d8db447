"""The closed loop, ``imf loop DIR``: suggest -> sweep -> conclude, round after round, resumable."""
