"""Headless command line: `python main.py generate ...` (a contract other tools rely on).

Exit codes: 0 done; 1 the engine failed at run time; 2 bad input (one line on stderr naming the
problem and the fix, nothing written); 130 cancelled with Ctrl+C.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import logging
import os
import sys
import tempfile
from pathlib import Path

from engines.errors import CancelledError, RequestError, StudioError

log = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_CANCELLED = 0, 1, 2, 130
MODELS = ("demo", "sm-music", "sm-sfx", "medium")
DECODERS = ("same-s", "same-l", "demo")
PRECISIONS = ("fp16", "fp32", "fp8", "fp16mixed", "bf16")
BACKENDS = ("auto", "onnxruntime", "tensorrt")
OUT_FORMATS = ("wav16", "wav24", "flac", "ogg")


class UsageError(Exception):
    """argparse refused the command line; the message is already one sentence."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line instead of usage + message
        raise UsageError(f"{message}; run `python main.py generate --help` for the flags.")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python main.py generate",
                description="Render one clip without the GUI and write it with a JSON sidecar.")
    p.add_argument("--prompt", help="what the clip should sound like")
    p.add_argument("--negative-prompt", default="", help="what to steer away from (needs cfg > 1)")
    p.add_argument("--model", default="demo", choices=MODELS)
    p.add_argument("--decoder", choices=DECODERS, help="default: the model's paired decoder")
    p.add_argument("--precision", choices=PRECISIONS, help="default: the model's default")
    p.add_argument("--seconds", type=float, help="length (default 5, or the init audio's length)")
    p.add_argument("--steps", type=int, default=8, help="sampler steps 1..50 (default 8)")
    p.add_argument("--seed", type=int, help="0..4294967295; random when omitted (reported)")
    p.add_argument("--cfg", type=float, default=1.0, help="guidance scale 0..15; 1 = off")
    p.add_argument("--apg", type=float, default=1.0, help="projected guidance 0..1 (default 1)")
    p.add_argument("--init-audio", type=Path, help="audio file for audio-to-audio or inpainting")
    p.add_argument("--init-noise-level", type=float,
                   help="audio-to-audio strength 0.01..1 (default 0.6)")
    p.add_argument("--inpaint", nargs="+", metavar="START:END", default=[],
                   help="regenerate these spans (seconds) of the init audio")
    p.add_argument("--limiter-ceiling", type=float, default=None,
                   help="decoder limiter ceiling (default 0.977; > 1 relaxes it)")
    p.add_argument("--backend", default="auto", choices=BACKENDS)
    p.add_argument("--models-dir", type=Path, help="models root (default <data>/models)")
    p.add_argument("--format", choices=OUT_FORMATS, help="default: from the --out suffix")
    p.add_argument("--out", type=Path, help="output file (.wav, .flac or .ogg)")
    p.add_argument("--list-models", action="store_true",
                   help="list what is installed and runnable here, and why the rest is not")
    return p


def sidecar_path(out: Path) -> Path:
    """`clip.wav` -> `clip.json`, next to the audio."""
    return out.with_suffix(".json")


def _file_entry(role: str, path: Path | None) -> dict | None:
    if path is None:
        return None
    try:
        size = path.stat().st_size
    except OSError:
        size = None
    return {"role": role, "path": str(path), "size": size}


def build_sidecar(result, out: Path, fmt: str, init_audio: Path | None) -> dict:
    from engines.catalog import get_model_set

    req = result.request
    files = result.files
    entries = [_file_entry("text_encoder", files.text_encoder),
               _file_entry("tokenizer", files.tokenizer), _file_entry("dit", files.dit),
               _file_entry("decoder", files.decoder)]
    if req.mode != "t2a":
        entries.append(_file_entry("encoder", files.encoder))
    init = None
    if init_audio is not None:
        digest = hashlib.sha256(init_audio.read_bytes()).hexdigest()
        init = {"path": str(init_audio.resolve()), "sha256": digest}
    return {
        "app": "SA3 Studio",
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "output": {"path": str(out.resolve()), "format": fmt, "sample_rate": result.sample_rate,
                   "samples": int(result.pcm.shape[0]), "channels": 2,
                   "seconds": round(result.seconds, 6)},
        "request": {
            "prompt": req.prompt, "negative_prompt": req.negative_prompt, "model": req.model,
            "model_label": get_model_set(req.model).label, "decoder": req.decoder,
            "precision": req.precision, "seconds": req.seconds, "steps": req.steps,
            "seed": req.seed, "seed_was_random": req.seed_was_random, "cfg": req.cfg,
            "apg": req.apg, "init_audio": init, "init_noise_level": req.init_noise_level,
            "inpaint_spans": [list(s) for s in req.inpaint_spans],
            "limiter_ceiling": req.limiter_ceiling, "mode": req.mode,
        },
        "seed": result.seed,
        "backend": result.backend,
        "decoder_tier": files.decoder_tier,
        "model_files": [e for e in entries if e is not None],
        "timings_ms": {k: round(v, 3) for k, v in result.timings_ms.items()},
        "warnings": result.warnings,
    }


