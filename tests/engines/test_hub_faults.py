"""Downloads against a hub that misbehaves: unreachable, not HTTP, not JSON, busy, missing,
refusing, looping, stalling, lying about sizes, and a disk that will not take the bytes.

Each failure must reach the user as one sentence (what happened, what to do) that names the
server or the file and no Python class, leave every file that was already there intact, and
keep a partial file wherever its bytes can still be resumed. Waits are made short (the fixture
in test_downloads sets $SA3_STUDIO_HUB_TIMEOUT and zero retry waits), so nothing here is slow.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import random
import re
import socket
import threading
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from engines.models import download as dl
from engines.models import hub_http
from engines.models.hub_files import REPO
from tests.engines import test_downloads as downloads
from tests.engines.test_downloads import BIG, BIG_SIZE, CHUNK, FILES, TOKEN, one_sentence, plan_of
from tests.fake_hub import FakeHub

# the fixtures of test_downloads: an isolated huggingface_hub, the fake hub, a models folder
hf_env = downloads.hf_env
hub = downloads.hub
models = downloads.models

SMALL = "tensorRT/sm_90/same-s/enc_fp8.trt"
_CLASS_NAME = re.compile(r"\b[A-Z]\w*(Error|Exception|Timeout|Redirects|Refused)\b")


def assert_sentence(message: str, *names: str) -> None:
    """One line, one sentence, naming one of `names`, free of Python's words."""
    assert one_sentence(message), message
    assert any(name in message for name in names), message
    assert not _CLASS_NAME.search(message), message
    assert "Traceback" not in message and "Errno" not in message, message


def failure(call, *args, **kwargs) -> str:
    with pytest.raises(dl.DownloadError) as caught:
        call(*args, **kwargs)
    return str(caught.value)


@pytest.fixture
def finished(hub: FakeHub, models: Path) -> Iterator[Path]:
    """A file downloaded before the trouble starts; it must come through every failure."""
    [path] = dl.download(plan_of(SMALL), models)
    yield path
    assert path.read_bytes() == FILES[SMALL]


