"""Headless command line: `python main.py generate ...` (a contract other tools rely on).

Every take is also kept in the sound library (engines.store, through
engines.cli.generate_keeping) unless
`--no-library` is given, with the finishing chain that made --out; its id goes into the sidecar as
"library_id".

Exit codes: 0 done; 1 the engine failed at run time; 2 bad input (one line on stderr naming the
problem and the fix, nothing written); 130 cancelled with Ctrl+C.
"""

from __future__ import annotations

import argparse
import logging
import math
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from engines.audio_io import float_from_pcm16
from engines.audio_io.formats import FORMATS
from engines.catalog import get_model_set
from engines.catalog.tables import MODEL_CHOICES, PRECISION_NAMES, TIER_NAMES
from engines.cli.finishing import add_finish_arguments, finish_settings
from engines.cli.generate_keeping import keep_in_library
from engines.cli.labels import add_label_arguments, labels_from
from engines.cli.output import check_output
from engines.cli.support import (  # noqa: F401 - re-exported for the other CLIs
    EXIT_BAD_INPUT,
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    CommandFailed,
    UsageError,
    argument_text,
    parser_class,
    run_command,
    warn,
)
from engines.cli.words import say
from engines.constants import DEFAULT_LIMITER_CEILING
from engines.delivery.deliver import deliver
from engines.delivery.delivery_take import from_result
from engines.delivery.guard import default_protected
from engines.delivery.names import numbered_stem
from engines.error_sentences import printable
from engines.errors import RequestError, StudioError
from engines.finish.finished_take import describe, finish_take
from engines.finish.loop_plan import check_loop_fits
from engines.finish.quality import describe_flag
from engines.finish.settings import FinishSettings
from engines.models.inventory import default_catalog
from engines.paths import data_dir
from engines.provenance import init_entry
from engines.request import (
    GenerationRequest,
    ValidatedRequest,
    checked_request,
    default_seconds,
    default_seconds_help,
)
from engines.request_adapters import parse_adapter_text
from engines.seeds import MAX_VARIATIONS, check_seed_run, random_seed_run

if TYPE_CHECKING:
    import numpy as np

    from engines.catalog import Catalog
    from engines.finish.finished_take import FinishedTake
    from engines.generation_result import GenerationResult
    from engines.generator import Generator

log = logging.getLogger(__name__)

DECODERS = ("same-s", "same-l", "demo")
BACKENDS = ("auto", "onnxruntime", "tensorrt")


_Parser = parser_class("python main.py generate --help")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python main.py generate",
                description="Render one clip without the GUI and write it with a JSON sidecar.")
    p.add_argument("--prompt", help="what the clip should sound like")
    p.add_argument("--negative-prompt", default="", help="what to steer away from (needs cfg > 1)")
    p.add_argument("--model", default="demo", choices=MODEL_CHOICES)
    p.add_argument("--decoder", choices=DECODERS, help="default: the model's paired decoder")
    p.add_argument("--precision", choices=PRECISION_NAMES, help="default: the model's default")
    p.add_argument("--codec-tier", choices=TIER_NAMES, metavar="TIER",
                   help="decoder/encoder tier: " + ", ".join(TIER_NAMES) + " (default: "
                        "canonical; fp8 tiers need compute capability 8.9+; coarse is the "
                        "demo's; `models list` shows speed and quality)")

    p.add_argument("--seconds", type=float, help=f"length (default by model: "
                   f"{default_seconds_help()}; with --init-audio, its length)")
    p.add_argument("--steps", type=int, default=8, help="sampler steps 1..50 (default 8)")
    p.add_argument("--seed", type=int, help="0..4294967295; random when omitted (reported)")
    p.add_argument("--cfg", type=float, default=1.0, help="guidance scale 0..15; 1 = off")
    p.add_argument("--apg", type=float, default=1.0, help="projected guidance 0..1 (default 1)")
    p.add_argument("--init-audio", type=Path, help="audio file for audio-to-audio or inpainting")
    p.add_argument("--init-noise-level", type=float,
                   help="audio-to-audio strength 0.01..1 (default 0.6)")
    p.add_argument("--inpaint", nargs="+", action="extend", metavar="START:END", default=[],
                   help="regenerate these spans (seconds) of the init audio")
    p.add_argument("--lora", action="append", default=[], metavar="FILE[:STRENGTH]",
                   help="apply a LoRA/DoRA adapter (.safetensors) at STRENGTH 0..10 (default "
                        "1); repeat to stack adapters")
    p.add_argument("--limiter-ceiling", type=float, default=None,
                   help="decoder limiter ceiling (default 0.977; > 1 relaxes it)")
    p.add_argument("--backend", default="auto", choices=BACKENDS)
    p.add_argument("--models-dir", type=Path, help="models root (default <data>/models)")
    p.add_argument("--out", type=Path, help="output file (.wav, .flac or .ogg)")
    p.add_argument("--variations", type=int, default=1, metavar="N",
                   help="N takes with consecutive seeds, written as <name>_01..N (a UCS "
                        "name: numbered in its FXName block)")
    p.add_argument("--no-library", action="store_true",
                   help="do not keep this take in the sound library")
    p.add_argument("--list-models", action="store_true",
                   help="list what is installed and runnable here, and why the rest is not")
    add_finish_arguments(p)
    add_label_arguments(p)
    return p


