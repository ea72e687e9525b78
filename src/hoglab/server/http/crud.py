"""One router for a project's plain resource: list (paged), create, retrieve, update, replace and delete.

Experiment holdouts and saved metrics are the same six endpoints over different rules; :func:`crud_router` writes
them once from a :class:`CrudResource` (its store, its rules, its schema models):

GET    {base}        experiment:read    paged: ``{count, next, previous, results}``
POST   {base}        experiment:write   201
GET    {base}{id}/   experiment:read
PUT    {base}{id}/   experiment:write   the whole object: ``name`` is required
PATCH  {base}{id}/   experiment:write
DELETE {base}{id}/   experiment:write   204

Every answer names its creator (``created_by``), read from the users store. OpenAPI operation ids are the
endpoints' names (``app.py``): they are built from the resource's names, as PostHog's (``list_experiment_holdouts``,
``create_experiment_holdout``, ...).

This module does not use postponed annotations: FastAPI reads the endpoints' annotations, and the id parameter's
(its description varies by resource) is local to :func:`crud_router`, where a string could not be resolved.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Generic, Protocol, TypeVar

from fastapi import Depends, Path, Query, Request, Response
from pydantic import BaseModel

from ..errors import NotFound
from ..state import ServiceState, get_state
from ..store import Store, UserRecord
from ..validation import MAX_ID, char_field
from .auth import AuthContext, require_scope
from .bodies import clamp_page, json_body_openapi, page_links, parse_json_object, raw_body
from .routing import SlashRouter

__all__ = ["CrudResource", "crud_router"]


class _Record(Protocol):
    @property
    def created_by_id(self) -> int | None: ...


R = TypeVar("R", bound=_Record)
R_co = TypeVar("R_co", bound=_Record, covariant=True)


class _Page(Protocol[R_co]):
    @property
    def total(self) -> int: ...

    @property
    def results(self) -> Sequence[R_co]: ...


class _Repository(Protocol[R_co]):
    """What the router reads directly from the store; writes go through the resource's rules."""

    def get(self, team_id: int, id: int, /) -> R_co | None: ...

    def list(self, team_id: int, *, limit: int = ..., offset: int = ...) -> _Page[R_co]: ...


@dataclass(frozen=True)
class CrudResource(Generic[R]):
    """A resource under ``/api/projects/{project_id}/<segment>/``.

    ``singular``/``plural`` ("experiment holdout"/"experiment holdouts") name the summaries and, with underscores,
    the operation ids. ``create``/``update``/``delete`` are the resource's rules (validation, side effects);
    ``update`` and ``delete`` answer ``None``/``False`` when there is no such record (a 404).

    >>> resource = CrudResource(segment="experiment_holdouts", singular="experiment holdout", ...)  # doctest: +SKIP
    >>> router = crud_router(resource)  # doctest: +SKIP
    """

    segment: str
    singular: str
    plural: str
    id_description: str
    model: type[BaseModel]
    page_model: type[BaseModel]
    create_model: type[BaseModel]
    update_model: type[BaseModel]
    repository: Callable[[Store], _Repository[R]]
    body: Callable[[R, UserRecord | None], dict[str, Any]]
    create: Callable[[Store, int, int | None, Mapping[str, Any]], R]
    update: Callable[[Store, int, int, Mapping[str, Any]], R | None]
    delete: Callable[[Store, int, int], bool]


Read = Annotated[AuthContext, Depends(require_scope("experiment:read"))]
Write = Annotated[AuthContext, Depends(require_scope("experiment:write"))]
State = Annotated[ServiceState, Depends(get_state)]
Body = Annotated[bytes, Depends(raw_body)]
Limit = Annotated[int | None, Query(ge=1, description="Results per page (default 100, at most 1000).")]
Offset = Annotated[int | None, Query(ge=0, description="Initial index from which results are returned.")]


def crud_router(resource: CrudResource[R]) -> SlashRouter:
    """The six endpoints of ``resource``, on a router tagged with its segment."""
    router = SlashRouter(tags=[resource.segment])
    base = f"/api/projects/{{project_id}}/{resource.segment}/"
    one, many = resource.singular, resource.plural
    name, names = one.replace(" ", "_"), many.replace(" ", "_")
    Id = Annotated[int, Path(ge=1, le=MAX_ID, description=resource.id_description)]

    def answer(state: ServiceState, record: R) -> dict[str, Any]:
        user = state.store.users.get(record.created_by_id) if record.created_by_id is not None else None
        return resource.body(record, user)

    def list_(request: Request, auth: Read, state: State, limit: Limit = None, offset: Offset = None) -> dict[str, Any]:
        page_limit, page_offset = clamp_page(limit, offset)
        page = resource.repository(state.store).list(auth.project.id, limit=page_limit, offset=page_offset)
        following, previous = page_links(request.url, total=page.total, limit=page_limit, offset=page_offset)
        return {"count": page.total, "next": following, "previous": previous,
                "results": [answer(state, record) for record in page.results]}  # fmt: skip

    def create(request: Request, auth: Write, state: State, raw: Body) -> dict[str, Any]:
        data = parse_json_object(raw, request.headers.get("content-type"))
        return answer(state, resource.create(state.store, auth.project.id, auth.user.id, data))

    def retrieve(auth: Read, state: State, id: Id) -> dict[str, Any]:
        record = resource.repository(state.store).get(auth.project.id, id)
        if record is None:
            raise NotFound()
        return answer(state, record)

    def change(request: Request, auth: AuthContext, state: ServiceState, id: int, raw: bytes, *, full: bool) -> Any:
        data = parse_json_object(raw, request.headers.get("content-type"))
        if full:
            char_field(data, "name", required=True, nullable=False)  # PUT: the whole object; name is its one required
        updated = resource.update(state.store, auth.project.id, id, data)
        if updated is None:
            raise NotFound()
        return answer(state, updated)

    def update(request: Request, auth: Write, state: State, id: Id, raw: Body) -> Any:
        return change(request, auth, state, id, raw, full=False)

    def replace(request: Request, auth: Write, state: State, id: Id, raw: Body) -> Any:
        return change(request, auth, state, id, raw, full=True)

    def delete(auth: Write, state: State, id: Id) -> Response:
        if not resource.delete(state.store, auth.project.id, id):
            raise NotFound()
        return Response(status_code=204)

    router.add_api_route(base, list_, methods=["GET"], name=f"list_{names}", response_model=resource.page_model,
                         summary=f"List {many}")  # fmt: skip
    router.add_api_route(base, create, methods=["POST"], name=f"create_{name}", status_code=201,
                         response_model=resource.model, summary=f"Create {one}",
                         openapi_extra=json_body_openapi(resource.create_model))  # fmt: skip
    router.add_api_route(base + "{id}/", retrieve, methods=["GET"], name=f"retrieve_{name}",
                         response_model=resource.model, summary=f"Retrieve {one}")  # fmt: skip
    router.add_api_route(base + "{id}/", update, methods=["PATCH"], name=f"update_{name}",
                         response_model=resource.model, summary=f"Update {one}",
                         openapi_extra=json_body_openapi(resource.update_model))  # fmt: skip
    router.add_api_route(base + "{id}/", replace, methods=["PUT"], name=f"replace_{name}",
                         response_model=resource.model, summary=f"Replace {one}",
                         openapi_extra=json_body_openapi(resource.create_model))  # fmt: skip
    router.add_api_route(base + "{id}/", delete, methods=["DELETE"], name=f"delete_{name}", status_code=204,
                         response_class=Response, summary=f"Delete {one}")  # fmt: skip
    return router
