"""Why TensorRT could not deserialize an engine, told as one sentence a user can act on.

Pure text work on the lines TensorRT logged (no tensorrt import), so every wording is testable
without a GPU; tests/engines/test_load_errors.py cites where each wording was seen. The reasons
are tried
in a fixed order because TensorRT's lines mention more than their cause: an out-of-memory line
comes from `safeDeserialize.cpp`, a driver line says "driver version", and the JIT plugin engines
also fail with a generic "Serialization assertion ... failed".
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engines.catalog import JIT_CODEC_FILES, JIT_PLUGIN_MARKER, aot_codec_remedy

_OUT_OF_MEMORY = re.compile(
    r"out of memory|OutOfMemory|Requested amount of GPU memory|CUDA_ERROR_OUT_OF_MEMORY"
    r"|cudaErrorMemoryAllocation", re.I)
_REQUESTED_BYTES = re.compile(
    r"Requested amount of GPU memory \((\d+) bytes\)|Requested size was (\d+) bytes", re.I)
_OLD_DRIVER = re.compile(
    r"driver version is insufficient|InsufficientDriver|INSUFFICIENT_DRIVER"
    r"|initiali[sz]ation failure with error:? ?35\b", re.I)
_CUDA_INIT = re.compile(r"CUDA initiali[sz]ation failure with error:? ?(\d+)", re.I)
_DEVICE = re.compile(r"incompatible device|expecting compute", re.I)
_COMPUTE_PAIR = re.compile(r"expecting compute (\d+)\.(\d+) got compute (\d+)\.(\d+)", re.I)
_PLUGIN = re.compile(
    r"could not find plugin|Cannot find plugin|IPluginCreator not found|Cannot deserialize plugin"
    r"|Plugin not found", re.I)
_PLUGIN_NAME = re.compile(
    r"(?:could not find|Cannot find) plugin:?\s*(?P<name>[\w.]+),?\s*"
    r"version:?\s*(?P<version>[\w.]*?)(?:,\s*namespace:\s*(?P<namespace>\w*))?[.)\s]*$",
    re.I | re.M)
_VERSION = re.compile(
    r"not compatible with this version of TensorRT|expecting library version"
    r"|Version tag does not match", re.I)
_LIBRARY_VERSIONS = re.compile(
    r"expecting library version (\d+(?:\.\d+)+)(?: got (\d+(?:\.\d+)+))?", re.I)
_FORMAT_VERSIONS = re.compile(r"Current Version: (\d+), Serialized Engine Version: (\d+)", re.I)
_DAMAGED = re.compile(
    r"magic ?tag|does not match archive size|empty memory buffer", re.I)
# Lines that only say "it failed" and repeat no cause: never worth quoting.
_GENERIC = re.compile(r"Engine deserialization failed|Deserialize the cuda engine failed", re.I)
_LOCATION = re.compile(r"^\s*(?:\d+:\s*)?(?:\[[^\]]*::[^\]]*\]\s*)?")

# The SAME-L attention plugin of the JIT engines, as TensorRT names it.
_SAME_L_PLUGIN = ("diff_attn_swa", "samel")


@dataclass(frozen=True)
class _Failure:
    shown: str
    lines: tuple[str, ...]
    text: str
    trt_version: str
    folder_sm: str | None
    gpu_sm: str | None


def describe_load_failure(shown: str, errors: Sequence[str], trt_version: str,
                          folder_sm: str | None, gpu_sm: str | None) -> str:
    """One sentence (what happened, what to do) for a failed `deserialize_cuda_engine`.

    shown: the engine as the user knows it (e.g. "sm_90/sa3-m/dit_fp16.trt"); errors: what
    TensorRT logged during the call, oldest first; trt_version: the installed TensorRT;
    folder_sm / gpu_sm: the sm_XX folder the engine sits in and this GPU's, when known.
    """
    lines = tuple(str(line).strip() for line in errors if str(line).strip())
    failure = _Failure(shown, lines, " ".join(lines), trt_version, folder_sm, gpu_sm)
    for reason in _REASONS:
        sentence = reason(failure)
        if sentence is not None:
            return sentence
    return _unexplained(failure)


# ---- the reasons, in the order they are tried ---------------------------------------------------

def _out_of_memory(f: _Failure) -> str | None:
    if not _OUT_OF_MEMORY.search(f.text):
        return None
    return (f"There was not enough free GPU memory to load '{f.shown}'{_asked_for(f.text)}; "
            "close other programs that use the GPU, or choose a smaller model or precision, and "
            "try again.")


def _driver(f: _Failure) -> str | None:
    if _OLD_DRIVER.search(f.text):
        return (f"The NVIDIA driver is too old for the CUDA version TensorRT {f.trt_version} "
                f"uses, so '{f.shown}' could not be loaded; update the NVIDIA driver and "
                "restart SA3 Studio.")
    failed = _CUDA_INIT.search(f.text)
    if failed:
        return (f"CUDA could not start (error {failed.group(1)}), so TensorRT {f.trt_version} "
                f"could not load '{f.shown}'; check that the NVIDIA driver works (run "
                "nvidia-smi) and restart SA3 Studio.")
    return None


def _wrong_arch_in_log(f: _Failure) -> str | None:
    if not _DEVICE.search(f.text):
        return None
    gpu_sm, built_sm = f.gpu_sm, f.folder_sm
    pair = _COMPUTE_PAIR.search(f.text)
    if pair:  # "expecting compute <this GPU> got compute <the engine's>"
        gpu_sm = gpu_sm or f"sm_{pair.group(1)}{pair.group(2)}"
        built_sm = f"sm_{pair.group(3)}{pair.group(4)}"
    return _wrong_arch_sentence(f.shown, built_sm, gpu_sm)


def _missing_plugin(f: _Failure) -> str | None:
    if not _PLUGIN.search(f.text):
        return None
    named = _PLUGIN_NAME.search("\n".join(f.lines))
    name = named.group("name") if named else None
    namespace = (named.group("namespace") or "") if named else ""
    if _is_same_l_jit(f.shown, name, namespace):
        return (f"'{f.shown}' is a JIT SAME-L engine whose diff_attn_swa plugin must be "
                f"registered from Python, which SA3 Studio does not do; {aot_codec_remedy()}.")
    if named:
        version = f" version {named.group('version')}" if named.group("version") else ""
        plugin = f"the TensorRT plugin '{_qualified(name, namespace)}'{version}"
    else:
        plugin = "a TensorRT plugin"
    return (f"'{f.shown}' needs {plugin}, which is not registered in this TensorRT "
            f"{f.trt_version}; use engines built without it or rebuild them from ONNX.")


def _wrong_version(f: _Failure) -> str | None:
    if not _VERSION.search(f.text):
        return None
    library = _LIBRARY_VERSIONS.search(f.text)
    installed = library.group(1) if library else f.trt_version
    built = library.group(2) if library else None  # TensorRT 10 may print garbage here
    fix = f"download engines built for TensorRT {installed} or rebuild them"
    if built:
        return (f"'{f.shown}' was built with TensorRT {built} but TensorRT {installed} is "
                f"installed; {fix}.")
    formats = _FORMAT_VERSIONS.search(f.text)
    detail = f" (plan format {formats.group(2)}, this one reads {formats.group(1)})" if formats \
        else ""
    return (f"'{f.shown}' was built with another TensorRT version than the installed "
            f"TensorRT {installed}{detail}; {fix}.")


def _wrong_arch_by_folder(f: _Failure) -> str | None:
    """Engines sit in models/<sm_XX>; another GPU's folder explains an otherwise unclear
    failure (TensorRT checks the version before the device, so its log may not say)."""
    if f.folder_sm and f.gpu_sm and f.folder_sm != f.gpu_sm:
        return _wrong_arch_sentence(f.shown, f.folder_sm, f.gpu_sm)
    return None


def _damaged(f: _Failure) -> str | None:
    if not _DAMAGED.search(f.text):
        return None
    return (f"'{f.shown}' is not an engine TensorRT {f.trt_version} can read (the file is "
            "damaged or incomplete, or comes from a much older or newer TensorRT); download it "
            "again or rebuild it.")


_REASONS: tuple[Callable[[_Failure], str | None], ...] = (
    _out_of_memory, _driver, _wrong_arch_in_log, _missing_plugin, _wrong_version,
    _wrong_arch_by_folder, _damaged,
)


def _unexplained(f: _Failure) -> str:
    quoted = _most_specific(f.lines)
    reason = f" ({quoted})" if quoted else " (no reason was logged)"
    return (f"TensorRT {f.trt_version} could not load '{f.shown}'{reason}; download the engine "
            "again or rebuild it.")


# ---- helpers ------------------------------------------------------------------------------------

def _wrong_arch_sentence(shown: str, built_sm: str | None, gpu_sm: str | None) -> str:
    built = built_sm or "another GPU architecture"
    here = gpu_sm or "another one"
    folder = f"models/{gpu_sm}" if gpu_sm else "the models folder of this GPU"
    return (f"'{shown}' was built for {built} but this GPU is {here}; use the engines in "
            f"{folder} or rebuild them.")


def _is_same_l_jit(shown: str, name: str | None, namespace: str) -> bool:
    """Whether the missing plugin is SAME-L's: named so, or unnamed in a JIT SAME-L file."""
    if name is not None:
        return name in _SAME_L_PLUGIN or namespace in _SAME_L_PLUGIN
    file_name = shown.rsplit("/", 1)[-1]
    if JIT_PLUGIN_MARKER in file_name:
        return True
    # Other JIT names (dec_dynamic_fp32) also exist for SAME-S, so the folder must say SAME-L.
    jit = JIT_CODEC_FILES["same-l"]
    return file_name.removesuffix(".trt") in (*jit.decoder, *jit.encoder) and "same-l" in shown


def _qualified(name: str | None, namespace: str) -> str:
    return f"{namespace}::{name}" if namespace else str(name)


def _asked_for(text: str) -> str:
    """" (it asked for 1.2 GB)" when TensorRT said how much it wanted, else ""."""
    wanted = _REQUESTED_BYTES.search(text)
    if wanted is None:
        return ""
    return f" (it asked for {_size_text(int(wanted.group(1) or wanted.group(2)))})"


def _size_text(size: int) -> str:
    """Decimal units, as download and VRAM sizes are quoted elsewhere."""
    return f"{size / 1e9:.1f} GB" if size >= 1e9 else f"{max(size / 1e6, 1):.0f} MB"


def _most_specific(lines: Sequence[str]) -> str:
    """The last line that names a cause, without TensorRT's source location, as a clause (no
    sentence break inside, no final period)."""
    causes = [line for line in lines if not _GENERIC.search(line)] or list(lines)
    if not causes:
        return ""
    text = _LOCATION.sub("", causes[-1]).replace("\n", " ")
    return re.sub(r"\.\s+", "; ", text).strip().rstrip(".")
