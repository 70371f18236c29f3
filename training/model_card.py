"""The model card every registered version carries (`model_card.md` beside its MLmodel file): what the
model is for, what it was trained and tested on, how it scored per fault, and what it is known not to do.
Plain Markdown from the run's own figures; nothing here is written by hand per version."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.tensors import SCHEMA_VERSION
from training.report import ModelScore

INTENDED_USE = """\
Names the faulty component of a VMware vSAN cluster (capacity or cache disk, disk group, vSAN uplink,
host, the cluster) and the fault (faults.md's taxonomy) from a support bundle's performance counters,
esxcli outputs and logs. It supports a vSAN support engineer's triage: each verdict comes with evidence
and charts to check against the bundle, and the engineer's confirmation or correction is fed back
(the service's feedback API) to retrain it. It is not a substitute for that check, nor for monitoring."""

LIMITS = """\
- Trained and tested on simulated bundles only (the project's fault-injection simulator, lab and field
  profiles). Accuracy on real customer bundles is lower where a fault arrives through a cause or at a
  severity the simulator does not render; the README's "Where accuracy stands" gives the
  leave-one-cause-out figures, the honest proxy for that.
- One fault per component; faults outside the taxonomy are called the nearest known fault or `none`.
- Bundles of another pipeline schema than the one below are refused, not guessed at."""


def _pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def model_card(
    name: str,
    served: ModelScore,
    others: Sequence[ModelScore],
    data: Mapping[str, str],
    config: Mapping[str, Any],
) -> str:
    """The card of a version whose served model scored `served` on the test set (`others`: what it was
    compared with); `data`: each set's description (train / val / test); `config`: the resolved
    training configuration, whose few headline values are quoted."""
    lines = [f"# Model card: {name}", "", "## Intended use", "", INTENDED_USE, "", "## Training data", ""]
    lines += [f"- **{k}**: {v}" for k, v in data.items()]
    shown = (
        "families",
        "samples",
        "max_epochs",
        "top_k",
        "priors",
        "prior_weight",
        "prior_kind_weight",
        "kind_members",
        "seed",
    )
    lines += ["", "Configuration: " + ", ".join(f"{k} = {config[k]}" for k in shown if k in config) + ".",
              f"Pipeline schema: `{SCHEMA_VERSION}`.", "", "## Test results (field test set)", "",
              f"Served: **{served.name}**, exact match {_pct(served.exact_match)} (every component of a bundle "
              f"right), component accuracy {_pct(served.component_accuracy)}, healthy bundles called healthy "
              f"{_pct(served.healthy_all_none)}, {served.predict_ms_p50:.0f} ms per bundle (median).", "",
              "| fault | recall | precision | support |", "|---|---|---|---|"]  # fmt: skip
    for fault, m in sorted(served.per_fault.items()):
        if m.get("support"):
            lines.append(f"| `{fault}` | {m['recall']:.2f} | {m['precision']:.2f} | {int(m['support'])} |")
    if others:
        lines += ["", "Compared on the same bundles:", "", "| model | exact match | healthy called healthy |",
                  "|---|---|---|"]  # fmt: skip
        lines += [f"| {s.name} | {_pct(s.exact_match)} | {_pct(s.healthy_all_none)} |" for s in others]
    cal = config.get("calibration", "none")
    confidence = (
        "- Confidence values are the ensemble's averaged probabilities, not calibrated frequencies."
        if cal == "none"
        else f"- Confidence values are calibrated per component kind ({cal}) on the validation bundles; on causes "
        'the model never trained on they can still be over-sure (README, "Calibrated confidence").'
    )
    lines += ["", "## Known limits", "", LIMITS, confidence, ""]
    return "\n".join(lines)
