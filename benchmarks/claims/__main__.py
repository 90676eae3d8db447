"""``python -m benchmarks.claims --check``: claims.py, run as a module from the repository root
(how the shared before-stop hook finds it now that it lives in benchmarks/claims/)."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from claims import main  # noqa: E402

main()