class RawServer:
    """A TCP server on 127.0.0.1 that answers every connection with the same bytes (perhaps
    none) and hangs up: not an HTTP server at all."""

    def __init__(self, reply: bytes) -> None:
        self.reply = reply
        self.connections = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed: the test is over
                return
            self.connections += 1
            with conn:
                try:
                    conn.settimeout(2)
                    conn.recv(65536)
                    conn.sendall(self.reply)
                except OSError:
                    pass

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def raw_server(hf_env: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[RawServer]:
    # an SSH server's greeting, then noise: bytes an HTTP client cannot read as an answer
    server = RawServer(b"SSH-2.0-OpenSSH_9.6\r\n" + random.Random(7).randbytes(300) +
                       b"\r\n\r\n")
    monkeypatch.setenv("HF_ENDPOINT", server.endpoint)
    yield server
    server.close()


# --------------------------------------------------------------------------------------------
# A hub that cannot be reached, or is not a hub


def _refused_endpoint() -> str:
    with socket.socket() as sock:  # a port nobody listens on
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_a_refused_connection_is_retried_twice_briefly_then_one_sentence(
        hf_env: Path, models: Path, monkeypatch: pytest.MonkeyPatch,
        capfd: pytest.CaptureFixture[str]) -> None:
    endpoint = _refused_endpoint()
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    monkeypatch.setattr(hub_http, "REQUEST_RETRY_WAITS_S", (0.5, 1.5))  # the real policy
    waits: list[float] = []
    monkeypatch.setattr(hub_http, "time", types.SimpleNamespace(sleep=waits.append))
    expected = (f"Could not reach the hub at {endpoint} (connection refused); check the network "
                f"or HF_ENDPOINT.")
    assert failure(dl.plan_download, ["sm-sfx"], "", ["fp16"], "onnx", models) == expected
    assert waits == [0.5, 1.5]
    monkeypatch.setattr(hub_http, "REQUEST_RETRY_WAITS_S", (0.0, 0.0))  # waits on the cancel
    assert failure(dl.download, plan_of(BIG), models) == expected
    assert capfd.readouterr().err == ""  # no "Retrying in 8s" from huggingface_hub


def test_the_models_command_says_one_line_when_the_hub_is_down(
        hf_env: Path, models: Path, monkeypatch: pytest.MonkeyPatch, no_gpu: None,
        capsys: pytest.CaptureFixture[str]) -> None:
    from engines.cli.models import main

    endpoint = _refused_endpoint()
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    models.mkdir()
    code = main(["--models-dir", str(models), "download", "sm-sfx", "--onnx", "--dry-run"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.splitlines() == [f"error: Could not reach the hub at {endpoint} (connection "
                                f"refused); check the network or HF_ENDPOINT."]


def test_huggingface_hub_chatter_goes_to_the_log_not_the_terminal(
        hf_env: Path, caplog: pytest.LogCaptureFixture,
        capfd: pytest.CaptureFixture[str]) -> None:
    hub_http.quiet_hub_logging()
    hub_http.quiet_hub_logging()  # twice: still one route, nothing said twice
    caplog.set_level(logging.INFO)
    logging.getLogger("huggingface_hub.utils._http").warning("Retrying in 8s [Retry 5/5].")
    assert capfd.readouterr().err == ""
    said = [r for r in caplog.records if "Retrying in 8s" in r.getMessage()]
    assert len(said) == 1 and said[0].levelno == logging.INFO


def test_a_server_that_is_not_http_is_named_in_words(raw_server: RawServer,
                                                     models: Path) -> None:
    expected = (f"The server at {raw_server.endpoint} did not answer like the Hugging Face Hub "
                f"(its answer is not HTTP); check HF_ENDPOINT.")
    assert failure(dl.hub_listing, REPO) == expected
    assert failure(dl.download, plan_of(BIG), models) == expected
    assert raw_server.connections == 2  # bytes that are not HTTP are not retried


@pytest.mark.parametrize("reply", [b"", bytes(b for b in random.Random(9).randbytes(400)
                                             if b not in b"\r\n")],
                         ids=["nothing", "noise-without-a-line-end"])
def test_a_server_that_hangs_up_without_answering_is_retried_then_explained(
        raw_server: RawServer, reply: bytes) -> None:
    raw_server.reply = reply
    message = failure(dl.hub_listing, REPO)
    assert message == (f"The server at {raw_server.endpoint} did not answer like the Hugging "
                       f"Face Hub (it hung up without a complete answer for the file list of "
                       f"{REPO}); check HF_ENDPOINT and the connection.")
    assert raw_server.connections == 1 + len(hub_http.REQUEST_RETRY_WAITS_S)


@pytest.mark.parametrize("body", [
    random.Random(3).randbytes(500),  # not text
    b"<html><body>Welcome to nginx!</body></html>",
    b"null",
    b'{"files": []}',
    b'["onnx/a.onnx", "onnx/b.onnx"]',
    b'[{"type": "file", "size": 3}]',
    b'[{"type": "file", "path": "onnx/a.onnx"}]',
    b'[{"type": "file", "path": "onnx/a.onnx", "size": -1}]',
    b'[{"type": "file", "path": "onnx/a.onnx", "size": "12"}]',
    b'[{"type": "file", "path": "onnx/a.onnx", "size": true}]',
    b'[{"type": "file", "path": "onnx/a.onnx", "size": 3, "lfs": {"oid": "abc", "size": 3}}]',
    b'[{"type": "file", "path": "onnx/a.onnx", "size": 3, "lfs": "yes"}]',
], ids=["bytes", "html", "null", "object", "strings", "no-path", "no-size", "negative",
        "text-size", "bool-size", "bad-sha", "bad-lfs"])
def test_a_file_list_that_is_not_the_hubs_is_refused_in_words(hub: FakeHub, models: Path,
                                                              body: bytes) -> None:
    hub.answer("/tree/", 200, body, {"Content-Type": "application/json"})
    message = failure(dl.plan_download, ["sm-sfx"], "", ["fp16"], "onnx", models)
    assert message.startswith(f"The server at {hub.endpoint} did not answer like the Hugging "
                              f"Face Hub (")
    assert_sentence(message, hub.endpoint)


def test_an_error_answer_with_a_body_that_is_not_text_is_read_by_its_status(
        hub: FakeHub, models: Path) -> None:
    hub.answer("/tree/", 404, random.Random(5).randbytes(200),
               {"Content-Type": "application/json"})
    message = failure(dl.hub_listing, REPO)
    assert "HTTP 404 (not found)" in message
    assert_sentence(message, hub.endpoint)


def test_a_file_list_whose_pages_never_end_is_refused(hub: FakeHub) -> None:
    page = json.dumps([]).encode()
    hub.answer("/tree/", 200, page, {"Link": f'<{hub.endpoint}/api/models/{REPO}/tree/main'
                                             f'?recursive=true&expand=false>; rel="next"'})
    message = failure(dl.hub_listing, REPO)
    assert "never ends" in message
    assert_sentence(message, hub.endpoint)


# --------------------------------------------------------------------------------------------
# Busy, missing, refused, looping


def test_a_busy_file_list_is_retried_a_few_times_then_explained(hub: FakeHub) -> None:
    hub.fail("/tree/", 503)
    message = failure(dl.hub_listing, REPO)
    assert message == (f"The hub at {hub.endpoint} answered HTTP 503 (service unavailable) for "
                       f"the file list of {REPO} several times; try again later.")
    assert len(hub.log("/tree/")) == 1 + len(hub_http.REQUEST_RETRY_WAITS_S)


def test_a_hub_busy_for_a_moment_is_waited_out(hub: FakeHub, models: Path) -> None:
    hub.fail("/tree/", 500, times=2)
    hub.fail("/resolve/", 502, times=1)
    hub.fail("/blobs/", 503, times=2)
    plan = dl.plan_download(["sm-sfx"], "sm_90", ["fp16"], "trt", models)
    paths = dl.download(plan, models)
    assert all(p.read_bytes() == FILES[f.path] for f, p in zip(plan.files, paths, strict=True))


@pytest.mark.parametrize("part", ["/resolve/", "/blobs/"])
def test_a_file_that_stays_busy_ends_in_a_sentence(hub: FakeHub, models: Path,
                                                   finished: Path, part: str) -> None:
    hub.fail(part, 500)
    message = failure(dl.download, plan_of(SMALL, BIG), models)
    assert "answered HTTP 500 (internal server error)" in message and BIG in message
    assert_sentence(message, BIG)
    assert not (models / "sm_90/sa3-sm-sfx/dit_fp16.trt").exists()


def test_a_missing_file_is_named(hub: FakeHub, models: Path, finished: Path) -> None:
    hub.fail("dit_fp16.trt", 404)
    message = failure(dl.download, plan_of(SMALL, BIG), models)
    assert message == (f"The hub at {hub.endpoint} answered HTTP 404 (not found) for {BIG}; "
                       f"check HF_ENDPOINT, or list the files again and retry.")


def test_refusals_without_the_hubs_error_codes_are_explained(hub: FakeHub, models: Path,
                                                             finished: Path) -> None:
    hub.fail("dit_fp16.trt", 401)
    no_token = failure(dl.download, plan_of(SMALL, BIG), models)
    assert "asks for a Hugging Face token" in no_token
    assert_sentence(no_token, hub.endpoint)
    refused = failure(dl.download, plan_of(SMALL, BIG), models, token=TOKEN)
    assert "refused the Hugging Face token" in refused and TOKEN not in refused
    hub.faults.clear()
    hub.fail("dit_fp16.trt", 403)
    forbidden = failure(dl.download, plan_of(SMALL, BIG), models, token=TOKEN)
    assert "refused access" in forbidden and "(HTTP 403)" in forbidden
    assert_sentence(forbidden, hub.endpoint)


@pytest.mark.parametrize("part", ["/resolve/", "/blobs/"])
def test_a_redirect_loop_is_explained(hub: FakeHub, models: Path, finished: Path,
                                      part: str) -> None:
    hub.loop(part)
    message = failure(dl.download, plan_of(SMALL, BIG), models)
    assert "in a loop" in message
    assert_sentence(message, hub.endpoint)


def test_a_redirect_to_something_that_is_not_a_web_address_is_refused(
        hub: FakeHub, models: Path, finished: Path) -> None:
    hub.answer("dit_fp16.trt", 302, headers={"Location": "file:///etc/passwd"})
    message = failure(dl.download, plan_of(SMALL, BIG), models)
    assert "not a web address" in message
    assert_sentence(message, hub.endpoint)


# --------------------------------------------------------------------------------------------
# Slow, dropped and lying bodies


def test_a_stalled_file_list_times_out_honestly(hub: FakeHub,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dl.TIMEOUT_ENV, "0.3")
    hub.stall("/tree/", 10)
    message = failure(dl.hub_listing, REPO)
    assert message == (f"The server at {hub.endpoint} did not answer within 0.3 s while sending "
                       f"the file list of {REPO}; check the connection and try again.")
    assert len(hub.log("/tree/")) == 1  # a timeout is not retried: the user already waited


def test_a_body_that_stalls_keeps_its_bytes_and_resumes(hub: FakeHub, models: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dl.TIMEOUT_ENV, "0.3")
    hub.stall_after(BIG, 10_000)  # once: the retry after the stall finishes the file
    [path] = dl.download(plan_of(BIG), models)
    assert path.read_bytes() == FILES[BIG]
    assert hub.body_gets(BIG)[-1].range not in (None, "bytes=0-")


def test_a_server_that_sends_nothing_ends_in_a_sentence_and_keeps_the_partial_file(
        hub: FakeHub, models: Path, finished: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(dl.TIMEOUT_ENV, "0.3")
    hub.drop_after(BIG, 10_000)  # the first GET gets 10 000 bytes and drops;
    hub.stall("/blobs/", 10, skip=1)  # every GET after that hears nothing
    plan = plan_of(SMALL, BIG)
    message = failure(dl.download, plan, models)
    assert message == ("The server stopped sending sm_90/sa3-sm-sfx/dit_fp16.trt for 0.3 s; "
                       "check the connection and download again (it resumes where it stopped).")
    partial = dl.partial_path(models, plan.files[1])
    assert 0 < partial.stat().st_size <= 10_000


def test_a_connection_that_keeps_dropping_keeps_the_partial_file_for_next_time(
        hub: FakeHub, models: Path, finished: Path) -> None:
    plan = plan_of(SMALL, BIG)
    hub.drop_after(BIG, 3 * CHUNK)  # the first GET gets some bytes and drops;
    hub.raw("/blobs/", b"", skip=1)  # every GET after that is hung up on before any answer
    message = failure(dl.download, plan, models)
    assert message == ("The connection kept dropping while downloading "
                       "sm_90/sa3-sm-sfx/dit_fp16.trt; check the connection and download again "
                       "(it resumes where it stopped).")
    partial = dl.partial_path(models, plan.files[1])
    kept = partial.stat().st_size
    assert kept == 3 * CHUNK
    hub.faults.clear()
    [_, path] = dl.download(plan, models)
    assert path.read_bytes() == FILES[BIG]
    assert hub.body_gets(BIG)[-1].range == f"bytes={kept}-"


def test_a_content_length_that_disagrees_with_the_list_is_refused(
        hub: FakeHub, models: Path, finished: Path) -> None:
    hub.serve(BIG, FILES[BIG], BIG_SIZE + 100)
    message = failure(dl.download, plan_of(SMALL, BIG), models)
    assert message == (f"The server announced {BIG_SIZE + 100} bytes for "
                       f"sm_90/sa3-sm-sfx/dit_fp16.trt but the hub lists {BIG_SIZE}; try again "
                       f"later or check HF_ENDPOINT.")


def test_a_body_larger_than_the_file_is_cut_off_and_deleted(hub: FakeHub, models: Path,
                                                           finished: Path) -> None:
    hub.serve(BIG, FILES[BIG] + os.urandom(3 * CHUNK), None)
    plan = plan_of(SMALL, BIG)
    message = failure(dl.download, plan, models)
    assert message.startswith(f"The server sent more than the {BIG_SIZE} bytes of ")
    assert_sentence(message, "sm_90/sa3-sm-sfx/dit_fp16.trt")
    assert not dl.partial_path(models, plan.files[1]).exists()
    assert not (models / "sm_90/sa3-sm-sfx/dit_fp16.trt").exists()


def test_a_body_without_a_length_that_ends_early_resumes(hub: FakeHub, models: Path) -> None:
    hub.serve(BIG, FILES[BIG], None)
    hub.drop_after(BIG, 5 * CHUNK)
    [path] = dl.download(plan_of(BIG), models)
    assert path.read_bytes() == FILES[BIG]


# --------------------------------------------------------------------------------------------
# The disk


def test_a_models_folder_that_is_a_file_is_one_sentence(hub: FakeHub, tmp_path: Path) -> None:
    blocked = tmp_path / "models"
    blocked.write_bytes(b"not a folder")
    message = failure(dl.download, plan_of(BIG), blocked)
    assert message == (f"The models folder '{blocked}' is a file, not a folder; choose another "
                       f"models folder.")
    assert blocked.read_bytes() == b"not a folder"
    assert hub.log("/resolve/") == []


def test_a_file_in_the_way_of_the_final_folder_keeps_the_finished_bytes(
        hub: FakeHub, models: Path, finished: Path) -> None:
    (models / "sm_90" / "sa3-sm-sfx").write_bytes(b"in the way")
    plan = plan_of(SMALL, BIG)
    message = failure(dl.download, plan, models)
    assert message.startswith("Could not write sm_90/sa3-sm-sfx/dit_fp16.trt into ")
    assert "a file with that name is in the way" in message
    assert_sentence(message, "dit_fp16.trt")
    assert dl.partial_path(models, plan.files[1]).stat().st_size == BIG_SIZE

    (models / "sm_90" / "sa3-sm-sfx").unlink()
    gets = len(hub.body_gets(BIG))
    [_, path] = dl.download(plan, models)
    assert path.read_bytes() == FILES[BIG]
    assert len(hub.body_gets(BIG)) == gets  # the kept bytes were enough


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into read-only folders")
def test_a_read_only_models_folder_is_one_sentence(hub: FakeHub, models: Path,
                                                   finished: Path) -> None:
    os.chmod(models, 0o555)
    try:
        message = failure(dl.download, plan_of(SMALL, BIG), models)
    finally:
        os.chmod(models, 0o755)
    assert "permission was denied" in message
    assert_sentence(message, "dit_fp16.trt")


def test_a_write_error_keeps_the_bytes_so_far(hub: FakeHub, models: Path, finished: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []

    def write(fh, data: bytes) -> None:
        calls.append(len(data))
        if len(calls) > 3:
            raise OSError(errno.EIO, "Input/output error")
        fh.write(data)

    monkeypatch.setattr(dl, "_write_chunk", write)
    plan = plan_of(SMALL, BIG)
    message = failure(dl.download, plan, models)
    assert "input/output error" in message and "resumes" in message
    assert_sentence(message, "dit_fp16.trt")
    assert dl.partial_path(models, plan.files[1]).stat().st_size == 3 * CHUNK


# --------------------------------------------------------------------------------------------
# HF_ENDPOINT itself


@pytest.mark.parametrize("endpoint", [
    "127.0.0.1:8080", "huggingface.co", "ftp://mirror.example", "http://", "http://host:port",
    "http://exa mple.com", "http://\udcff\udcfe.example", "https://hf\x1b[2J.co",
])
def test_an_endpoint_that_is_not_a_web_address_is_named(
        hf_env: Path, models: Path, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    monkeypatch.setenv("HF_ENDPOINT", endpoint)
    for message in (failure(dl.hub_listing, REPO), failure(dl.download, plan_of(BIG), models),
                    failure(dl.plan_download, ["sm-sfx"], "", [], "onnx", models)):
        assert message.startswith("HF_ENDPOINT '") and "is not a web address" in message
        assert one_sentence(message) and message.isprintable()
        assert "\x1b" not in message
    assert not models.exists()
