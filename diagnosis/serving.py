"""The service's model holder: which Predictor the service uses now, hot-reloaded when the registry's
`champion` alias moves.

`ModelHolder.get()` hands out the current Predictor (loading it on first use); `refresh()` asks the
registry where the alias points and swaps in the new version when it moved. A model built for another
pipeline schema (models.base.SchemaMismatch) is refused: the holder keeps the model it had, if any,
and reports why. `current_model_info()` is what the model page and /ready show.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diagnosis.predictor import Predictor, limit_threads
from models.base import SchemaMismatch, load_model
from pipeline.config import PipelineConfig
from training.model_fetch import fetch_model
from training.tracking import ModelRef, download_once
from vsandx.settings import ServiceSettings

if TYPE_CHECKING:
    from training.tracking import Tracker

log = logging.getLogger(__name__)
MAX_RETRY_S = 30.0


class ModelUnavailable(RuntimeError):
    """No model can be served: none registered, or the one registered is refused (reason inside)."""


class ModelHolder:
    def __init__(self, settings: ServiceSettings, config: PipelineConfig | None = None) -> None:
        self.settings = settings
        # The pipeline configuration (VSANDX_PIPELINE_*), resolved once: every model served reads its
        # bundles with it, and the charts and tracker reports drawn from that read agree with the verdict.
        self.config = config or PipelineConfig.from_settings()
        self._lock = threading.RLock()
        self._predictor: Predictor | None = None
        self._info: dict[str, Any] = {}
        self._error: str | None = None
        self._checked = 0.0
        # Without a model, the registry is asked again after 1, 2, 4 ... MAX_RETRY_S seconds, and a
        # change of state is logged once, not every attempt (workers poll every 20 ms).
        self._retry_at = 0.0
        self._delay = 0.0
        self._tracker: Tracker | None = None

    # ------------------------------------------------------------------------------ serving
    def get(self) -> Predictor:
        """The current model; loads it on first use. Raises ModelUnavailable with the reason, without
        asking the registry again until the back-off since the last failed attempt has passed."""
        p = self._predictor
        if p is not None:
            return p
        with self._lock:
            if self._predictor is None and time.monotonic() >= self._retry_at:
                self.refresh()
            if self._predictor is None:
                raise ModelUnavailable(self._error or "no model loaded")
            return self._predictor

    def retry_in(self) -> float:
        """Seconds until a model-less holder asks the registry again (0 when it serves a model)."""
        return 0.0 if self._predictor is not None else max(0.0, self._retry_at - time.monotonic())

    def maybe_refresh(self) -> bool:
        """refresh() at most once per model_poll_s; True when the served model changed."""
        if time.monotonic() - self._checked < self.settings.model_poll_s:
            return False
        return self.refresh()

    def refresh(self) -> bool:
        """Load the configured model, or the champion if its alias moved; True when it changed."""
        with self._lock:
            self._checked = time.monotonic()
            try:
                changed = self._refresh()
            except Exception as e:  # the registry or the model folder failed: keep serving what we have
                error = _refusal(e)
                if error != self._error:
                    log.error("model not served: %s", error)
                self._error = error
                if self._predictor is None:
                    self._delay = min(max(2 * self._delay, 1.0), MAX_RETRY_S)
                    self._retry_at = self._checked + self._delay
                return False
            self._delay, self._retry_at = 0.0, 0.0
            return changed

    def _refresh(self) -> bool:
        s = self.settings
        got = fetch_model(s.model_uri, s.data_dir, s.mlflow_tracking_uri, s.registered_model)
        if self._predictor is not None and (self._predictor.name, self._predictor.version) == (got.name, got.version):
            self._error = None  # the alias points back at what we serve: nothing refused any more
            return False
        model = load_model(got.folder)
        name = model.name if got.ref is None else got.name
        predictor = Predictor(model, name, got.version, self.config, s.review_coverage)
        uri = s.model_uri or f"models:/{s.registered_model}@champion"
        info: dict[str, Any] = {"uri": uri, "folder": str(got.folder)}
        if got.ref is not None:
            info |= self._ref_info(got.ref, got.folder) | ({"alias": uri.rpartition("@")[2]} if "@" in uri else {})
        self._install(predictor, info)
        return True

    def _install(self, predictor: Predictor, info: dict[str, Any]) -> None:
        limit_threads(self.settings.model_threads)
        old = self._predictor.version if self._predictor else None
        self._predictor, self._error = predictor, None
        self._info = {"name": predictor.name, "version": predictor.version, "family": predictor.model.name}
        self._info |= info | {"loaded_at": datetime.now(UTC).isoformat()}
        log.info("serving model %s version %s (was %s)", predictor.name, predictor.version, old)

    # ------------------------------------------------------------------------------ registry
    def _registry(self) -> Tracker:
        if self._tracker is None:
            from training.tracking import Tracker  # MLflow only when registry metadata is asked for

            s = self.settings
            self._tracker = Tracker(s.data_dir, s.mlflow_tracking_uri, s.mlflow_experiment)
        return self._tracker

    def _ref_info(self, ref: ModelRef, folder: Path) -> dict[str, Any]:
        info: dict[str, Any] = {"run_id": ref.run_id, "source": ref.source, "tags": dict(ref.tags)}
        try:
            mv = self._registry().client.get_model_version(ref.name, ref.version)
            info["registered_at"] = datetime.fromtimestamp(mv.creation_timestamp / 1000, UTC).isoformat()
            run = self._registry().client.get_run(ref.run_id) if ref.run_id else None
            if run is not None:
                info["trained_at"] = datetime.fromtimestamp(run.info.start_time / 1000, UTC).isoformat()
        except Exception as e:  # registry metadata is decoration: never fail serving for it
            log.warning("model metadata: %s", e)
        info["report"] = self._report(ref, folder)
        return info

    def _report(self, ref: ModelRef, folder: Path) -> str | None:
        """The training report's folder (Markdown and PNGs) logged with the run, fetched next to the model."""
        if not ref.run_id:
            return None
        s = self.settings
        dst = s.data_dir / "models" / ref.name / f"{ref.version}-report"
        try:
            got = download_once(f"runs:/{ref.run_id}/report", dst, s.data_dir, s.mlflow_tracking_uri)
        except Exception as e:  # a run without a report (tests, hand-registered models)
            log.info("no training report for %s version %s: %s", ref.name, ref.version, e)
            return None
        md = sorted(got.rglob("*.md"))
        return str(md[0].parent) if md else None

    # ------------------------------------------------------------------------------ reporting
    def current_model_info(self) -> dict[str, Any]:
        """name, version, family, uri, folder, report (folder with the training report's .md and PNGs,
        or None), run_id, registered_at, trained_at, loaded_at, error (why a model is refused), ready."""
        with self._lock:
            retry = {"retry_in_s": round(self.retry_in(), 1)} if self._predictor is None else {}
            return {**self._info, "ready": self._predictor is not None, "error": self._error, **retry}


def _refusal(e: Exception) -> str:
    if isinstance(e, SchemaMismatch):
        return f"model refused, built for another pipeline schema: {e}"
    return str(e)
