"""``all_rows`` in one answer: hoglab's Arrow bulk endpoint, and the frame built from its columns.

Against hoglab, ``client.hogql(sql, all_rows=True)`` posts the statement once to ``POST /query/arrow/``, which
answers every row as an Arrow IPC stream (no 10,000-row cap; the statement's LIMIT applies). PostHog has no such
endpoint: it answers that path with a 4xx before running anything (a kind mismatch, or not found), the client
remembers that for the connection and pages with keyset or OFFSET statements as before (``_query.hogql_pages``).

The frame has the dtypes a JSON answer of the same statement gets: :func:`hoglab.frames.arrow.arrow_frame` reads
each column by the kind of its ClickHouse type, from the one table in ``hoglab/frames/columns.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import HoglabError
from ._values import encode_values

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["ARROW_STREAM", "bulk_frame"]

ARROW_STREAM = "application/vnd.apache.arrow.stream"
def _is_unsupported(error: HoglabError) -> bool:
    """The server has no bulk endpoint (PostHog): a 404/405, or PostHog reading ``arrow`` as a query kind."""
    status = getattr(error, "status", None)
    detail = str(getattr(error, "detail", "") or error)
    return status in (404, 405) or (status == 400 and "kind" in detail.lower() and "arrow" in detail.lower())


def bulk_frame(
    client: Client, sql: str, values: Mapping[str, Any] | None, *, parse_json: bool | Sequence[str] = False
) -> pd.DataFrame | None:
    """Every row of ``sql`` from hoglab's bulk endpoint; ``None`` when the server has none (then page)."""
    import pyarrow as pa

    from ..frames.arrow import arrow_frame
    from ..schema import HogQLQuery, QueryRequest
    from ._query import warn_about

    if client._bulk_rows is False:
        return None
    body = QueryRequest(query=HogQLQuery(query=sql, values=encode_values(client, values) or None)).to_json_dict()
    try:
        response = client.request("POST", client.path("query/arrow/"), json=body, idempotent=True)
    except HoglabError as error:
        if not _is_unsupported(error):
            raise
        client._bulk_rows = False
        return None
    if not response.headers.get("content-type", "").startswith(ARROW_STREAM):
        client._bulk_rows = False  # a server that answered something else: page instead
        return None
    client._bulk_rows = True
    df = arrow_frame(pa.ipc.open_stream(response.content).read_all())
    warn_about({"metadata": df.attrs.get("metadata")})  # the answer's warnings, as a JSON answer's (QueryWarning)
    if parse_json:
        from ..frames.tables import parse_json_columns

        parse_json_columns(df, parse_json)
    return df