def summary_line(result: GenerationResult, out: Path) -> str:
    stages = ", ".join(f"{k} {v:.0f} ms" for k, v in result.timings_ms.items() if k != "total")
    return (f"{out}: {result.seconds:.2f} s of audio | {stages} | total "
            f"{result.timings_ms['total']:.0f} ms, {result.realtime_factor:.1f}x realtime | "
            f"{get_model_set(result.request.model).label} on {result.backend} | "
            f"seed {result.seed}")


def _catalog(models_dir: Path | None) -> Catalog:
    if models_dir is not None and not models_dir.is_dir():
        raise UsageError(f"--models-dir '{models_dir}' is not a folder; give an existing "
                         f"models folder.")
    return default_catalog(models_dir)


def run_generate(args: argparse.Namespace) -> int:
    # Here, not at the top: Generator loads all 35 backend modules, which --help need not.
    from engines.generator import Generator

    catalog = _catalog(args.models_dir)
    if args.list_models:
        print("\n".join(printable(say(line)) for line in catalog.format_lines()))
        return EXIT_OK
    if args.prompt is None:
        raise UsageError("--prompt is required; describe the sound, e.g. --prompt \"coin "
                         "pickup, bright\".")
    if not 1 <= args.variations <= MAX_VARIATIONS:
        raise UsageError(f"--variations {args.variations} is out of range; choose 1 to "
                         f"{MAX_VARIATIONS}.")
    check_seed_run(args.seed, args.variations)  # the same rule as a sound list's rows
    # Nothing the run reads may be written over: refused now, before any render.
    adapters = [parse_adapter_text(text) for text in args.lora]
    protected = default_protected((args.init_audio, "the init audio file"),
                                  *((choice.path, "an adapter file") for choice in adapters))
    out, fmt = check_output(args.out, args.format, protected)
    args.labels = labels_from(args)
    # A set's files: name_01 ..., or a UCS name numbered in its FXName block (names.py).
    outs = [out] if args.variations == 1 else [
        check_output(out.with_name(numbered_stem(out.stem, k, args.labels.catid) + out.suffix),
                     fmt, protected)[0]
        for k in range(1, args.variations + 1)]
    finishing = _finishing(args, out, fmt)  # refused now, not after the render
    if finishing is not None and finishing.loop:  # a loop that cannot fit: before the render

        seconds = args.seconds if args.seconds is not None else (
            None if args.init_audio is not None else default_seconds(args.model))
        if seconds is not None:
            check_loop_fits(seconds, finishing.loop_seam_s, finishing.loop_method)
    # The init file's hash, read once before the renders (the sidecar records it).
    init = init_entry(args.init_audio) if args.init_audio is not None else None
    base_seed = args.seed if args.seed is not None or args.variations == 1 else \
        random_seed_run(args.variations)
    prompt = argument_text(args.prompt, "--prompt")
    negative = argument_text(args.negative_prompt, "--negative-prompt")
    generator = Generator(catalog)  # loaded once for every variation
    try:
        for k, target in enumerate(outs):
            # Variation k gets seed + k - 1 (check_seed_run made sure they all fit).
            seed = base_seed if base_seed is None else base_seed + k
            # Checked here, once: the generator runs the checked request as it is.
            request = checked_request(GenerationRequest(
                prompt=prompt, negative_prompt=negative, model=args.model,
                decoder=args.decoder, precision=args.precision, codec_tier=args.codec_tier,
                seconds=args.seconds, steps=args.steps, seed=seed, cfg=args.cfg, apg=args.apg,
                init_audio=args.init_audio, init_noise_level=args.init_noise_level,
                inpaint_spans=[parse_span(s) for s in args.inpaint],
                limiter_ceiling=(DEFAULT_LIMITER_CEILING if args.limiter_ceiling is None
                                 else args.limiter_ceiling),
                backend=args.backend, adapters=adapters,
            ))
            _render_one(generator, request, target, fmt, finishing, init, args,
                        (k + 1, len(outs)))
    finally:
        generator.close()
    return EXIT_OK


