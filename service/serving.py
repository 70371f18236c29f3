"""The served model: loaded once, hot-reloaded when the registry's `champion` alias moves.

`ModelHolder.get()` hands out the current Predictor (loading it on first use); `refresh()` asks the
registry where the alias points and swaps in the new version when it moved. A model built for another
pipeline schema (models.base.SchemaMismatch) is refused: the holder keeps the model it had, if any,
and reports why. `current_model_info()` is what the model page and /ready show.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.base import SchemaMismatch, load_model
from pipeline.config import PipelineConfig
from service.predictor import NoModel, Predictor
from vsandx.settings import ServiceSettings

if TYPE_CHECKING:
    from training.tracking import ModelRef, Tracker

log = logging.getLogger(__name__)


class ModelUnavailable(RuntimeError):
    """No model can be served: none registered, or the one registered is refused (reason inside)."""


class ModelHolder:
    def __init__(self, settings: ServiceSettings) -> None:
        self.settings = settings
        self._lock = threading.RLock()
        self._predictor: Predictor | None = None
        self._info: dict[str, Any] = {}
        self._error: str | None = None
        self._checked = 0.0
        self._tracker: Tracker | None = None

    # ------------------------------------------------------------------------------ serving
    def get(self) -> Predictor:
        """The current model; loads it on first use. Raises ModelUnavailable with the reason."""
        p = self._predictor
        if p is not None:
            return p
        with self._lock:
            if self._predictor is None:
                self.refresh()
            if self._predictor is None:
                raise ModelUnavailable(self._error or "no model loaded")
            return self._predictor

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
                return self._refresh()
            except Exception as e:  # the registry or the model folder failed: keep serving what we have
                self._error = _refusal(e)
                log.error("model not served: %s", self._error)
                return False

    def _refresh(self) -> bool:
        s = self.settings
        uri = s.model_uri
        if uri and not uri.startswith("models:/"):
            if self._predictor is not None:
                return False
            self._install(Predictor.load(uri, s), {"uri": uri, "folder": str(Path(uri).resolve())})
            return True
        name, _, alias = (uri or f"models:/{s.registered_model}@champion").removeprefix("models:/").partition("@")
        if not alias:  # models:/name/version: fixed
            if self._predictor is None:
                self._install(Predictor.load(uri, s), {"uri": uri})
                return True
            return False
        ref = self._registry().champion(name, alias)
        if ref is None:
            raise NoModel(f"no model registered as {name}@{alias}; run `vsandx train` first")
        if self._predictor is not None and self._predictor.version == ref.version:
            return False
        folder = self._fetch(ref, s.data_dir / "serving" / name / ref.version)
        predictor = Predictor(load_model(folder), name, ref.version, PipelineConfig.from_settings())
        self._install(predictor, self._ref_info(ref, alias, folder))
        return True

    def _install(self, predictor: Predictor, info: dict[str, Any]) -> None:
        _limit_threads(self.settings.model_threads)
        old = self._predictor.version if self._predictor else None
        self._predictor, self._error = predictor, None
        self._info = {"name": predictor.name, "version": predictor.version, "family": predictor.model.name}
        self._info |= info | {"loaded_at": datetime.now(UTC).isoformat()}
        log.info("serving model %s version %s (was %s)", predictor.name, predictor.version, old)

    # ------------------------------------------------------------------------------ registry
    def _registry(self) -> Tracker:
        if self._tracker is None:
            from training.tracking import Tracker  # MLflow only when the registry is asked for

            s = self.settings
            self._tracker = Tracker(s.data_dir, s.mlflow_tracking_uri, s.mlflow_experiment)
        return self._tracker

    def _fetch(self, ref: ModelRef, final: Path) -> Path:
        """The model folder of `ref` under `final`, downloaded once: into a private folder, then renamed
        into place, so processes starting together never read each other's half-written files."""
        done = final / ".complete"
        if not done.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            work = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}-"))
            try:
                got = self._registry().download(ref, work)
            except BaseException:
                shutil.rmtree(work, ignore_errors=True)
                raise
            (work / ".complete").write_text(str(got.relative_to(work)))
            try:
                os.rename(work, final)
            except OSError:  # another process was first: its folder is complete (renames are atomic)
                shutil.rmtree(work, ignore_errors=True)
        return final / done.read_text()

    def _ref_info(self, ref: ModelRef, alias: str, folder: Path) -> dict[str, Any]:
        info: dict[str, Any] = {
            "uri": f"models:/{ref.name}@{alias}",
            "alias": alias,
            "run_id": ref.run_id,
            "source": ref.source,
            "tags": dict(ref.tags),
            "folder": str(folder),
        }
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
        from training.tracking import ModelRef as Ref

        dst = folder.parent / "report"
        try:
            got = self._fetch(Ref(ref.name, ref.version, ref.run_id, f"runs:/{ref.run_id}/report", {}), dst)
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
            return {**self._info, "ready": self._predictor is not None, "error": self._error}


def _limit_threads(n: int) -> None:
    """One process, n model threads: on a small machine extra intra-op threads only fight the workers."""
    import sys

    torch = sys.modules.get("torch")  # loaded by the CNN models; the baselines never need it
    if torch is not None and n > 0 and torch.get_num_threads() != n:
        torch.set_num_threads(n)


def _refusal(e: Exception) -> str:
    if isinstance(e, SchemaMismatch):
        return f"model refused, built for another pipeline schema: {e}"
    return str(e)
