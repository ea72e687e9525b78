"""A ClickHouse HTTP interface over chDB, enough of it for clickhouse-connect: the test double for a server.

No ClickHouse server can run on the build machine (engine-notes §7), so ``ClickHouseEngine`` is tested against
this: the real clickhouse-connect client speaking real HTTP to a server that executes with the same ClickHouse
version (chDB) in this process. What it implements of the protocol:

* ``GET /ping``; ``GET``/``POST /`` with the statement in ``?query=``, in the body, or split between both
  (``query`` + body, as an INSERT with its data); ``Content-Encoding`` gzip/deflate/lz4/zstd request bodies and
  ``Transfer-Encoding: chunked``.
* The output format from a trailing ``FORMAT x`` (or ``default_format``, else TabSeparated); inserts take the
  ``INSERT ... FORMAT x`` line and stream the rest of the body into chDB.
* Every other URL parameter is a setting for that statement (``readonly`` picks a read-only session).
* ``X-ClickHouse-Format``/``-Timezone``/``-Query-Id``/``-Summary``/``-Server-Display-Name`` response headers;
  errors as ClickHouse sends them: status 500, ``X-ClickHouse-Exception-Code`` and ``Code: N. DB::Exception: ...``.
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import uuid
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from hoglab.server.engine.chdb import ChdbEngine

_PROTOCOL_PARAMS = {
    "query", "database", "default_format", "query_id", "session_id", "session_timeout", "session_check",
    "compress", "decompress", "enable_http_compression", "wait_end_of_query", "send_progress_in_http_headers",
    "http_headers_progress_interval_ms", "client_protocol_version", "user", "password", "buffer_size",
}  # fmt: skip
_FORMAT_AT_END = re.compile(r"\bFORMAT\s+(\w+)\s*;?\s*$", re.I)
# An INSERT whose data follows (``INSERT INTO t (a, b) FORMAT x``), not ``INSERT ... SELECT``.
_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+[^\s(]+(?:\s*\([^)]*\))?\s+FORMAT\s+(\w+)[ \t]*(?:\r?\n)?", re.I)


def _decode(body: bytes, encoding: str) -> bytes:
    encoding = encoding.lower().strip()
    if not encoding or encoding == "identity":
        return body
    if encoding == "gzip":
        return gzip.decompress(body)
    if encoding == "deflate":
        return zlib.decompress(body)
    if encoding == "lz4":
        import lz4.frame

        return bytes(lz4.frame.decompress(body))
    if encoding == "zstd":
        import zstandard

        return zstandard.ZstdDecompressor().decompressobj().decompress(body)
    raise ValueError(f"unsupported Content-Encoding {encoding}")


class ClickHouseShim:
    """Serve ``engine``'s chDB over ClickHouse's HTTP protocol on 127.0.0.1 (a random port); ``url`` to connect."""

    def __init__(self, engine: ChdbEngine) -> None:
        self.engine = engine
        self.requests: list[dict[str, Any]] = []
        shim = self

        class Handler(_Handler):
            owner = shim

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, name="chshim", daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Handler(BaseHTTPRequestHandler):
    owner: ClickHouseShim
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            raw = b"".join(chunks)
        else:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        return _decode(raw, self.headers.get("Content-Encoding", ""))

    def _reply(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        url = urlsplit(self.path)
        if url.path.rstrip("/") == "/ping":
            self._reply(200, b"Ok.\n", {"Content-Type": "text/plain"})
            return
        params = dict(parse_qsl(url.query, keep_blank_values=True))
        body = self._body() if self.command == "POST" else b""
        query = params.get("query", "")
        data = b""
        if query and body:
            if _INSERT.match(query):
                data = body
            else:
                query = query + " " + body.decode()
        elif body:
            match = _INSERT.match(body[:65536].decode("utf-8", errors="replace"))
            if match:
                query, data = body[: match.end()].decode(), body[match.end() :]
            else:
                query = body.decode()
        settings = {k: v for k, v in params.items() if k not in _PROTOCOL_PARAMS and not k.startswith("param_")}
        query_id = params.get("query_id") or str(uuid.uuid4())
        self.owner.requests.append({"query": query, "settings": settings, "bytes": len(data)})
        core = self.owner.engine._live()
        headers = {
            "X-ClickHouse-Query-Id": query_id,
            "X-ClickHouse-Timezone": "UTC",
            "X-ClickHouse-Server-Display-Name": "chdb-shim",
        }
        try:
            insert = _INSERT.match(query)
            if insert:
                statement = query[: insert.end()]
                fmt = insert.group(1)
                statement = statement[: statement.upper().rindex("FORMAT")].strip()
                with core.writes.session() as session, session.conn.send_insert(statement, fmt) as inserter:
                    if data:
                        inserter.append(data)
                    result = inserter.finish()
                summary = {"written_rows": str(result.rows_written), "written_bytes": str(result.bytes_written)}
                headers["X-ClickHouse-Summary"] = json.dumps(summary)
                self._reply(200, b"", headers)
                return
            fmt_match = _FORMAT_AT_END.search(query)
            fmt = fmt_match.group(1) if fmt_match else params.get("default_format", "TabSeparated")
            statement = query[: fmt_match.start()] if fmt_match else query
            pool = core.reads if str(settings.get("readonly", "0")) not in {"0", ""} else core.writes
            with pool.session() as session:
                out = session.run(statement, fmt, settings)
            headers["X-ClickHouse-Format"] = fmt
            headers["X-ClickHouse-Summary"] = json.dumps({"read_rows": "0", "read_bytes": "0"})
            headers["Content-Type"] = "application/octet-stream"
            self._reply(200, out, headers)
        except RuntimeError as exc:
            text = re.sub(r"^Streaming insert \w+ failed: ", "", str(exc))
            code = re.search(r"Code:\s*(\d+)", text)
            headers["X-ClickHouse-Exception-Code"] = code.group(1) if code else "1000"
            self._reply(500, (text.rstrip() + " (version 26.9.2.1)\n").encode(), headers)
