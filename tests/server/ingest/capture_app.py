"""A minimal service around the capture router, for tests that need a real process (SIGKILL, real SDKs).

    python capture_app.py DATA_DIR PORT phc_token=PROJECT_ID [...]

It mounts ``hoglab.server.http.capture.router`` with PostHog's error handlers, the chDB engine on ``DATA_DIR``
and a stand-in for the project store (``get_by_token``). ``GET /_events?project=N`` lists stored
event uuids (a test aid, not part of the API).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import SimpleNamespace

import uvicorn
from fastapi import FastAPI

from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.http.capture import router
from hoglab.server.http.errors import install_error_handlers


@dataclass
class _Project:
    id: int


class _Projects:
    def __init__(self, tokens: dict[str, int]) -> None:
        self.tokens = tokens

    def get_by_token(self, token: str) -> _Project | None:
        project = self.tokens.get(token)
        return _Project(project) if project is not None else None


def make_app(engine: ChdbEngine, tokens: dict[str, int]) -> FastAPI:
    app = FastAPI()
    install_error_handlers(app)
    app.include_router(router)
    app.state.hoglab = SimpleNamespace(engine=engine, store=SimpleNamespace(projects=_Projects(tokens)))

    @app.get("/_events")
    def events(project: int) -> list[str]:
        rows = engine.execute(f"SELECT toString(uuid) AS u FROM events WHERE team_id = {int(project)}")
        return [str(u) for u in rows.column("u").to_pylist()]

    return app


def main(argv: list[str]) -> None:
    data_dir, port, *pairs = argv
    tokens = {token: int(project) for token, _, project in (pair.partition("=") for pair in pairs)}
    engine = ChdbEngine(data_dir)
    uvicorn.run(make_app(engine, tokens), host="127.0.0.1", port=int(port), log_level="warning")


if __name__ == "__main__":
    main(sys.argv[1:])
