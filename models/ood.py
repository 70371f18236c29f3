"""Never seen this: how far a bundle lies outside what the served model was trained on.

A diagnosis of a bundle unlike every training bundle (100 GbE links, 64 hosts, a device type no lab
had, latencies in the wrong unit) may be confidently wrong; the document says so and why.

    ood = OutlierScorer().fit(X_train, val=X_val)   # ranges from training, threshold from validation
    ood.score(X)                                    # (n,) bundle scores; > ood.threshold_: unusual
    ood.explain(bt)                                 # the diagnosis document's `unusual` object

Two kinds of column of the engineered rows (models.features), each with a training range [lo, hi]
and a robust spread s (the interquartile range / 1.349, at least `spread_share` of the range's width
and magnitude, at least MIN_SPREAD); a value's deviation is how far it lies outside, in spreads:

    d = max(lo - x, x - hi, 0) / s

- `static`: every component's static features where known (link speed, host and device counts,
  device flags), against the training components' range. What the hardware is.
- `level`: per kind (hosts, NICs, disk groups, disks), the median over the bundle's components of
  each channel's window mean and p90, against the range of the training bundles' medians. A fault
  moves one component or a few, not a kind's median (a fault more severe than any trained on is not
  "never seen": the first version, which checked every component's levels, flagged one validation
  bundle in six for a noisy NIC or a disk with more SCSI errors than any before); a unit error or a
  new device type moves all of them. Log-event channels are left out (their counts are a fault's
  severity), and so is the cluster's series, which cluster-wide faults move as a whole.

A bundle's score is its largest deviation; the threshold is the `quantile` of the validation
bundles' scores (bundles the ranges were not drawn from), at least `floor`. Scoring reads the rows
models.features computed for the model (memoised per bundle): a few array operations, no
scikit-learn. Everything fitted is a quantile, saved as arrays (state / from_state).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any, Final, Self

import numpy as np

from models.estimator import Estimator, check_is_fitted
from models.features import bundle_features, feature_names
from pipeline.channels import KIND_CHANNEL_DEFS, KIND_CHANNELS, KIND_STATIC
from pipeline.tensors import BundleTensors
from vsandx.faults import COMPONENT_KINDS

LEVEL_STATS: Final = ("mean", "p90")
LEVEL_KINDS: Final = ("host", "nic", "diskgroup", "disk")
MIN_SPREAD: Final = 0.05  # log1p units (5 %), fractions, counts: below it a spread is noise
MAX_CHANNELS: Final = 3  # channels named per reason
LEVELS: Final = ("static", "level")


def checked_columns(level: str, kind: str) -> list[tuple[str, str, str]]:
    """(column, the column saying whether it is observed, channel or static name) of every column of
    `kind` checked at `level`, in feature_names(kind)'s names."""
    if level == "static":
        return [(f"static:{s}", f"has:{s}", s) for s in KIND_STATIC[kind]]
    if kind not in LEVEL_KINDS:
        return []
    return [(f"{c}:{s}", f"{c}:cover", c) for c in KIND_CHANNELS[kind] if not c.startswith("ev.") for s in LEVEL_STATS]


