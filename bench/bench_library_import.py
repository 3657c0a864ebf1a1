"""Importing a designer's sound folders (issue 34): the figures and their goals.

    python bench/bench_library_import.py [--files N] [--rows N] [--work DIR]

1. Makes N short sound files (default 10,000) in several formats (WAV, BWF with bext and iXML,
   FLAC and Ogg with Vorbis comments, AIFF, MP3), UCS-named and plain, in nested folders; they
   are kept in --work and reused by the next run (making them is not what is measured).
2. import: `import_folders` into a fresh library until every file is listed and searchable by
   name and metadata. Goal <= 30 s. Thumbnails and embeddings are made afterwards
   (`make_sound_extras`, the background pass): its cost per sound is timed on the first
   --extras-sample sounds, and what that makes of them all; no goal.
3. rescan with nothing changed. Goal <= 3 s.
4. A library of --rows rows in all (default 50,000: generated takes' rows added to the imported
   sounds): opening it and the query the Library page runs (search with its page of 500 rows,
   the count of matches, the count of all), and search-as-you-type (that query for every
   prefix of typed words). Goal p95 <= 50 ms, over the engine query.
5. The window's own figures (`bench.bench_library_window.window_figures`, when it is there):
   called with the 50,000-row library's folder, its dict kept under "window".

Writes bench/results/library-import-<date>.json with every figure, its goal, the machine and
the date.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import multiprocessing
import os
import platform
import random
import statistics
import sys
import threading
import time
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engines.delivery.ixml import ixml_document  # noqa: E402
from engines.delivery.riff import bext_payload, set_wav_chunks  # noqa: E402
from engines.delivery.vorbis_fields import add_vorbis_fields  # noqa: E402
from engines.sound_import import import_folders, make_sound_extras  # noqa: E402
from engines.store import schema  # noqa: E402
from engines.store.library import ClipLibrary  # noqa: E402
from engines.store.rows import created_now  # noqa: E402

GOALS = {"import_s": 30.0, "rescan_s": 3.0, "open_query_p95_ms": 50.0,
         "search_as_you_type_p95_ms": 50.0}
CATIDS = ["DOORWood", "AMBForst", "WATRFlow", "FOLYCloth", "WPNGun", "MAGSpell", "VEHCar",
          "WINDGust", "RAINTin", "FIREBurn", "GLASBrk", "MECHGear"]
WORDS = ["creak", "slam", "drip", "rustle", "whoosh", "impact", "hum", "crackle", "clank",
         "splash", "squeak", "rumble", "chirp", "thud", "hiss", "buzz"]
QUALITIES = ["heavy", "light", "distant", "close", "wet", "dry", "bright", "dark", "slow"]
KINDS = ["wav", "bwf", "flac", "flac_tagged", "ogg", "ogg_tagged", "aiff", "mp3"]
WEIGHTS = [30, 15, 15, 10, 8, 7, 10, 5]
PAGE_LIMIT = 500  # the Library page's page of rows (app/library/controller.py)
TYPED = ["door creak", "rain tin", "heavy impact", "whoosh", "glass", "distant rumble",
         "wood", "spell", "gear clank", "fire crackle", "splash", "thud"]


def make_file(args: tuple[Path, int]) -> None:
    folder, index = args
    rng = random.Random(index)
    kind = rng.choices(KINDS, WEIGHTS)[0]
    catid, word, quality = rng.choice(CATIDS), rng.choice(WORDS), rng.choice(QUALITIES)
    rate = rng.choice([44_100, 48_000])
    frames = int(rate * rng.uniform(0.2, 0.6))
    t = np.arange(frames) / rate
    audio = (0.3 * np.sin(2 * np.pi * rng.uniform(80, 2000) * t)
             * np.exp(-t * rng.uniform(1, 8))).astype(np.float32)
    if rng.random() < 0.5:
        audio = np.stack([audio, audio * 0.8], axis=1)
    sub = folder / catid[:4] / f"set{index % 20:02d}"
    sub.mkdir(parents=True, exist_ok=True)
    stem = (f"{catid}_{quality.title()} {word.title()} {index}_BN_Bench" if rng.random() < 0.6
            else f"{word}_{quality}_{index:05d}")
    ext = {"bwf": "wav", "flac_tagged": "flac", "ogg_tagged": "ogg"}.get(kind, kind)
    path = sub / f"{stem}.{ext}"
    fmt = {"wav": "WAV", "flac": "FLAC", "ogg": "OGG", "aiff": "AIFF", "mp3": "MP3"}[ext]
    sf.write(path, audio, rate, format=fmt)
    if kind == "bwf":
        set_wav_chunks(path, [
            (b"bext", bext_payload(description=f"{quality} {word} recorded in the field")),
            (b"iXML", ixml_document({"CATID": catid, "KEYWORDS": f"{word}, {quality}"},
                                    {"fxName": f"{quality} {word}", "creatorId": "BN"}))])
    elif kind in ("flac_tagged", "ogg_tagged"):
        add_vorbis_fields(path, {"description": f"{quality} {word} foley", "catid": catid})


def make_folder(folder: Path, count: int) -> float:
    marker = folder / f".made-{count}"
    if marker.exists():
        return 0.0
    started = time.perf_counter()
    with multiprocessing.Pool(os.cpu_count() or 2) as pool:
        pool.map(make_file, [(folder, i) for i in range(count)], chunksize=64)
    marker.write_text("")
    return time.perf_counter() - started


def add_generated_rows(library: ClipLibrary, count: int) -> None:
    """Generated takes' rows (as the keeper writes them, minus the audio, which no query
    reads), so the library holds takes and imported sounds together."""
    rng = random.Random(7)
    db = library._db  # the bench fills the table directly: 40,000 takes through add() take hours
    with db.write():
        next_id = db.next_id()
        for i in range(count):
            prompt = f"{rng.choice(QUALITIES)} {rng.choice(WORDS)}, {rng.choice(QUALITIES)}"
            db.insert_take({
                "id": next_id + i, "created": created_now(), "name": "", "prompt": prompt,
                "model": rng.choice(["demo", "sm-sfx", "medium"]), "mode": "t2a",
                "seconds": 2.5, "audio_file": f"{next_id + i:06d}-take.wav",
                "sample_rate": 44_100, "samples": 110_250, "quality": "[]",
                "search_text": schema.search_text(prompt, "", [], "", None)})


def extras_figures(library: ClipLibrary, sample: int, sounds: int, figures: dict) -> None:
    """The background pass's rate, on its first `sample` sounds (the whole pass over 10,000
    takes minutes: what is measured is its cost per sound and what that makes of them all)."""
    cancel = threading.Event()

    def progress(step) -> None:  # noqa: ANN001
        if step.done >= sample:
            cancel.set()

    started = time.perf_counter()
    extras = make_sound_extras(library, progress=progress, cancel=cancel)
    seconds = time.perf_counter() - started
    per_sound_ms = 1000 * seconds / max(1, extras.embeddings)
    figures["extras"] = {"sounds": extras.embeddings, "thumbnails": extras.thumbnails,
                         "failed": extras.failed, "seconds": round(seconds, 1),
                         "per_sound_ms": round(per_sound_ms, 1),
                         "projected_all_s": round(per_sound_ms * sounds / 1000, 0)}
    print(f"thumbnails + embeddings afterwards (background, no goal): {per_sound_ms:.1f} ms a "
          f"sound over {extras.embeddings}, about {per_sound_ms * sounds / 1000:.0f} s for all")


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def page_query(library: ClipLibrary, text: str) -> tuple[float, float]:
    """(wall ms, CPU ms of this thread) of the Library page's query for `text`. The CPU time
    is what the query costs; the wall time is what the user waits on this machine, which the
    other processes running on it (the load average is kept with the figures) add to."""
    started, cpu = time.perf_counter(), time.thread_time()
    library.search(text, limit=PAGE_LIMIT)
    library.count(text)
    library.count()
    return (time.perf_counter() - started) * 1000, (time.thread_time() - cpu) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--work", type=Path, default=Path("/tmp/sa3-bench-import"))
    parser.add_argument("--extras-sample", type=int, default=300,
                        help="sounds the background pass is timed on (300)")
    args = parser.parse_args()
    sounds = args.work / f"sounds-{args.files}"
    made_s = make_folder(sounds, args.files)
    figures: dict[str, object] = {"files": args.files, "rows": args.rows,
                                  "making_files_s": round(made_s, 1)}
    lib_root = args.work / "library"
    if lib_root.exists():
        import shutil

        shutil.rmtree(lib_root)
    with ClipLibrary(lib_root) as library:
        started = time.perf_counter()
        report = import_folders(library, [sounds])
        hits = (library.count("bench"), library.count("recorded in the field"),
                library.count("foley"))
        figures["import_s"] = round(time.perf_counter() - started, 2)
        figures["imported"] = report.imported
        figures["skipped"] = report.skipped
        figures["searchable_hits"] = {"name 'bench'": hits[0], "bext 'recorded in the field'":
                                      hits[1], "vorbis 'foley'": hits[2]}
        print(f"import of {report.imported} files, listed and searchable: "
              f"{figures['import_s']} s (goal <= {GOALS['import_s']:g} s)")
        started = time.perf_counter()
        rescan = import_folders(library, None)
        figures["rescan_s"] = round(time.perf_counter() - started, 2)
        figures["rescan_unchanged"] = rescan.unchanged
        print(f"rescan, nothing changed: {figures['rescan_s']} s (goal <= "
              f"{GOALS['rescan_s']:g} s)")
        extras_figures(library, args.extras_sample, report.imported, figures)
        add_generated_rows(library, max(0, args.rows - report.imported))
    started = time.perf_counter()
    with ClipLibrary(lib_root) as library:
        figures["open_library_ms"] = round((time.perf_counter() - started) * 1000, 1)
        total = library.count()
        opens = [page_query(library, "") for _ in range(30)]
        typed = [page_query(library, text[:n]) for _ in range(3) for text in TYPED
                 for n in range(1, len(text) + 1)]
        figures["library_rows"] = total
        for name, runs in (("open_query", opens), ("search_as_you_type", typed)):
            wall, cpu = [run[0] for run in runs], [run[1] for run in runs]
            figures[f"{name}_p95_ms"] = round(percentile(wall, 0.95), 1)
            figures[f"{name}_median_ms"] = round(statistics.median(wall), 1)
            figures[f"{name}_cpu_p95_ms"] = round(percentile(cpu, 0.95), 1)
            figures[f"{name}_cpu_median_ms"] = round(statistics.median(cpu), 1)
        figures["search_as_you_type_queries"] = len(typed)
    print(f"{total}-row library: open {figures['open_library_ms']} ms; the page's query p95 "
          f"{figures['open_query_p95_ms']} ms (CPU {figures['open_query_cpu_p95_ms']} ms); "
          f"search-as-you-type p95 {figures['search_as_you_type_p95_ms']} ms (CPU "
          f"{figures['search_as_you_type_cpu_p95_ms']} ms) over {len(typed)} queries (goal "
          f"<= 50 ms; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    try:
        from bench.bench_library_window import window_figures  # the window's figures
    except ImportError:
        pass
    else:
        figures["window"] = window_figures(lib_root)
        print(f"window: {figures['window']}")
    figures["met"] = {key: figures[key] <= goal for key, goal in GOALS.items()}
    figures["met_on_cpu_time"] = {key: figures[key.replace("_p95", "_cpu_p95")] <= goal
                                  for key, goal in GOALS.items() if "_p95" in key}
    out = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "machine": {"platform": platform.platform(), "python": platform.python_version(),
                       "cpus": os.cpu_count(), "processor": platform.processor(),
                       "load_average_at_end": [round(x, 1) for x in os.getloadavg()]},
           "goals": GOALS, "figures": figures}
    results = Path(__file__).resolve().parent / "results"
    target = results / f"library-import-{dt.date.today():%Y%m%d}.json"
    target.write_text(json.dumps(out, indent=2) + "\n")
    print(f"written {target}")
    return 0 if all(figures["met"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
