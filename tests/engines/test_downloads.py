"""Model downloads against a local imitation of the Hugging Face Hub (tests/fake_hub.py): what
each set fetches, progress, resume, cancel, checksums, disk space, gated repos and the token."""

from __future__ import annotations

import errno
import hashlib
import logging
import random
import sys
import threading
import types
from pathlib import Path

import pytest

from engines.catalog import Catalog
from engines.cli.words import say
from engines.errors import CancelledError, ModelUnavailableError, RequestError, StudioError
from engines.gpu import GpuInfo
from engines.models import download as dl
from engines.models import hub_files, hub_http
from engines.models.hub_files import REPO, TOKENIZER_FALLBACK_REPO, RemoteFile, plan_files
from tests.fake_hub import FakeHub, is_lfs

BIG = "tensorRT/sm_90/sa3-sm-sfx/dit_fp16.trt"
BIG_SIZE = 64 * 1024
CHUNK = 4096
TOKEN = "hf_sEcReTtOkEn1234567890abcdefXYZ"


def blob(name: str, size: int) -> bytes:
    return random.Random(name).randbytes(size)  # no repeating pattern: a wrong offset shows


def _repo_files() -> dict[str, bytes]:
    sizes = {
        "README.md": 120,
        ".gitattributes": 80,
        # sm_90: every current name, plus aliases and legacy files that must not be chosen
        "tensorRT/sm_90/t5gemma/t5gemma_fp16mixed.trt": 3000,
        "tensorRT/sm_90/t5gemma/tokenizer.json": 1500,
        "tensorRT/sm_90/sa3-m/dit_fp16mixed.trt": 2500,
        "tensorRT/sm_90/sa3-m/dit_fp32.trt": 2600,
        "tensorRT/sm_90/sa3-m/dit_fp8.trt": 1200,
        "tensorRT/sm_90/sa3-sm-music/dit_bf16.trt": 2100,
        "tensorRT/sm_90/sa3-sm-music/dit_fp8.trt": 1100,
        BIG: BIG_SIZE,
        "tensorRT/sm_90/same-l/dec_fp16_chunkable_limiter.trt": 1700,
        "tensorRT/sm_90/same-l/enc_fp16_chunkable.trt": 1600,
        "tensorRT/sm_90/same-l/dec_fp8_chunkable_limiter.trt": 900,
        "tensorRT/sm_90/same-l/enc_fp8_chunkable.trt": 800,
        "tensorRT/sm_90/same-l/dec_dynamic_triton_swa.trt": 1000,
        "tensorRT/sm_90/same-l/enc_dynamic_triton_swa.trt": 1000,
        "tensorRT/sm_90/same-s/dec_bf16_chunkable_limiter.trt": 1300,
        "tensorRT/sm_90/same-s/enc_bf16_chunkable.trt": 1250,
        "tensorRT/sm_90/same-s/dec_fp8.trt": 700,
        "tensorRT/sm_90/same-s/enc_fp8.trt": 650,
        "tensorRT/sm_90/same-s/dec_fp8_fast.trt": 600,
        "tensorRT/sm_90/same-s/enc_fp8_fast.trt": 550,
        "tensorRT/sm_90/same-s/dec_dynamic_bf16.trt": 1000,
        "tensorRT/sm_90/same-s/enc_dynamic_bf16.trt": 1000,
        # sm_120: the other text encoder name, only legacy same-s files, no tokenizer
        "tensorRT/sm_120/t5gemma/t5gemma_fp16.trt": 3100,
        "tensorRT/sm_120/sa3-sm-sfx/dit_fp16.trt": 2000,
        "tensorRT/sm_120/same-s/dec_dynamic_bf16.trt": 1400,
        "tensorRT/sm_120/same-s/enc_dynamic_bf16.trt": 1350,
        # ONNX, arch independent, with external weights
        "onnx/t5gemma/t5gemma_fp16.onnx": 400,
        "onnx/t5gemma/t5gemma_fp16.onnx.data": 5000,
        "onnx/t5gemma/tokenizer.json": 1500,
        "onnx/sa3-sm-music/dit_fp16.onnx": 300,
        "onnx/sa3-sm-music/dit_fp16.onnx.data": 4000,
        "onnx/sa3-sm-music/dit_fp32.onnx": 6000,
        "onnx/same-s/dec_bf16_chunkable_limiter.onnx": 1100,
        "onnx/same-s/enc_bf16_chunkable.onnx": 1000,
    }
    files = {name: blob(name, size) for name, size in sizes.items()}
    # the same tokenizer in both layouts, as on the hub
    files["onnx/t5gemma/tokenizer.json"] = files["tensorRT/sm_90/t5gemma/tokenizer.json"]
    return files


