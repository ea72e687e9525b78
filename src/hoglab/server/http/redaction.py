"""Keys never reach a log line: personal API keys (``phx_...``) and the values of ``personal_api_key``,
``api_key`` and ``token`` query parameters are replaced by ``[redacted]`` in every record this process logs.

uvicorn's access log writes the full path with its query string (``?personal_api_key=phx_...`` is a way PostHog
accepts a key), and error messages may quote a URL. Redacting where the record is made catches every logger and
handler, whoever configures them later (uvicorn's ``dictConfig`` replaces handlers, not the record factory).

>>> redact("GET /api/projects/?personal_api_key=phx_abcdefgh1234&limit=5 HTTP/1.1")
'GET /api/projects/?personal_api_key=[redacted]&limit=5 HTTP/1.1'
>>> redact("Authorization: Bearer phx_abcdefgh1234")
'Authorization: Bearer phx_[redacted]'
>>> redact("/batch/?token=phc_x&api_key=phc_y")
'/batch/?token=[redacted]&api_key=[redacted]'
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

__all__ = ["install_key_redaction", "redact"]

_QUERY_KEY = re.compile(r"(?i)((?:personal_api_key|api_key|token)(?:=|%3D))[^&\s\"']+")
_PERSONAL_KEY = re.compile(r"phx_[A-Za-z0-9_\-]{4,}")
_lock = threading.Lock()
_installed = False


def redact(text: str) -> str:
    """``text`` with every key replaced by ``[redacted]``."""
    if "phx_" not in text and "=" not in text:  # the common case: nothing to look for
        return text
    return _PERSONAL_KEY.sub("phx_[redacted]", _QUERY_KEY.sub(r"\1[redacted]", text))


def _redact_arg(value: Any) -> Any:
    return redact(value) if isinstance(value, str) else value


def install_key_redaction() -> None:
    """Make every log record of this process redact keys (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if isinstance(record.msg, str):
                record.msg = redact(record.msg)
            if isinstance(record.args, tuple):
                record.args = tuple(_redact_arg(a) for a in record.args)
            elif isinstance(record.args, dict):
                record.args = {k: _redact_arg(v) for k, v in record.args.items()}
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
