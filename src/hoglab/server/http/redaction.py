"""Keys never reach a log line, however they are spelled: every record this process logs has them replaced by
``[redacted]``.

What counts as a key: personal API keys (``phx_...``, and PostHog's other secret prefixes ``phs_``/``pha_``), the
values of key and token parameters (``personal_api_key``, ``api_key``, ``secret_key``, ``token``,
``access_token``, any case, ``=`` or ``:``) and the credentials of ``Authorization``, ``Cookie`` and
``X-...-Key``/``-Token``/``-Secret``/``-Auth`` headers.

uvicorn's access log writes the path with its query string as the client sent it, and a client can spell a key
many ways: percent-encoded (``personal%5Fapi%5Fkey=phx%5F...``, ``%5f``), with an encoded ``=`` (``%3D``), with
``+`` or ``%20``, encoded twice (``%255F``), in the path, in a header. So each piece of a record's text that holds
a ``%`` or a ``+`` is also read decoded, as many times as it decodes; when the decoded text holds a key, the piece
is logged decoded, with the key redacted (and anything unprintable escaped again). A piece still decoding after
eight rounds is replaced whole. Redacting where the record is made catches every logger and handler, whoever
configures them later (uvicorn's ``dictConfig`` replaces handlers, not the record factory); a record's arguments
of any type, its exception text and its stack are redacted too.

>>> redact("GET /api/projects/?personal_api_key=phx_abcdefgh1234&limit=5 HTTP/1.1")
'GET /api/projects/?personal_api_key=[redacted]&limit=5 HTTP/1.1'
>>> redact("GET /api/projects/?Personal%5FAPI%5Fkey=phx%255Fabcdefgh1234&limit=5")
'GET /api/projects/?Personal_API_key=[redacted]&limit=5'
>>> redact("/batch/?token=phc_x&api_key=phc_y"), redact("Authorization: Bearer abc.def")
('/batch/?token=[redacted]&api_key=[redacted]', 'Authorization: Bearer [redacted]')
>>> redact("/api/projects/phx_abcdefgh1234/ and 100%+ of a-b+c")
'/api/projects/phx_[redacted]/ and 100%+ of a-b+c'
"""

from __future__ import annotations

import logging
import re
import threading
import traceback
from typing import Any
from urllib.parse import quote, unquote_plus

__all__ = ["install_key_redaction", "redact"]

REDACTED = "[redacted]"
# Anything that might start a secret; a text without any of these is logged as it is (the common case).
_WORTH_A_LOOK = re.compile(r"(?i)ph[xsa]_|key|token|secret|auth|cookie|%|\+")
_CREDENTIAL = re.compile(r"(ph[xsa]_)[A-Za-z0-9_\-]{4,}")
_PARAMETER = re.compile(
    r"(?i)((?:personal[_-]?api[_-]?key|secret[_-]?key|api[_-]?key|access[_-]?token|refresh[_-]?token|token)"
    r"[\"']?[ \t]*[=:][ \t]*[\"']?)[^&\s\"',;]+"
)
# A header as text ("Name: value"), as a dict's repr ("'name': 'value'") or as ASGI's pairs ("(b'name', b'value')").
_HEADER = re.compile(
    r"(?i)\b((?:proxy-)?authorization|x-[\w-]{1,60})([\"']?[ \t]*[:=,][ \t]*(?:(?-i:b)?[\"'])?[ \t]*)"
    r"((?:bearer|basic|token|digest)[ \t]+)?([^\s\"',;]+)"
)
_SECRET_HEADER_WORDS = ("key", "token", "secret", "auth", "session")
# A cookie header's value is all secret, up to the end of the line or the quote around it.
_COOKIE = re.compile(r"(?i)\b((?:set-)?cookie[\"']?[ \t]*[:=,][ \t]*(?:(?-i:b)?[\"'])?)[^\"'\r\n]+")
_PIECES = re.compile(r"""(\s+|["'<>])""")
_MAX_DECODINGS = 8
# Printable ASCII but space, quotes, "%" and angle brackets: what a decoded piece may show as it is.
_VISIBLE = "!#$&()*+,-./:;=?@[]^_`{|}~"
_lock = threading.Lock()
_installed = False


def _header(match: re.Match[str]) -> str:
    name = match.group(1).lower()
    if not any(word in name for word in _SECRET_HEADER_WORDS):
        return match.group(0)
    return f"{match.group(1)}{match.group(2)}{match.group(3) or ''}{REDACTED}"


def _redact_plain(text: str) -> str:
    text = _HEADER.sub(_header, text)
    text = _COOKIE.sub(rf"\1{REDACTED}", text)
    text = _PARAMETER.sub(rf"\1{REDACTED}", text)
    return _CREDENTIAL.sub(rf"\1{REDACTED}", text)


def _redact_encoded(piece: str) -> str:
    """``piece`` (no whitespace), or its decoded form with the keys redacted when that form holds one."""
    decoded = piece
    for _ in range(_MAX_DECODINGS):
        following = unquote_plus(decoded, errors="replace")
        if following == decoded:
            break
        decoded = following
    else:
        return REDACTED  # encoded more than eight times: no log reader needs it, and it may hide a key
    cleaned = _redact_plain(decoded)
    return piece if cleaned == decoded else quote(cleaned, safe=_VISIBLE)


def redact(text: str) -> str:
    """``text`` with every key replaced by ``[redacted]``, in whatever spelling it came."""
    if not _WORTH_A_LOOK.search(text):
        return text
    text = _redact_plain(text)
    if "%" not in text and "+" not in text:
        return text
    pieces = _PIECES.split(text)  # whitespace and quotes end a piece; the separators stay at the odd indexes
    for i in range(0, len(pieces), 2):
        if "%" in pieces[i] or "+" in pieces[i]:
            pieces[i] = _redact_encoded(pieces[i])
    return "".join(pieces)


def _redact_arg(value: Any) -> Any:
    """A record argument with its keys redacted: text as text, numbers as they are, anything else as its
    redacted ``str`` (or ``repr``) when that holds a key (the argument is formatted to text anyway)."""
    if isinstance(value, str):
        return redact(value)
    if value is None or isinstance(value, int | float):
        return value
    try:
        for text in (str(value), repr(value)):
            cleaned = redact(text)
            if cleaned != text:
                return cleaned
    except Exception:  # an object that cannot render itself is logged as logging would have logged it
        return value
    return value


def install_key_redaction() -> None:
    """Make every log record of this process redact keys (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            record.msg = _redact_arg(record.msg)
            if isinstance(record.args, tuple):
                record.args = tuple(_redact_arg(a) for a in record.args)
            elif isinstance(record.args, dict):
                record.args = {k: _redact_arg(v) for k, v in record.args.items()}
            if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
                # Formatters use exc_text when it is set: the traceback is rendered once, here, redacted.
                record.exc_text = redact("".join(traceback.format_exception(*record.exc_info)).rstrip("\n"))
            if record.stack_info:
                record.stack_info = redact(record.stack_info)
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