def _render_one(generator: Generator, request: ValidatedRequest, out: Path, fmt: str,
                finishing: FinishSettings | None, init: dict | None,
                args: argparse.Namespace, variation: tuple[int, int] = (1, 1)) -> None:
    """One take: render, finish, keep in the library (with its labels and its number in the
    set, `variation` = (n, of)), write --out with its sidecar."""
    result = generator.generate(request)
    finished = _finish(result, finishing, generator) if finishing is not None else None
    for warning in [*result.warnings, *(finished.warnings if finished is not None else [])]:
        warn(warning)
    for flag in result.quality:
        warn(f"quality: {describe_flag(flag)}")
    record = None if args.no_library else keep_in_library(result, args.init_audio, finished,
                                                          args.labels, variation)
    take = from_result(result, record=record, init=init,
                       finished=finished).with_labels(args.labels)
    try:
        deliver(take, out, fmt=fmt if finished is None else finished.settings.format)
    except StudioError as exc:
        if record is None:
            raise CommandFailed(f"{str(exc).rstrip('.')}; the take is lost, render it again "
                                "with a seed of " + f"{result.seed}.") from exc
        raise CommandFailed(f"{str(exc).rstrip('.')}; the take is kept in the library as "
                            f"#{record.id} (`python main.py library export {record.id} --to "
                            "FOLDER` writes it out).") from exc
    print(printable(summary_line(result, out)), flush=True)
    if finished is not None:
        print(printable(f"finished: {describe(finished)}"), flush=True)


def _finishing(args: argparse.Namespace, out: Path, fmt: str) -> FinishSettings | None:
    """The finishing settings the flags ask for (None for none), with the delivery format the
    file name allows: a preset's bit depth is kept when the suffix fits it."""
    settings = finish_settings(args, data_dir)
    if settings is None:
        return FinishSettings(format=fmt) if fmt == "wav32f" else None
    if args.format is not None or FORMATS[settings.format].suffix != FORMATS[fmt].suffix:
        return replace(settings, format=fmt)  # the flag, or else the file name, decides
    return settings  # e.g. a 24-bit preset and a .wav name: the preset's depth


def _finish(result: GenerationResult, settings: FinishSettings,
            generator: Generator) -> FinishedTake:
    def generate(request: GenerationRequest) -> np.ndarray:
        return float_from_pcm16(generator.generate(request).pcm)

    return finish_take(float_from_pcm16(result.pcm), settings, request=result.request,
                       generate=generate)


def _span_arguments(argv: list[str]) -> list[str]:
    """argparse reads `--inpaint -1:1` as a flag, not a value; hand every span over as
    `--inpaint=SPAN` so the span rule itself can refuse a bad one in its own words."""
    out: list[str] = []
    in_spans = values = 0
    for word in argv:
        if word == "--inpaint":
            if in_spans and not values:
                out.append("--inpaint")  # an empty run: argparse says a span is needed
            in_spans, values = 1, 0
            continue
        is_span = not word.startswith("-") or (":" in word and not word.startswith("--"))
        if in_spans and is_span:
            out.append(f"--inpaint={word}")
            values += 1
            continue
        if in_spans and not values:
            out.append("--inpaint")
        in_spans = 0
        out.append(word)
    if in_spans and not values:
        out.append("--inpaint")
    return out


def main(argv: list[str]) -> int:
    """argv: ["generate", flags...] or ["--list-models", ...]."""
    args_list = list(argv)
    if args_list[:1] == ["generate"]:
        args_list = args_list[1:]
    args_list = _span_arguments(args_list)
    return run_command("generate", lambda: run_generate(build_parser().parse_args(args_list)))


def parse_span(text: str) -> tuple[float, float]:
    """"1.5:2.25" -> (1.5, 2.25), the seconds of one `--inpaint START:END`."""
    parts = str(text).split(":")
    hint = "write START:END in seconds, for example --inpaint 1.5:2.25"
    if len(parts) != 2 or not all(p.strip() for p in parts):
        raise RequestError(f"'{text}' is not a span; {hint}.")
    try:
        start, end = (float(p) for p in parts)
    except ValueError:
        raise RequestError(f"'{text}' is not a span of two numbers; {hint}.") from None
    if not (math.isfinite(start) and math.isfinite(end)):
        raise RequestError(f"'{text}' is not a span of finite numbers; {hint}.")
    return start, end
