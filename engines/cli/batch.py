"""`python main.py batch LIST --out DIR`: render a sound list into a folder.

Exit codes: 0 every take is done (rendered now or earlier); 1 a take (or row) failed, or the
manifest could not be written; 2 the command line or the list itself cannot be used (one line
on stderr, nothing written); 130 stopped with Ctrl+C (rerun the same command to continue).
"""

from __future__ import annotations

import argparse
import copy
import shutil
import sys
from pathlib import Path
from typing import Any

from engines.batch.estimate import estimate, take_seconds
from engines.batch.items import RowDefaults
from engines.batch.plan import MANIFEST_NAME, Plan
from engines.batch.progress import Progress
from engines.batch.session import (
    BatchEvents,
    BatchOptions,
    BatchSession,
    BatchSummary,
    choose_workers,
    with_row_loop,
)
from engines.catalog.tables import MODEL_CHOICES, PRECISION_NAMES, TIER_NAMES
from engines.cli.finishing import add_finish_arguments, finish_settings
from engines.cli.labels import add_label_arguments, labels_from
from engines.cli.output import _probe_writable
from engines.cli.support import (
    EXIT_CANCELLED,
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    parser_class,
    run_command,
)
from engines.cli.words import say
from engines.delivery.names import DEFAULT_TEMPLATE, check_template
from engines.error_sentences import printable, shown
from engines.errors import RequestError
from engines.finish.settings import FinishSettings
from engines.models.inventory import default_catalog, human_size
from engines.paths import data_dir
from engines.request import default_seconds_help

BACKENDS = ("auto", "onnxruntime", "tensorrt")
MAX_JOBS = 64
BYTES_PER_SECOND = 44100 * 2 * 2  # the smallest a take is written: 16-bit stereo
MIN_ROOM = 64 << 10  # a sidecar and the manifest beside the audio

_Parser = parser_class("python main.py batch --help")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python main.py batch",
                description="Render every sound of a list into a folder: a file and a JSON "
                            "sidecar per take, DIR/manifest.json, and every take in the library. "
                            "A rerun skips the takes already made.")
    p.add_argument("list", type=Path, metavar="LIST",
                   help="CSV (header row) or JSON (list of objects) with name and prompt, and "
                        "optionally seconds, variations, seed, negative_prompt, model, decoder, "
                        "precision, codec_tier, steps, cfg, apg, init_audio, init_noise_level, "
                        "inpaint, loop, loop_method, preset, category")
    p.add_argument("--out", type=Path, metavar="DIR", help="output folder (created if missing)")
    p.add_argument("--name", metavar="TEMPLATE", default=DEFAULT_TEMPLATE,
                   help="file names from {name} {prompt} {seed} {n:02} {preset} {date} "
                        f"{{category}}, or ucs (default {DEFAULT_TEMPLATE})")
    p.add_argument("--model", default="demo", choices=MODEL_CHOICES, help="for rows that give none")
    p.add_argument("--precision", choices=PRECISION_NAMES, help="for rows that give none")
    p.add_argument("--codec-tier", choices=TIER_NAMES, metavar="TIER",
                   help="codec tier for rows that give none: " + ", ".join(TIER_NAMES)
                        + " (default: canonical; `models list` shows speed and quality)")
    p.add_argument("--steps", type=int, default=8, help="for rows that give none (default 8)")
    p.add_argument("--seconds", type=float, help=f"for rows that give none (default by model: "
                   f"{default_seconds_help()}; or the init audio's length)")
    p.add_argument("--backend", default="auto", choices=BACKENDS)
    p.add_argument("--models-dir", type=Path, help="models root (default <data>/models)")
    p.add_argument("--jobs", type=int, metavar="N",
                   help="worker processes (default: one per GPU with TensorRT, else 1)")
    p.add_argument("--force", action="store_true",
                   help="render every take again, even those already made")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and the estimated time; render and write nothing")
    p.add_argument("--no-library", action="store_true",
                   help="do not keep the takes in the sound library")
    add_finish_arguments(p)
    add_label_arguments(p)
    return p


def main(argv: list[str]) -> int:
    """argv: the arguments after `batch` (a leading "batch" is accepted too)."""
    args_list = list(argv)
    if args_list[:1] == ["batch"]:
        args_list = args_list[1:]
    return run_command("batch", lambda: run(build_parser().parse_args(args_list)))


def run(args: argparse.Namespace) -> int:
    out = _checked_arguments(args)
    # An unknown CatID is refused before anything is read; one no UCS list could check is
    # said once by the plan, with the rows' own.
    labels = labels_from(args, warn_unchecked=False)
    defaults = RowDefaults(model=args.model, precision=args.precision,
                           codec_tier=args.codec_tier, seconds=args.seconds,
                           steps=args.steps, backend=args.backend)
    options = BatchOptions(args.list, out, template=args.name, defaults=defaults,
                           finishing_for=_finishing_for(args), labels=labels,
                           keep_in_library=not args.no_library, force=args.force)
    session = BatchSession(options, _Terminal())
    plan = session.plan()
    catalog = default_catalog(args.models_dir)
    jobs, cuda_devices = choose_workers(catalog, plan, args.jobs)
    if args.dry_run:
        return _print_plan(plan, session.earlier, jobs)
    session.make_folder(_check_writable)
    skipped = len(plan.takes) - len(plan.to_render)
    if skipped:
        print(f"skipping {skipped} take(s) already made with the same parameters (--force "
              "renders them again).", flush=True)
    summary = session.render(catalog=catalog, jobs=jobs, cuda_devices=cuda_devices,
                             models_dir=args.models_dir)
    return _report(summary)


