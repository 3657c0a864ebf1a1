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
import shutil
from pathlib import Path

from engines.cli_support import (  # noqa: F401 - re-exported for the other CLIs
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
from engines.failures import path_text, printable, reason, sentence, shown
from engines.provenance import build_sidecar, sidecar_path

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
    p.add_argument("--inpaint", nargs="+", action="extend", metavar="START:END", default=[],
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


def _check_output(out: Path | None, fmt: str | None) -> tuple[Path, str]:
    """(the path to write, its format), after making sure the file and its sidecar can be
    written there, so a refusal comes before the render, not after it. A symbolic link is
    followed: the file it points at is the one replaced, the link stays."""
    from engines.audio_io import AudioFileError, format_for_path
    from engines.audio_io.atomic import NAME_MAX_BYTES

    if out is None:
        raise UsageError("--out is required; give the file to write, e.g. --out clip.wav.")
    for name in (out.name, sidecar_path(out).name):
        if len(os.fsencode(name)) > NAME_MAX_BYTES:
            raise UsageError(f"The name {shown(name)} is too long for the file system (more "
                             f"than {NAME_MAX_BYTES} bytes), so nothing was written; choose a "
                             "shorter --out.")
    try:
        chosen = format_for_path(out, default=fmt or "wav16")
    except AudioFileError as exc:
        raise UsageError(str(exc)) from exc
    if fmt and chosen != fmt:
        raise UsageError(f"--format {fmt} does not match the file name "
                         f"{shown(out.name)}; use a matching suffix.")
    try:
        if out.is_symlink():
            out = out.resolve()
        folder_ok = out.parent.is_dir()
    except (OSError, RuntimeError) as exc:  # a link loop, a path the OS refuses
        raise UsageError(sentence(f"Could not use --out {shown(out)}", exc)) from exc
    if not folder_ok:
        raise UsageError(f"The folder {shown(out.parent)} does not exist; create it or choose "
                         f"another --out.")
    for target in (out, sidecar_path(out)):
        if target.is_dir():
            raise UsageError(f"Could not write {shown(target)}: a folder with that name is in "
                             "the way, so nothing was written; choose another --out.")
        if target.exists() and not target.is_file():
            raise UsageError(f"Could not write {shown(target)}: it is a device or special "
                             "file, so nothing was written; choose a file name for --out.")
    _probe_writable(out)
    return out, chosen


def _probe_writable(out: Path) -> None:
    """Create (and remove) a temporary beside `out` and its sidecar: a read-only or protected
    folder is refused now rather than after the render. Also removes temporaries a killed
    earlier run left for these targets."""
    from engines.audio_io.atomic import create_temp_beside, remove_quietly, remove_stale_temps

    for target in (out, sidecar_path(out)):
        remove_stale_temps(target)
        try:
            probe = create_temp_beside(target, target.suffix)
        except OSError as exc:
            raise UsageError(sentence(f"Could not write {shown(target)}", exc,
                                      "nothing was written; choose another --out")) from exc
        remove_quietly(probe)


def _catalog(models_dir: Path | None):
    from engines.models.inventory import default_catalog

    if models_dir is not None and not models_dir.is_dir():
        raise UsageError(f"--models-dir '{models_dir}' is not a folder; give an existing "
                         f"models folder.")
    return default_catalog(models_dir)


def run_generate(args: argparse.Namespace) -> int:
    from engines.constants import DEFAULT_LIMITER_CEILING
    from engines.generator import Generator
    from engines.provenance import init_entry
    from engines.request import GenerationRequest, parse_span

    catalog = _catalog(args.models_dir)
    if args.list_models:
        print(printable(catalog.format_table()))
        return EXIT_OK
    if args.prompt is None:
        raise UsageError("--prompt is required; describe the sound, e.g. --prompt \"coin "
                         "pickup, bright\".")
    out, fmt = _check_output(args.out, args.format)
    # Taken before anything is written: --out may be the init file itself.
    init = init_entry(args.init_audio) if args.init_audio is not None else None
    request = GenerationRequest(
        prompt=argument_text(args.prompt, "--prompt"),
        negative_prompt=argument_text(args.negative_prompt, "--negative-prompt"),
        model=args.model, decoder=args.decoder, precision=args.precision, seconds=args.seconds,
        steps=args.steps, seed=args.seed, cfg=args.cfg, apg=args.apg, init_audio=args.init_audio,
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
        warn(warning)
    record = None if args.no_library else _keep_in_library(result, args.init_audio)
    try:
        _deliver(out, fmt, result, record, init)
    except UsageError as exc:
        if record is None:
            raise CommandFailed(f"{str(exc).rstrip('.')}; the take is lost, render it again "
                                "with a seed of " + f"{result.seed}.") from exc
        raise CommandFailed(f"{str(exc).rstrip('.')}; the take is kept in the library as "
                            f"#{record.id} (`python main.py library export {record.id} --to "
                            "FOLDER` writes it out).") from exc
    print(printable(summary_line(result, out)))
    return EXIT_OK


def _deliver(out: Path, fmt: str, result, record, init: dict | None) -> None:
    """Write the audio and its sidecar to hidden temporaries beside `out` and move them into
    place only when both are complete. The sidecar goes first (the likelier to fail); if the
    audio then cannot be moved, the old sidecar is put back (or the new one removed), so a
    failure leaves the user's files exactly as they were."""
    from engines.audio_io.atomic import release, remove_quietly
    from engines.audio_io.writing import write_audio_temp
    from engines.errors import AudioFileError
    from engines.provenance import write_json_temp

    json_target = sidecar_path(out)
    temps: list[Path] = []
    writing = out  # what a failure is reported as: the user's name, never a temporary one
    try:
        if record is not None and fmt == "wav16" and not record.missing:
            temps.append(_copy_temp(record.audio_path, out))  # same samples, plus the note
        else:
            temps.append(write_audio_temp(out, result.pcm, fmt))
        writing = json_target
        sidecar = build_sidecar(result, out, fmt, init)
        sidecar["library_id"] = record.id if record is not None else None
        temps.append(write_json_temp(json_target, sidecar))
        temps.append(_keep_old(json_target))
        os.replace(temps[1], json_target)
        writing = out
        try:
            os.replace(temps[0], out)
        except OSError:
            _put_back(json_target, temps[2])
            raise
    except AudioFileError as exc:
        raise UsageError(str(exc)) from exc
    except OSError as exc:
        raise UsageError(sentence(f"Could not write {shown(writing)}", exc,
                                  "no file was changed; choose another --out or make room "
                                  "there")) from exc
    finally:
        for temp in temps:
            if temp is not None:
                remove_quietly(temp)  # a no-op for one already moved into place
                release(temp)


def _keep_old(target: Path) -> Path | None:
    """A hard link to the file at `target` (None when there is none), so it can be put back."""
    from engines.audio_io.atomic import create_temp_beside, remove_quietly

    if not target.is_file():
        return None
    backup = create_temp_beside(target, ".old")
    remove_quietly(backup)  # only the free name is wanted: os.link will not overwrite
    try:
        os.link(target, backup)
    except OSError:  # a file system without hard links
        shutil.copyfile(target, backup)
    return backup


def _put_back(target: Path, backup: Path | None) -> None:
    try:
        if backup is None:
            target.unlink(missing_ok=True)
        else:
            os.replace(backup, target)
    except OSError:
        log.warning("could not restore %s", target, exc_info=True)


def _copy_temp(source: Path, target: Path) -> Path:
    from engines.audio_io.atomic import create_temp_beside, fsync_file, remove_quietly

    temp = create_temp_beside(target, target.suffix)
    try:
        shutil.copyfile(source, temp)
        fsync_file(temp)
    except BaseException:
        remove_quietly(temp)
        raise
    return temp


def _keep_in_library(result, init_audio: Path | None):
    """Record the take (and its init file, as an imported take) in the library. The library
    failing never costs the user the file they asked for: whatever goes wrong here is one
    warning, and the take is still written to --out."""
    from engines.paths import library_dir
    from engines.store.library import ClipLibrary

    try:
        library = ClipLibrary(library_dir())
    except Exception as exc:  # never lose the take: see the docstring
        return _not_kept(result, exc)
    try:
        if library.notice:
            warn(library.notice)
        parent_id = None
        source = path_text(Path(init_audio).resolve()) if init_audio is not None else None
        if init_audio is not None:
            from engines.audio_io import read_audio
            from engines.constants import SAMPLE_RATE
            from engines.request import init_frames_needed

            # Only the part the take was made from: a 30-minute file is not copied whole.
            used_s = init_frames_needed(result.request.seconds) / SAMPLE_RATE
            origin = library.identify(init_audio)  # a take exported earlier, if it is one
            parent_id = library.add_imported(
                read_audio(init_audio, max_seconds=used_s), source,
                parent_id=origin.id if origin is not None else None).id
        return library.add(result, parent_id=parent_id, init_source=source)
    except Exception as exc:  # never lose the take: see the docstring
        return _not_kept(result, exc)
    finally:
        try:
            library.close()
        except Exception:
            log.warning("could not close the library", exc_info=True)


def _not_kept(result, exc: BaseException) -> None:
    log.warning("could not keep the take in the library", exc_info=True)
    need = result.pcm.shape[0] * 4 + (1 << 16)  # 16-bit stereo, plus the note
    happened, todo = reason(exc)
    warn(f"The take was not kept in the library: {happened}, and it needs about "
         f"{need / 1e6:.1f} MB there; {todo} (the --out file is written all the same).")
    return None


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
