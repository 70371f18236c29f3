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
pooling with scatter ops over bundle / host indices (no padding of components). The fit loop lives
in models/cnn_train.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from models.base import KIND_LABELS, Diagnoser, Labels, Proba, check_Xy, expand_proba
from models.cnn_layers import KindEncoder, segment_mean_max
from models.cnn_train import Batch, EpochCallback, collate, fit_network, to_arrays
from models.estimator import check_is_fitted
from models.features import feature_names
from models.registry import register_model
from models.seeds import SeedStack
from pipeline.channels import KIND_CHANNELS, KIND_STATIC
from pipeline.tensors import BundleTensors
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


_SPACE = {
    "width": ("choice", [24, 32, 48, 64, 96]),
    "depth": ("int", 1, 5),
    "kernel_size": ("choice", [3, 5, 7]),
    "stride": ("choice", [2, 4, 8]),
    "dropout": ("uniform", 0.0, 0.4),
    "lr": ("loguniform", 3e-4, 1e-2),
    "weight_decay": ("loguniform", 1e-5, 1e-1),
    "epochs": ("int", 20, 120),
    "batch_size": ("choice", [4, 8, 16, 32]),
    "class_weight_power": ("uniform", 0.0, 1.0),
    "kind_balance": ("uniform", 0.5, 1.0),
    "coarsen_p": ("uniform", 0.0, 0.6),
    "event_dropout": ("uniform", 0.0, 0.4),
    "seed": ("int", 0, 10_000),
}


# Families read the engineered features and see a fifth of their training bundles without log events.
# Measured with 500 lab + 500 varied bundles on 200 field test bundles (benchmarks/bench_accuracy.py,
# cnn_small with seeds=3): 0.965 exact match as collected and 0.96 with the logs blanked; without the
# dropout 0.965 and 0.93; on the series alone 0.955 and 0.96 (logistic regression: 0.97 and 0.935).
_FAMILY = {"features": True, "event_dropout": 0.2}