@lru_cache(maxsize=64)
def _plan(level: str, kind: str, names: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """For columns `names`: their indices in the feature rows, the indices of the columns saying
    whether each is observed (-1: not computed any more), and their channels."""
    where = {n: i for i, n in enumerate(feature_names(kind))}
    spec = {c: (o, ch) for c, o, ch in checked_columns(level, kind)}
    col = np.array([where.get(n, -1) for n in names], dtype=np.int64)
    obs = np.array([where.get(spec[n][0], -1) if n in spec else -1 for n in names], dtype=np.int64)
    return col, obs, tuple(spec[n][1] if n in spec else n for n in names)


def _values(rows: np.ndarray, level: str, kind: str, names: tuple[str, ...]) -> np.ndarray:
    """(n, k) columns `names` of (n, F) feature rows, NaN where not observed (or not computed)."""
    col, obs, _ = _plan(level, kind, names)
    ok = (col >= 0) & (obs >= 0)
    v = np.full((len(rows), len(col)), np.nan)
    v[:, ok] = np.where(rows[:, obs[ok]] > 0, rows[:, col[ok]], np.nan)
    return v


def _median(v: np.ndarray) -> np.ndarray:
    """(n, k) -> (1, k): the median of each column's observed values (NaN: none)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column is NaN, as meant
        return np.nanmedian(v, axis=0, keepdims=True) if len(v) else np.full((1, v.shape[1]), np.nan)


def _rows(feats: Mapping[str, np.ndarray], level: str, kind: str, names: tuple[str, ...]) -> np.ndarray:
    """What is compared with the ranges, from a bundle's feature rows (models.features): each
    component's values (static) or the kind's medians (level)."""
    v = _values(feats[kind], level, kind, names)
    return v if level == "static" else _median(v)


class OutlierScorer(Estimator):
    def __init__(self, quantile: float = 0.99, floor: float = 2.0, spread_share: float = 0.05) -> None:
        self.quantile = quantile  # of the validation bundles' scores: the threshold
        self.floor = floor  # the least threshold, in spreads beyond a training range
        self.spread_share = spread_share  # the least spread, as a share of a range's width and magnitude

    def fit(self, X: Sequence[BundleTensors], y: object = None, val: Sequence[BundleTensors] = ()) -> Self:
        """Ranges from the training bundles X (labels unused); the threshold from `val` (from X
        without it, which leaves only `floor`: every training bundle lies inside its own ranges)."""
        if not 0.0 < self.quantile <= 1.0:
            raise ValueError(f"quantile {self.quantile}: expected a share in (0, 1]")
        if len(X) == 0:
            raise ValueError("no bundles")
        self.columns_: dict[str, dict[str, list[str]]] = {lv: {} for lv in LEVELS}
        self.ranges_: dict[str, np.ndarray] = {}  # "level/kind" -> (3, k): lo, hi, spread
        cols = {(lv, k): tuple(c for c, _, _ in checked_columns(lv, k)) for lv in LEVELS for k in COMPONENT_KINDS}
        cols = {key: names for key, names in cols.items() if names}
        rows: dict[tuple[str, str], list[np.ndarray]] = {key: [] for key in cols}
        for bt in X:  # each bundle's rows computed once (the memo keeps only the last few)
            feats = bundle_features(bt)
            for (level, kind), names in cols.items():
                rows[level, kind].append(_rows(feats, level, kind, names))
        for (level, kind), names in cols.items():
            v = np.concatenate(rows[level, kind])
            seen = ~np.isnan(v).all(axis=0)
            lo, q1, q3, hi = np.nanquantile(v[:, seen], [0.0, 0.25, 0.75, 1.0], axis=0)
            least = self.spread_share * np.maximum(hi - lo, np.maximum(np.abs(lo), np.abs(hi)))
            spread = np.maximum.reduce([(q3 - q1) / 1.349, least, np.full_like(lo, MIN_SPREAD)])
            self.columns_[level][kind] = [c for c, s in zip(names, seen, strict=True) if s]
            self.ranges_[f"{level}/{kind}"] = np.stack([lo, hi, spread])
        self.n_train_, self.n_val_ = len(X), len(val)
        self.val_scores_ = np.sort(self.score(list(val) or list(X)))
        self.threshold_ = max(float(np.quantile(self.val_scores_, self.quantile, method="higher")), self.floor)
        return self

    # -- scoring -----------------------------------------------------------------------------------
    def _deviations(self, bt: BundleTensors) -> dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]:
        """Per (level, kind): (rows, k) values and deviations (0 inside a range or unobserved)."""
        out = {}
        feats = bundle_features(bt)
        for level, kinds in self.columns_.items():
            for kind, names in kinds.items():
                v = _rows(feats, level, kind, tuple(names))
                lo, hi, s = self.ranges_[f"{level}/{kind}"]
                with np.errstate(invalid="ignore"):
                    d = np.nan_to_num(np.maximum(np.maximum(lo - v, v - hi), 0.0) / s, nan=0.0)
                out[level, kind] = (v, d)
        return out

    def score(self, X: Sequence[BundleTensors]) -> np.ndarray:
        """(n,) each bundle's score: its largest deviation from the training ranges."""
        check_is_fitted(self)
        return np.array([_top(self._deviations(bt)) for bt in X])

    def explain(self, bt: BundleTensors) -> dict[str, Any]:
        """{"flag", "score", "threshold", "reasons"}: a reason per kind with a deviation past the
        threshold (largest first): the kind, a component (the furthest out; for a kind's median, the
        component at it), how many components are out (or share the median), the channels furthest
        out (pipeline channel or static names), and a sentence with their values."""
        check_is_fitted(self)
        devs = self._deviations(bt)
        reasons = []
        for kind in COMPONENT_KINDS:
            found = []  # (deviation, level, row, column)
            for level in LEVELS:
                if (level, kind) in devs:
                    _, d = devs[level, kind]
                    found += [
                        (float(d[r, j]), level, int(r), int(j))
                        for r, j in zip(*np.nonzero(d > self.threshold_), strict=True)
                    ]
            if found:
                reasons.append(self._reason(bt, kind, sorted(found, reverse=True), devs))
        score = _top(devs)
        return {"flag": score > self.threshold_, "score": round(score, 2), "threshold": round(self.threshold_, 2),
                "reasons": sorted(reasons, key=lambda r: -r["score"])}  # fmt: skip

    def _reason(
        self, bt: BundleTensors, kind: str, found: list[tuple[float, str, int, int]], devs: Any
    ) -> dict[str, Any]:
        ids = bt.kinds[kind].ids
        top, level, row, _ = found[0]
        named: dict[str, str] = {}  # channel -> why
        for _, lv, r, j in found:
            if len(named) == MAX_CHANNELS:
                break
            names = tuple(self.columns_[lv][kind])
            channel = _plan(lv, kind, names)[2][j]
            if channel not in named:
                named[channel] = self._why(lv, kind, names[j], float(devs[lv, kind][0][r, j]), j, len(ids))
        if level == "static":
            comps = {r for _, lv, r, _ in found if lv == "static"}
            component, count = ids[row], len(comps)
        else:  # the component whose value is the kind's median on the furthest column
            j = found[0][3]
            col = _values(bundle_features(bt)[kind], level, kind, tuple(self.columns_[level][kind]))[:, j]
            seen = np.flatnonzero(~np.isnan(col))
            component = ids[int(seen[np.argsort(col[seen])[len(seen) // 2]])] if len(seen) else ids[0]
            count = len(seen)
        return {"kind": kind, "component": component, "components": count, "channels": list(named),
                "score": round(top, 2), "why": "; ".join(named.values())}  # fmt: skip

    def _why(self, level: str, kind: str, column: str, x: float, j: int, n: int) -> str:
        """'speed_gbps 100 above the training range 0-25', values in the channel's own unit."""
        lo, hi, _ = (float(a) for a in self.ranges_[f"{level}/{kind}"][:, j])
        head, _, stat = column.partition(":")
        back: Callable[[float], float] = float
        if head == "static":
            name, unit = stat, ""
        else:
            ch = next(c for c in KIND_CHANNEL_DEFS[kind] if c.name == head)
            name, unit = f"{head} {stat} (median of {n} {kind}s)", f" {ch.unit}"
            back = _expm1 if ch.log else float
        side = "above" if x > hi else "below"
        return f"{name} {_num(back(x))}{unit} {side} the training range {_num(back(lo))}-{_num(back(hi))}"

    # -- storage (arrays and JSON; models.calibration keeps them with the served model) -------------
    def state(self) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
        check_is_fitted(self)
        meta = {"params": self.get_params(), "threshold": self.threshold_, "n_train": self.n_train_,
                "n_val": self.n_val_, "columns": self.columns_}  # fmt: skip
        return meta, {"val_scores": self.val_scores_} | self.ranges_

    @classmethod
    def from_state(cls, meta: Mapping[str, Any], arrays: Mapping[str, np.ndarray]) -> OutlierScorer:
        """The scorer `state` wrote. A column the current features no longer compute is dropped."""
        self = cls(**meta["params"])
        self.columns_, self.ranges_ = {lv: {} for lv in LEVELS}, {}
        for level, kinds in meta["columns"].items():
            for kind, names in kinds.items():
                known = {c for c, _, _ in checked_columns(level, kind)}
                keep = np.array([n in known for n in names], dtype=bool)
                self.columns_[level][kind] = [n for n, k in zip(names, keep, strict=True) if k]
                self.ranges_[f"{level}/{kind}"] = np.asarray(arrays[f"{level}/{kind}"], dtype=np.float64)[:, keep]
        self.threshold_, self.n_train_, self.n_val_ = float(meta["threshold"]), meta["n_train"], meta["n_val"]
        self.val_scores_ = np.asarray(arrays["val_scores"], dtype=np.float64)
        return self


def _expm1(v: float) -> float:
    return float(np.expm1(v))


def _top(devs: Mapping[Any, tuple[np.ndarray, np.ndarray]]) -> float:
    return max((float(d.max()) for _, d in devs.values() if d.size), default=0.0)


def _num(v: float) -> str:
    """A value as an engineer reads it: 3 significant digits, no exponent below a million."""
    return f"{v:.3g}" if abs(v) < 1e6 else f"{v:.2e}"
