"""`python main.py models ...`: see, download, build and self-test engine sets.

Exit codes: 0 done, 1 failed while working, 2 refused (one line on stderr naming the problem and
the fix), 130 cancelled.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from pathlib import Path

from engines import paths
from engines.catalog import BACKEND_LABELS
from engines.catalog import tensorrt_version as trt_version
from engines.catalog.tables import PRECISIONS
from engines.catalog.tier_choice import pick_lines
from engines.catalog.tiers import DEFAULT_RULE, tier_table_lines
from engines.cli import gpu_runtime as gpu_runtime_cli
from engines.cli.support import (
    EXIT_FAILED,
    EXIT_OK,
    CommandFailed,
    UsageError,
    parser_class,
    run_command,
)
from engines.cli.words import say
from engines.error_sentences import printable, sentence, shown
from engines.errors import ModelUnavailableError, StudioError
from engines.models import branch_build, build_plan, builder
from engines.models import download as dl
from engines.models.adapter_selftest import run_adapter_selftest
from engines.models.hub_files import DOWNLOAD_SETS
from engines.models.inventory import (
    default_catalog,
    engines_on_disk,
    human_size,
    installed_sets,
    load_extra_roots,
    machine_report,
    save_extra_roots,
    tensorrt_fit_lines,
)
from engines.models.selftest import run_selftest

_Parser = parser_class("python main.py models --help")


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="python main.py models",
                description="See, download, build and self-test SA3 engine sets.")
    p.add_argument("--models-dir", type=Path, help="models root (default <data>/models)")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    sub.add_parser("list", help="this machine, and every set: installed files and what runs")
    fetch = sub.add_parser("download", help="download engines (or ONNX graphs) from Hugging Face")
    fetch.add_argument("sets", nargs="+", choices=DOWNLOAD_SETS)
    fetch.add_argument("--arch", help="engine arch folder, e.g. sm_90 (default: this GPU)")
    fetch.add_argument("--precision", action="append", choices=PRECISIONS,
                       help="precision tier (repeatable; default fp16)")
    fetch.add_argument("--onnx", action="store_true", help="ONNX graphs instead of engines")
    fetch.add_argument("--dry-run", action="store_true", help="show files and sizes, download "
                                                              "nothing")
    fetch.add_argument("--adapters", action="store_true",
                       help="also the branch DiT that serves adapters, where the hub has it")
    build = sub.add_parser("build", help="build TensorRT engines from downloaded ONNX graphs")
    build.add_argument("sets", nargs="+", choices=(*DOWNLOAD_SETS, "demo"))
    build.add_argument("--precision", default="fp16", choices=PRECISIONS)
    build.add_argument("--wide", action="store_true", help="wide decoder profile (up to 8192)")
    build.add_argument("--adapters", action="store_true",
                       help="also the branch DiT that serves adapters (the demo's; the published "
                            "sets' comes from the official build_branch.py)")
    check = sub.add_parser("selftest", help="build the demo set into engines here and run one take")
    check.add_argument("--adapters", action="store_true",
                       help="also the demo's branch DiT, and takes with a demo adapter")
    token = sub.add_parser("token", help="store a Hugging Face token (keyring)")
    token.add_argument("token", nargs="?", help="the token (default: read from stdin)")
    add = sub.add_parser("add-folder", help="also look for engines in this folder")
    add.add_argument("folder", type=Path)
    remove = sub.add_parser("remove-folder", help="stop looking in this folder")
    remove.add_argument("folder", type=Path)
    gpu_runtime_cli.add_parser(sub)
    return p


def _models_dir(args) -> Path:
    if args.models_dir is not None and not args.models_dir.is_dir():
        raise UsageError(f"--models-dir {shown(args.models_dir)} is not a folder; give an existing "
                         f"models folder.")
    return args.models_dir or paths.models_dir()


def cmd_list(args) -> int:
    catalog = default_catalog(_models_dir(args))
    report = machine_report(catalog.gpu, tensorrt=catalog.tensorrt_version)
    print("This machine:")
    for line in report.lines():
        print(f"  {line}")
    print(printable("Model folders: " + ", ".join(str(r) for r in catalog.roots)))
    print("\nEngine files and TensorRT:")
    for line in tensorrt_fit_lines(engines_on_disk(catalog), catalog.tensorrt_version):
        print(printable(f"  {say(line)}"))
    for entry in installed_sets(catalog):
        count = len(entry.files)
        print(f"\n{entry.model}: {entry.label} - {count} file{'s' if count != 1 else ''} on "
              f"disk, {human_size(entry.total_bytes)}")
        for path, size in entry.files:
            print(printable(f"  {path} ({human_size(size)})"))  # names found on disk
        for where, state in entry.runnable.items():
            verdict = "ready" if state == "ready" else f"not ready - {say(state)}"
            print(f"  {_run_label(where)}: {verdict}")
        for line in pick_lines(catalog, entry.model):
            print(printable(f"  {say(line)}"))
    print(f"\nSpeed and quality (published figures); the default rule: {DEFAULT_RULE}.")
    for line in tier_table_lines():
        print(f"  {line}")
    return EXIT_OK


def _run_label(where: str) -> str:
    """"tensorrt fp16" -> "runs on TensorRT at fp16"."""
    backend, _, precision = where.partition(" ")
    return f"runs on {BACKEND_LABELS.get(backend, backend)} at {precision}"


def _arch(args, catalog) -> str:
    if args.arch:
        if not args.arch.startswith("sm_") or not args.arch[3:].isdigit():
            raise UsageError(f"--arch '{args.arch}' is not an arch folder name; use e.g. sm_90 "
                             f"or sm_120.")
        return args.arch
    if catalog.gpu is None:
        raise UsageError("No NVIDIA GPU was found, so the engine arch is unknown; pass --arch "
                         "sm_90 (or the target machine's arch), or --onnx for the ONNX graphs.")
    return catalog.gpu.sm


def cmd_download(args) -> int:
    models = _models_dir(args)
    catalog = default_catalog(models)
    precisions = args.precision or ["fp16"]
    fmt = "onnx" if args.onnx else "trt"
    arch = _arch(args, catalog) if not args.onnx else (catalog.gpu.sm if catalog.gpu else "")
    if "fp8" in precisions and not args.onnx and catalog.gpu is not None \
            and not catalog.gpu.has_fp8 and not args.arch:
        raise UsageError(f"fp8 engines need FP8 tensor cores (compute capability 8.9+); this "
                         f"GPU is {catalog.gpu.major}.{catalog.gpu.minor}: use fp16.")

    token = dl.resolve_token()
    plan = dl.plan_download(list(args.sets), arch, precisions, fmt, models, token=token,
                            adapters=args.adapters)
    files = plan.files
    print(f"{len(files)} file(s), {human_size(plan.total_bytes)} in total:")
    for f in files:
        print(printable(f"  {f.path} ({human_size(f.size)})"))  # names the hub listed
    if args.dry_run:
        return EXIT_OK
    dl.check_disk_space(plan, models)
    cancel = threading.Event()
    last = [0.0]

    def progress(name, done, total, all_done, all_total):
        now = time.monotonic()
        if now - last[0] > 0.5 or all_done == all_total:
            last[0] = now
            print(f"\r{printable(name)}: {done * 100 // max(total, 1)}% | total "
                  f"{all_done * 100 // max(all_total, 1)}% of {human_size(all_total)}", end="",
                  flush=True)

    try:
        written = dl.download(plan, models, progress=progress, cancel=cancel, token=token)
    except KeyboardInterrupt:
        cancel.set()
        raise
    print(f"\nDownloaded {len(written)} file(s) into {models}.")
    return EXIT_OK


def _require_tensorrt(catalog) -> None:
    if catalog.gpu is None:
        raise UsageError("No NVIDIA GPU was found; building and the self-test need one (the "
                         "demo and ONNX Runtime work without).")
    if catalog.tensorrt_version is None:
        raise UsageError(f"TensorRT is not installed; install it with "
                         f"`{trt_version.install_command()}` and run this again.")
    unusable = trt_version.unsupported_reason(catalog.tensorrt_version)
    if unusable:
        raise UsageError(unusable)


def cmd_build(args) -> int:
    models = _models_dir(args)
    catalog = default_catalog(models)
    _require_tensorrt(catalog)

    gpu = catalog.gpu
    if args.precision == "fp8" and not gpu.has_fp8:
        raise UsageError(f"fp8 engines need FP8 tensor cores (compute capability 8.9+); this "
                         f"GPU is {gpu.major}.{gpu.minor}: build fp16 instead.")
    branch = []
    if args.adapters:  # refused first: the plain engines take minutes to build
        try:
            branch = branch_build.plan_branch(models, list(args.sets), gpu.sm)
        except ModelUnavailableError as exc:
            raise UsageError(str(exc)) from exc
    specs = [*build_plan.plan_builds(models, list(args.sets), gpu.sm, args.precision), *branch]
    if not specs:
        raise UsageError(f"No ONNX graphs for {', '.join(args.sets)} were found under "
                         f"{models / 'onnx'}; download them with `python main.py models "
                         f"download {' '.join(args.sets)} --onnx`.")
    return _build_all(specs, gpu, models)


def _build_all(specs, gpu, models: Path) -> int:
    cache = paths.cache_dir() / f"timing-{gpu.sm}.cache"
    cancel = threading.Event()
    for spec in specs:
        print(printable(f"building {spec.engine_path.relative_to(models)} from "
                        f"{spec.onnx_path.name} ({spec.precision})"), flush=True)
        start = time.perf_counter()
        try:
            builder.build_engine(spec, gpu_cc=(gpu.major, gpu.minor), cancel=cancel,
                                 timing_cache=cache,
                                 progress=lambda phase, step, steps: None)
        except KeyboardInterrupt:
            cancel.set()
            raise
        print(f"  done in {time.perf_counter() - start:.1f} s")
    return EXIT_OK


def cmd_selftest(args) -> int:
    models = _models_dir(args)
    catalog = default_catalog(models)
    _require_tensorrt(catalog)
    test = run_adapter_selftest if args.adapters else run_selftest
    try:
        timings = test(models, catalog, lambda name: print(f"building {name}"))
    except StudioError as exc:
        print(f"error: the self-test failed: {printable(exc)}", file=sys.stderr)
        return EXIT_FAILED
    if args.adapters:
        print(f"adapter self-test passed: first take with the demo adapter "
              f"{timings['adapter_first_ms']} ms, a strength change {timings['adapter_replay_ms']}"
              f" ms ({timings['path']}), strength 0 within {timings['zero_strength_gap']:.1g} of "
              f"the plain DiT.")
        return EXIT_OK
    print(f"self-test passed: engines built in {timings['build_s']} s, first take "
          f"{timings['first_ms']} ms, replay {timings['replay_ms']} ms ({timings['path']}).")
    return EXIT_OK


def cmd_token(args) -> int:
    token = args.token if args.token else sys.stdin.readline().strip()
    if not token:
        raise UsageError("No token was given; pass it as an argument or on stdin (get one at "
                         "https://huggingface.co/settings/tokens).")
    where = dl.store_token(token)
    print(f"Token stored ({where}).")
    return EXIT_OK


def cmd_folders(args, add: bool) -> int:
    folder = args.folder.expanduser().resolve()
    roots = load_extra_roots(paths.data_dir())
    if add:
        if not folder.is_dir():
            raise UsageError(f"{shown(folder)} is not a folder; give the models folder of an "
                             f"existing install.")
        roots.append(folder)
    else:
        if folder not in roots:
            raise UsageError(f"{shown(folder)} is not one of the extra model folders; "
                             "`python main.py models list` shows them.")
        roots = [r for r in roots if r != folder]
    try:
        save_extra_roots(paths.data_dir(), roots)
    except OSError as exc:
        raise CommandFailed(sentence("Could not save the list of model folders", exc,
                                     "nothing was changed; check the data folder")) from exc
    print(printable("Extra model folders: " + (", ".join(str(r) for r in roots) or "none")))
    return EXIT_OK


def main(argv: list[str]) -> int:
    """argv: [command, ...] (after "models")."""
    args_list = list(argv)
    if args_list[:1] == ["models"]:
        args_list = args_list[1:]

    def body() -> int:
        args = build_parser().parse_args(args_list)
        commands = {"list": cmd_list, "download": cmd_download, "build": cmd_build,
                    "selftest": cmd_selftest, "token": cmd_token,
                    "add-folder": lambda a: cmd_folders(a, True),
                    "remove-folder": lambda a: cmd_folders(a, False),
                    "gpu-runtime": gpu_runtime_cli.run}
        return commands[args.command](args)

    return run_command("models", body)
