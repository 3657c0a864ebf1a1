"""A local stand-in for the Hugging Face Hub: the endpoints huggingface_hub calls to list a repo
and download its files, served from memory on 127.0.0.1.

Two servers, like the real thing: the hub (`endpoint`) answers the API and `/resolve`, and
redirects LFS files to a "CDN" on another port (`cdn`), so huggingface_hub's HEAD sees the
cross-origin 302 carrying X-Linked-Etag / X-Linked-Size and the auth header must not follow.

Endpoints
  GET  /api/models/{repo}/tree/{revision}[/{path}]?recursive=&expand=   (Link-header pages)
  POST /api/models/{repo}/paths-info/{revision}                          (form: paths, expand)
  HEAD|GET /{repo}/resolve/{revision}/{path}     LFS: 302 to the CDN; others: 200 with the bytes;
                                                 a renamed repo: 307 to its new name (relative)
  HEAD|GET (cdn) /blobs/{sha256}                 the bytes, with Range
Headers: X-Repo-Commit, ETag, X-Linked-Etag (sha256), X-Linked-Size, Content-Length,
Accept-Ranges, Content-Range; errors carry X-Error-Code / X-Error-Message as the hub's do.

Switches for tests: `gate(repo, accepted_tokens)`, `reject_token(token)`, `rename(repo, new)`,
`drop_after(path, n)` (send n body bytes once, then cut the connection),
`corrupt(path)` (serve other bytes than the listing's sha256 describes), and `requests` (the log).

Faults, for requests whose path contains `part` (on either server), after letting `skip` of
them through, `times` times (None: always):
`answer(part, status, body)` (a canned answer), `fail(part, status)` (an error without the hub's
X-Error-Code), `raw(part, data)` (bytes that are not HTTP, then hang up), `stall(part, seconds)`
(say nothing for a while), `loop(part)` (redirect to itself). For a file's body:
`stall_after(path, n)` (n bytes, then silence), `serve(path, data, length)` (other bytes, with
another Content-Length; length None sends none and ends the body by hanging up).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, quote, unquote, urlsplit

DEFAULT_REPO = "stabilityai/stable-audio-3-optimized"
COMMIT = "5e1d0c3b7a9f2e4d6c8b0a1f3e5d7c9b1a2f4e6d"
_GIT_FILES = (".json", ".md", ".txt", ".gitattributes")  # kept in git; the rest is LFS


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(path: str) -> bool:
    return not path.endswith(_GIT_FILES)


@dataclass
class Request:
    role: str  # "hub" or "cdn"
    method: str
    path: str  # with the query string
    headers: dict[str, str]  # lower-case names
    status: int = 0

    @property
    def range(self) -> str | None:
        return self.headers.get("range")


@dataclass
class _Fault:
    part: str
    kind: str  # "answer", "raw", "stall", "loop"
    times: int | None
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    skip: int = 0


@dataclass
class _Repo:
    files: dict[str, bytes]
    commit: str = COMMIT
    gated: bool = False
    accepted_tokens: set[str] = field(default_factory=set)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # a client hanging up mid-body (a cancel) is normal here


class FakeHub:
    def __init__(self, files: dict[str, bytes] | None = None, repo: str = DEFAULT_REPO) -> None:
        self.repos: dict[str, _Repo] = {}
        self.rejected_tokens: set[str] = set()
        self.renamed: dict[str, str] = {}  # old repo name -> new one
        self.served: dict[tuple[str, str], bytes] = {}  # bytes sent instead of the real ones
        self.drops: dict[tuple[str, str], list[int]] = {}  # key -> [nbytes, times left]
        self.stalls: dict[tuple[str, str], int] = {}
        self.lengths: dict[tuple[str, str], int | None] = {}  # Content-Length sent instead
        self.faults: list[_Fault] = []
        self.stopping = threading.Event()  # ends every stall when the servers stop
        self.page_size = 1000
        self.requests: list[Request] = []
        self._lock = threading.Lock()
        self._servers: list[ThreadingHTTPServer] = []
        if files is not None:
            self.add_repo(repo, files)

    # -- setup --

    def add_repo(self, repo: str, files: dict[str, bytes], commit: str = COMMIT) -> None:
        self.repos[repo] = _Repo(dict(files), commit)

    def gate(self, repo: str = DEFAULT_REPO, accepted_tokens: tuple[str, ...] = ()) -> None:
        self.repos[repo].gated = True
        self.repos[repo].accepted_tokens = set(accepted_tokens)

    def reject_token(self, token: str) -> None:
        self.rejected_tokens.add(token)

    def rename(self, repo: str, new: str) -> None:
        """Move a repo to a new name; /resolve under the old one redirects there, as the hub
        does (a relative 307, on the hub itself)."""
        self.repos[new] = self.repos.pop(repo)
        self.renamed[repo] = new

    def drop_after(self, path: str, nbytes: int, repo: str = DEFAULT_REPO,
                   times: int = 1) -> None:
        """The next `times` GETs of this file's bytes send `nbytes` of the body, then hang up."""
        self.drops[(repo, path)] = [nbytes, times]

    def stall_after(self, path: str, nbytes: int, repo: str = DEFAULT_REPO) -> None:
        """The next GET of this file's bytes sends `nbytes` of the body, then nothing."""
        self.stalls[(repo, path)] = nbytes

    def serve(self, path: str, data: bytes, length: int | None,
              repo: str = DEFAULT_REPO) -> None:
        """Send `data` as this file's bytes with Content-Length `length` (None: no length;
        the body ends when the server hangs up)."""
        self.served[(repo, path)] = data
        self.lengths[(repo, path)] = length

    def answer(self, part: str, status: int, body: bytes = b"",
               headers: dict[str, str] | None = None, times: int | None = None,
               skip: int = 0) -> None:
        self.faults.append(_Fault(part, "answer", times, status, body, dict(headers or {}),
                                  skip=skip))

    def fail(self, part: str, status: int, times: int | None = None, skip: int = 0) -> None:
        body = json.dumps({"error": f"fault {status}"}).encode()
        self.answer(part, status, body, {"Content-Type": "application/json"}, times, skip)

    def raw(self, part: str, data: bytes, times: int | None = None, skip: int = 0) -> None:
        self.faults.append(_Fault(part, "raw", times, body=data, skip=skip))

    def stall(self, part: str, seconds: float, times: int | None = None, skip: int = 0) -> None:
        self.faults.append(_Fault(part, "stall", times, seconds=seconds, skip=skip))

    def loop(self, part: str, times: int | None = None, skip: int = 0) -> None:
        self.faults.append(_Fault(part, "loop", times, status=302, skip=skip))

    def corrupt(self, path: str, repo: str = DEFAULT_REPO) -> None:
        """Serve bytes of the right length that do not hash to the listed sha256."""
        data = self.repos[repo].files[path]
        self.served[(repo, path)] = bytes(b ^ 0xFF for b in data)

    # -- lifecycle --

    def start(self) -> FakeHub:
        for role in ("hub", "cdn"):
            handler = type(f"_{role.title()}Handler", (_Handler,), {"hub": self, "role": role})
            server = _Server(("127.0.0.1", 0), handler)
            threading.Thread(target=server.serve_forever, args=(0.05,), name=f"fake-{role}",
                             daemon=True).start()
            self._servers.append(server)
        return self

    def stop(self) -> None:
        self.stopping.set()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        self._servers.clear()

    def __enter__(self) -> FakeHub:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self._servers[0].server_address[1]}"

    @property
    def cdn(self) -> str:
        return f"http://127.0.0.1:{self._servers[1].server_address[1]}"

    # -- queries for tests --

    def log(self, path_part: str = "", method: str | None = None) -> list[Request]:
        with self._lock:
            found = list(self.requests)
        return [r for r in found if path_part in unquote(r.path)
                and (method is None or r.method == method)]

    def body_gets(self, path: str, repo: str = DEFAULT_REPO) -> list[Request]:
        """The GETs that fetched this file's bytes (on the CDN for LFS files)."""
        data = self.repos[repo].files[path]
        if is_lfs(path):
            return [r for r in self.log(f"/blobs/{hashlib.sha256(data).hexdigest()}", "GET")]
        return [r for r in self.log(f"/{repo}/resolve/", "GET") if r.path.endswith(path)]

    # -- internals used by the handler --

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _take_drop(self, key: tuple[str, str]) -> int | None:
        with self._lock:
            found = self.drops.get(key)
            if found is None:
                return None
            found[1] -= 1
            if found[1] <= 0:
                del self.drops[key]
            return found[0]

    def _take_stall(self, key: tuple[str, str]) -> int | None:
        with self._lock:
            return self.stalls.pop(key, None)

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self.faults:
                if fault.part in path and fault.times != 0:
                    if fault.skip > 0:
                        fault.skip -= 1
                        return None
                    if fault.times is not None:
                        fault.times -= 1
                    return fault
        return None

    def _bytes(self, repo: str, path: str) -> bytes:
        return self.served.get((repo, path), self.repos[repo].files[path])

    def _blob(self, sha: str) -> tuple[tuple[str, str], bytes] | None:
        for repo_id, repo in self.repos.items():
            for path, data in repo.files.items():
                if is_lfs(path) and hashlib.sha256(data).hexdigest() == sha:
                    return (repo_id, path), self._bytes(repo_id, path)
        return None


