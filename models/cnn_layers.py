"""Building blocks of models/cnn.py: the per-kind temporal encoder and segment pooling."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class ConvBlock(nn.Module):
    """Pre-norm residual temporal convolution: x + Dropout(Conv(GELU(Norm(x))))."""

    def __init__(self, width: int, kernel_size: int, dropout: float) -> None:
        super().__init__()
        self.norm = nn.GroupNorm(1, width)  # per-sample norm: batch composition never matters
        self.conv = nn.Conv1d(width, width, kernel_size, padding=kernel_size // 2)
        self.drop = nn.Dropout(dropout)

    def forward(self, x: Tensor) -> Tensor:  # (N, W, T) -> (N, W, T)
        return x + self.drop(self.conv(F.gelu(self.norm(x))))


class KindEncoder(nn.Module):
    """(N, 2C, T) channels+masks and (N, 2S) static -> (N, W) component embeddings."""

    def __init__(
        self, n_in: int, n_static: int, width: int, depth: int, kernel_size: int, stride: int, dropout: float
    ) -> None:
        super().__init__()
        self.stride = stride
        self.stem = nn.Conv1d(n_in, width, stride, stride=stride)  # non-overlapping patches: T -> T/stride
        self.blocks = nn.ModuleList(ConvBlock(width, kernel_size, dropout) for _ in range(depth))
        self.static = nn.Linear(n_static, width)
        self.proj = nn.Linear(3 * width, width)

    def forward(self, x: Tensor, valid: Tensor, static: Tensor) -> Tensor:
        if x.shape[-1] < self.stride:  # a bundle shorter than one patch: pad time with "no data"
            x, valid = F.pad(x, (0, self.stride - x.shape[-1])), F.pad(valid, (0, self.stride - valid.shape[-1]))
        h = self.stem(x)  # (N, W, T')
        v = F.max_pool1d(valid[:, None].float(), self.stride)  # (N, 1, T') 1 where the patch has any step
        for block in self.blocks:
            h = block(h)  # (N, W, T')
            if h.shape[-1] >= 8:  # halve T: the next block sees twice as far for half the cost
                h, v = F.avg_pool1d(h, 2), F.max_pool1d(v, 2)
        mean = (h * v).sum(-1) / v.sum(-1).clamp(min=1.0)  # (N, W) masked mean over time
        peak = h.masked_fill(v == 0, -1e4).amax(-1)  # (N, W) masked max over time
        return F.gelu(self.proj(torch.cat([mean, peak, F.gelu(self.static(static))], -1)))  # (N, W)


def segment_mean_max(x: Tensor, index: Tensor, n: int) -> tuple[Tensor, Tensor]:
    """Rows of x (N, D) pooled by segment index (N,) into (n, D) mean and max (0 for empty segments)."""
    idx = index[:, None].expand_as(x)
    total = x.new_zeros(n, x.shape[1]).index_add_(0, index, x)
    count = x.new_zeros(n).index_add_(0, index, torch.ones_like(index, dtype=x.dtype))
    peak = x.new_zeros(n, x.shape[1]).scatter_reduce_(0, idx, x, "amax", include_self=False)
    return total / count.clamp(min=1.0)[:, None], peak
