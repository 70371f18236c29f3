"""Model registry: CNN families and baselines behind one fit / predict_proba interface."""