def _entry(path: str, data: bytes | None) -> dict:
    if data is None:
        return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(),
                "size": 0, "path": path}
    entry = {"type": "file", "oid": git_blob_sha1(data), "size": len(data), "path": path}
    if is_lfs(path):
        entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data),
                        "pointerSize": 134}
    return entry


def _folders(paths: list[str]) -> set[str]:
    found = set()
    for path in paths:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[: i + 1]) for i in range(len(parts)))
    return found


class _Handler(BaseHTTPRequestHandler):
    hub: FakeHub
    role: str
    protocol_version = "HTTP/1.1"
    timeout = 10  # idle keep-alive connections end on their own

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet server
        pass

    def send_response(self, code: int, message: str | None = None) -> None:
        self._request.status = code  # before the client can see the answer
        super().send_response(code, message)

    # -- dispatch --

    def do_HEAD(self) -> None:  # noqa: N802
        self._handle()

    def do_GET(self) -> None:  # noqa: N802
        self._handle()

    def do_POST(self) -> None:  # noqa: N802
        self._handle()

    def _handle(self) -> None:
        # Logged on arrival, so a test that got its answer always finds the request here.
        self._request = Request(self.role, self.command, self.path,
                                {k.lower(): v for k, v in self.headers.items()})
        self.hub._record(self._request)
        length = int(self.headers.get("Content-Length") or 0)
        self._body = self.rfile.read(length) if length else b""
        fault = self.hub._take_fault(unquote(self.path))
        if fault is None:
            self._route()
        else:
            self._fault(fault)

    def _fault(self, fault: _Fault) -> None:
        if fault.kind == "raw":
            self.wfile.write(fault.body)
            self.close_connection = True
        elif fault.kind == "stall":
            self.hub.stopping.wait(fault.seconds)
            self._route()
        elif fault.kind == "loop":
            self._redirect(302, self.path)
        else:
            self.send_response(fault.status)
            headers = {"Content-Length": str(len(fault.body)), **fault.headers}
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(fault.body)

    def _route(self) -> None:
        url = urlsplit(self.path)
        parts = [unquote(p) for p in url.path.split("/")[1:]]
        query = parse_qs(url.query)
        if self.role == "cdn":
            if len(parts) == 2 and parts[0] == "blobs":
                found = self.hub._blob(parts[1])
                if found is not None:
                    key, data = found
                    return self._send_bytes(key, data, {"ETag": f'"{parts[1]}"'})
            return self._error(404, "EntryNotFound", "Blob not found.")
        if parts[:2] == ["api", "models"] and len(parts) >= 6:
            repo_id, action, revision, rest = "/".join(parts[2:4]), parts[4], parts[5], parts[6:]
            repo = self._repo(repo_id, revision)
            if repo is None:
                return None
            if action == "tree" and self.command == "GET":
                return self._tree(repo, "/".join(rest), query)
            if action == "paths-info" and self.command == "POST":
                return self._paths_info(repo)
        if len(parts) >= 5 and parts[2] == "resolve":
            repo_id, revision, path = "/".join(parts[:2]), parts[3], "/".join(parts[4:])
            if repo_id in self.hub.renamed:
                return self._redirect(307, f"/{self.hub.renamed[repo_id]}/"
                                           f"{url.path.split('/', 3)[3]}")
            repo = self._repo(repo_id, revision)
            if repo is None or not self._authorized(repo_id, repo):
                return None
            return self._resolve(repo_id, repo, path)
        return self._error(404, None, "Not found.")

    # -- checks --

    def _repo(self, repo_id: str, revision: str) -> _Repo | None:
        repo = self.hub.repos.get(repo_id)
        if repo is None:
            self._error(401, "RepoNotFound", "Repository not found")
            return None
        if revision not in ("main", repo.commit):
            self._error(404, "RevisionNotFound", "Invalid rev id: " + revision)
            return None
        return repo

    def _authorized(self, repo_id: str, repo: _Repo) -> bool:
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ").strip() if auth.startswith("Bearer ") else ""
        if token and token in self.hub.rejected_tokens:
            self._error(401, None, "Invalid credentials in Authorization header")
            return False
        if not repo.gated:
            return True
        if not token:
            self._error(401, "GatedRepo",
                        f"Access to model {repo_id} is restricted. You must have access to it "
                        f"and be authenticated to access it. Please log in.")
            return False
        if token not in repo.accepted_tokens:
            self._error(403, "GatedRepo",
                        f"Access to model {repo_id} is restricted and you are not in the "
                        f"authorized list. Visit https://huggingface.co/{repo_id} to ask for "
                        f"access.")
            return False
        return True

    # -- API --

    def _tree(self, repo: _Repo, under: str, query: dict[str, list[str]]) -> None:
        recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
        prefix = f"{under}/" if under else ""
        paths = sorted(p for p in repo.files if p.startswith(prefix))
        if under and not paths:
            return self._error(404, "EntryNotFound", f"{under} does not exist")
        entries: list[dict] = []
        for folder in sorted(_folders(paths)):
            if folder.startswith(prefix) and (recursive or "/" not in folder[len(prefix):]):
                entries.append(_entry(folder, None))
        for path in paths:
            if recursive or "/" not in path[len(prefix):]:
                entries.append(_entry(path, repo.files[path]))
        cursor = int(query.get("cursor", ["0"])[0])
        page = entries[cursor: cursor + self.hub.page_size]
        headers = {}
        if cursor + self.hub.page_size < len(entries):
            base = urlsplit(self.path)
            rest = "&".join(f"{k}={quote(v[0])}" for k, v in query.items() if k != "cursor")
            nxt = f"{self.hub.endpoint}{base.path}?{rest}&cursor={cursor + self.hub.page_size}"
            headers["Link"] = f'<{nxt}>; rel="next"'
        self._json(page, headers)

    def _paths_info(self, repo: _Repo) -> None:
        form = parse_qs(self._body.decode())
        folders = _folders(list(repo.files))
        found = []
        for path in form.get("paths", []):
            if path in repo.files:
                found.append(_entry(path, repo.files[path]))
            elif path in folders:
                found.append(_entry(path, None))
        self._json(found)

    def _json(self, payload: object, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    # -- files --

    def _resolve(self, repo_id: str, repo: _Repo, path: str) -> None:
        if path not in repo.files:
            return self._error(404, "EntryNotFound", f"{path} does not exist",
                               {"X-Repo-Commit": repo.commit})
        data = repo.files[path]
        common = {"X-Repo-Commit": repo.commit}
        if not is_lfs(path):
            common["ETag"] = f'"{git_blob_sha1(data)}"'
            return self._send_bytes((repo_id, path), self.hub._bytes(repo_id, path), common)
        sha = hashlib.sha256(data).hexdigest()
        self.send_response(302)
        self.send_header("Location", f"{self.hub.cdn}/blobs/{sha}")
        self.send_header("ETag", f'W/"{git_blob_sha1(data)}"')
        self.send_header("X-Linked-Etag", f'"{sha}"')
        self.send_header("X-Linked-Size", str(len(data)))
        for name, value in common.items():
            self.send_header(name, value)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _redirect(self, status: int, location: str) -> None:
        self.send_response(status)
        self.send_header("Location", location)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_bytes(self, key: tuple[str, str], data: bytes, headers: dict[str, str]) -> None:
        status, start, end = 200, 0, len(data) - 1
        match = re.fullmatch(r"\s*bytes=(\d+)-(\d*)\s*", self.headers.get("Range", ""))
        if match:
            start = int(match.group(1))
            end = min(int(match.group(2)), end) if match.group(2) else end
            if start >= len(data):
                return self._error(416, None, "Range Not Satisfiable",
                                   {"Content-Range": f"bytes */{len(data)}"})
            status = 206
        body = data[start: end + 1]
        length = self.hub.lengths.get(key, len(body))
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if length is None:
            self.send_header("Connection", "close")
            self.close_connection = True  # the body ends when the connection does
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command == "HEAD":
            return
        drop = self.hub._take_drop(key) if self.command == "GET" else None
        if drop is not None and drop < len(body):
            self.wfile.write(body[:drop])
            self.wfile.flush()
            self.close_connection = True  # hang up with the body unfinished
            return
        stall = self.hub._take_stall(key) if self.command == "GET" else None
        if stall is not None and stall < len(body):
            self.wfile.write(body[:stall])
            self.wfile.flush()
            self.hub.stopping.wait(30)  # silence until the client gives up or the test ends
            self.close_connection = True
            return
        self.wfile.write(body)
        if length is not None and length > len(body):
            self.close_connection = True  # fewer bytes than announced: hang up

    def _error(self, status: int, code: str | None, message: str,
               headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if code:
            self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
