"""The experiment picker: an ipywidgets view of a project's experiments, their results and verdicts.

Its state is plain attributes, so code and tests drive it without a browser::

    picker = hoglab.ExperimentPicker(client)     # shown as a widget; the newest running experiment already chosen
    picker.value = 7                             # as if experiment 7 was chosen in the box
    picker.experiment.status, picker.result.verdict, picker.recommendation, picker.table, picker.figure
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets
import pandas as pd
from matplotlib.figure import Figure

from ...client._legacy_results import explain_no_results
from ...client._metric_queries import is_metric_experiment
from ...client._metric_results import MetricExperimentResult
from ...errors import APIError, HoglabError, InvalidArgumentType
from ...stats import Comparison, PostHogFunnelVerdict, PostHogTrendVerdict, Recommendation, SRMResult, StatsError
from ..analysis import Analysis, analyse, variant_rollout
from ..plots.common import keep_inside
from ..plots.legacy import plot_experiment
from ..plots.metric import draw_metric_figure
from ..plots.srm import plot_srm
from .legacy_view import results_html
from .metric_view import exposure_srm, metric_results_html, metric_summary
from .view import message_html, summary_html

if TYPE_CHECKING:
    from ...client import Client, ExperimentResult
    from ...schema import Experiment

__all__ = ["ExperimentPicker", "pick_experiment"]

SCREEN_DPI = 96  # CSS pixels per inch: a figure of 9 inches is shown 864 pixels wide at most
DRAFT_MESSAGE = "Draft: this experiment has not been launched, so it has no results yet."


def _reason(exc: HoglabError) -> str:
    return explain_no_results(str(exc.detail)) if isinstance(exc, APIError) else str(exc)


class ExperimentPicker:
    """Choose one of the project's experiments and see its summary, results, verdict, SRM check and plot.

    It opens on the newest running experiment (the latest start; the only experiment when there is one and none
    runs; ``newest=False`` chooses nothing). The box lists the experiments (type to search by name, flag key or
    id); ``archived=True`` (or the
    "archived" checkbox) lists archived ones too; "Refresh" lists them again and recomputes the results on
    the server (``refresh=True``). When there are no results (a draft, a 400 ``no-results``, a network
    error) the message is shown instead and the picker keeps working; so is a listing that failed (no client
    configured, a service out of reach), which "Refresh" tries again.

    State, all plain attributes: ``value`` (the chosen experiment id, settable), ``experiment`` (its
    :class:`~hoglab.schema.Experiment`), ``result`` (:class:`~hoglab.ExperimentResult`), ``comparison`` (the
    Bayesian :class:`~hoglab.stats.Comparison` recomputed from the counts), ``frequentist``, ``verdict``
    (PostHog's rules by :mod:`hoglab.stats`), ``srm``, ``table`` (one row per variant, both methods side by
    side), ``recommendation`` (one reconciled verdict, :class:`~hoglab.stats.Recommendation`, shown above the
    results), ``figure`` (matplotlib) and ``error`` (the message shown instead of results, or ``None``).
    ``experiments`` is the listing (a DataFrame); ``widget`` the ipywidgets container.
    """

    def __init__(self, client: Client | None = None, *, archived: bool = False, newest: bool = True) -> None:
        from ...client import Client

        if client is not None and not isinstance(client, Client):
            raise InvalidArgumentType(
                f"client: expected a hoglab.Client, got a {type(client).__name__} "
                "(hoglab.pick_experiment(id) opens the picker on an experiment).",
                argument="client",
            )
        self._client = client
        self.experiments = pd.DataFrame()
        self._labels: dict[int, str] = {}
        self._listed = False  # whether the last listing succeeded
        self._value: int | None = None
        self._syncing = False
        self._clear()
        self.box = widgets.Combobox(
            placeholder="Type to search experiments", ensure_option=True, layout=widgets.Layout(width="32em")
        )
        self.archived_box = widgets.Checkbox(value=archived, description="archived", indent=False)
        self.refresh_button = widgets.Button(description="Refresh", icon="refresh", tooltip="recompute on the server")
        self.status = widgets.HTML()
        self.summary = widgets.HTML()
        self.results = widgets.HTML()
        # Never wider than the output area (shrunk to fit, never clipped) and never stretched past the size it was
        # drawn for: the PNG has twice the pixels (sharp on high-density screens), shown at its CSS width.
        self.plot = widgets.Image(
            format="png",
            layout=widgets.Layout(display="none", max_width="100%", height="auto", margin="0", object_fit="contain"),
        )
        self.widget = widgets.VBox(
            [
                widgets.HBox([self.box, self.archived_box, self.refresh_button]),
                self.status,
                self.summary,
                self.results,
                self.plot,
            ]
        )
        self.box.observe(self._on_box, names="value")
        self.archived_box.observe(lambda _: self.reload(), names="value")
        self.refresh_button.on_click(lambda _: self.refresh())
        self.reload()
        if newest and (chosen := self.newest()) is not None:
            self.select(chosen)

    def __repr__(self) -> str:
        return f"<ExperimentPicker {len(self._labels)} experiments, value={self._value!r}>"

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    @property
    def client(self) -> Client:
        """The client given, else :func:`hoglab.default_client` (a configuration error is shown in the picker,
        and "Refresh" tries again once ``hoglab.connect()`` or the environment provides one)."""
        if self._client is None:
            from ...client import default_client

            self._client = default_client()
        return self._client

    # -- state ------------------------------------------------------------------------------------------------

    def _clear(self) -> None:
        self.experiment: Experiment | None = None
        self.result: ExperimentResult | MetricExperimentResult | None = None
        self.metrics: pd.DataFrame | None = None
        self.comparison: Comparison | None = None
        self.frequentist: Comparison | None = None
        self.verdict: PostHogFunnelVerdict | PostHogTrendVerdict | None = None
        self.srm: SRMResult | None = None
        self.table: pd.DataFrame | None = None
        self.recommendation: Recommendation | None = None
        self.figure: Figure | None = None
        self.error: str | None = None
        self._analysis: Analysis | None = None

    @property
    def archived(self) -> bool:
        """Whether archived experiments are listed too (the checkbox)."""
        return bool(self.archived_box.value)

    @archived.setter
    def archived(self, value: bool) -> None:
        self.archived_box.value = bool(value)  # the observer lists again

    @property
    def value(self) -> int | None:
        """The chosen experiment's id; setting it chooses another (``None`` clears)."""
        return self._value

    @value.setter
    def value(self, experiment_id: int | None) -> None:
        self.select(experiment_id)

    @property
    def options(self) -> dict[int, str]:
        """The listed experiments: id -> the label shown in the box."""
        return dict(self._labels)

    def newest(self) -> int | None:
        """The experiment the picker opens on: the running one started last (the highest id among equals), else
        the only listed experiment, else ``None``."""
        listed = self.experiments
        if listed.empty:
            return None
        running = listed[listed["status"] == "running"]
        if running.empty:
            return int(listed["id"].iloc[0]) if len(listed) == 1 else None
        latest = running.sort_values(["start_date", "id"], na_position="first").iloc[-1]
        return int(latest["id"])

    # -- actions ----------------------------------------------------------------------------------------------

    def reload(self) -> None:
        """List the experiments again (archived ones too when the checkbox is ticked)."""
        try:
            self.experiments = self.client.experiments.list(archived=None if self.archived else False)
        except HoglabError as exc:
            self.experiments = pd.DataFrame()
            self._labels = {}
            self._listed = False
            self.status.value = message_html(f"Could not list the experiments: {_reason(exc)}", tone="error")
        else:
            self._listed = True
            self._labels = {int(row["id"]): _label(row) for row in self.experiments.to_dict("records")}
            count = len(self._labels)
            self.status.value = message_html(f"{count} experiment{'s' if count != 1 else ''}." if count else (
                "No experiments in this project yet."
            ))
        self._syncing = True
        try:
            self.box.options = tuple(self._labels.values())
        finally:
            self._syncing = False
        if self._value is not None and self._value not in self._labels:
            self.select(None)  # e.g. an archived experiment, once archived ones are hidden again

    def refresh(self) -> None:
        """List again and recompute the chosen experiment's results on the server (``refresh=True``)."""
        self.reload()
        if self._value is not None:
            self.select(self._value, refresh=True)

    def select(self, experiment_id: int | None, *, refresh: bool = False) -> None:
        """Choose an experiment (as setting :attr:`value` does); ``refresh`` recomputes its results."""
        if experiment_id is not None and int(experiment_id) not in self._labels:
            if not self._listed:
                raise ValueError(f"experiment {experiment_id} cannot be chosen: the experiments could not be listed")
            hint = "" if self.archived else " (archived experiments are listed with archived=True)"
            raise ValueError(f"experiment {experiment_id} is not in this project's list{hint}")
        if experiment_id is not None and int(experiment_id) == self._value and not refresh:
            return  # already chosen and shown: choosing it again asks the server nothing
        self._clear()
        self._value = None if experiment_id is None else int(experiment_id)
        self._syncing = True
        try:
            self.box.value = "" if self._value is None else self._labels[self._value]
        finally:
            self._syncing = False
        if self._value is not None:
            self._load(self._value, refresh)
        self._render()

    def _on_box(self, change: dict[str, Any]) -> None:
        if self._syncing:
            return
        text = str(change.get("new") or "")
        chosen = next((i for i, label in self._labels.items() if label == text), None)
        if chosen is not None and chosen != self._value:
            self.select(chosen)
        elif not text and self._value is not None:
            self.select(None)  # partial text while typing changes nothing

    def _load(self, experiment_id: int, refresh: bool) -> None:
        experiments = self.client.experiments
        try:
            self.experiment = experiments.get(experiment_id)
        except HoglabError as exc:
            self.error = f"Could not load experiment {experiment_id}: {_reason(exc)}"
            return
        if self.experiment.status == "draft":
            self.error = DRAFT_MESSAGE
            return
        if is_metric_experiment(self.experiment.model_dump(mode="json", by_alias=True)):
            self._load_metrics(refresh)
            return
        try:
            result = experiments.legacy_results(experiment_id, refresh=refresh)
        except HoglabError as exc:
            reason = _reason(exc)
            self.error = reason if reason.lower().startswith("no results") else f"No results: {reason}"
            return
        self.result = result = replace(result, experiment=self.experiment.model_dump(mode="json", by_alias=True))
        try:
            analysis = analyse(result, variant_rollout(self.experiment))
        except (StatsError, ValueError) as exc:
            self.error = f"These results cannot be analysed: {exc}"
            return
        self._analysis = analysis
        self.comparison, self.frequentist = analysis.comparison, analysis.frequentist
        self.verdict, self.srm, self.table = analysis.verdict, analysis.srm, analysis.table
        self.recommendation = result.recommendation
        self.figure = self._draw(result, self.srm)

    def _load_metrics(self, refresh: bool) -> None:
        # PostHog's current experiments: an ExperimentQuery per metric, the exposures, their SRM check.
        assert self.experiment is not None
        try:
            result = self.client.experiments.metric_results(self.experiment, refresh=refresh)
        except HoglabError as exc:
            self.error = f"No results: {_reason(exc)}"
            return
        self.result = result
        self.srm = exposure_srm(result, variant_rollout(self.experiment))
        self.table = result.to_frame()
        self.metrics = metric_summary(result)
        self.recommendation = result.recommendation
        self.figure = draw_metric_figure(result, self.srm)

    @staticmethod
    def _draw(result: ExperimentResult, srm: SRMResult | None) -> Figure:
        # A Figure of its own, not pyplot's: the inline backend would also show pyplot figures made in callbacks.
        # 9.5 inches: 912 CSS pixels, the width of JupyterLab's output area on a laptop; narrower areas shrink it.
        figure = Figure(figsize=(9.5, 3.6) if srm is not None else (7.5, 3.4), layout="constrained")
        if srm is None:
            plot_experiment(result, ax=figure.add_subplot())
        else:
            left, right = figure.subplots(1, 2, width_ratios=[1.7, 1])
            plot_experiment(result, ax=left)
            plot_srm(srm, ax=right)
            right.title.set_fontsize("medium")
        return keep_inside(figure)

    def _render(self) -> None:
        self.summary.value = summary_html(self.experiment) if self.experiment is not None else ""
        if self.error is not None:
            tone = "note" if self.error == DRAFT_MESSAGE else "error"
            self.results.value = message_html(self.error, tone=tone)
        elif isinstance(self.result, MetricExperimentResult):
            self.results.value = metric_results_html(self.result, self.srm)
        elif self.result is not None and self._analysis is not None:
            self.results.value = results_html(self.result, self._analysis) + self.result.health._repr_html_()
        else:
            self.results.value = ""
        if self.error is None and self.recommendation is not None:
            self.results.value = self.recommendation._repr_html_() + self.results.value
        if self.figure is None:
            self.plot.layout.display = "none"
            self.plot.value = b""
        else:
            buffer = io.BytesIO()
            self.figure.savefig(buffer, format="png", dpi=2 * SCREEN_DPI)
            self.plot.value = buffer.getvalue()
            self.plot.width = str(round(self.figure.get_figwidth() * SCREEN_DPI))  # its CSS pixels
            self.plot.layout.display = None


def _label(row: Mapping[Any, Any]) -> str:
    archived = " · archived" if pd.notna(row["archived"]) and bool(row["archived"]) else ""
    return f"{row['name']} · {row['feature_flag_key']} · {row['status']}{archived} · #{row['id']}"


def pick_experiment(
    experiment_id: int | None = None, client: Client | None = None, *, archived: bool = False
) -> ExperimentPicker:
    """An :class:`ExperimentPicker` (shown as the cell's value), with ``experiment_id`` already chosen (else the
    newest running experiment).

    An id the picker cannot choose (not in the project's list, or no list) is said in the picker, in place of
    the results, rather than raised: the picker stays usable for choosing another.

    >>> picker = hoglab.pick_experiment(7)  # doctest: +SKIP
    """
    picker = ExperimentPicker(client, archived=archived, newest=experiment_id is None)
    if experiment_id is not None:
        try:
            picker.select(experiment_id)
        except ValueError as exc:
            picker.error = str(exc)
            picker._render()
    return picker
