"""PerfPsychic-style CNN over a bundle's tensors, with cluster context.

One forward pass diagnoses every component of a batch of bundles:

1. per kind, a temporal 1-D CNN encoder shared by all components of that kind reads the channels
   (standardised with training statistics) concatenated with their masks, so "no data" is visible
   and not mistaken for "zero"; a strided stem shortens T, residual conv blocks halve it again;
   masked mean+max pooling over time plus the static side features give one embedding per component;
2. context: per bundle, mean and max of each kind's embeddings -> a cluster vector; per host, mean
   and max of the embeddings of everything on that host -> a host vector; and the component's own
   difference from its kind's mean (a fault is usually one component unlike its peers);
3. per kind, an MLP head over [own, own - kind mean, kind max, host vector, cluster vector] scores
   that kind's valid labels (none + faults_for_kind(kind)); with `features=True` it also reads the
   component's engineered feature row (models/features.py: the window statistics, peer-relative
   values and log-event counts the baselines see), standardised and projected to the same width —
   a wide-and-deep network, so the CNN starts from what an expert's summary shows and learns what
   the series add.

Variable component counts are handled by concatenating every bundle's components per kind and
pooling with scatter ops over bundle / host indices (no padding of components). The estimator that
trains and serves it is models/cnn.py's CNNDiagnoser; the fit loop lives in models/cnn_train.py.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.base import KIND_LABELS
from models.cnn_layers import KindEncoder, segment_mean_max
from models.cnn_train import Batch
from models.features import feature_names
from pipeline.channels import KIND_CHANNELS, KIND_STATIC
from vsandx.faults import COMPONENT_KINDS


class ClusterCNN(nn.Module):
    """Every component of a batch of bundles -> per kind (N_k, len(KIND_LABELS[k])) logits."""

    def __init__(
        self,
        width: int = 48,
        depth: int = 3,
        kernel_size: int = 5,
        stride: int = 4,
        dropout: float = 0.1,
        peer_inputs: bool = True,
        features: bool = False,
    ) -> None:
        super().__init__()
        self.kinds = COMPONENT_KINDS
        self.peer_inputs = peer_inputs
        self.features = features
        w = width
        n_in = 3 if peer_inputs else 2  # channels, masks (and channels minus peers) per channel
        self.encoders = nn.ModuleDict(
            {
                k: KindEncoder(
                    n_in * len(KIND_CHANNELS[k]), 2 * len(KIND_STATIC[k]), w, depth, kernel_size, stride, dropout
                )
                for k in self.kinds
            }
        )
        self.cluster_mix = nn.Linear(2 * len(self.kinds) * w, w)  # per-kind mean+max -> cluster vector
        self.host_mix = nn.Linear(2 * w, w)  # mean+max over a host's components -> host vector
        n_head = 6 if features else 5  # [own, own - kind mean, kind max, host, cluster (, features)]
        self.heads = nn.ModuleDict(
            {
                k: nn.Sequential(
                    nn.Linear(n_head * w, w), nn.GELU(), nn.Dropout(dropout), nn.Linear(w, len(KIND_LABELS[k]))
                )
                for k in self.kinds
            }
        )
        if features:  # the baselines' engineered row per component, standardised, projected to width w
            self.feature_proj = nn.ModuleDict({k: nn.Linear(len(feature_names(k)), w) for k in self.kinds})
            for k in self.kinds:
                self.register_buffer(f"fmu_{k}", torch.zeros(len(feature_names(k))))
                self.register_buffer(f"fsd_{k}", torch.ones(len(feature_names(k))))
        # Input standardisation, learned from the training set by fit (buffers: saved with the weights).
        for k in self.kinds:
            c, s = len(KIND_CHANNELS[k]), len(KIND_STATIC[k])
            self.register_buffer(f"mu_{k}", torch.zeros(c, 1))
            self.register_buffer(f"sd_{k}", torch.ones(c, 1))
            self.register_buffer(f"smu_{k}", torch.zeros(s))
            self.register_buffer(f"ssd_{k}", torch.ones(s))

    def set_normalisation(self, stats: dict[str, tuple[np.ndarray, ...]]) -> None:
        for k, (mu, sd, smu, ssd) in stats.items():
            for name, a in (("mu", mu[:, None]), ("sd", sd[:, None]), ("smu", smu), ("ssd", ssd)):
                getattr(self, f"{name}_{k}").copy_(torch.as_tensor(a))

    def set_feature_normalisation(self, stats: dict[str, tuple[np.ndarray, np.ndarray]]) -> None:
        for k, (mu, sd) in stats.items():
            getattr(self, f"fmu_{k}").copy_(torch.as_tensor(mu))
            getattr(self, f"fsd_{k}").copy_(torch.as_tensor(sd))

    def _inputs(self, k: str, b: Batch) -> tuple[Tensor, Tensor]:
        kt = b.kinds[k]
        m, sm = kt.mask.float(), kt.static_mask.float()  # (N, C, T), (N, S)
        x = ((kt.values - getattr(self, f"mu_{k}")) / getattr(self, f"sd_{k}")).clamp(-20, 20) * m  # (N, C, T)
        s = ((kt.static - getattr(self, f"smu_{k}")) / getattr(self, f"ssd_{k}")).clamp(-20, 20) * sm  # (N, S)
        parts = [x, m]
        if self.peer_inputs:
            parts.append(x - self._peer_mean(k, b, x, m) * m)  # (N, C, T) own value minus its peers'
        return torch.cat(parts, 1), torch.cat([s, sm], 1)  # (N, 2C or 3C, T), (N, 2S)

    def _peer_mean(self, k: str, b: Batch, x: Tensor, m: Tensor) -> Tensor:
        """(N, C, T) masked mean over the same-kind components of the same bundle (disks: of the same
        tier), per channel and step. On log-scaled channels the difference is a log ratio, so "this
        disk is 30x slower than its siblings" reads the same on HDD, SSD and NVMe clusters."""
        kt = b.kinds[k]
        seg = kt.bundle
        if k == "disk":  # cache and capacity devices are not peers of each other
            seg = 2 * seg + (kt.static[:, 0] > 0.5).long()  # static 0 = is_cache
        n_seg = int(seg.max()) + 1 if len(seg) else 0
        tot = x.new_zeros((n_seg, *x.shape[1:])).index_add_(0, seg, x * m)
        cnt = x.new_zeros((n_seg, *x.shape[1:])).index_add_(0, seg, m)
        return (tot / cnt.clamp(min=1.0))[seg]

    def forward(self, b: Batch) -> dict[str, Tensor]:
        return self.classify(b, {k: self.embed(k, b) for k in self.kinds})

    def embed(self, k: str, b: Batch) -> Tensor:
        """(N_k, W) the kind's component embeddings. Without peer inputs each row depends on its own
        inputs alone (GroupNorm is per sample), so a batch holding some rows embeds them alike."""
        x, s = self._inputs(k, b)
        return self.encoders[k](x, b.kinds[k].valid, s)

    def classify(self, b: Batch, emb: dict[str, Tensor]) -> dict[str, Tensor]:
        """Per kind (N_k, n_labels) logits from every kind's embeddings (N_k, W): context and heads."""
        # Cluster vector: mean and max of every kind's embeddings within each bundle.
        pooled = {k: segment_mean_max(emb[k], b.kinds[k].bundle, b.n_bundles) for k in self.kinds}  # (B, W) x2
        cluster = F.gelu(self.cluster_mix(torch.cat([t for k in self.kinds for t in pooled[k]], -1)))  # (B, W)
        # Host vector: everything on a host (row n_hosts is the cluster component's "no host": zero).
        on_host = [k for k in self.kinds if k != "cluster"]
        all_emb = torch.cat([emb[k] for k in on_host])  # (N_all, W)
        all_host = torch.cat([b.kinds[k].host for k in on_host])  # (N_all,) global host index
        h_mean, h_max = segment_mean_max(all_emb, all_host, b.n_hosts + 1)
        host = F.gelu(self.host_mix(torch.cat([h_mean, h_max], -1)))  # (H+1, W)
        host = torch.cat([host[:-1], torch.zeros_like(host[-1:])])
        logits: dict[str, Tensor] = {}
        for k in self.kinds:
            bi = b.kinds[k].bundle
            k_mean, k_max = pooled[k]
            feats = [emb[k], emb[k] - k_mean[bi], k_max[bi], host[b.kinds[k].host], cluster[bi]]
            if self.features:
                f = b.kinds[k].feat
                assert f is not None, "this network reads engineered features: collate to_arrays(features=True)"
                f = ((f - getattr(self, f"fmu_{k}")) / getattr(self, f"fsd_{k}")).clamp(-5, 5)  # (N_k, F)
                feats.append(F.gelu(self.feature_proj[k](f)))  # (N_k, W)
            logits[k] = self.heads[k](torch.cat(feats, -1))  # (N_k, n_labels(k))
        return logits
