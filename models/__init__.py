"""Model registry: CNN families and baselines behind one fit / predict_proba interface.

    from models import create_model, list_models, load_model
    model = create_model("cnn_base").fit(bundles, labels)   # bundles: [pipeline BundleTensors]
    model.predict(bundles)                                  # [{component id: "none" | fault id}]
    model.save("var/models/x"); load_model("var/models/x")

Importing this package is cheap: the families (sklearn baselines, torch CNNs) register themselves
on the first create_model / list_models call.
"""

from models.base import Diagnoser, SchemaMismatch, load_model
from models.metrics import evaluation_report
from models.registry import create_model, list_models, model_entry, register_model, search_space

__all__ = [
    "Diagnoser",
    "SchemaMismatch",
    "create_model",
    "evaluation_report",
    "list_models",
    "load_model",
    "model_entry",
    "register_model",
    "search_space",
]
