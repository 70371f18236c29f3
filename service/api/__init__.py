"""The HTTP layer: routes (diagnoses: where an upload is accepted; feedback; webhooks; the web UI and
its pages), FastAPI dependencies, CSRF and body limits, metrics; templates/ and static/ of the UI."""
