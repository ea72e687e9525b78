"""Saved (shared) experiment metrics over HTTP, in the shape of PostHog's
``/api/projects/{id}/experiment_saved_metrics/``.

GET    /api/projects/{project_id}/experiment_saved_metrics/        experiment:read    paged, by name
POST   /api/projects/{project_id}/experiment_saved_metrics/        experiment:write   201, the query gets a uuid
GET    /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:read
PUT    /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:write
PATCH  /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:write
DELETE /api/projects/{project_id}/experiment_saved_metrics/{id}/   experiment:write   204, unlinked everywhere

The rules are ``server/experiments/saved_metrics.py``. Experiments link saved metrics with
``saved_metrics_ids`` (``http/experiments.py``); results run through ``ExperimentQuery`` like any metric.

    curl -s -H "Authorization: Bearer $KEY" "$HOST/api/projects/1/experiment_saved_metrics/" -d '{"name": "Revenue",
         "query": {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode",
         "event": "purchase", "math": "sum", "math_property": "price"}}}'
"""

from __future__ import annotations

from hoglab.schema import (
    ExperimentSavedMetric,
    ExperimentSavedMetricCreate,
    ExperimentSavedMetricUpdate,
    Paginated,
)

from ..experiments import saved_metrics
from .crud import CrudResource, crud_router

__all__ = ["router"]

router = crud_router(
    CrudResource(
        segment="experiment_saved_metrics",
        singular="experiment saved metric",
        plural="experiment saved metrics",
        id_description="The saved metric's id.",
        model=ExperimentSavedMetric,
        page_model=Paginated[ExperimentSavedMetric],
        create_model=ExperimentSavedMetricCreate,
        update_model=ExperimentSavedMetricUpdate,
        repository=lambda store: store.saved_metrics,
        body=saved_metrics.saved_metric_body,
        create=saved_metrics.create_saved_metric,
        update=saved_metrics.update_saved_metric,
        delete=saved_metrics.delete_saved_metric,
    )
)