def _write_json_atomic(path: Path, payload: dict) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".partial.json", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(payload, handle, indent=2, ensure_ascii=False)
            handle.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def summary_line(result, out: Path) -> str:
    from engines.catalog import get_model_set

    stages = ", ".join(f"{k} {v:.0f} ms" for k, v in result.timings_ms.items() if k != "total")
    return (f"{out}: {result.seconds:.2f} s of audio | {stages} | total "
            f"{result.timings_ms['total']:.0f} ms, {result.realtime_factor:.1f}x realtime | "
            f"{get_model_set(result.request.model).label} on {result.backend} | "
            f"seed {result.seed}")


def _check_output(out: Path | None, fmt: str | None) -> str:
    from engines.audio_io import AudioFileError, format_for_path

    if out is None:
        raise UsageError("--out is required; give the file to write, e.g. --out clip.wav.")
    try:
        chosen = format_for_path(out, default=fmt or "wav16")
    except AudioFileError as exc:
        raise UsageError(str(exc)) from exc
    if fmt and chosen != fmt:
        raise UsageError(f"--format {fmt} does not match the file name '{out.name}'; use a "
                         f"matching suffix.")
    if not out.parent.is_dir():
        raise UsageError(f"The folder '{out.parent}' does not exist; create it or choose "
                         f"another --out.")
    return chosen


def _catalog(models_dir: Path | None):
    from engines.catalog import Catalog
    from engines.paths import models_dir as default_models_dir

    if models_dir is not None and not models_dir.is_dir():
        raise UsageError(f"--models-dir '{models_dir}' is not a folder; give an existing "
                         f"models folder.")
    return Catalog(models_dir or default_models_dir())


def run_generate(args: argparse.Namespace) -> int:
    from engines.audio_io import write_audio
    from engines.constants import DEFAULT_LIMITER_CEILING
    from engines.generator import Generator
    from engines.request import GenerationRequest, parse_span

    catalog = _catalog(args.models_dir)
    if args.list_models:
        print(catalog.format_table())
        return EXIT_OK
    if args.prompt is None:
        raise UsageError("--prompt is required; describe the sound, e.g. --prompt \"coin "
                         "pickup, bright\".")
    fmt = _check_output(args.out, args.format)
    request = GenerationRequest(
        prompt=args.prompt, negative_prompt=args.negative_prompt, model=args.model,
        decoder=args.decoder, precision=args.precision, seconds=args.seconds, steps=args.steps,
        seed=args.seed, cfg=args.cfg, apg=args.apg, init_audio=args.init_audio,
        init_noise_level=args.init_noise_level,
        inpaint_spans=[parse_span(s) for s in args.inpaint],
        limiter_ceiling=(DEFAULT_LIMITER_CEILING if args.limiter_ceiling is None
                         else args.limiter_ceiling),
        backend=args.backend,
    )
    generator = Generator(catalog)
    try:
        result = generator.generate(request)
    finally:
        generator.close()
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    out: Path = args.out
    write_audio(out, result.pcm, fmt)
    try:
        _write_json_atomic(sidecar_path(out), build_sidecar(result, out, fmt, args.init_audio))
    except BaseException:
        out.unlink(missing_ok=True)  # never leave audio without its provenance
        raise
    print(summary_line(result, out))
    return EXIT_OK


def main(argv: list[str]) -> int:
    """argv: ["generate", flags...] or ["--list-models", ...]."""
    from engines.paths import setup_logging

    args_list = list(argv)
    if args_list[:1] == ["generate"]:
        args_list = args_list[1:]
    setup_logging("sa3-studio.cli")
    try:
        args = build_parser().parse_args(args_list)
        return run_generate(args)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except CancelledError as exc:
        print(f"cancelled: {exc}", file=sys.stderr)
        return EXIT_CANCELLED
    except KeyboardInterrupt:
        print("cancelled: interrupted; nothing was written.", file=sys.stderr)
        return EXIT_CANCELLED
    except (RequestError, StudioError) as exc:
        log.info("refused: %s", exc, exc_info=True)
        bad_input = not _is_runtime_failure(exc)
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT if bad_input else EXIT_FAILED
    except Exception as exc:  # a bug: the user gets one line, the log gets the traceback
        log.exception("generate failed")
        from engines.paths import logs_dir

        print(f"error: generation failed unexpectedly ({type(exc).__name__}: {exc}); details "
              f"are in {logs_dir()}.", file=sys.stderr)
        return EXIT_FAILED


def _is_runtime_failure(exc: Exception) -> bool:
    from engines.errors import BackendError

    return isinstance(exc, BackendError)