def _checked_arguments(args: argparse.Namespace) -> Path:
    if args.out is None:
        raise UsageError("--out is required; give the folder to write the takes to, e.g. "
                         "--out sounds/.")
    try:
        check_template(args.name)
    except RequestError as exc:
        raise UsageError(f"--name: {exc}") from None
    if args.jobs is not None and not 1 <= args.jobs <= MAX_JOBS:
        raise UsageError(f"--jobs {args.jobs} is out of range; choose 1 to {MAX_JOBS}.")
    if args.models_dir is not None and not args.models_dir.is_dir():
        raise UsageError(f"--models-dir {shown(args.models_dir)} is not a folder; give an "
                         "existing models folder.")
    _finishing_for(args)(None, None)  # the command's own finishing flags, refused now
    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {shown(args.out)} is a file, not a folder; choose a folder.")
    return args.out


def _check_writable(out: Path, plan: Plan) -> None:
    """A read-only or protected folder is found by a probe file, as generate's --out is; a
    full drive by its free space, against the smallest take (a drive that fills up later
    fails the takes it cannot hold, and says so)."""
    takes = plan.to_render
    _probe_writable(out / (takes[0].file if takes else MANIFEST_NAME))
    needed = MIN_ROOM + min((int(take_seconds(t) * BYTES_PER_SECOND) for t in takes), default=0)
    try:
        free = shutil.disk_usage(out).free
    except OSError:  # cannot tell: the writes themselves will say
        return
    if free < needed:
        raise UsageError(f"The drive of {shown(out)} is full ({human_size(free)} free, a take "
                         f"needs about {human_size(needed)}), so nothing was rendered; make "
                         "room there or choose another --out.")


def _finishing_for(args: argparse.Namespace):
    """finishing_for(row preset, row loop) -> (FinishSettings or None, format): the command's
    finishing flags with the row's preset as the starting point (flags still win, as in
    `generate`) and the row's loop on top. RequestError when refused."""
    cache: dict[tuple, tuple[Any, str]] = {}

    def finishing_for(preset: str | None, loop: bool | None,
                  method: str | None = None) -> tuple[Any, str]:
        if (preset, loop, method) in cache:
            return cache[(preset, loop, method)]
        flags = copy.copy(args)
        if preset is not None:
            flags.preset = preset
        settings = with_row_loop(finish_settings(flags, data_dir), loop, method)
        fmt = settings.format if settings is not None else (args.format or "wav16")
        if settings is None and fmt == "wav32f":  # only the finishing writer makes float WAV
            settings = FinishSettings(format=fmt)
        cache[(preset, loop, method)] = (settings, fmt)
        return settings, fmt

    return finishing_for


def _report(summary: BatchSummary) -> int:
    counts = summary.counts
    rate = counts["ok"] / summary.wall_s if summary.wall_s > 0 else 0.0
    print(printable(f"done: {counts['ok']} rendered, {counts['skipped']} skipped, "
                    f"{counts['failed']} failed, {counts['pending']} not rendered; "
                    f"{summary.audio_seconds:.1f} s of audio in {summary.wall_s:.1f} s "
                    f"({rate:.2f} takes/s); manifest: {summary.manifest}"), flush=True)
    if summary.manifest_error:  # said when it happened (engines.batch.runner): not twice
        return EXIT_FAILED
    if summary.cancelled:
        warn_line("cancelled", f"stopped after the current take; {counts['pending']} take(s) "
                               "are not rendered yet: run the same command again to continue.")
        return EXIT_CANCELLED
    if counts["failed"]:
        warn_line("error", f"{counts['failed']} of {summary.items} item(s) failed (see above "
                           "and the manifest); fix them and run the command again: the takes "
                           "already made are skipped.")
        return EXIT_FAILED
    return EXIT_OK


def _print_plan(plan: Plan, earlier: list[dict], jobs: int) -> int:
    for take in plan.takes:
        seed = ("random" if take.seed_was_random and not take.seed_from_earlier
                else str(take.seed))
        state = "  (already made: skipped)" if take.skipped else ""
        print(printable(f"{take.file}  {take.where}  {take.spec.model}  "
                        f"{take_seconds(take):.2f} s  {take.spec.steps} steps  seed {seed}"
                        f"{state}"))
    to_render = plan.to_render
    guess = estimate(to_render, earlier, jobs)
    when = "unknown" if guess.seconds is None else f"about {guess.seconds:.1f} s"
    print(f"plan: {len(to_render)} take(s) to render, {len(plan.takes) - len(to_render)} "
          f"already made, {len(plan.problems)} bad item(s); {guess.audio_seconds:.1f} s of "
          f"audio; estimated time {when} ({guess.source}).")
    print("dry run: nothing was rendered or written.")
    return EXIT_FAILED if plan.problems else EXIT_OK


def warn_line(kind: str, message: object) -> None:
    """An `error: ...` or `cancelled: ...` line on stderr, printable whatever it holds."""
    try:
        print(f"{kind}: {printable(say(message))}", file=sys.stderr, flush=True)
    except (OSError, ValueError):  # a closed stderr: the manifest still says it
        pass


class _Terminal(BatchEvents):
    """The session told on the terminal: warnings and errors as `kind: ...` lines on stderr,
    through the progress bar (or one plain line per take) while the takes render."""

    def __init__(self) -> None:
        self._progress: Progress | None = None

    def say(self, kind: str, message: object) -> None:
        if self._progress is not None:
            self._progress.say(kind, say(message))  # remedies in the command line's words
        else:
            warn_line(kind, message)

    def begin(self, total: int) -> None:
        self._progress = Progress(total)

    def take_done(self, file: str, status: str, seconds: float) -> None:
        if self._progress is not None:
            self._progress.take_done(file, status, seconds)

    def end(self) -> None:
        if self._progress is not None:
            self._progress.close()
            self._progress = None


__all__ = ["build_parser", "main", "run"]
