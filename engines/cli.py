"""Headless command line: `python main.py generate ...` (a contract other tools rely on).

Every take is also kept in the sound library (engines.store) unless `--no-library` is given;
its id goes into the sidecar as "library_id".

Exit codes: 0 done; 1 the engine failed at run time; 2 bad input (one line on stderr naming the
problem and the fix, nothing written); 130 cancelled with Ctrl+C.
"""

from __future__ import annotations

import argparse
import logging
import os
import secrets
import sys
from pathlib import Path

from engines.cli_support import (  # noqa: F401 - re-exported for the other CLIs
    EXIT_BAD_INPUT,
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    parser_class,
    run_command,
)
from engines.errors import StudioError
from engines.provenance import build_sidecar, sidecar_path, write_json_atomic

log = logging.getLogger(__name__)

MODELS = ("demo", "sm-music", "sm-sfx", "medium")
DECODERS = ("same-s", "same-l", "demo")
PRECISIONS = ("fp16", "fp32", "fp8", "fp16mixed", "bf16")
BACKENDS = ("auto", "onnxruntime", "tensorrt")
OUT_FORMATS = ("wav16", "wav24", "flac", "ogg")


_Parser = parser_class("python main.py generate --help")


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
    p.add_argument("--no-library", action="store_true",
                   help="do not keep this take in the sound library")
    p.add_argument("--list-models", action="store_true",
                   help="list what is installed and runnable here, and why the rest is not")
    return p


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
    from engines.models.inventory import default_catalog

    if models_dir is not None and not models_dir.is_dir():
        raise UsageError(f"--models-dir '{models_dir}' is not a folder; give an existing "
                         f"models folder.")
    return default_catalog(models_dir)


def run_generate(args: argparse.Namespace) -> int:
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
    record = None if args.no_library else _keep_in_library(result, args.init_audio)
    _deliver(out, fmt, result, record, args.init_audio)
    print(summary_line(result, out))
    return EXIT_OK


def _deliver(out: Path, fmt: str, result, record, init_audio: Path | None) -> None:
    """Write the audio and its sidecar to hidden temporaries beside `out` and move them into
    place only when both are complete: a failure leaves the user's existing files as they were
    (never an old sidecar deleted, never audio without its provenance)."""
    token = secrets.token_hex(4)
    json_target = sidecar_path(out)
    audio_temp = out.with_name(f".{out.stem}.{token}.partial{out.suffix}")
    json_temp = json_target.with_name(f".{json_target.stem}.{token}.partial.json")
    from engines.audio_io import write_audio

    writing = out  # what a failure is reported as: the user's name, never a temporary one
    try:
        if record is not None and fmt == "wav16" and not record.missing:
            from engines.store.library import copy_atomic

            copy_atomic(record.audio_path, audio_temp)  # the same samples, plus the note
        else:
            write_audio(audio_temp, result.pcm, fmt)
        writing = json_target
        sidecar = build_sidecar(result, out, fmt, init_audio)
        sidecar["library_id"] = record.id if record is not None else None
        write_json_atomic(json_temp, sidecar)
        os.replace(json_temp, json_target)  # the sidecar first: it is the likelier to fail
        writing = out
        os.replace(audio_temp, out)
    except OSError as exc:
        raise UsageError(
            f"Could not write '{writing}' ({exc.strerror or exc}), so no file was changed; "
            "choose another --out or make room there.") from exc
    finally:
        audio_temp.unlink(missing_ok=True)
        json_temp.unlink(missing_ok=True)


def _keep_in_library(result, init_audio: Path | None):
    """Record the take (and its init file, as an imported take) in the library; the library
    failing never costs the user the file they asked for, so that is a warning."""
    from engines.paths import library_dir
    from engines.store.library import ClipLibrary

    try:
        library = ClipLibrary(library_dir())
    except (StudioError, OSError) as exc:
        log.warning("library unavailable", exc_info=True)
        print(f"warning: the take was not kept in the library: {exc}", file=sys.stderr)
        return None
    try:
        if library.notice:
            print(f"warning: {library.notice}", file=sys.stderr)
        parent_id = None
        if init_audio is not None:
            from engines.audio_io import read_audio

            origin = library.identify(init_audio)  # a take exported earlier, if it is one
            parent_id = library.add_imported(
                read_audio(init_audio), str(Path(init_audio).resolve()),
                parent_id=origin.id if origin is not None else None).id
        source = str(Path(init_audio).resolve()) if init_audio is not None else None
        return library.add(result, parent_id=parent_id, init_source=source)
    except (StudioError, OSError) as exc:
        log.warning("could not keep the take in the library", exc_info=True)
        print(f"warning: the take was not kept in the library: {exc}", file=sys.stderr)
        return None
    finally:
        library.close()


def main(argv: list[str]) -> int:
    """argv: ["generate", flags...] or ["--list-models", ...]."""
    args_list = list(argv)
    if args_list[:1] == ["generate"]:
        args_list = args_list[1:]
    return run_command("generate", lambda: run_generate(build_parser().parse_args(args_list)))
