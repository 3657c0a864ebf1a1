"""GPU benchmark of the captured pipeline (runs on a CUDA GPU, with engine doubles).

    python bench/bench_tensorrt.py [--junit results.xml] [--out gpu-YYYYMMDD.json]

For L in 32, 323, 1292, 4096 latents, 8 steps, modes t2a, a2a, inpaint, cfg_inpaint:
* host overhead of one generation = wall time from the validated request to PCM in (pinned)
  host memory, minus the GPU time of the work (CUDA events inside the graph), for (a) our one
  graph replay and (b) eager stage-by-stage execution of the same work;
* GPU time of our own kernels and copies (engine doubles turned into no-ops) against the
  memory-traffic floor: bytes they must move / copy bandwidth measured here, device and host
  added up (the step latents go to the host beside the later steps, so a take can come in
  under that sum);
* live re-render overhead (issue 23): wall time of a whole `generate` minus its GPU time for a
  3 s take whose texts are cached (a change of seed), copied from the text cache (prompts
  alternating) and new (the text encoder runs), p50/p95.
Prints a table and writes the results JSON (the format the TensorRT-backend issue asks for).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import json
import statistics
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines import demo  # noqa: E402
from engines.backends.tensorrt.backend import TensorRTBackend, resident_vram_bytes  # noqa: E402
from engines.backends.tensorrt.pipeline import GenerationPipeline  # noqa: E402
from engines.catalog import EngineFiles  # noqa: E402
from engines.constants import LATENT_CHANNELS, SAMPLES_PER_LATENT  # noqa: E402
from engines.cuda.api import call, driver, ensure_context  # noqa: E402
from engines.cuda.memory import DeviceBuffer, PinnedBuffer  # noqa: E402
from engines.cuda.stream import Event, Stream  # noqa: E402
from engines.request import GenerationRequest, validate_request  # noqa: E402
from tests.gpu_doubles import ENGINE_LIKE_LAUNCHES, load_module, make_runners  # noqa: E402

LENGTHS = (32, 323, 1292, 4096)
MODES = ("t2a", "a2a", "inpaint", "cfg_inpaint")
STEPS = 8


def make_request(mode: str, length: int):
    seconds = length * SAMPLES_PER_LATENT / 44100
    kwargs = dict(prompt="laser sweep", seconds=seconds, seed=3, steps=STEPS)
    if mode != "t2a":
        rng = np.random.default_rng(0)
        kwargs["init_audio"] = (0.3 * rng.standard_normal((length * SAMPLES_PER_LATENT, 2))
                                ).astype(np.float32)
    if mode == "a2a":
        kwargs["init_noise_level"] = 0.6
    if mode in ("inpaint", "cfg_inpaint"):
        kwargs["inpaint_spans"] = [(0.25 * seconds, 0.5 * seconds)]
    if mode == "cfg_inpaint":
        kwargs.update(cfg=3.0, negative_prompt="noise")
    return validate_request(GenerationRequest(**kwargs), 400.0)


def copy_bandwidths(stream: Stream) -> tuple[float, float]:
    """(device copy GB/s counting read + write, host<->device GB/s), measured here."""
    size = 1 << 30
    a, b = DeviceBuffer(size), DeviceBuffer(size)
    host = PinnedBuffer((256 << 20,), np.uint8)
    start, end = Event(), Event()
    d2d, h2d = [], []
    for _ in range(5):
        start.record(stream)
        call("cuMemcpyDtoDAsync", b.ptr, a.ptr, size, stream.handle)
        end.record(stream)
        stream.synchronize()
        d2d.append(2 * size / (end.elapsed_ms(start) * 1e6))
        start.record(stream)
        call("cuMemcpyHtoDAsync", a.ptr, host.ptr, host.nbytes, stream.handle)
        call("cuMemcpyDtoHAsync", host.ptr, a.ptr, host.nbytes, stream.handle)
        end.record(stream)
        stream.synchronize()
        h2d.append(2 * host.nbytes / (end.elapsed_ms(start) * 1e6))
    for obj in (a, b, host, start, end):
        obj.free()
    return max(d2d), max(h2d)


def traffic(mode: str, length: int) -> tuple[int, int]:
    """(device bytes, host<->device bytes) our kernels and copies must move at the least."""
    n = LATENT_CHANNELS * length
    frames = length * SAMPLES_PER_LATENT
    cfg = mode == "cfg_inpaint"
    inpaint = mode in ("inpaint", "cfg_inpaint")
    dev = 4 * n * STEPS  # all noise written once (start + loop noises)
    dev += 4 * n * (3 if mode == "a2a" else 0)  # init mix
    dev += 4 * ((LATENT_CHANNELS + 1) * length + n) if inpaint else 0  # local cond
    per_step = 4 * n * 4  # pingpong: read x, v, noise; write x (+ step copy below)
    per_step += 4 * n  # step latent copy
    per_step += 4 * n if inpaint else 0  # init latents read for paste-back
    # CFG: the reductions read x, v_cond, v_uncond; the update reads both velocities (one more
    # than the plain update's v) and makes the guided one in registers.
    per_step += 4 * n * 4 if cfg else 0
    dev += per_step * STEPS - 4 * n  # no noise read on the last step
    if inpaint:
        dev += frames * 2 * (4 + 4 + 2)  # paste-back: int32 PCM + original in, int16 out
    else:
        dev += frames * 2 * (4 + 2)  # narrow int32 -> int16
    host = frames * 2 * 2 + STEPS * n * 4  # PCM and step latents to host
    # The init audio is copied to the device when it changes, not by each replay.
    return dev, host


def median_ms(samples: list[float]) -> float:
    return round(statistics.median(samples), 4)


def measure(backend: TensorRTBackend, req, reps: int) -> dict:
    """Host overhead (ms) of a replay and of two eager variants of the same work."""
    key = backend.key_for(req)
    backend.generate(req)  # eager warm-up + capture + self-checks
    pipe = backend.cache.get(key)
    assert pipe is not None and pipe.graph is not None, "graph was not captured"
    rows: dict[str, list[float]] = {"graph": [], "prep": [], "launch": [], "gpu": [],
                                    "eager_async": [], "eager_stages": []}
    for _ in range(reps):
        t0 = time.perf_counter()
        inputs = backend.inputs_for(req, [])
        t1 = time.perf_counter()
        pipe.enqueue(inputs)  # inputs to pinned memory, text stage (held: skipped), replay
        t2 = time.perf_counter()
        pipe.stream.synchronize()
        t3 = time.perf_counter()
        gpu = pipe.body_gpu_ms()
        rows["graph"].append((t3 - t0) * 1e3 - gpu)
        rows["prep"].append((t1 - t0) * 1e3)
        rows["launch"].append((t2 - t1) * 1e3)
        rows["gpu"].append(gpu)
    gpu = statistics.median(rows["gpu"])
    for name, sync in (("eager_async", False), ("eager_stages", True)):
        for _ in range(max(3, reps // 4)):
            t0 = time.perf_counter()
            inputs = backend.inputs_for(req, [])
            pipe.enqueue(inputs, eager=True, sync_stages=sync)
            pipe.stream.synchronize()
            rows[name].append((time.perf_counter() - t0) * 1e3 - gpu)
    return {name: median_ms(values) for name, values in rows.items()}


def kernel_time(module, files, tmp: Path, req, reps: int) -> float:
    """GPU ms of one replay with no-op engine doubles: only our kernels and copies remain."""
    backend = TensorRTBackend(files, kernel_cache_dir=tmp,
                              load_runners=lambda f, sm: make_runners(module, noop=True))
    backend._activate()
    try:
        pipe = GenerationPipeline(backend.key_for(req), backend.runners, backend.kernels,
                                  backend.stream)
        inputs = backend.inputs_for(req, [])
        pipe.run_eager(inputs)
        assert pipe.capture()
        times = []
        for _ in range(reps):
            pipe.enqueue(inputs)
            pipe.stream.synchronize()
            times.append(pipe.body_gpu_ms())  # the text encoder (a no-op here) is not ours
        pipe.free()
        return statistics.median(times)
    finally:
        backend.close()


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = np.sort(np.asarray(samples, dtype=np.float64))
    return {"p50": round(float(np.percentile(ordered, 50)), 4),
            "p95": round(float(np.percentile(ordered, 95)), 4)}


def live_overhead(module, files, tmp: Path, reps: int) -> dict:
    """Host ms of a whole `generate` beyond its GPU time (events from the text stage to the
    last copy), for a 3 s text-to-audio take after warm-up: the texts held in the graph's
    buffers (a change of seed), copied from the text cache (two prompts in turn), or new (the
    text encoder's graph runs and its output is kept). Also the text encoder runs counted."""
    backend = TensorRTBackend(files, kernel_cache_dir=tmp,
                              load_runners=lambda f, sm: make_runners(module))
    cases = {"seed": lambda i: ("laser sweep", i),
             "cached": lambda i: (("laser sweep", "glass shatter")[i % 2], 7),
             "new": lambda i: (f"laser sweep {i}", 7)}
    table: dict = {}
    try:
        for prompt in ("laser sweep", "glass shatter"):
            backend.generate(validate_request(GenerationRequest(
                prompt=prompt, seconds=3.0, seed=1, steps=STEPS), 400.0))
        for case, make in cases.items():
            over, texts = [], []
            for i in range(reps):
                prompt, seed = make(i)
                req = validate_request(GenerationRequest(prompt=prompt, seconds=3.0, seed=seed,
                                                         steps=STEPS), 400.0)
                t0 = time.perf_counter()
                result = backend.generate(req)
                wall = (time.perf_counter() - t0) * 1e3
                over.append(wall - result.details["gpu_ms"]["total"])
                texts.append(result.details["gpu_ms"]["text"])
            table[case] = {"host_overhead_ms": percentiles(over),
                           "text_gpu_ms": percentiles(texts)}
        pipe = backend.cache.get(backend.key_for(req))
        table["text_encoder_runs"] = pipe.text.runs if pipe is not None else None
        table["text_cache"] = {"hits": backend.text_cache.hits,
                               "misses": backend.text_cache.misses}
        t0 = time.perf_counter()
        for _ in range(reps):
            resident_vram_bytes()
        table["vram_query_ms"] = round((time.perf_counter() - t0) * 1e3 / reps, 4)
    finally:
        backend.close()
    return table


def driver_version(cuda_version: int) -> str:
    """The display driver's version (NVML) with the CUDA driver API version."""
    api = f"CUDA {cuda_version // 1000}.{cuda_version % 1000 // 10}"
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return f"{pynvml.nvmlSystemGetDriverVersion()} ({api})"
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - NVML is optional
        return api


def junit_counts(path: Path | None) -> dict:
    if path is None or not path.exists():
        return {"passed": 0, "failed": 0, "skipped": 0}
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root)
    tests = sum(int(s.get("tests", 0)) for s in suites)
    failed = sum(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
    skipped = sum(int(s.get("skipped", 0)) for s in suites)
    return {"passed": tests - failed - skipped, "failed": failed, "skipped": skipped}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--junit", type=Path)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--no-engine-like", action="store_true",
                        help="skip the table with engine-like launch counts (shorter run)")
    args = parser.parse_args()

    ensure_context()
    drv = driver()
    dev = call("cuDeviceGet", 0)
    name = call("cuDeviceGetName", 128, dev).split(b"\0")[0].decode()
    version = call("cuDriverGetVersion")
    tmp = Path(tempfile.mkdtemp(prefix="sa3-trt-bench-"))
    folder = demo.ensure_demo_models(tmp / "models")
    files = EngineFiles(format="trt", text_encoder=folder / demo.TEXT_ENCODER_FILE,
                        tokenizer=folder / demo.TOKENIZER_FILE, dit=folder / demo.DIT_FILE,
                        decoder=folder / demo.DECODER_FILE, encoder=folder / demo.ENCODER_FILE,
                        codec_tier="canonical", jit_plugin=False)
    module = load_module(tmp)
    stream = Stream()
    d2d_bw, host_bw = copy_bandwidths(stream)
    stream.free()
    print(f"{name}, driver CUDA {version // 1000}.{version % 1000 // 10}; device copy "
          f"{d2d_bw:.0f} GB/s (read+write), host<->device {host_bw:.1f} GB/s")
    print("host overhead = wall (request -> PCM in pinned memory) - GPU time of the work; "
          "eager = stage by stage with a sync after each stage/step, async = same launches "
          "without syncs")
    print(f"{'mode':12s} {'L':>5s} {'graph':>7s} {'(prep':>6s} {'launch)':>7s} {'eager':>7s} "
          f"{'async':>7s} {'ratio':>6s} {'gpu ms':>8s} {'kernels':>8s} {'floor':>7s} "
          f"{'x floor':>7s}")
    overhead: dict = {}
    engine_like: dict = {}
    floors: dict = {}
    kernel_ms: dict = {}
    tables = [("thin doubles", None), ("engine-like launch counts", ENGINE_LIKE_LAUNCHES)]
    for label, launches in tables[:1] if args.no_engine_like else tables:
        print(f"-- {label}: {launches or 'one or two kernels per enqueue'}")
        backend = TensorRTBackend(
            files, kernel_cache_dir=tmp,
            load_runners=lambda f, sm, n=launches: make_runners(module, launches=n))
        table = overhead if launches is None else engine_like
        try:
            for mode in MODES:
                for length in LENGTHS:
                    req = make_request(mode, length)
                    reps = args.reps if length < 4096 else max(10, args.reps // 2)
                    result = measure(backend, req, reps)
                    table.setdefault(mode, {})[str(length)] = {
                        "graph": result["graph"], "eager": result["eager_stages"],
                        "eager_async": result["eager_async"], "graph_prep": result["prep"],
                        "graph_launch": result["launch"], "gpu": result["gpu"]}
                    if launches is None:
                        kernels_ms = kernel_time(module, files, tmp, req, reps)
                        dev_bytes, host_bytes = traffic(mode, length)
                        floor_ms = dev_bytes / (d2d_bw * 1e6) + host_bytes / (host_bw * 1e6)
                        floors.setdefault(mode, {})[str(length)] = round(kernels_ms / floor_ms,
                                                                         3)
                        kernel_ms.setdefault(mode, {})[str(length)] = {
                            "kernels": round(kernels_ms, 4), "floor": round(floor_ms, 4)}
                        tail = f"{kernels_ms:8.3f} {floor_ms:7.3f} {kernels_ms / floor_ms:7.2f}"
                    else:
                        tail = ""
                    print(f"{mode:12s} {length:5d} {result['graph']:7.3f} "
                          f"{result['prep']:6.3f} {result['launch']:7.3f} "
                          f"{result['eager_stages']:7.3f} {result['eager_async']:7.3f} "
                          f"{result['eager_stages'] / max(result['graph'], 1e-6):6.1f} "
                          f"{result['gpu']:8.3f} {tail}", flush=True)
                    backend.cache.clear()
        finally:
            backend.close()
    live = live_overhead(module, files, tmp, max(args.reps, 20))
    print("live re-render, 3 s take, host ms beyond the GPU time (p50/p95): " + "; ".join(
        f"{case} {row['host_overhead_ms']['p50']:.3f}/{row['host_overhead_ms']['p95']:.3f} "
        f"(text GPU {row['text_gpu_ms']['p50']:.3f})" for case, row in live.items()
        if case in ("seed", "cached", "new")) + f"; text encoder runs {live['text_encoder_runs']}; "
        f"VRAM query {live['vram_query_ms']:.3f} ms")
    module.free()
    del drv
    payload = {
        "device": name,
        "driver": driver_version(version),
        "cuda_bindings": importlib.metadata.version("cuda-bindings"),
        "tests": junit_counts(args.junit),
        "overhead_ms": overhead,
        "kernels_vs_floor": floors,
        "kernels_ms": kernel_ms,
        "live_overhead": live,
        "overhead_ms_engine_like": engine_like,
        "engine_like_launches": ENGINE_LIKE_LAUNCHES,
        "copy_bandwidth_gbps": {"device": round(d2d_bw, 1), "host": round(host_bw, 2)},
        "steps": STEPS,
        "date": dt.date.today().isoformat(),
    }
    out = args.out or ROOT / "bench" / "results" / f"gpu-{dt.date.today():%Y%m%d}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
