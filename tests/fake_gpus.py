"""A stand-in GPU probe (IMF_GPU_PROBE): prints the probe's JSON for the devices it is given.

    python tests/fake_gpus.py [INDEX:FREE_MIB:TOTAL_MIB ...]

No device given: a torch that sees none (as on a machine without CUDA).
"""
from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    devices = []
    for item in argv:
        index, free, total = (int(v) for v in item.split(":"))
        devices.append({"index": index, "name": f"Fake GPU {index}", "free_mib": free, "total_mib": total})
    print(json.dumps({"torch": "2.0-fake", "cuda": "12.0", "devices": devices}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
