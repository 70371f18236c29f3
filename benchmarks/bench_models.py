"""CNN inference latency (issue 4): forward pass on one 4-host lab bundle's tensors, one thread.

    .venv/bin/python benchmarks/bench_models.py [--runs 200] [--models cnn_small,cnn_base,cnn_deep]
        [--mlp-seeds 1,5]

Simulates one lab bundle (4 hosts, 2 h at 20 s), loads it through the pipeline, fits each CNN
variant for one epoch on it (latency does not depend on the weights' values), then times
`predict_proba` (collate + forward + softmax) and the bare network forward under
torch.inference_mode with torch.set_num_threads(1), the process pinned to one CPU. Also times the
baselines' feature extraction (models/features.py, target <= 5 ms). Prints one JSON document
(p50/p95 in ms). Target: <= 10 ms per 4-host bundle on one CPU thread.

`--mlp-seeds`: the served disk member, the `mlp`, at each count of networks averaged (models.seedbag),
fitted on the same bundle and timed side by side in this run: `predict_proba` with the bundle's
engineered rows already memoised (models.memo: what the served ensemble's members share), so the
figure is the networks' own cost over `features_ms`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import torch  # noqa: E402

from data.simulate.archive import write_bundle  # noqa: E402
from data.simulate.generate import simulate_bundle  # noqa: E402
from models.cnn_train import collate, to_arrays  # noqa: E402
from models.features import bundle_features  # noqa: E402
from models.registry import create_model  # noqa: E402
from pipeline import load_bundle  # noqa: E402


def _percentiles(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {"p50": round(statistics.median(s), 3), "p95": round(s[int(0.95 * (len(s) - 1))], 3), "min": round(s[0], 3)}


def _time(fn: object, runs: int) -> list[float]:
    assert callable(fn)
    for _ in range(10):  # warm-up: allocator, kernels
        fn()
    out = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--models", default="cnn_small,cnn_base,cnn_deep")
    ap.add_argument("--mlp-seeds", default="1,5", help="comma-separated counts of mlp networks ('' for none)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        b = simulate_bundle("lab", 1, 0, 1.0)
        bt = load_bundle(write_bundle(b.name, b.files, Path(tmp), "tgz"))
    labels = {k: str(v) for k, v in b.labels["components"].items()}  # type: ignore[attr-defined]
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})
    torch.set_num_threads(1)
    result: dict[str, object] = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, 1 thread",
        "bundle": {"hosts": len(bt.hosts), "components": len(bt.component_ids), "T": bt.T, "step_s": bt.step_s},
        "runs": args.runs,
        "target_ms": 10.0,
        # the baselines' input, computed each time: `bundle_features` itself keeps a bundle's rows
        # (models.memo), so timing it read a dictionary lookup (0.0 ms) after its first call
        "features_ms": _percentiles(_time(lambda: bundle_features.fn(bt), args.runs)),
        "models": {},
    }
    for name in args.models.split(","):
        model = create_model(name, epochs=1, device="cpu").fit([bt], [labels])
        net = model.network_.eval()
        n_params = sum(p.numel() for p in net.parameters())
        with torch.inference_mode():
            batch = collate([to_arrays(bt, features=model.features)])  # feature rows: features_ms above
            forward = _time(lambda net=net, batch=batch: net(batch), args.runs)
            full = _time(lambda model=model: model.predict_proba([bt]), args.runs)
        result["models"][name] = {  # type: ignore[index]
            "params": n_params,
            "forward_ms": _percentiles(forward),
            "predict_proba_ms": _percentiles(full),
        }
    for k in [int(x) for x in args.mlp_seeds.split(",") if x]:
        mlp = create_model("mlp", seeds=k).fit([bt], [labels])
        result["models"][f"mlp, {k} network{'s' if k > 1 else ''}"] = {  # type: ignore[index]
            "predict_proba_ms": _percentiles(_time(lambda mlp=mlp: mlp.predict_proba([bt]), args.runs))
        }
    print(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
