"""Min-max normaliser that travels inside a policy checkpoint.

Each key maps its per-dimension [min, max] onto [-1, 1] (the reference's
"limits" mode). A dimension whose range is below 1e-4 is treated as having
range 2 around its mid-point, so constants stay finite. The image key maps
[0, 1] onto [-1, 1] without fitting.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from imf.errors import DataError

RANGE_EPS = 1e-4


class MinMaxNormalizer:
    def __init__(self) -> None:
        self.scale: dict[str, np.ndarray] = {}
        self.offset: dict[str, np.ndarray] = {}
        # (key, device, dtype) -> (scale, offset) tensors: made once, so that normalising a
        # CUDA batch does not copy (and synchronise) host -> device on every call
        self._tensors: dict[tuple, tuple[Any, Any]] = {}

    def fit(self, key: str, data: np.ndarray) -> None:
        data = np.asarray(data, dtype=np.float64)
        flat = data.reshape(-1, data.shape[-1])  # (N, D)
        lo, hi = flat.min(axis=0), flat.max(axis=0)
        span = hi - lo
        degenerate = span < RANGE_EPS
        span = np.where(degenerate, 2.0, span)
        lo = np.where(degenerate, (hi + lo) / 2 - 1.0, lo)
        self._set(key, 2.0 / span, -1.0 - lo * 2.0 / span)

    def set_identity_range(self, key: str, lo: float, hi: float, dim: int = 1) -> None:
        """Map the fixed range [lo, hi] of every dimension onto [-1, 1] (used for images)."""
        self._set(key, np.full(dim, 2.0 / (hi - lo)), np.full(dim, -1.0 - lo * 2.0 / (hi - lo)))

    def _set(self, key: str, scale: Any, offset: Any) -> None:
        self.scale[key] = np.asarray(scale, dtype=np.float32)
        self.offset[key] = np.asarray(offset, dtype=np.float32)
        self._tensors = {k: v for k, v in self._tensors.items() if k[0] != key}

    def _params(self, key: str, x: Any) -> tuple[Any, Any]:
        if key not in self.scale:
            raise DataError(f"normaliser has no key '{key}'; keys: {', '.join(sorted(self.scale))}")
        if not hasattr(x, "detach"):  # numpy (numpy >= 2 arrays also have .device)
            return self.scale[key], self.offset[key]
        cache_key = (key, x.device, x.dtype)
        if cache_key not in self._tensors:
            import torch
            self._tensors[cache_key] = (torch.as_tensor(self.scale[key], device=x.device, dtype=x.dtype),
                                        torch.as_tensor(self.offset[key], device=x.device, dtype=x.dtype))
        return self._tensors[cache_key]

    def normalize(self, key: str, x: Any) -> Any:
        scale, offset = self._params(key, x)
        return x * scale + offset

    def unnormalize(self, key: str, x: Any) -> Any:
        scale, offset = self._params(key, x)
        return (x - offset) / scale

    def keys(self) -> list[str]:
        return sorted(self.scale)

    def state_dict(self) -> dict[str, dict[str, list[float]]]:
        return {k: {"scale": self.scale[k].tolist(), "offset": self.offset[k].tolist()}
                for k in self.keys()}

    @classmethod
    def from_state_dict(cls, state: dict[str, dict[str, list[float]]]) -> "MinMaxNormalizer":
        norm = cls()
        try:
            for key, params in state.items():
                norm._set(key, params["scale"], params["offset"])
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise DataError(f"normaliser state is malformed: {exc}") from None
        return norm