@register_model("cnn_small", defaults={"width": 32, "depth": 2, "kernel_size": 5, **_FAMILY}, space=_SPACE)
@register_model("cnn_base", defaults={"width": 48, "depth": 3, "kernel_size": 5, **_FAMILY}, space=_SPACE)
@register_model("cnn_deep", defaults={"width": 64, "depth": 5, "kernel_size": 3, **_FAMILY}, space=_SPACE)
class CNNDiagnoser(Diagnoser):
    """Per-kind temporal CNN encoders with host and cluster context, trained end to end (PyTorch)."""

    default_name = "cnn_base"

    def __init__(
        self,
        width: int = 48,
        depth: int = 3,
        kernel_size: int = 5,
        stride: int = 4,
        dropout: float = 0.1,
        lr: float = 3e-3,
        weight_decay: float = 1e-2,
        epochs: int = 60,
        batch_size: int = 8,
        class_weight_power: float = 0.5,
        # 0: a kind's loss weighs by its component count; 1: every kind alike. Measured (400 bundles, 15
        # epochs, 200 field test): exact match 0.79 at 0 (cluster.resync recall 0.22), 0.89 at 0.5, 0.90 at 1
        kind_balance: float = 1.0,
        grad_clip: float = 1.0,
        patience: int = 15,
        validation_fraction: float = 0.0,
        peer_inputs: bool = False,  # measured: lab->field exact match 0.62 with, 0.76 without (600 lab)
        coarsen_p: float = 0.3,  # measured: 0.76 with 0.3, 0.71 without
        event_dropout: float = 0.0,  # share of training bundles shown without their log events
        features: bool = False,  # the head also reads the baselines' engineered features (wide and deep)
        seeds: int = 1,  # >1: that many networks trained at once on the same batches (models.seeds)
        seed: int = 0,
        device: str = "auto",
    ) -> None:
        self.width = width
        self.depth = depth
        self.kernel_size = kernel_size
        self.stride = stride
        self.dropout = dropout
        self.lr = lr
        self.weight_decay = weight_decay
        self.epochs = epochs
        self.batch_size = batch_size
        self.class_weight_power = class_weight_power
        self.kind_balance = kind_balance
        self.grad_clip = grad_clip
        self.patience = patience
        self.validation_fraction = validation_fraction
        self.peer_inputs = peer_inputs
        self.coarsen_p = coarsen_p
        self.event_dropout = event_dropout
        self.features = features
        self.seeds = seeds
        self.seed = seed
        self.device = device

    def _device(self) -> torch.device:
        if self.device == "auto":
            return torch.device("cuda" if torch.cuda.is_available() else "cpu")
        return torch.device(self.device)

    def _build(self) -> ClusterCNN | SeedStack:
        def one() -> ClusterCNN:
            return ClusterCNN(
                self.width, self.depth, self.kernel_size, self.stride, self.dropout, self.peer_inputs, self.features
            )

        return one() if self.seeds <= 1 else SeedStack(one, self.seeds, self.seed)

    def fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None = None,
        on_epoch: EpochCallback | None = None,
    ) -> Self:
        """Train from scratch; with `eval_set` (or validation_fraction > 0) stop early on its exact match and
        keep the best epoch's weights. Per-epoch figures land in `history_` and go to `on_epoch`."""
        check_Xy(X, y)
        device = self._device()
        # Seed weights and dropout without disturbing the caller's global RNG state.
        cuda = (
            [device.index if device.index is not None else torch.cuda.current_device()] if device.type == "cuda" else []
        )
        with torch.random.fork_rng(devices=cuda):
            torch.manual_seed(self.seed)
            self._fit(X, y, eval_set, device, on_epoch)
        return self

    def _fit(
        self,
        X: Sequence[BundleTensors],
        y: Sequence[Labels],
        eval_set: tuple[Sequence[BundleTensors], Sequence[Labels]] | None,
        device: torch.device,
        on_epoch: EpochCallback | None = None,
    ) -> None:
        train, val = list(zip(X, y, strict=True)), None
        if eval_set is not None:
            check_Xy(*eval_set)
            val = list(zip(*eval_set, strict=True))
        elif self.validation_fraction > 0 and len(train) >= 4:
            order = np.random.default_rng(self.seed).permutation(len(train))
            n_val = max(1, round(self.validation_fraction * len(train)))
            val, train = [train[i] for i in order[:n_val]], [train[i] for i in order[n_val:]]
        net = self._build()
        self.history_: list[dict[str, float]] = fit_network(net, train, val, self, device, on_epoch)
        self.network_ = net.eval()  # stays on its device; eval mode from here on

    @torch.inference_mode()
    def predict_proba(self, X: Sequence[BundleTensors]) -> list[Proba]:
        check_is_fitted(self)
        check_Xy(X)
        device = self._device()
        net = self.network_
        if next(net.parameters()).device.type != device.type:  # moving a module walks it: only when needed
            net.to(device)
        out: list[Proba] = []
        for start in range(0, len(X), 16):
            chunk = X[start : start + 16]
            logits = net(collate([to_arrays(bt, features=self.features) for bt in chunk], device))
            probs = {k: expand_proba(k, torch.softmax(v.double(), -1).cpu().numpy()) for k, v in logits.items()}
            at = dict.fromkeys(COMPONENT_KINDS, 0)
            for bt in chunk:
                scores: Proba = {}
                for k in COMPONENT_KINDS:
                    ids = bt.kinds[k].ids
                    scores.update(zip(ids, probs[k][at[k] : at[k] + len(ids)], strict=True))
                    at[k] += len(ids)
                out.append(scores)
        return out

    def _get_state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        arrays = {k: v.detach().cpu().numpy() for k, v in self.network_.state_dict().items()}
        meta = {"history": self.history_, "channels": {k: list(v) for k, v in KIND_CHANNELS.items()}}
        return meta, arrays

    def _set_state(self, meta: dict[str, Any], arrays: dict[str, np.ndarray]) -> None:
        if meta["channels"] != {k: list(v) for k, v in KIND_CHANNELS.items()}:
            raise ValueError("saved CNN was trained on another channel catalogue")
        net = self._build()
        net.load_state_dict({k: torch.from_numpy(np.array(v)) for k, v in arrays.items()})
        self.network_ = net.eval()
        self.history_ = list(meta["history"])
