"""Experiment holdouts over HTTP, in the shape of PostHog's ``/api/projects/{id}/experiment_holdouts/``.

GET    /api/projects/{project_id}/experiment_holdouts/        experiment:read    paged, newest first
POST   /api/projects/{project_id}/experiment_holdouts/        experiment:write   201
GET    /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:read
PUT    /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:write
PATCH  /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:write   flags of its experiments follow
DELETE /api/projects/{project_id}/experiment_holdouts/{id}/   experiment:write   204, its experiments lose it

The rules are ``server/experiments/holdouts.py`` (PostHog's ``ee/clickhouse/views/experiment_holdouts.py``).

    curl -s -H "Authorization: Bearer $KEY" "$HOST/api/projects/1/experiment_holdouts/" \\
         -d '{"name": "Q3 holdout", "filters": [{"properties": [], "rollout_percentage": 10}]}'
"""

from __future__ import annotations

from hoglab.schema import ExperimentHoldout, ExperimentHoldoutCreate, ExperimentHoldoutUpdate, Paginated

from ..experiments import holdouts
from .crud import CrudResource, crud_router

__all__ = ["router"]

router = crud_router(
    CrudResource(
        segment="experiment_holdouts",
        singular="experiment holdout",
        plural="experiment holdouts",
        id_description="The holdout's id.",
        model=ExperimentHoldout,
        page_model=Paginated[ExperimentHoldout],
        create_model=ExperimentHoldoutCreate,
        update_model=ExperimentHoldoutUpdate,
        repository=lambda store: store.holdouts,
        body=holdouts.holdout_body,
        create=holdouts.create_holdout,
        update=holdouts.update_holdout,
        delete=holdouts.delete_holdout,
    )
)
