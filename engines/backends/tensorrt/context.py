"""One TensorRT execution context: the shapes, addresses and scratch memory of one captured graph.

A context's input shapes are part of its internal state: a graph captured after
`set_input_shape(L)` must never be replayed once the same context was set to another length
(NVIDIA/TensorRT#3798). So every graph key gets its own `TrtContext`, and the contexts of all
engines share one user-managed scratch allocation (they run one after another on one stream).

Every TensorRT boolean is checked; what TensorRT would refuse is refused here first with a
sentence a user can act on. `enqueue` is the one exception: its False is returned, not raised,
because under capture the pipeline decides (fall back to eager).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from engines.backends.tensorrt.engine_error import EngineError
from engines.backends.tensorrt.tensor_spec import TensorSpec, as_shape, fmt_shape

if TYPE_CHECKING:  # the engine makes its contexts, so only its type is needed here
    from engines.backends.tensorrt.engine import TrtEngine

log = logging.getLogger(__name__)


class TrtContext:
    """A USER_MANAGED execution context of one TrtEngine (a ContextRunner)."""

    def __init__(self, engine: TrtEngine, context: Any) -> None:
        self.engine = engine
        self.name = engine.name
        self.specs: dict[str, TensorSpec] = engine.specs
        self._context = context
        self._addresses: dict[str, int] = {}
        self._input_shapes: dict[str, tuple[int, ...]] = {}
        self._shapes_verified = False
        self._scratch: tuple[int, int] | None = None

    def _live(self) -> Any:
        if self._context is None or self.engine.closed:
            raise EngineError(f"'{self.name}' was closed; load it again.")
        return self._context

    def _spec(self, name: str) -> TensorSpec:
        spec = self.specs.get(name)
        if spec is None:
            raise EngineError(
                f"'{self.name}' has no tensor '{name}' (it has {', '.join(self.specs)}); "
                "check the engine matches the model."
            )
        return spec

    # -- memory --

    def bind_scratch(self, ptr: int, size: int) -> None:
        context = self._live()
        need = self.engine.scratch_bytes
        if size < need:
            raise EngineError(
                f"'{self.name}' needs {need} bytes of scratch memory but was given {size}; "
                "allocate the shared scratch for the largest engine."
            )
        if self._scratch == (ptr, size):
            return
        mark = self.engine.log_mark()
        setter = getattr(context, "set_device_memory", None)
        if setter is not None:
            setter(ptr, size)  # returns None: TensorRT reports a refusal through the logger only
        else:  # TensorRT before 10.1 has only the size-less property
            context.device_memory = ptr
        if self.engine.errors_since(mark):
            raise EngineError(
                f"TensorRT refused the scratch memory for '{self.name}'"
                f"{self.engine.reason_since(mark)}; the allocation must be 256-byte aligned and "
                "large enough."
            )
        self._scratch = (ptr, size)

    # -- shapes --

    def set_input_shape(self, name: str, shape: tuple[int, ...]) -> None:
        context = self._live()
        spec = self._spec(name)
        shape = tuple(int(dim) for dim in shape)
        if not spec.is_input:
            raise EngineError(f"'{name}' is an output of '{self.name}'; only inputs take shapes.")
        if len(shape) != len(spec.shape) or any(
            want >= 0 and got != want for want, got in zip(spec.shape, shape, strict=False)
        ):
            raise EngineError(
                f"Input '{name}' of '{self.name}' must have shape {fmt_shape(spec.shape)} "
                f"(-1 = any), not {fmt_shape(shape)}; check the engine matches the model."
            )
        if spec.profile is not None:
            low, _, high = spec.profile
            if any(d < lo or d > hi for d, lo, hi in zip(shape, low, high, strict=True)):
                raise EngineError(
                    f"Input '{name}' shape {fmt_shape(shape)} is outside the profile of "
                    f"'{self.name}' (min {fmt_shape(low)}, max {fmt_shape(high)}); use a length "
                    "within it or rebuild the engine with a wider profile."
                )
        if self._input_shapes.get(name) == shape:
            return
        if spec.is_dynamic:
            mark = self.engine.log_mark()
            if not context.set_input_shape(name, shape):
                raise EngineError(
                    f"TensorRT refused shape {fmt_shape(shape)} for input '{name}' of "
                    f"'{self.name}'{self.engine.reason_since(mark)}; check the engine's profile."
                )
            self._shapes_verified = False
        self._input_shapes[name] = shape

    def _unset_inputs(self) -> list[str]:
        return [name for name, spec in self.specs.items()
                if spec.is_input and spec.is_dynamic and name not in self._input_shapes]

    def output_shape(self, name: str) -> tuple[int, ...]:
        context = self._live()
        spec = self._spec(name)
        if not spec.is_dynamic:
            return spec.shape
        missing = self._unset_inputs()
        if missing:
            # Never ask TensorRT here: it would answer with -1 dims, or fail under capture.
            raise EngineError(
                f"The shape of '{name}' in '{self.name}' is not known yet; set the input shapes "
                f"first ({', '.join(missing)})."
            )
        shape = as_shape(context.get_tensor_shape(name))
        if shape is None or any(dim < 0 for dim in shape):
            raise EngineError(
                f"TensorRT could not determine the shape of '{name}' in '{self.name}' "
                f"(got {shape}); set the input shapes first or rebuild the engine."
            )
        return shape

    # -- addresses and execution --

    def set_address(self, name: str, ptr: int) -> bool:
        context = self._live()
        self._spec(name)
        ptr = int(ptr)
        if ptr <= 0:
            raise EngineError(
                f"Tensor '{name}' of '{self.name}' was given no device memory (address {ptr}); "
                "allocate its buffer before binding it."
            )
        if self._addresses.get(name) == ptr:
            return False
        mark = self.engine.log_mark()
        if not context.set_tensor_address(name, ptr):
            raise EngineError(
                f"TensorRT refused address {ptr:#x} for '{name}' of '{self.name}'"
                f"{self.engine.reason_since(mark)}; buffers must be 256-byte aligned device "
                "memory."
            )
        self._addresses[name] = ptr
        return True

    def enqueue(self, stream_handle: int) -> bool:
        context = self._live()
        if self._scratch is None and self.engine.scratch_bytes > 0:
            raise EngineError(
                f"'{self.name}' has no scratch memory bound; call bind_scratch before enqueue."
            )
        missing = self._unset_inputs()
        if missing:
            raise EngineError(
                f"'{self.name}' cannot run: input shapes not set for {', '.join(missing)}."
            )
        unbound = [name for name in self.specs if name not in self._addresses]
        if unbound:
            raise EngineError(
                f"'{self.name}' cannot run: no address bound for {', '.join(unbound)}."
            )
        if not self._shapes_verified:
            self._verify_shapes(context)
        return bool(context.execute_async_v3(int(stream_handle)))

    def _verify_shapes(self, context: Any) -> None:
        """Ask TensorRT whether it considers every input specified (once per shape change)."""
        infer = getattr(context, "infer_shapes", None)
        if infer is not None:
            try:
                pending = list(infer())
            except RuntimeError as err:
                raise EngineError(
                    f"TensorRT could not infer the shapes of '{self.name}' ({err}); check the "
                    "input shapes."
                ) from err
        else:  # all_binding_shapes_specified predates name-based shapes; a fallback only
            pending = [] if context.all_binding_shapes_specified else ["(some inputs)"]
        if pending:
            raise EngineError(
                f"'{self.name}' cannot run: TensorRT reports unspecified inputs "
                f"{', '.join(str(name) for name in pending)}."
            )
        self._shapes_verified = True

    def close(self) -> None:
        """Drop the TensorRT context. Safe to call twice."""
        self._context = None
        self._addresses.clear()
        self._input_shapes.clear()
        self._scratch = None
