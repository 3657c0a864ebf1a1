"""What this machine can run: GPU, drivers, TensorRT, and the engine sets installed.

No torch and no tensorrt import: the GPU comes from cuda-python (engines.gpu), free VRAM from
NVML when nvidia-ml-py is installed, the installed TensorRT version from package metadata and the
TensorRT an engine needs from its file header. No GPU or no TensorRT is a normal, explained state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from engines import paths
from engines.backends.tensorrt.engine_paths import is_jit_codec, jit_engine_refusal
from engines.catalog import DECODERS, MODEL_SETS, Catalog
from engines.catalog import tensorrt_version as trt_version
from engines.catalog.tables import PRECISIONS
from engines.errors import Remedy, join
from engines.gpu import GpuInfo, probe_gpu, tensorrt_version
from engines.lazy import is_installed, lazy_import
from engines.settings import read_settings, update_settings

log = logging.getLogger(__name__)
pynvml = lazy_import("pynvml")  # nvidia-ml-py, optional
# importlib.metadata costs the window about 20 ms at startup; only _version reads it.
metadata = lazy_import("importlib.metadata")


@dataclass(frozen=True)
class MachineReport:
    gpu: GpuInfo | None
    vram_free: int | None
    vram_total: int | None
    nvml_driver: str | None
    tensorrt: str | None
    onnxruntime: str | None

    def lines(self) -> list[str]:
        out = []
        if self.gpu is None:
            out.append("GPU: no NVIDIA GPU found (or no driver / cuda-python); the TensorRT "
                       "backend is unavailable, the demo and ONNX Runtime work.")
        else:
            gib = 2**30
            vram = ""
            if self.vram_total:
                free = (self.vram_free or 0) / gib
                vram = f", VRAM {free:.1f} of {self.vram_total / gib:.1f} GiB free"
            elif self.gpu.total_mem_bytes:
                vram = f", VRAM {self.gpu.total_mem_bytes / gib:.1f} GiB"
            driver = self.nvml_driver or self.gpu.driver or "unknown"
            out.append(f"GPU: {self.gpu.name}, compute capability {self.gpu.major}."
                       f"{self.gpu.minor} ({self.gpu.sm}){vram}, driver {driver}; fp8 "
                       f"{'supported' if self.gpu.has_fp8 else 'not supported'}.")
        unusable = trt_version.unsupported_reason(self.tensorrt) if self.tensorrt else None
        if unusable:
            out.append(f"TensorRT: {unusable}")
        elif self.tensorrt:
            out.append(f"TensorRT: {self.tensorrt}")
        else:
            out.append(f"TensorRT: not installed (`{trt_version.install_command()}` on a machine "
                       "with an NVIDIA GPU).")
        out.append(f"ONNX Runtime: {self.onnxruntime}" if self.onnxruntime else
                   "ONNX Runtime: not installed.")
        return out


def human_size(size: float) -> str:
    """1234567 -> '1.2 MB' (decimal units, as download sizes are quoted)."""
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    return f"{size:.1f} GB"


def _nvml() -> tuple[int | None, int | None, str | None]:
    if not is_installed(pynvml):
        return None, None, None
    try:
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            memory = pynvml.nvmlDeviceGetMemoryInfo(handle)
            driver = pynvml.nvmlSystemGetDriverVersion()
            if isinstance(driver, bytes):
                driver = driver.decode()
            return int(memory.free), int(memory.total), str(driver)
        finally:
            pynvml.nvmlShutdown()
    except Exception as exc:  # noqa: BLE001 - NVML missing or refused: not an error
        log.debug("NVML unavailable: %s", exc)
        return None, None, None


def _version(dist: str) -> str | None:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def machine_report(gpu=..., nvml=_nvml, tensorrt=...) -> MachineReport:
    """This machine; `gpu` and `tensorrt` (a version or None) are probed unless given, so a
    caller holding a catalog can pass the ones it already decided with."""
    gpu = probe_gpu() if gpu is ... else gpu
    free, total, driver = nvml() if gpu is not None else (None, None, None)
    ort = _version("onnxruntime") or _version("onnxruntime-gpu")
    return MachineReport(gpu=gpu, vram_free=free, vram_total=total, nvml_driver=driver,
                         tensorrt=tensorrt_version() if tensorrt is ... else tensorrt,
                         onnxruntime=ort)


@dataclass
class InstalledSet:
    model: str
    label: str
    files: list[tuple[Path, int]] = field(default_factory=list)  # (path, size)
    runnable: dict[str, str] = field(default_factory=dict)  # "backend precision" -> "ready"/why

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)


def _files_of(roots: list[Path], subdirs: set[str]) -> list[tuple[Path, int]]:
    found = []
    for root in roots:
        if not root.is_dir():
            continue
        for folder in sorted(p for p in root.iterdir() if p.is_dir()):
            for sub in subdirs:
                target = folder / sub
                if target.is_dir():
                    found += [(f, f.stat().st_size) for f in sorted(target.iterdir())
                              if f.is_file() and f.suffix in (".trt", ".onnx", ".data", ".json")]
    return found


def installed_sets(catalog: Catalog) -> list[InstalledSet]:
    """Per model set: the files present in every models root (all arch folders), their sizes,
    and for each backend and precision whether it runs here or why not."""
    out = []
    for key, model_set in MODEL_SETS.items():
        decoder = DECODERS[model_set.default_decoder]
        subdirs = {model_set.subdir, decoder.subdir}
        if key != "demo":
            subdirs.add("t5gemma")
        entry = InstalledSet(model=key, label=model_set.label,
                             files=_files_of(list(catalog.roots), subdirs))
        for backend in ("tensorrt", "onnxruntime"):
            for precision in PRECISIONS:
                answer = catalog.resolve(key, precision=precision, backend=backend)
                entry.runnable[f"{backend} {precision}"] = "ready" if answer.runnable else \
                    (answer.reason or "not runnable")
        out.append(entry)
    return out


@dataclass(frozen=True)
class EngineBuild:
    """An engine file and the TensorRT release that built it (and so the only one it loads in)."""

    path: Path
    built_with: str  # "10.15.1" from the header, or the published engines' version
    from_header: bool  # False: the header said nothing, so it is taken for a published engine


def engines_on_disk(catalog: Catalog) -> list[EngineBuild]:
    """Every engine file under <root>/<sm_XX>/<subdir>/ of every models root."""
    found = []
    for root in catalog.roots:
        for path in sorted(Path(root).glob("sm_*/*/*.trt")):
            if path.is_file():
                version, from_header = trt_version.needed_tensorrt(path)
                found.append(EngineBuild(path, version, from_header))
    return found


def tensorrt_fit_lines(engines: list[EngineBuild], installed: str | None) -> list[str]:
    """Plain sentences: which TensorRT the engine files on disk need, whether the `installed`
    one loads them, and what to do when it does not."""
    if not engines:
        return [join("No engine files yet; download them with ",
                     Remedy.command("models download", "<set>"), " or build them from ONNX with ",
                     Remedy.command("models build", "<set>"), ".")]
    # JIT SAME-L engines are never loaded, whatever TensorRT is installed: say so instead.
    lines = [jit_engine_refusal(e.path) for e in engines if is_jit_codec(e.path)]
    groups: dict[tuple[str, bool], list[EngineBuild]] = {}
    for engine in engines:
        if not is_jit_codec(engine.path):
            groups.setdefault((engine.built_with, engine.from_header), []).append(engine)
    return lines + [_fit_sentence(version, from_header, group, installed)
                    for (version, from_header), group in groups.items()]


def _fit_sentence(version: str, from_header: bool, group: list[EngineBuild],
                  installed: str | None) -> str:
    folders = sorted({"/".join(e.path.parts[-3:-1]) for e in group})
    one = len(group) == 1
    # The words that change with the count, so every sentence reads as plain English.
    files, they, them, loads, engines, say = (
        ("file", "it", "it", "loads", "a published engine", "file does")
        if one else ("files", "they", "them", "load", "published engines", "files do"))
    what = f"{len(group)} engine {files} in {', '.join(folders)}"
    built = (f"built with TensorRT {version}" if from_header else
             f"taken to be {engines} built with TensorRT {version} (the {say} not say)")
    if installed and trt_version.same_release(version, installed):
        return f"{what}: {built}; {they} {loads} in the installed TensorRT {installed}."
    here = f"TensorRT {installed} is installed" if installed else "TensorRT is not installed"
    fixes: list[object] = []
    if trt_version.same_release(version, trt_version.PUBLISHED_ENGINES_TENSORRT):
        fixes.append(f"install TensorRT {trt_version.PUBLISHED_ENGINES_TENSORRT} with "
                     f"`{trt_version.install_command()}`")
    else:
        fixes.append(f"install TensorRT {version}")
    if installed and trt_version.unsupported_reason(installed) is None:
        sets = " ".join(_sets_using(folders)) or "<set>"
        fixes.append(join(f"rebuild {them} from the ONNX files with ",
                          Remedy.command("models build", *sets.split())))
    listed = [part for fix in fixes for part in (", or ", fix)][1:]
    return join(f"{what}: {built}, but {here}, so {they} will not load; ", *listed, ".")


def _sets_using(folders: list[str]) -> list[str]:
    """Model sets whose DiT or default codec lives in one of the <sm_XX>/<subdir> `folders`."""
    subdirs = {folder.rsplit("/", 1)[-1] for folder in folders}
    return [key for key, model_set in MODEL_SETS.items()
            if model_set.subdir in subdirs or DECODERS[model_set.default_decoder].subdir in subdirs]


def load_extra_roots(data_dir: Path) -> list[Path]:
    """Extra model folders the user added (e.g. an official install's models dir)."""
    folders = read_settings(data_dir).get("extra_model_dirs", [])
    if not isinstance(folders, list):
        return []
    # A hand-edited file may hold anything; a NUL byte would make every later path call raise.
    return [Path(p) for p in folders if isinstance(p, str) and p and "\x00" not in p]


def save_extra_roots(data_dir: Path, roots: list[Path]) -> None:
    update_settings(data_dir, {"extra_model_dirs": [str(Path(r)) for r in dict.fromkeys(roots)]})


def default_catalog(models_dir: Path | None = None) -> Catalog:
    """The catalog every entry point uses: the models dir plus the user's extra folders."""
    return Catalog(models_dir or paths.models_dir(),
                   extra_roots=load_extra_roots(paths.data_dir()))
