"""A key in any spelling a client can send never reaches a log record, uvicorn's access log included, and the
spellings PostHog accepts still authenticate.

The end-to-end test sends raw HTTP requests (a socket, so nothing re-encodes the target) to a real uvicorn server
on 127.0.0.1 serving the session's app with its access log on, and reads every record logged meanwhile as the
log would show it (uvicorn's own access formatter). "Holds the key" means the key, or its random part without
``phx_``, appears in the text or in any of its percent/plus decodings. Which spellings authenticate is restated
from PostHog's rules (Django's query string reading, ``parse_qsl``; ``Authorization: Bearer <key>``)."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qsl, unquote_plus

import pytest
import uvicorn
from hypothesis import HealthCheck, event, given, settings, strategies as st
from uvicorn.logging import AccessFormatter

from hoglab.server.http.redaction import install_key_redaction, redact

pytestmark = pytest.mark.xdist_group("redaction")

NAME = "personal_api_key"


def holds(text: str, key: str) -> bool:
    """Whether ``text``, or any of its successive percent/plus decodings, contains the key or its random part."""
    for _ in range(16):
        if key in text or key[4:] in text:
            return True
        decoded = unquote_plus(text, errors="replace")
        if decoded == text:
            return False
        text = decoded
    return True


# -- spellings ----------------------------------------------------------------------------------------------------


_STYLES = {  # how each character is written, drawn per character from the spelling's style
    "raw": ["raw"],
    "percent": ["upper", "lower"],
    "mixed": ["raw", "raw", "upper", "lower"],
    "twice": ["double"],
    "any": ["raw", "upper", "lower", "double", "triple"],
}


def _char(draw: st.DrawFn, char: str, style: str, case: bool) -> str:
    how = draw(st.sampled_from(_STYLES[style]))
    if case and char.isalpha() and draw(st.integers(0, 3)) == 0:
        char = char.swapcase()
    hexa = f"{ord(char):02X}"
    return {"raw": char, "upper": f"%{hexa}", "lower": f"%{hexa.lower()}", "double": f"%25{hexa}",
            "triple": f"%2525{hexa}"}[how]  # fmt: skip


@st.composite
def _spelled(draw: st.DrawFn, text: str, case: bool = False) -> str:
    style = draw(st.sampled_from(["raw", "raw", "percent", "mixed", "mixed", "twice", "any"]))
    mixed_case = case and draw(st.booleans())
    return "".join(_char(draw, c, style, mixed_case) for c in text)


@st.composite
def spellings(draw: st.DrawFn, key: str) -> tuple[str, str, dict[str, str]]:
    """``(where, target, headers)`` of a request carrying ``key`` in one spelling."""
    space = draw(st.sampled_from(["", "", "", "", "+", "%20", "%2B"]))
    value = space + draw(_spelled(key))
    where = draw(st.sampled_from(["query", "query", "query", "path", "authorization", "x-header"]))
    if where == "query":
        name = draw(_spelled(NAME, case=True))
        equals = draw(st.sampled_from(["=", "=", "%3D", "%3d", "%253D"]))
        before, after = draw(st.sampled_from([("", ""), ("a=1&", ""), ("", "&b=2"), ("x=%26&", "&y=+")]))
        return where, f"/api/projects/?{before}{name}{equals}{value}{after}", {}
    if where == "path":
        return where, f"/api/projects/{value}/?limit=1", {}
    header = draw(st.sampled_from(["Authorization", "authorization", "AUTHORIZATION"]))
    scheme = draw(st.sampled_from(["Bearer ", "Bearer ", "bearer ", "Bearer  ", "Token "]))
    if where == "authorization" and draw(st.booleans()):
        value = key  # half of them as SDKs send it, so the spellings that authenticate are drawn often
    if where == "x-header":
        header, scheme = draw(st.sampled_from(["X-Api-Key", "x-personal-api-key", "X-PostHog-Token"])), ""
    return where, "/api/projects/", {header: scheme + value}


def accepted(where: str, target: str, headers: dict[str, str], key: str) -> bool:
    """PostHog's rule: the query string read once as Django reads it, or ``Authorization: Bearer <key>``."""
    if where == "query":
        return dict(parse_qsl(target.partition("?")[2], keep_blank_values=True)).get(NAME) == key
    value = next((v for h, v in headers.items() if h.lower() == "authorization"), None)
    return value is not None and value.startswith("Bearer") and value[6:].strip() == key and value[6:7].isspace()


# -- a real server with its access log on -------------------------------------------------------------------------


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.access = AccessFormatter('%(client_addr)s - "%(request_line)s" %(status_code)s', use_colors=False)
        self.plain = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        formatter = self.access if record.name == "uvicorn.access" else self.plain
        self.lines.append(formatter.format(record))


