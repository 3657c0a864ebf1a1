"""The error every TensorRT engine and context refusal raises; its own module because the engine,
its contexts and the tensor specs all raise it and none of them should import another for it."""

from __future__ import annotations

from engines.errors import BackendError


class EngineError(BackendError):
    """A TensorRT engine could not be loaded or driven; the text says what to do."""
