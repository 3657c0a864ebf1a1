"""Decode a take's final latents through one decoder engine, eagerly: no text encoder, no DiT,
no graph capture (so comparing codec tiers by ear never disturbs a captured generation graph).

The decode step is the captured pipeline's own (engines.backends.tensorrt.pipeline.record): the
same cast kernel in front of a non-fp32 decoder, the same narrow / float-to-PCM kernel after it,
and for inpainting the same paste-back kernel, so the take's own tier gives the take's samples
again wherever the decoder itself is deterministic.
"""

from __future__ import annotations

import numpy as np

from engines.backends.tensorrt import dtypes
from engines.backends.tensorrt.kernels import SamplerKernels, span_bounds
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT
from engines.cuda.api import call
from engines.cuda.memory import DeviceBuffer
from engines.cuda.stream import Event, Stream
from engines.errors import BackendError
from engines.request import ValidatedRequest

INPAINT_FADE = 1024  # as the captured pipeline's paste-back (pipeline.INPAINT_FADE)
OUTPUTS = ("pcm", "pcm_unbounded", "audio")


class _Buffers:
    """Device buffers of one decode, freed together."""

    def __init__(self) -> None:
        self.items: list[DeviceBuffer] = []

    def new(self, shape, dtype=np.float32) -> DeviceBuffer:
        buf = DeviceBuffer(shape=tuple(shape), dtype=dtype)
        buf.reshape(tuple(shape))
        self.items.append(buf)
        return buf

    def upload(self, array: np.ndarray, stream: Stream) -> DeviceBuffer:
        host = np.ascontiguousarray(array)
        buf = self.new(host.shape, host.dtype)
        call("cuMemcpyHtoDAsync", buf.ptr, host.ctypes.data, host.nbytes, stream.handle)
        stream.synchronize()  # `host` is pageable and local: done before it can go away
        return buf

    def free(self) -> None:
        for buf in self.items:
            buf.free()
        self.items.clear()


def decode_latents(context, kernels: SamplerKernels, stream: Stream,
                   scratch: tuple[int, int] | None, latents: np.ndarray,
                   req: ValidatedRequest) -> tuple[np.ndarray, float]:
    """(int16 PCM (out_samples, 2), GPU ms) of `latents` (256, L) through the decoder
    execution `context`, with the take's limiter ceiling, trim and (inpainting) paste-back."""
    length = int(latents.shape[1])
    total, frames = length * SAMPLES_PER_LATENT, req.out_samples
    specs = context.specs
    output = next((name for name in OUTPUTS if name in specs), None)
    if output is None:
        raise BackendError(f"The decoder '{context.name}' has no pcm, pcm_unbounded or audio "
                           f"output; it is not an SA3 decoder.")
    bufs = _Buffers()
    start, end = Event(), Event()
    try:
        if scratch is not None:
            context.bind_scratch(*scratch)
        context.set_input_shape("latent", (1, LATENT_CHANNELS, length))
        latent = bufs.upload(np.asarray(latents, np.float32)[None], stream)
        address = {"latent": latent.ptr}
        latent_type = specs["latent"].dtype
        if latent_type != "float32":
            dtypes.host_type(context.name, "latent", latent_type, dtypes.FLOAT_TYPES)
            staged = bufs.new((latent.nbytes // 4,), dtypes.HOST_TYPES[latent_type])
            address["latent"] = staged.ptr
        if "limiter_ceiling" in specs:
            spec = specs["limiter_ceiling"]
            host = dtypes.host_type(context.name, "limiter_ceiling", spec.dtype,
                                    dtypes.FLOAT_TYPES)
            value = np.zeros(tuple(d for d in spec.shape if d != -1), host)
            dtypes.store(value, req.limiter_ceiling, spec.dtype)
            context.set_input_shape("limiter_ceiling", value.shape)
            address["limiter_ceiling"] = bufs.upload(value, stream).ptr
        shape = context.output_shape(output)
        out_type = specs[output].dtype
        if output != "audio" and out_type != "int32":
            raise BackendError(f"The decoder '{context.name}' gives '{output}' as {out_type}, "
                               f"not int32; use a decoder built from the SA3 ONNX files.")
        if output == "audio":
            dtypes.host_type(context.name, "audio", out_type, dtypes.FLOAT_TYPES)
        raw = bufs.new(shape, dtypes.HOST_TYPES[out_type] if output == "audio" else np.int32)
        address[output] = raw.ptr
        pcm = bufs.new((frames, 2), np.int16)
        inpaint = req.mode == "inpaint"
        original = keep = None
        if inpaint:
            original = bufs.upload(np.asarray(req.init_audio, np.float32).T, stream)  # (2, N)
            keep_mask = req.keep_mask().astype(np.float32)
            keep = bufs.upload(keep_mask, stream)
            bounds = bufs.upload(span_bounds(keep_mask), stream)

        start.record(stream)
        if latent_type != "float32":
            kernels.cast(stream, "float32", latent_type, address["latent"], latent.ptr,
                         LATENT_CHANNELS * length)
        for name, ptr in address.items():
            context.set_address(name, ptr)
        if not context.enqueue(stream.ptr):
            raise BackendError(f"The decoder '{context.name}' refused to run "
                               f"(execute_async_v3 returned False); see the log.")
        pcm32 = 0
        if output == "audio":
            audio = raw
            if out_type != "float32":
                audio = bufs.new(shape)
                kernels.cast(stream, out_type, "float32", audio.ptr, raw.ptr, 2 * total)
            kernels.float_to_pcm(stream, pcm.ptr, audio.ptr, total, frames)
        elif inpaint:
            pcm32 = raw.ptr  # the paste-back kernel narrows as it goes, as in the pipeline
        else:
            kernels.narrow_pcm(stream, pcm.ptr, raw.ptr, 2 * frames)
        if inpaint:
            kernels.paste_original(stream, pcm.ptr, pcm32, original.ptr, total, frames,
                                   keep.ptr, bounds.ptr, SAMPLES_PER_LATENT, INPAINT_FADE)
        end.record(stream)
        host = np.empty((frames, 2), np.int16)
        call("cuMemcpyDtoHAsync", host.ctypes.data, pcm.ptr, host.nbytes, stream.handle)
        stream.synchronize()
        return host, end.elapsed_ms(start)
    finally:
        stream.synchronize()  # nothing may still read a buffer freed below
        bufs.free()
        start.free()
        end.free()
