"""A local package index for the GPU runtime tests: small fake wheels and sdists in a temporary
folder, PEP 503 pages (sha256 in the href fragment) or PEP 691 JSON pages, served by
http.server with Range support and a log of what was asked."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
import threading
import zipfile
from dataclasses import dataclass, field
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

JSON_TYPE = "application/vnd.pypi.simple.v1+json"


def _metadata(name: str, version: str, requires: list[str]) -> str:
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}",
             *(f"Requires-Dist: {r}" for r in requires)]
    return "\n".join(lines) + "\n\n"


def make_wheel(folder: Path, name: str, version: str, tag: str, files: dict[str, bytes],
               requires: list[str] = ()) -> Path:
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    path = folder / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w") as wheel:
        for member, data in files.items():
            wheel.writestr(member, data)
        wheel.writestr(f"{info}/METADATA", _metadata(name, version, list(requires)))
        wheel.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nTag: {tag}\n")
        wheel.writestr(f"{info}/RECORD", "".join(f"{m},,\n" for m in files) +
                       f"{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    return path


def make_sdist(folder: Path, name: str, version: str, files: dict[str, bytes],
               requires: list[str] = ()) -> Path:
    dist = name.replace("-", "_")
    top = f"{dist}-{version}"
    path = folder / f"{top}.tar.gz"
    with tarfile.open(path, "w:gz") as sdist:
        entries = {**files, "PKG-INFO": _metadata(name, version, list(requires)).encode()}
        for member, data in entries.items():
            info = tarfile.TarInfo(f"{top}/{member}")
            info.size = len(data)
            sdist.addfile(info, io.BytesIO(data))
    return path


@dataclass
class FakeIndex:
    """One index: project -> files. `pages` is "html" (PEP 503) or "json" (PEP 691)."""

    root: Path
    name: str
    pages: str = "html"
    wrong_hash: set[str] = field(default_factory=set)  # file names published with a bad sha256

    @property
    def folder(self) -> Path:
        return self.root / self.name

    def add(self, project: str, archive: Path) -> None:
        target = self.folder / "files" / archive.name
        target.parent.mkdir(parents=True, exist_ok=True)
        archive.replace(target)
        (self.folder / "simple" / project).mkdir(parents=True, exist_ok=True)

    def write_pages(self) -> None:
        for page in (self.folder / "simple").iterdir():
            project = page.name
            files = sorted((self.folder / "files").glob("*"))
            prefix = project.replace("-", "_") + "-"
            mine = [f for f in files if f.name.lower().startswith(prefix.lower())
                    and f.name[len(prefix):len(prefix) + 1].isdigit()]
            entries = []
            for f in mine:
                digest = hashlib.sha256(f.read_bytes()).hexdigest()
                if f.name in self.wrong_hash:
                    digest = hashlib.sha256(b"not these bytes").hexdigest()
                entries.append((f.name, f"../../files/{f.name}", digest))
            links = "".join(f'<a href="{u}#sha256={d}">{n}</a><br/>\n' for n, u, d in entries)
            (page / "index.html").write_text(f"<html><body>\n{links}</body></html>\n")
            (page / "index.json").write_text(json.dumps({
                "meta": {"api-version": "1.0"}, "name": project,
                "files": [{"filename": n, "url": u, "hashes": {"sha256": d}}
                          for n, u, d in entries]}))

    def url(self, server: FakeIndexServer) -> str:
        return f"{server.base}/{self.name}/simple"


class _Handler(SimpleHTTPRequestHandler):
    server: FakeIndexServer.HTTP

    def log_message(self, format: str, *args: object) -> None:  # quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.server.requests.append((self.path, dict(self.headers)))
        local = Path(self.translate_path(self.path))
        if local.is_dir():
            wants_json = JSON_TYPE in self.headers.get("Accept", "")
            page = local / "index.json"
            if wants_json and page.is_file() and self.server.json_pages(self.path):
                return self._send(page.read_bytes(), JSON_TYPE)
            page = local / "index.html"
            if page.is_file():
                return self._send(page.read_bytes(), "text/html")
            self.send_error(404)
            return None
        if not local.is_file():
            self.send_error(404)
            return None
        data = local.read_bytes()
        ranged = self.headers.get("Range", "")
        if ranged.startswith("bytes=") and ranged.endswith("-"):
            start = int(ranged[6:-1])
            if start >= len(data):
                self.send_response(416)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return None
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
            self.send_header("Content-Length", str(len(data) - start))
            self.end_headers()
            self.wfile.write(data[start:])
            return None
        return self._send(data, "application/octet-stream")

    def _send(self, body: bytes, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class FakeIndexServer:
    """http.server over root, on a free port of 127.0.0.1, in a thread."""

    class HTTP(ThreadingHTTPServer):
        requests: list[tuple[str, dict[str, str]]]
        json_names: set[str]

        def json_pages(self, path: str) -> bool:
            return any(f"/{name}/" in path for name in self.json_names)

    def __init__(self, root: Path, json_indexes: set[str] = frozenset()) -> None:
        handler = lambda *a, **k: _Handler(*a, directory=str(root), **k)  # noqa: E731
        self.http = self.HTTP(("127.0.0.1", 0), handler)
        self.http.requests = []
        self.http.json_names = set(json_indexes)
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        host, port = self.http.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def requests(self) -> list[tuple[str, dict[str, str]]]:
        return self.http.requests

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()
