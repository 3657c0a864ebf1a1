"""From a GenerationRequest to a finished take: validate, pick engines, keep backends loaded."""

from __future__ import annotations

import logging

from engines.backends.base import Backend, CancelFn, GenerationResult, ProgressFn
from engines.catalog import Availability, Catalog, get_model_set
from engines.errors import ModelUnavailableError
from engines.request import GenerationRequest, ValidatedRequest, validate_request

log = logging.getLogger(__name__)


def take_quality(pcm) -> list[str]:
    """Quality flags of a finished take (silence, clipping, DC, ...), computed here so they
    cost the worker thread, never the window."""
    from engines.audio_io import float_from_pcm16
    from engines.finish.quality import quality_flags

    return quality_flags(float_from_pcm16(pcm))


class Generator:
    """Owns loaded backends (one per engine file set) so repeated takes skip loading.

    Not thread-safe by design: the GUI calls it only from its one GPU worker thread.
    """

    def __init__(self, catalog: Catalog, max_loaded: int = 2,
                 free_engines_after_use: bool = False) -> None:
        """free_engines_after_use: small GPUs unload TensorRT engines after every take."""
        self.catalog = catalog
        self.free_engines_after_use = free_engines_after_use
        self._backends: dict[tuple, Backend] = {}
        self._max_loaded = max_loaded

    def validate(self, request: GenerationRequest) -> ValidatedRequest:
        return validate_request(request, get_model_set(request.model).max_seconds)

    def resolve(self, req: ValidatedRequest, backend: str = "auto") -> Availability:
        return self.catalog.require(req.model, req.decoder, req.precision, backend,
                                    need_encoder=req.mode != "t2a")

    def generate(self, request: GenerationRequest, progress: ProgressFn | None = None,
                 cancel: CancelFn | None = None) -> GenerationResult:
        req = self.validate(request)
        availability = self.resolve(req, request.backend)
        backend = self._backend_for(availability)
        result = backend.generate(req, progress, cancel)
        result.warnings = [*req.warnings, *availability.notes, *result.warnings]
        result.quality = take_quality(result.pcm)
        return result

    def _backend_for(self, availability: Availability) -> Backend:
        files = availability.files
        assert files is not None
        key = (availability.backend, files)
        if key in self._backends:
            return self._backends[key]
        if availability.backend == "onnxruntime":
            from engines.backends.onnxruntime import OnnxRuntimeBackend

            backend: Backend = OnnxRuntimeBackend(files)
        elif availability.backend == "tensorrt":
            from engines.backends.tensorrt.backend import TensorRTBackend

            gpu = self.catalog.gpu
            backend = TensorRTBackend(files, gpu_sm=gpu.sm if gpu else None,
                                      free_engines_after_use=self.free_engines_after_use)
        else:
            raise ModelUnavailableError(f"Unknown backend '{availability.backend}'.")
        while len(self._backends) >= self._max_loaded:
            _, old = self._backends.popitem()
            old.close()
        self._backends[key] = backend
        return backend

    def close(self) -> None:
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()
