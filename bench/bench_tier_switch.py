"""What a codec-tier switch costs on the GPU (runs on a CUDA GPU, with engine doubles).

    python bench/bench_tier_switch.py [--out tier-switch-YYYYMMDD.json]

One TensorRTBackend, engine doubles (tests.gpu_doubles) for the engines and one decoder double
per tier. For 3 s and 30 s text-to-audio takes, 8 steps: the first render of the canonical tier
(loads everything, captures its graph), its replays, the switch to fp8 (loads that decoder
beside the DiT, captures the fp8 graph), its replays, the switch back (a replay of the graph
kept for canonical), and decode-only comparisons (final latents through the other tier, no
DiT, no graph). Wall times from the validated request to PCM on the host, in ms. The doubles
do little work, so the figures are our own overhead: loading, capture, replay, copies.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from engines import demo  # noqa: E402
from engines.backends.tensorrt.backend import TensorRTBackend  # noqa: E402
from engines.backends.tensorrt.codecs import LoadedCodec  # noqa: E402
from engines.catalog import EngineFiles  # noqa: E402
from engines.cuda.api import ensure_context  # noqa: E402
from engines.request import GenerationRequest, validate_request  # noqa: E402
from tests.gpu_doubles import DecoderDouble, EncoderDouble, load_module, make_runners  # noqa: E402

SCALES = {"canonical": 6000.0, "fp8": 4500.0}
REPLAYS = 10


def tier_files(folder: Path) -> dict[str, EngineFiles]:
    canonical = EngineFiles(format="trt", text_encoder=folder / demo.TEXT_ENCODER_FILE,
                            tokenizer=folder / demo.TOKENIZER_FILE, dit=folder / demo.DIT_FILE,
                            decoder=folder / "dec_bf16.trt", encoder=folder / "enc_bf16.trt",
                            codec_tier="canonical")
    fp8 = dataclasses.replace(canonical, decoder=folder / "dec_fp8.trt",
                              encoder=folder / "enc_fp8.trt", codec_tier="fp8")
    return {"canonical": canonical, "fp8": fp8}


def make_backend(files: EngineFiles, module, cache_dir: Path) -> TensorRTBackend:
    def load_codec(f, _sm):
        return LoadedCodec(DecoderDouble(module, scale=SCALES[f.codec_tier],
                                         name=f"dec-{f.codec_tier}"), EncoderDouble(module))

    def load_runners(f, _sm):
        runners = make_runners(module)
        runners.decoder.close()
        runners.decoder = DecoderDouble(module, scale=SCALES[f.codec_tier],
                                        name=f"dec-{f.codec_tier}")
        return runners

    return TensorRTBackend(files, kernel_cache_dir=cache_dir, load_runners=load_runners,
                           load_codec=load_codec)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, (time.perf_counter() - start) * 1e3


def one_length(seconds: float, files, module, cache_dir: Path) -> dict:
    request = validate_request(GenerationRequest(prompt="laser sweep", seconds=seconds, seed=5,
                                                 steps=8), 380.0)
    backend = make_backend(files["canonical"], module, cache_dir)
    row: dict = {"seconds": seconds}
    try:
        first, row["canonical_first_ms"] = timed(lambda: backend.generate(request))
        row["canonical_first_path"] = first.details["path"]
        row["canonical_replay_ms"] = [timed(lambda: backend.generate(request))[1]
                                      for _ in range(REPLAYS)]
        _, row["switch_to_fp8_load_ms"] = timed(lambda: backend.use_codec(files["fp8"]))
        fp8, row["fp8_first_ms"] = timed(lambda: backend.generate(request))
        row["fp8_first_path"] = fp8.details["path"]
        row["fp8_replay_ms"] = [timed(lambda: backend.generate(request))[1]
                                for _ in range(REPLAYS)]
        _, row["switch_back_ms"] = timed(lambda: backend.use_codec(files["canonical"]))
        back, row["canonical_after_switch_ms"] = timed(lambda: backend.generate(request))
        row["canonical_after_switch_path"] = back.details["path"]
        row["decode_only_fp8_ms"] = [
            timed(lambda: backend.decode_latents(first.latents, request, files["fp8"]))[1]
            for _ in range(REPLAYS)]
        row["graphs_kept"] = len(backend.cache.keys())
    finally:
        backend.close()
    return row


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    ensure_context()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        module = load_module(tmp_path / "nvrtc")
        try:
            files = tier_files(demo.ensure_demo_models(tmp_path / "demo"))
            rows = [one_length(s, files, module, tmp_path / "kernels") for s in (3.0, 30.0)]
        finally:
            module.free()
    med = statistics.median
    print(f"{'take':>6} {'first':>9} {'replay':>8} {'switch':>8} {'fp8 first':>10} "
          f"{'fp8 replay':>11} {'back':>8} {'decode-only':>12}  (ms, median of {REPLAYS})")
    for r in rows:
        print(f"{r['seconds']:>5.0f}s {r['canonical_first_ms']:>9.1f} "
              f"{med(r['canonical_replay_ms']):>8.2f} {r['switch_to_fp8_load_ms']:>8.2f} "
              f"{r['fp8_first_ms']:>10.1f} {med(r['fp8_replay_ms']):>11.2f} "
              f"{r['canonical_after_switch_ms']:>8.2f} {med(r['decode_only_fp8_ms']):>12.2f}"
              f"  paths {r['canonical_first_path']}/{r['fp8_first_path']}/"
              f"{r['canonical_after_switch_path']}, graphs kept {r['graphs_kept']}")
    if args.out:
        args.out.write_text(json.dumps({"rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
