"""Error answers become the right exception: chosen by the body's type/code first, then by status."""

from __future__ import annotations

import pickle

import httpx
import pytest
from clienttesting import Remote

import hoglab
from hoglab.client import Client
from hoglab.client._errors import error_from_response


def _response(
    status: int, body: object = None, path: str = "/api/projects/2/experiments/", **headers: str
) -> httpx.Response:
    request = httpx.Request("GET", f"https://h{path}")
    if body is None:
        return httpx.Response(status, request=request, headers=headers)
    return httpx.Response(status, json=body, request=request, headers=headers)


def _body(type_: str, code: str, detail: str = "x", attr: str | None = None) -> dict[str, object]:
    return {"type": type_, "code": code, "detail": detail, "attr": attr}


@pytest.mark.parametrize(
    ("status", "body", "expected", "builtin"),
    [
        (401, _body("authentication_error", "not_authenticated"), hoglab.AuthenticationError, None),
        (403, _body("authentication_error", "authentication_failed"), hoglab.AuthenticationError, None),
        (403, _body("authentication_error", "permission_denied"), hoglab.PermissionDenied, PermissionError),
        (401, _body("authentication_error", "permission_denied"), hoglab.PermissionDenied, PermissionError),
        (404, _body("invalid_request", "not_found"), hoglab.NotFound, LookupError),
        (400, _body("validation_error", "invalid_input", attr="name"), hoglab.ValidationError, ValueError),
        (429, _body("throttled_error", "throttled"), hoglab.RateLimited, None),
        (500, _body("server_error", "error"), hoglab.ServerError, None),
        (503, None, hoglab.ServerError, None),
        (402, _body("invalid_request", "quota_limit_exceeded"), hoglab.APIError, None),
    ],
)
def test_error_class(status: int, body: object, expected: type, builtin: type | None) -> None:
    err = error_from_response(_response(status, body))
    assert type(err) is expected
    assert err.status == status
    if builtin is not None:
        assert isinstance(err, builtin)


def test_query_endpoint_400_is_a_query_error_with_its_fields() -> None:
    body = _body("validation_error", "syntax_error", "Syntax error at line 1, column 8", attr="query")
    err = error_from_response(_response(400, body, path="/api/projects/2/query/"), query_endpoint=True)
    assert (
        isinstance(err, hoglab.QueryError) and isinstance(err, hoglab.ValidationError) and isinstance(err, ValueError)
    )
    assert (err.type, err.code, err.detail, err.attr) == ("validation_error", "syntax_error", body["detail"], "query")
    assert err.path == "/api/projects/2/query/" and err.method == "GET"
    assert "Syntax error at line 1" in str(err)


def test_rate_limited_reads_retry_after_and_request_id() -> None:
    err = error_from_response(
        _response(429, _body("throttled_error", "throttled"), **{"Retry-After": "27", "X-Request-Id": "r1"})
    )
    assert isinstance(err, hoglab.RateLimited)
    assert err.retry_after == 27.0 and err.request_id == "r1"


def test_non_json_error_keeps_a_short_detail() -> None:
    request = httpx.Request("GET", "https://h/x")
    err = error_from_response(httpx.Response(502, text="<html>" + "x" * 1000, request=request))
    assert isinstance(err, hoglab.ServerError)
    assert len(err.detail) <= 300


def test_failed_async_status_carries_the_error_message() -> None:
    body = {
        "query_status": {"id": "q", "team_id": 2, "error": True, "complete": True, "error_message": "Unknown table"}
    }
    err = error_from_response(_response(400, body, path="/api/projects/2/query/q/"), query_endpoint=True)
    assert isinstance(err, hoglab.QueryError) and err.detail == "Unknown table"


def test_errors_pickle_with_their_fields() -> None:
    err = hoglab.RateLimited(429, retry_after=3.0, detail="slow down", method="POST", path="/q")
    copy = pickle.loads(pickle.dumps(err))
    assert type(copy) is hoglab.RateLimited
    assert (copy.retry_after, copy.detail, str(copy)) == (3.0, "slow down", str(err))


def test_hierarchy_is_rooted() -> None:
    for name in hoglab.errors.__all__:
        assert issubclass(getattr(hoglab.errors, name), hoglab.HoglabError)
    assert issubclass(hoglab.InvalidArgumentType, TypeError) and issubclass(hoglab.InvalidArgumentType, ValueError)
    assert issubclass(hoglab.TransportError, ConnectionError)
    assert issubclass(hoglab.QueryTimeout, TimeoutError)


def test_client_raises_mapped_error(client: Client, remote: Remote) -> None:
    """Mocks a REMOTE PostHog answering 404 for an unknown experiment."""
    remote.add("GET", "/api/projects/2/experiments/9/", httpx.Response(404, json=_body("invalid_request", "not_found")))
    with pytest.raises(hoglab.NotFound):
        client.experiments.get(9)