FILES = _repo_files()


def listing_of(files: dict[str, bytes], repo: str = REPO) -> list[RemoteFile]:
    """What hub_listing returns for these files (for the tests that need no server)."""
    return [RemoteFile(path, len(data), hashlib.sha256(data).hexdigest() if is_lfs(path) else None,
                       repo) for path, data in files.items()]


LISTING = listing_of(FILES)


def one_sentence(message: str) -> bool:
    return message.endswith(".") and "\n" not in message and ". " not in message


def locals_of(files: list[RemoteFile]) -> set[str]:
    return {f.local_rel for f in files}


# --------------------------------------------------------------------------------------------
# Fixtures


@pytest.fixture
def hf_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """huggingface_hub isolated: no telemetry, online, no stored token, no keyring, a throwaway
    HF_HOME; small chunks and no waits between retries so the tests stay fast."""
    import huggingface_hub.constants as hf_constants

    home = tmp_path / "hf-home"
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("HF_HOME", str(home))
    for name in ("HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(name, raising=False)
    # huggingface_hub read these at import time
    monkeypatch.setattr(hf_constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(hf_constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(hf_constants, "HF_TOKEN_PATH", str(home / "token"))
    monkeypatch.setitem(sys.modules, "keyring", None)  # import keyring -> ImportError
    monkeypatch.setattr(dl, "CHUNK_SIZE", CHUNK)
    monkeypatch.setattr(dl, "RETRY_WAITS_S", (0.0, 0.0, 0.0))
    monkeypatch.setattr(hub_http, "REQUEST_RETRY_WAITS_S", (0.0, 0.0))
    monkeypatch.setenv(dl.TIMEOUT_ENV, "5")  # a stalled test fails in seconds, not minutes
    return home


@pytest.fixture
def hub(hf_env: Path, monkeypatch: pytest.MonkeyPatch):
    from huggingface_hub import close_session

    fake = FakeHub(FILES).start()
    monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
    yield fake
    close_session()  # drop pooled connections to this server
    fake.stop()


@pytest.fixture
def models(tmp_path: Path) -> Path:
    return tmp_path / "models"


def plan_of(*paths: str, listing: list[RemoteFile] | None = None) -> dl.DownloadPlan:
    index = {f.path: f for f in listing or LISTING}
    return dl.DownloadPlan.for_files([index[p] for p in paths])


# --------------------------------------------------------------------------------------------
# What each set fetches


def test_local_paths_follow_the_catalog_layout_and_never_leave_the_models_folder() -> None:
    assert hub_files.local_relpath("tensorRT/sm_90/sa3-m/dit_fp16.trt") == \
        "sm_90/sa3-m/dit_fp16.trt"
    assert hub_files.local_relpath("onnx/same-s/enc_bf16_chunkable.onnx") == \
        "onnx/same-s/enc_bf16_chunkable.onnx"
    for bad in ("README.md", "tensorRT/sm_90/../../etc/x.trt", "/onnx/x.onnx", "tensorRT/x.trt",
                "onnx/../x.onnx"):
        with pytest.raises(ValueError):
            hub_files.local_relpath(bad)
    remote = RemoteFile("tensorRT/sm_120/t5gemma/t5gemma_fp16.trt", 1)
    assert remote.local_path(Path("/m")) == Path("/m/sm_120/t5gemma/t5gemma_fp16.trt")


def test_medium_fp16_on_sm90_uses_the_alias_names_and_adds_the_text_encoder() -> None:
    files = plan_files(["medium"], "sm_90", ["fp16"], "trt", LISTING)
    assert locals_of(files) == {
        "sm_90/t5gemma/t5gemma_fp16mixed.trt",
        "sm_90/t5gemma/tokenizer.json",
        "sm_90/sa3-m/dit_fp16mixed.trt",  # alias of dit_fp16
        "sm_90/same-l/dec_fp16_chunkable_limiter.trt",
        "sm_90/same-l/enc_fp16_chunkable.trt",
    }
    assert all(f.repo == REPO for f in files)
    sizes = {f.local_rel: f.size for f in files}
    assert sizes["sm_90/sa3-m/dit_fp16mixed.trt"] == 2500


def test_small_sets_share_their_codec_and_precision_aliases_collapse() -> None:
    files = plan_files(["sm-music", "sm-sfx", "t5gemma"], "sm_90", ["bf16", "fp16mixed"], "trt",
                       LISTING)
    paths = [f.path for f in files]
    assert len(paths) == len(set(paths))
    assert locals_of(files) == {
        "sm_90/t5gemma/t5gemma_fp16mixed.trt",
        "sm_90/t5gemma/tokenizer.json",
        "sm_90/sa3-sm-music/dit_bf16.trt",  # the retired name still counts as fp16
        "sm_90/sa3-sm-sfx/dit_fp16.trt",
        "sm_90/same-s/dec_bf16_chunkable_limiter.trt",
        "sm_90/same-s/enc_bf16_chunkable.trt",
    }


def test_fp8_fetches_the_fp8_codec_tiers() -> None:
    medium = plan_files(["medium"], "sm_90", ["fp8"], "trt", LISTING)
    assert {"sm_90/sa3-m/dit_fp8.trt", "sm_90/same-l/dec_fp8_chunkable_limiter.trt",
            "sm_90/same-l/enc_fp8_chunkable.trt"} <= locals_of(medium)
    assert "sm_90/same-l/dec_fp16_chunkable_limiter.trt" not in locals_of(medium)
    music = plan_files(["sm-music"], "sm_90", ["fp16", "fp8"], "trt", LISTING)
    assert {"sm_90/sa3-sm-music/dit_bf16.trt", "sm_90/sa3-sm-music/dit_fp8.trt",
            "sm_90/same-s/dec_bf16_chunkable_limiter.trt", "sm_90/same-s/dec_fp8.trt",
            "sm_90/same-s/enc_fp8.trt", "sm_90/same-s/dec_fp8_fast.trt",
            "sm_90/same-s/enc_fp8_fast.trt"} <= locals_of(music)


def test_sm120_takes_the_other_encoder_name_legacy_codec_and_the_onnx_tokenizer() -> None:
    files = plan_files(["sm-sfx"], "sm_120", ["fp16"], "trt", LISTING)
    by_local = {f.local_rel: f for f in files}
    assert set(by_local) == {
        "sm_120/t5gemma/t5gemma_fp16.trt",
        "sm_120/t5gemma/tokenizer.json",
        "sm_120/sa3-sm-sfx/dit_fp16.trt",
        "sm_120/same-s/dec_dynamic_bf16.trt",
        "sm_120/same-s/enc_dynamic_bf16.trt",
    }
    # arch independent: taken from the ONNX layout, placed beside this arch's text encoder
    assert by_local["sm_120/t5gemma/tokenizer.json"].path == "onnx/t5gemma/tokenizer.json"


def test_onnx_plans_bring_the_external_weights() -> None:
    files = plan_files(["sm-music"], "", ["fp16"], "onnx", LISTING)
    assert locals_of(files) == {
        "onnx/t5gemma/t5gemma_fp16.onnx",
        "onnx/t5gemma/t5gemma_fp16.onnx.data",
        "onnx/t5gemma/tokenizer.json",
        "onnx/sa3-sm-music/dit_fp16.onnx",
        "onnx/sa3-sm-music/dit_fp16.onnx.data",
        "onnx/same-s/dec_bf16_chunkable_limiter.onnx",
        "onnx/same-s/enc_bf16_chunkable.onnx",
    }
    fp32 = plan_files(["sm-music"], "sm_90", ["fp32"], "onnx", LISTING)
    assert "onnx/sa3-sm-music/dit_fp32.onnx" in locals_of(fp32)


def test_plans_that_cannot_be_met_say_why_in_one_sentence() -> None:
    with pytest.raises(RequestError, match="Unknown download set 'large'"):
        plan_files(["large"], "sm_90", ["fp16"], "trt", LISTING)
    with pytest.raises(RequestError, match="Unknown precision"):
        plan_files(["medium"], "sm_90", ["int4"], "trt", LISTING)
    with pytest.raises(RequestError, match="arch folder"):
        plan_files(["medium"], "9.0", ["fp16"], "trt", LISTING)
    with pytest.raises(ModelUnavailableError) as no_arch:
        plan_files(["medium"], "sm_86", ["fp16"], "trt", LISTING)
    assert "sm_86" in str(no_arch.value) and "sm_90, sm_120" in str(no_arch.value)
    assert "--onnx" in say(no_arch.value)  # as the command line words the remedy
    with pytest.raises(ModelUnavailableError) as no_fp8:
        plan_files(["sm-sfx"], "sm_90", ["fp8"], "trt", LISTING)
    assert "dit_fp8.trt" in str(no_fp8.value)
    for err in (no_arch.value, no_fp8.value):
        assert one_sentence(str(err))


def test_a_missing_tokenizer_comes_from_the_t5gemma_repo() -> None:
    listing = [f for f in LISTING if not f.path.endswith("tokenizer.json")]
    files = plan_files(["t5gemma"], "sm_90", [], "trt", listing)
    tokenizer = next(f for f in files if f.local_rel.endswith("tokenizer.json"))
    assert (tokenizer.repo, tokenizer.path, tokenizer.size) == \
        (TOKENIZER_FALLBACK_REPO, "tokenizer.json", 0)
    fallback = [RemoteFile("tokenizer.json", 777, None, TOKENIZER_FALLBACK_REPO)]
    files = plan_files(["t5gemma"], "sm_90", [], "trt", listing, fallback)
    tokenizer = next(f for f in files if f.local_rel.endswith("tokenizer.json"))
    assert tokenizer.size == 777 and tokenizer.local_rel == "sm_90/t5gemma/tokenizer.json"


# --------------------------------------------------------------------------------------------
# Listing and planning against the hub


def test_listing_has_sizes_and_lfs_sha256_across_pages(hub: FakeHub) -> None:
    hub.page_size = 7
    listing = dl.hub_listing(REPO)
    assert {f.path for f in listing} == set(FILES)
    by_path = {f.path: f for f in listing}
    assert by_path[BIG].size == BIG_SIZE
    assert by_path[BIG].sha256 == next(f.sha256 for f in LISTING if f.path == BIG)
    assert by_path["tensorRT/sm_90/t5gemma/tokenizer.json"].sha256 is None  # a git file
    assert len(hub.log("/tree/", "GET")) > 1


def test_sizes_are_known_before_anything_is_downloaded(hub: FakeHub, models: Path) -> None:
    plan = dl.plan_download(["sm-sfx"], "sm_90", ["fp16"], "trt", models)
    expected = {"sm_90/t5gemma/t5gemma_fp16mixed.trt", "sm_90/t5gemma/tokenizer.json",
                "sm_90/sa3-sm-sfx/dit_fp16.trt", "sm_90/same-s/dec_bf16_chunkable_limiter.trt",
                "sm_90/same-s/enc_bf16_chunkable.trt"}
    assert locals_of(list(plan.files)) == expected
    assert plan.total_bytes == sum(len(FILES[f.path]) for f in plan.files)
    assert plan.free_bytes_needed == plan.total_bytes
    assert plan.summary() == f"5 file(s), {dl.format_size(plan.total_bytes)}"
    assert hub.log("/resolve/") == []  # only the listing so far
    assert hub.log(TOKENIZER_FALLBACK_REPO) == []  # ours has the tokenizer


def test_plan_download_lists_the_fallback_repo_only_when_needed(hub: FakeHub,
                                                              models: Path) -> None:
    tokenizer = b'{"model": "t5gemma"}' * 40
    hub.add_repo(REPO, {p: d for p, d in FILES.items() if not p.endswith("tokenizer.json")})
    hub.add_repo(TOKENIZER_FALLBACK_REPO, {"tokenizer.json": tokenizer, "config.json": b"{}"})
    plan = dl.plan_download(["t5gemma"], "sm_90", [], "trt", models)
    fetched = dl.download(plan, models)
    assert (models / "sm_90/t5gemma/tokenizer.json").read_bytes() == tokenizer
    assert models / "sm_90/t5gemma/tokenizer.json" in fetched


# --------------------------------------------------------------------------------------------
# Downloading


def test_download_places_every_file_reports_progress_and_leaves_no_copies(
        hub: FakeHub, models: Path, hf_env: Path) -> None:
    plan = dl.plan_download(["sm-sfx"], "sm_90", ["fp16"], "trt", models, token=TOKEN)
    events: list[tuple[str, int, int, int, int]] = []
    paths = dl.download(plan, models, progress=lambda *e: events.append(e), token=TOKEN)

    assert paths == [f.local_path(models) for f in plan.files]
    for remote, path in zip(plan.files, paths, strict=True):
        assert path.read_bytes() == FILES[remote.path]
    all_done = [e[3] for e in events]
    assert all_done == sorted(all_done)
    assert events[-1][3] == events[-1][4] == plan.total_bytes
    for remote in plan.files:
        mine = [e for e in events if e[0] == remote.local_rel]
        assert [e[1] for e in mine] == sorted(e[1] for e in mine)
        assert mine[-1][1] == mine[-1][2] == remote.size
    assert len([e for e in events if e[0] == "sm_90/sa3-sm-sfx/dit_fp16.trt"]) > 4  # per chunk
    # nothing left behind: no partial files, nothing in the huggingface_hub cache
    leftovers = [p for p in (models / dl.PARTIAL_DIR).rglob("*") if p.is_file()]
    assert [p.name for p in leftovers] == [dl.VERIFIED_FILE]
    assert not (hf_env / "hub").exists()
    # the token goes to the hub, never to the CDN the LFS files come from
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in hub.log("/resolve/"))
    cdn = [r for r in hub.requests if r.role == "cdn"]
    assert cdn and all("authorization" not in r.headers for r in cdn)
    assert hub.log("agent-harnesses") == []
    # the catalog finds a runnable set where the files landed
    catalog = Catalog(models, gpu=GpuInfo("NVIDIA H100", 9, 0), tensorrt_version="10.15.1.29")
    assert catalog.resolve("sm-sfx", backend="tensorrt").runnable

    # a second run finds everything in place and fetches no bytes
    before = len([r for r in hub.requests if r.method == "GET"])
    events.clear()
    again = dl.download(plan, models, progress=lambda *e: events.append(e), token=TOKEN)
    assert again == paths
    assert len([r for r in hub.requests if r.method == "GET"]) == before
    assert events[-1][3] == events[-1][4] == plan.total_bytes
    assert dl.DownloadPlan.for_files(plan.files, models).free_bytes_needed == 0


def test_the_token_follows_redirects_on_the_hub_and_never_leaves_it(hub: FakeHub,
                                                                   models: Path) -> None:
    hub.rename(REPO, "stabilityai/moved")  # /resolve under the old name: 307 to the new one
    tokenizer = "tensorRT/sm_90/t5gemma/tokenizer.json"  # in git: its bytes come from the hub
    paths = dl.download(plan_of(BIG, tokenizer), models, token=TOKEN)
    assert [p.read_bytes() for p in paths] == [FILES[BIG], FILES[tokenizer]]
    moved = hub.log("/stabilityai/moved/resolve/")
    assert {r.method for r in moved} == {"HEAD", "GET"}
    assert all(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in moved)
    cdn = [r for r in hub.requests if r.role == "cdn"]
    assert cdn and all("authorization" not in r.headers for r in cdn)


def test_a_dropped_connection_resumes_with_a_range_request(hub: FakeHub, models: Path) -> None:
    hub.drop_after(BIG, 10_000)
    events: list[tuple] = []
    [path] = dl.download(plan_of(BIG), models, progress=lambda *e: events.append(e))
    assert path.read_bytes() == FILES[BIG]
    first, second = hub.body_gets(BIG)
    assert first.range is None and first.status == 200
    assert second.status == 206 and second.range is not None
    offset = int(second.range.removeprefix("bytes=").rstrip("-"))
    assert 0 < offset <= 10_000 and offset % CHUNK == 0
    assert [e[3] for e in events] == sorted(e[3] for e in events)
    assert events[-1][3] == BIG_SIZE


def test_cancel_mid_file_keeps_no_final_file_and_the_next_run_resumes(
        hub: FakeHub, models: Path) -> None:
    cancel = threading.Event()

    def progress(name: str, done: int, total: int, all_done: int, all_total: int) -> None:
        if done >= 3 * CHUNK:
            cancel.set()

    plan = plan_of("tensorRT/sm_90/same-s/enc_fp8.trt", BIG)
    with pytest.raises(dl.DownloadCancelledError) as cancelled:
        dl.download(plan, models, progress=progress, cancel=cancel)
    assert isinstance(cancelled.value, CancelledError)
    assert one_sentence(str(cancelled.value))
    assert (models / "sm_90/same-s/enc_fp8.trt").is_file()  # finished before the cancel
    final = models / "sm_90/sa3-sm-sfx/dit_fp16.trt"
    assert not final.exists()
    partial = dl.partial_path(models, plan.files[1])
    kept = partial.stat().st_size
    assert 0 < kept < BIG_SIZE

    [_, path] = dl.download(plan, models, cancel=threading.Event())
    assert path == final and final.read_bytes() == FILES[BIG]
    assert not partial.exists()
    assert hub.body_gets(BIG)[-1].range == f"bytes={kept}-"


def test_bytes_that_do_not_match_the_sha256_are_deleted(hub: FakeHub, models: Path) -> None:
    hub.corrupt(BIG)
    plan = plan_of(BIG)
    with pytest.raises(dl.DownloadError) as failed:
        dl.download(plan, models)
    message = str(failed.value)
    assert "sha256" in message and one_sentence(message)
    assert not (models / "sm_90/sa3-sm-sfx/dit_fp16.trt").exists()
    assert not dl.partial_path(models, plan.files[0]).exists()


def test_too_little_free_space_stops_before_downloading(hub: FakeHub, models: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plan = plan_of(BIG)
    usage = types.SimpleNamespace(total=10**12, used=0, free=BIG_SIZE)  # no room for the margin
    monkeypatch.setattr(dl.shutil, "disk_usage", lambda path: usage)
    with pytest.raises(dl.DownloadError) as full:
        dl.download(plan, models)
    message = str(full.value)
    assert message.startswith("Not enough disk space") and one_sentence(message)
    assert hub.log("/resolve/") == [] and not models.exists()
    usage.free = int(BIG_SIZE * 1.05) + 1
    dl.check_disk_space(plan, models)  # enough with the 5 % margin


def test_a_disk_that_fills_up_while_writing_keeps_the_partial_file_for_next_time(
        hub: FakeHub, models: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = []

    def write(fh, data: bytes) -> None:
        if sum(written) >= 2 * CHUNK:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(len(data))
        fh.write(data)

    monkeypatch.setattr(dl, "_write_chunk", write)
    plan = plan_of(BIG)
    with pytest.raises(dl.DownloadError) as full:
        dl.download(plan, models)
    message = str(full.value)
    assert "the disk is full" in message and "resumes" in message and one_sentence(message)
    assert not (models / "sm_90/sa3-sm-sfx/dit_fp16.trt").exists()
    partial = dl.partial_path(models, plan.files[0])
    assert partial.stat().st_size == 2 * CHUNK

    monkeypatch.setattr(dl, "_write_chunk", lambda fh, data: fh.write(data))  # space again
    [path] = dl.download(plan, models)
    assert path.read_bytes() == FILES[BIG] and not partial.exists()
    assert hub.body_gets(BIG)[-1].range == f"bytes={2 * CHUNK}-"


def test_a_gated_repo_asks_for_the_licence_and_a_token(hub: FakeHub, models: Path) -> None:
    hub.gate(REPO, accepted_tokens=(TOKEN,))
    plan = plan_of("tensorRT/sm_90/same-s/enc_fp8.trt")
    licence = ("Accept the licence at https://huggingface.co/stabilityai/stable-audio-3-optimized"
               " and give a token (`python main.py models token` or HF_TOKEN).")
    with pytest.raises(dl.DownloadError) as no_token:
        dl.download(plan, models)
    assert "needs a Hugging Face token" in str(no_token.value)
    assert licence[1:] in say(no_token.value) and one_sentence(str(no_token.value))
    with pytest.raises(dl.DownloadError) as not_accepted:
        dl.download(plan, models, token="hf_someoneelse")
    assert say(not_accepted.value) == licence
    assert [r.status for r in hub.log("/resolve/")] == [401, 403]
    [path] = dl.download(plan, models, token=TOKEN)
    assert path.read_bytes() == FILES["tensorRT/sm_90/same-s/enc_fp8.trt"]


def test_a_refused_token_and_a_missing_repo_are_explained(hub: FakeHub, models: Path) -> None:
    hub.reject_token("hf_expired")
    with pytest.raises(dl.DownloadError, match="refused the Hugging Face token"):
        dl.download(plan_of(BIG), models, token="hf_expired")
    with pytest.raises(dl.DownloadError, match="was not found at") as missing:
        dl.hub_listing("stabilityai/no-such-repo")
    assert one_sentence(str(missing.value))


def test_an_unreachable_hub_is_one_sentence(hf_env: Path, models: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        endpoint = f"http://127.0.0.1:{sock.getsockname()[1]}"
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    expected = (f"Could not reach the hub at {endpoint} (connection refused); check the network "
                f"or HF_ENDPOINT.")
    with pytest.raises(dl.DownloadError) as down:
        dl.download(plan_of(BIG), models)
    assert str(down.value) == expected
    with pytest.raises(dl.DownloadError) as listing:
        dl.hub_listing(REPO)
    assert str(listing.value) == expected


# --------------------------------------------------------------------------------------------
# The token


def test_the_token_never_reaches_the_log(hub: FakeHub, models: Path,
                                         caplog: pytest.LogCaptureFixture,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="huggingface_hub")
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    assert dl.resolve_token() == TOKEN
    dl.hub_listing(REPO)
    hub.drop_after(BIG, 5000)  # a warning on the way
    dl.download(plan_of(BIG, "tensorRT/sm_90/t5gemma/tokenizer.json"), models)
    hub.gate(REPO)  # and an error
    with pytest.raises(dl.DownloadError) as gated:
        dl.download(plan_of("tensorRT/sm_90/same-s/dec_fp8.trt"), models)
    assert any(r.headers.get("authorization") == f"Bearer {TOKEN}" for r in hub.requests)
    assert caplog.records  # logging did happen
    assert TOKEN not in caplog.text
    assert TOKEN not in str(gated.value)


def test_resolve_token_prefers_the_environment_then_huggingface_then_the_keyring(
        hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert dl.resolve_token() is None
    keyring = FakeKeyring({("sa3-studio", "huggingface"): "hf_from_keyring"})
    monkeypatch.setitem(sys.modules, "keyring", keyring)
    assert dl.resolve_token() == "hf_from_keyring"
    hf_env.mkdir(parents=True, exist_ok=True)
    (hf_env / "token").write_text("hf_from_hf_login\n")
    assert dl.resolve_token() == "hf_from_hf_login"
    monkeypatch.setenv("HUGGING_FACE_HUB_TOKEN", "hf_old_env")
    assert dl.resolve_token() == "hf_old_env"
    monkeypatch.setenv("HF_TOKEN", "hf_env")
    assert dl.resolve_token() == "hf_env"


def test_store_token_uses_the_keyring_and_explains_when_there_is_none(
        hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(dl.DownloadError) as no_keyring:
        dl.store_token("hf_abc")
    assert "HF_TOKEN" in str(no_keyring.value) and one_sentence(str(no_keyring.value))
    with pytest.raises(dl.DownloadError, match="empty"):
        dl.store_token("  ")

    keyring = FakeKeyring()
    monkeypatch.setitem(sys.modules, "keyring", keyring)
    where = dl.store_token("  hf_abc\n")
    assert keyring.passwords == {("sa3-studio", "huggingface"): "hf_abc"}
    assert "keyring" in where and "hf_abc" not in where
    assert dl.resolve_token() == "hf_abc"

    keyring.broken = True
    with pytest.raises(dl.DownloadError) as refused:
        dl.store_token("hf_abc")
    assert "HF_TOKEN" in str(refused.value) and "hf_abc" not in str(refused.value)
    assert dl.resolve_token() is None  # an unreadable keyring is no token, not a crash


def test_errors_are_studio_errors() -> None:
    assert issubclass(dl.DownloadError, StudioError)
    assert issubclass(dl.DownloadCancelledError, dl.DownloadError)
    assert issubclass(dl.DownloadCancelledError, CancelledError)


class FakeKeyring(types.ModuleType):
    """Stands in for the keyring package (get_password / set_password)."""

    def __init__(self, passwords: dict[tuple[str, str], str] | None = None) -> None:
        super().__init__("keyring")
        self.passwords = dict(passwords or {})
        self.broken = False

    def get_password(self, service: str, user: str) -> str | None:
        if self.broken:
            raise RuntimeError("keyring locked")
        return self.passwords.get((service, user))

    def set_password(self, service: str, user: str, password: str) -> None:
        if self.broken:
            raise RuntimeError("keyring locked")
        self.passwords[(service, user)] = password
