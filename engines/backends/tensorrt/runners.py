"""What the captured pipeline needs from an engine and its contexts, as protocols: TrtEngine and
TrtContext implement them over TensorRT, the GPU tests implement doubles. Kept apart from both
implementations so the pipeline depends on the contract, never on tensorrt."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from engines.backends.tensorrt.tensor_spec import TensorSpec


@runtime_checkable
class ContextRunner(Protocol):
    """One execution context as the captured pipeline drives it: TrtContext over TensorRT, and
    the GPU tests' doubles. Each captured graph owns its own contexts."""

    name: str
    specs: dict[str, TensorSpec]

    def bind_scratch(self, ptr: int, size: int) -> None: ...

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None: ...

    def output_shape(self, name: str) -> tuple[int, ...]: ...

    def set_address(self, name: str, ptr: int) -> bool: ...

    def enqueue(self, stream_handle: int) -> bool: ...

    def close(self) -> None: ...


@runtime_checkable
class EngineRunner(Protocol):
    """One loaded engine: its I/O, the scratch memory its contexts need, and a factory of
    contexts. TrtEngine implements it over TensorRT; GPU tests implement doubles."""

    name: str
    specs: dict[str, TensorSpec]
    scratch_bytes: int  # device memory needed from the shared scratch allocation

    def create_context(self) -> ContextRunner: ...

    def close(self) -> None: ...
