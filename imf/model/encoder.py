"""Image observation encoder: the reference's ResNet-18 with GroupNorm + spatial softmax,
written here without torchvision, and a small convolutional option for CPU smoke runs.

Per observation step the feature is [64 image features, 2 agent_pos] (66). Images are
cropped 84 of 96: a random crop per image in training, the centre crop in evaluation; with
policy.encoder_resolution the crop is then resized, so the encoder sees that many pixels a side.
GroupNorm instead of BatchNorm keeps the encoder usable under torch.func transforms and
independent of batch composition.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


def group_norm(channels: int) -> nn.GroupNorm:
    return nn.GroupNorm(max(channels // 16, 1), channels)


class BasicBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False)
        self.norm1 = group_norm(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, 1, 1, bias=False)
        self.norm2 = group_norm(c_out)
        self.down = None
        if stride != 1 or c_in != c_out:
            self.down = nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride, bias=False), group_norm(c_out))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = F.relu(self.norm1(self.conv1(x)))
        y = self.norm2(self.conv2(y))
        return F.relu(y + (x if self.down is None else self.down(x)))


def resnet18_trunk() -> nn.Sequential:
    """ResNet-18 without avgpool/fc: (N, 3, 84, 84) -> (N, 512, 3, 3)."""
    layers: list[nn.Module] = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), group_norm(64), nn.ReLU(),
                               nn.MaxPool2d(3, 2, 1)]
    c_in = 64
    for c_out, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [BasicBlock(c_in, c_out, stride), BasicBlock(c_out, c_out, 1)]
        c_in = c_out
    return nn.Sequential(*layers)


def small_trunk(width: int = 32) -> nn.Sequential:
    """Three strided convolutions, (N, 3, 84, 84) -> (N, 64, 11, 11), for CPUs. The first two
    layers' activations are the largest, so ``width`` sets the cost: 16 is ~2.9x cheaper than 32."""
    return nn.Sequential(
        nn.Conv2d(3, width, 5, 2, 2), group_norm(width), nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, 2, 1), group_norm(2 * width), nn.ReLU(),
        nn.Conv2d(2 * width, 64, 3, 2, 1), group_norm(64), nn.ReLU())


class SpatialSoftmax(nn.Module):
    """Keypoints: a 1x1 conv to K maps, softmax over pixels, expected (x, y) in [-1, 1]."""

    def __init__(self, channels: int, num_keypoints: int) -> None:
        super().__init__()
        self.keypoints = nn.Conv2d(channels, num_keypoints, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        maps = self.keypoints(x)  # (N, K, h, w)
        n, k, h, w = maps.shape
        attn = maps.flatten(2).softmax(dim=-1)  # (N, K, h*w)
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, h, device=x.device, dtype=attn.dtype),
                                torch.linspace(-1, 1, w, device=x.device, dtype=attn.dtype),
                                indexing="ij")
        grid = torch.stack([xs.flatten(), ys.flatten()], dim=-1)  # (h*w, 2)
        return (attn @ grid).flatten(1)  # (N, 2K)


def crop_images(x: torch.Tensor, size: int, random: bool) -> torch.Tensor:
    """(N, C, S, S) -> (N, C, size, size); per-image random offsets or the centre."""
    n, _, hgt, wid = x.shape
    if size >= hgt and size >= wid:
        return x
    if not random:
        top, left = (hgt - size) // 2, (wid - size) // 2
        return x[:, :, top:top + size, left:left + size]
    top = torch.randint(0, hgt - size + 1, (n,), device=x.device)
    left = torch.randint(0, wid - size + 1, (n,), device=x.device)
    # Pick each image's window from a view of all windows: one copy with N indices, not an index
    # per pixel (the image step 1.05-1.16x cheaper: benchmarks/RUNS.md, "Image training step").
    windows = x.unfold(2, size, 1).unfold(3, size, 1)  # (N, C, S-size+1, S-size+1, size, size) view
    return windows[torch.arange(n, device=x.device), :, top, left]  # (N, C, size, size)


class ObsEncoder(nn.Module):
    """(B, T, 3, S, S) images in [-1, 1] + (B, T, 2) normalised agent_pos -> (B, T, F + 2)."""

    def __init__(self, cfg) -> None:
        super().__init__()
        self.crop = cfg.crop_shape
        resolution = cfg.encoder_resolution
        self.size = resolution if resolution and resolution != cfg.crop_shape else None
        if cfg.encoder == "resnet18":
            self.trunk, channels = resnet18_trunk(), 512
        else:
            self.trunk, channels = small_trunk(cfg.encoder_width), 64
        self.trunk.to(memory_format=torch.channels_last)
        self.pool = SpatialSoftmax(channels, cfg.num_keypoints)
        self.proj = nn.Linear(2 * cfg.num_keypoints, cfg.image_feature_dim)
        self.feature_dim = cfg.image_feature_dim + 2

    def forward(self, image: torch.Tensor, agent_pos: torch.Tensor) -> torch.Tensor:
        b, t = image.shape[:2]
        x = crop_images(image.flatten(0, 1), self.crop, random=self.training)  # (B*T, 3, c, c)
        if self.size is not None:  # fewer pixels: the convolutions' cost falls with their square
            x = F.interpolate(x, size=(self.size, self.size), mode="bilinear", antialias=True, align_corners=False)
        # channels-last convolutions: 1.3x faster on a CPU (oneDNN), the layout GPUs want too
        x = x.contiguous(memory_format=torch.channels_last)
        feat = self.proj(self.pool(self.trunk(x)))  # (B*T, F)
        return torch.cat([feat.view(b, t, -1), agent_pos.to(feat.dtype)], dim=-1)  # (B, T, F+2)
