"""Latents of audio that has none (imported files, a file to search by, takes kept before
embeddings): the codec's own encoder, as audio-to-audio uses it
(engines.backends.eager_pipeline: float32
(1, 2, N) with N a whole number of latents, at least the codec minimum, in (1, 256, N/4096) out).

Only the encoder graph is loaded, through ONNX Runtime on the CPU (the demo codec, or any codec
installed as ONNX): searching must not load a DiT. A latent space whose encoder is only installed
as a TensorRT engine is not encoded here; its takes and files are then compared by their audio
features (see engines.similarity.index).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

import numpy as np

from engines.catalog import MODEL_SETS, Catalog
from engines.constants import CHANNELS, SAMPLE_RATE, SAMPLES_PER_LATENT, codec_length
from engines.errors import StudioError
from engines.lazy import lazy_import

ort = lazy_import("onnxruntime")
log = logging.getLogger(__name__)

ENCODED_SECONDS = 30.0  # only the start of longer audio goes through the encoder (CPU time)
_NUMPY_TYPES = {"tensor(float16)": np.float16, "tensor(double)": np.float64}


def encoder_input(audio: np.ndarray) -> np.ndarray:
    """float32 (1, 2, N) for an encoder from float (frames, 2) audio at SAMPLE_RATE: its first
    ENCODED_SECONDS, zero-padded to whole latents and at least the codec minimum."""
    frames = min(int(audio.shape[0]), int(ENCODED_SECONDS * SAMPLE_RATE))
    length = codec_length(max(frames, 1) / SAMPLE_RATE)
    padded = np.zeros((CHANNELS, length * SAMPLES_PER_LATENT), dtype=np.float32)
    padded[:, :frames] = np.asarray(audio[:frames], dtype=np.float32).T
    return padded[None]


class LatentEncoders:
    """The codec encoders this machine can run on the CPU, by latent space (decoder key), each
    loaded on first use and kept."""

    def __init__(self, catalog: Catalog, spaces: Iterable[str]) -> None:
        """`spaces`: the latent spaces wanted, most wanted first (e.g. by takes in a library)."""
        self._catalog = catalog
        self._sessions: dict[str, Any] = {}
        self._failed: set[str] = set()
        self.spaces = [space for space in dict.fromkeys(spaces) if self._installed(space)]

    def _model_for(self, space: str) -> str | None:
        return next((m.key for m in MODEL_SETS.values() if m.default_decoder == space), None)

    def _installed(self, space: str) -> bool:
        model = self._model_for(space)
        if model is None or not self._catalog.onnxruntime_available:
            return False
        try:
            found = self._catalog.resolve(model, space, backend="onnxruntime",
                                          need_encoder=True)
        except StudioError:
            return False
        return found.runnable and found.files is not None and found.files.encoder is not None

    def _session(self, space: str) -> Any | None:
        if space in self._sessions or space in self._failed:
            return self._sessions.get(space)
        model = self._model_for(space)
        try:
            found = self._catalog.require(model or space, space, backend="onnxruntime",
                                          need_encoder=True)
            assert found.files is not None and found.files.encoder is not None
            session = ort.InferenceSession(str(found.files.encoder),
                                           providers=["CPUExecutionProvider"])
        except Exception:  # any load failure: this space is compared by audio features
            log.warning("The %s encoder could not be loaded for sound search", space,
                        exc_info=True)
            self._failed.add(space)
            return None
        self._sessions[space] = session
        return session

    def latents(self, space: str, audio: np.ndarray) -> np.ndarray | None:
        """(256, L) float32 latents of float (frames, 2) audio at SAMPLE_RATE in `space`, or
        None when its encoder is not available here (or failed on this audio: logged)."""
        if space not in self.spaces:
            return None
        session = self._session(space)
        if session is None:
            return None
        feed = session.get_inputs()[0]
        values = encoder_input(audio).astype(_NUMPY_TYPES.get(feed.type, np.float32))
        try:
            out = session.run(None, {feed.name: values})[0]
        except Exception:
            log.warning("The %s encoder failed on audio for sound search", space, exc_info=True)
            return None
        latents = np.asarray(out, dtype=np.float32)[0]
        return latents if np.all(np.isfinite(latents)) else None