@pytest.fixture
def logged_server(hoglab_service: Any) -> Iterator[tuple[str, _Records]]:
    """A second uvicorn server on the session's app (its lifespan already ran), access log on, records caught."""
    records = _Records()
    watched = [logging.getLogger(n) for n in ("uvicorn.access", "uvicorn.error", "")]
    levels = [logger.level for logger in watched]
    for logger in watched:
        logger.addHandler(records)
        logger.setLevel(logging.INFO)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    # log_config=None: uvicorn leaves the process's logging alone (no dictConfig over the session's handlers).
    config = uvicorn.Config(hoglab_service.app, lifespan="off", access_log=True, log_config=None)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        yield f"127.0.0.1:{sock.getsockname()[1]}", records
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
        for logger, level in zip(watched, levels, strict=True):
            logger.removeHandler(records)
            logger.setLevel(level)


def _raw(address: str, target: str, headers: dict[str, str]) -> int:
    host, port = address.split(":")
    lines = [f"GET {target} HTTP/1.1", f"Host: {address}", *(f"{h}: {v}" for h, v in headers.items()),
             "Connection: close", "", ""]  # fmt: skip
    with socket.create_connection((host, int(port)), timeout=30) as conn:
        conn.sendall("\r\n".join(lines).encode("ascii"))
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return int(answer.split(b" ", 2)[1])


def _wait_for_access_line(records: _Records, count: int) -> None:
    deadline = time.monotonic() + 10  # uvicorn logs the access line after the response is sent
    while sum('"GET ' in line for line in records.lines) < count and time.monotonic() < deadline:
        time.sleep(0.005)


def test_the_issues_spellings(logged_server, make_project) -> None:
    address, records = logged_server
    key = make_project(projects="all").key
    encoded = key.replace("_", "%5F")
    cases = [
        (f"/api/projects/?personal%5Fapi%5Fkey={encoded}", 200),  # Django decodes the name and the value
        (f"/api/projects/?personal_api_key%3D{key}", 401),  # one parameter named "personal_api_key=phx_..."
        (f"/api/projects/?personal_api_key={key}", 200),
        (f"/api/projects/?PERSONAL_API_KEY={key}", 401),  # names are case-sensitive
        (f"/api/projects/?personal_api_key={encoded.replace('%', '%25')}", 401),  # decoded once only
        (f"/api/projects/{key}/", 401),
    ]
    for i, (target, status) in enumerate(cases, start=1):
        assert _raw(address, target, {}) == status, target
        _wait_for_access_line(records, i)
    assert sum('"GET /api/projects/' in line for line in records.lines) == len(cases)
    assert not [line for line in records.lines if holds(line, key)]
    assert any("personal_api_key=[redacted]" in line for line in records.lines)


def test_no_spelling_of_a_key_reaches_the_log_and_posthogs_spellings_still_authenticate(
    logged_server, make_project
) -> None:
    address, records = logged_server
    key = make_project(projects="all").key
    seen: Counter[tuple[str, int]] = Counter()

    @settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(spellings(key))
    def check(case: tuple[str, str, dict[str, str]]) -> None:
        where, target, headers = case
        before = len(records.lines)
        status = _raw(address, target, headers)
        event(f"{where}: {status}")
        seen[where, status] += 1
        assert status == (200 if accepted(where, target, headers, key) else 401), (case, status)
        _wait_for_access_line(records, sum('"GET ' in line for line in records.lines[:before]) + 1)
        new = records.lines[before:]
        assert any('"GET ' in line for line in new)  # the access line was written, and read here
        assert not [line for line in new if holds(line, key)], (case, new)

    check()
    # The drawn spellings cover both sides: accepted ones (which must still authenticate) and refused ones.
    assert seen["query", 200] >= 5 and seen["authorization", 200] >= 5 and seen["query", 401] >= 20, seen


@settings(max_examples=300)
@given(data=st.data())
def test_headers_and_parameters_in_any_text_are_redacted(data: st.DataObject) -> None:
    key = "phx_" + data.draw(st.text(alphabet="ABCxyz019-_", min_size=43, max_size=43))
    value = data.draw(_spelled(key))
    shape = data.draw(st.sampled_from([
        "Authorization: Bearer {v}", "authorization: {v}", "{{'authorization': 'Bearer {v}'}}",
        "[(b'x-api-key', b'{v}')]", "X-PostHog-Secret={v}", "Cookie: session={v}; other=1", "?token={v}&a=1",
        "personal_api_key: {v}", '{{"personal_api_key": "{v}"}}', "GET /x/{v} HTTP/1.1", "error at {v}",
    ]))  # fmt: skip
    assert not holds(redact(shape.format(v=value)), key)


def test_a_records_arguments_exception_and_message_of_any_type_are_redacted(caplog) -> None:
    install_key_redaction()  # as the app does when it is made (idempotent)
    key = "phx_" + "k" * 43
    log = logging.getLogger("hoglab.tests.redaction")
    with caplog.at_level(logging.INFO, logger="hoglab.tests.redaction"):
        log.info("asked %s with %r", f"/x?personal_api_key={key}", {"authorization": f"Bearer {key}"})
        log.info(ValueError(f"bad key {key}"))
        try:
            raise RuntimeError(f"GET /?token%3D{key.replace('_', '%5F')}")
        except RuntimeError:
            log.exception("failed")
    text = caplog.text
    assert "failed" in text and "RuntimeError" in text and "[redacted]" in text
    assert not holds(text, key)
