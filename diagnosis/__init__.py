"""What turns a bundle into a diagnosis document, for the CLI and the service alike: the predictor
(bundle -> verdicts: where a verdict is computed), the served-model holder, findings and onset (verdicts
-> evidence and what to do), charts and their rendering, the digest (a document as text and HTML for
comments and emails) and the evaluation of a labelled folder. Imports pipeline/, models/, training's
model registry and the vocabulary; nothing of service/ or cli/."""
