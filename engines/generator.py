"""From a request to a finished take: check it (unless a front end already did), pick engines,
keep backends loaded."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from engines.audio_io import float_from_pcm16
from engines.backends.base import Backend, CancelFn, ProgressFn
from engines.backends.onnxruntime import OnnxRuntimeBackend
from engines.backends.tensorrt.backend import TensorRTBackend
from engines.catalog import (
    Availability,
    Catalog,
    EngineFiles,
    get_model_set,
    normalize_backend,
    normalize_tier,
)
from engines.catalog.search import Choice
from engines.error_sentences import path_text
from engines.errors import CancelledError, ModelUnavailableError, RequestError
from engines.finish.quality import quality_flags
from engines.generation_result import GenerationResult
from engines.request import GenerationRequest, ValidatedRequest, checked_request

log = logging.getLogger(__name__)


def take_quality(pcm) -> list[str]:
    """Quality flags of a finished take (silence, clipping, DC, ...), computed here so they
    cost the worker thread, never the window."""
    return quality_flags(float_from_pcm16(pcm))


def _core_key(backend: str, files: EngineFiles) -> tuple:
    """What a loaded backend is: its text encoder and DiT. The codec (decoder and encoder of a
    tier) is swapped inside a backend (`use_codec`), so a tier change never reloads the DiT."""
    return (backend, files.format, files.text_encoder, files.tokenizer, files.dit)


MakeBackend = Callable[[str, EngineFiles], Backend]
"""make_backend(backend name, files) -> a new Backend for that text encoder + DiT."""


class Generator:
    """Owns loaded backends (one per text encoder + DiT) so repeated takes skip loading.

    At most `max_loaded` stay loaded; the least recently used goes first, and it is closed
    before the new one is made, so switching between two large sets never holds both at once
    when only one fits the limit.

    Not thread-safe by design: the GUI calls it only from its one GPU worker thread.
    """

    def __init__(self, catalog: Catalog, max_loaded: int = 2,
                 free_engines_after_use: bool = False,
                 make_backend: MakeBackend | None = None) -> None:
        """free_engines_after_use: small GPUs unload TensorRT engines after every take.
        make_backend: how a backend is made (tests pass fakes); the real ones by default."""
        self.catalog = catalog
        self.free_engines_after_use = free_engines_after_use
        # Insertion order is recency order: the first key is the least recently used.
        self._backends: dict[tuple, Backend] = {}
        self._max_loaded = max(1, max_loaded)
        self._make_backend = make_backend or self._new_backend

    def validate(self, request: GenerationRequest | ValidatedRequest) -> ValidatedRequest:
        return checked_request(request)

    def resolve(self, req: ValidatedRequest, backend: str = "auto") -> Availability:
        """The engines for a checked request: its names are canonical already, so the
        catalog looks them up without normalising them again."""
        # A take with adapters needs the set's branch DiT: the catalog refuses a set without one.
        choice = Choice(get_model_set(req.model), req.decoder, req.precision,
                        req.mode != "t2a", req.codec_tier, adapters=bool(req.adapters))
        return self.catalog.require_choice(choice, normalize_backend(backend))

    def generate(self, request: GenerationRequest | ValidatedRequest,
                 progress: ProgressFn | None = None,
                 cancel: CancelFn | None = None) -> GenerationResult:
        """The take `request` asks for. A checked request (engines.request.checked_request,
        made once at a front end's edge) runs as it is; a raw one is checked here."""
        req = checked_request(request)
        availability = self.resolve(req, req.backend)
        backend = self._backend_for(availability)
        result = backend.generate(req, progress, cancel)
        result.warnings = [*req.warnings, *availability.notes, *result.warnings]
        result.quality = take_quality(result.pcm)
        return result

    def decode_with_tier(self, result: GenerationResult, tier: str,
                         cancel: CancelFn | None = None) -> GenerationResult:
        """The take `result` decoded again through codec tier `tier`, to compare by ear: the
        very same final latents (no sampling: seed, prompt and DiT are not involved), on the
        backend that made the take. Decoding with the take's own tier gives its samples again
        (bit for bit where the codec is deterministic: SAME-L, the demo; SAME-S dithers inside
        its engine, so two of its decodes differ at about -60 dB).

        Works for takes of this session, which carry their latents; the library keeps audio,
        not latents, so a take reopened from it cannot be decoded again (RequestError says so).
        Raises RequestError for a tier the decoder lacks, ModelUnavailableError when the tier
        is not installed or cannot run here (the catalog's sentence)."""
        req = result.request
        latents = getattr(result, "latents", None)
        if latents is None or getattr(latents, "size", 0) == 0:
            raise RequestError("This take has no latents to decode again (only takes made in "
                               "this session keep them); generate it again to compare tiers.")
        codec_tier = normalize_tier(tier, req.decoder)
        if cancel is not None and cancel():
            raise CancelledError()
        availability = self.catalog.require(req.model, req.decoder, req.precision,
                                            result.backend, codec_tier=codec_tier)
        backend = self._backend_for(availability)
        pcm, decode_ms = backend.decode_latents(latents, req, availability.files)
        source = result.files
        compared = GenerationResult(
            pcm=pcm, latents=latents, step_latents=result.step_latents, seed=result.seed,
            timings_ms={"decode": decode_ms, "total": decode_ms}, backend=result.backend,
            request=dataclasses.replace(req, codec_tier=codec_tier), files=availability.files,
            warnings=list(availability.notes), sample_rate=result.sample_rate,
            details={"decode_only": True,
                     "decoded_from": {"tier": getattr(source, "codec_tier", None),
                                      "decoder": path_text(source.decoder) if source else None}})
        compared.quality = take_quality(pcm)
        return compared

    def _backend_for(self, availability: Availability) -> Backend:
        files = availability.files
        assert files is not None
        key = _core_key(availability.backend, files)
        backend = self._backends.pop(key, None)
        if backend is None:
            # Free first: loading beside the sets it replaces would peak at both.
            while len(self._backends) >= self._max_loaded:
                oldest = next(iter(self._backends))
                self._backends.pop(oldest).close()
            backend = self._make_backend(availability.backend, files)
        self._backends[key] = backend  # re-inserted: now the most recently used
        backend.use_codec(files)
        return backend

    def _new_backend(self, name: str, files: EngineFiles) -> Backend:
        if name == "onnxruntime":
            return OnnxRuntimeBackend(files)
        if name == "tensorrt":
            gpu = self.catalog.gpu
            return TensorRTBackend(files, gpu_sm=gpu.sm if gpu else None,
                                   free_engines_after_use=self.free_engines_after_use)
        raise ModelUnavailableError(f"Unknown backend '{name}'.")

    def close(self) -> None:
        for backend in self._backends.values():
            backend.close()
        self._backends.clear()
