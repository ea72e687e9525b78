"""Same question, same answer as PostHog: PostHog's own source as the oracle (issue 33).

Each case is a question PostHog answers, taken from PostHog's source (``functions.txt``: every function name of
its HogQL lists; ``hogql.toml``: the assertions of ``posthog/hogql/test/test_query.py`` and the printer's tests;
``insights.toml``: query-runner tests whose fixtures are plain events and persons; ``experiments.toml``: the
``ExperimentQuery`` and ``ExperimentExposureQuery`` runners' tests, their feature flag, experiment and actions
created through the API). Each is asked of a real hoglab service over HTTP (the session's service, real chDB) and
classified:

* ``equal``: hoglab answers what PostHog answers;
* ``different``: hoglab answers something else (the worst kind: a number, no warning);
* ``refused``: hoglab answers an error (its text is kept).

What PostHog answers is either written in the data (values PostHog's tests assert) or, for a function call,
what ClickHouse answers for the ClickHouse SQL PostHog's printer sends (``functions.txt``'s third column), run
on the engine directly, past hoglab's compiler.

Cases hoglab does not yet answer like PostHog are listed in ``known.toml`` (outcome and reason) and run as strict
expected failures, so ``make test`` stays green and a case that starts answering like PostHog fails until its
entry goes. ``HOGLAB_CONFORMANCE_WRITE=1`` rewrites ``known.toml`` and the table in docs/hogql.md from a run.
The totals are printed at the end of the run (tests/conftest.py ``pytest_terminal_summary``).
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import re
import time
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hoglab.local import LocalService

pytestmark = pytest.mark.xdist_group("conformance")

HERE = Path(__file__).resolve().parent
DOCS = HERE.parents[1] / "docs" / "hogql.md"
KNOWN = HERE / "known.toml"
WRITE = os.environ.get("HOGLAB_CONFORMANCE_WRITE") == "1"
POSTHOG_SETTINGS = {"transform_null_in": 1}  # what PostHog's printer sets that can change a value
MACROS = {
    "$T": ("toDateTime(1710510330)", "toDateTime(1710510330, 'UTC')"),
    "$D": ("toDate(toDateTime(1710510330))", "toDate(toDateTime(1710510330, 'UTC'))"),
    "$U": ("'https://www.example.com:8080/a/b?x=1&y=2#frag'",) * 2,
}
BATCH = 60
MISSING: Any = object()


@dataclass(frozen=True)
class Case:
    """One question PostHog answers, and where in PostHog's source it comes from."""

    id: str
    source: str  # PostHog's file
    test: str  # PostHog's test (or list) asserting it
    kind: str  # "expr" | "agg" | "query" | "hogql" | "insight" | "experiment"
    hogql: str = ""  # the HogQL (an expression for expr/agg)
    clickhouse: str = ""  # PostHog's ClickHouse form (the oracle runs it)
    expect: Any = MISSING  # PostHog's answer, when written in the data
    compare: str = "value"  # "value" | "type" | "cells" | "rows>=" | "paths"
    error: bool = False  # PostHog answers an error: hoglab conforms with a 400
    app: str = ""  # needs PostHog itself (why)
    fixture: str = ""
    request: dict[str, Any] = field(default_factory=dict)  # extra HogQLQuery fields, or the insight query
    experiment: dict[str, Any] = field(default_factory=dict)  # the experiment (and its flag) an ExperimentQuery reads
    actions: dict[str, Any] = field(default_factory=dict)  # actions to create first: name -> steps


@dataclass
class Outcome:
    kind: str  # "equal" | "different" | "refused"
    detail: str = ""


# ---------------------------------------------------------------------------------------------------- the data


def _expand(text: str, side: int) -> str:
    for macro, forms in MACROS.items():
        text = text.replace(macro, forms[side])
    return text


def function_cases() -> list[Case]:
    """``functions.txt``: one case per name of PostHog's function lists."""
    cases: list[Case] = []
    source = ""
    seen: set[str] = set()
    for line in (HERE / "functions.txt").read_text().splitlines():
        if line.startswith("# file:"):
            source = line.split(":", 1)[1].strip()
            continue
        if not line.strip() or line.startswith("#"):
            continue
        parts = [p.strip() for p in re.split(r"(?<= )\|(?= |$)", line)]
        name, call = parts[0], parts[1]
        ch = parts[2] if len(parts) > 2 and parts[2] else call
        flags = parts[3] if len(parts) > 3 else ""
        assert name not in seen, f"functions.txt names {name} twice"
        seen.add(name)
        expect: Any = MISSING
        app = ""
        if "app=" in flags:
            flags, app = flags.split("app=", 1)
        if "value=" in flags:
            flags, raw = flags.split("value=", 1)
            expect = json.loads(raw)
        words = flags.split()
        kind = "agg" if "agg" in words else "query" if "query" in words else "expr"
        cases.append(
            Case(
                id=f"fn/{name}", source=source, test=name, kind=kind, hogql=_expand(call, 0),
                clickhouse=_expand(ch, 1), expect=expect, compare="type" if "type" in words else "value",
                error="error" in words, app=app.strip(),
            )
        )  # fmt: skip
    return cases


def toml_cases(file: str) -> list[Case]:
    """``hogql.toml`` / ``insights.toml`` / ``experiments.toml``: cases with PostHog's asserted answers."""
    data = tomllib.loads((HERE / file).read_text())
    cases = []
    for entry in data.get("case", []):
        expect = json.loads(entry["expect"]) if "expect" in entry else MISSING
        cases.append(
            Case(
                id=entry["id"], source=entry["source"], test=entry["test"], kind=entry.get("kind", "hogql"),
                hogql=entry.get("query", ""), expect=expect, compare=entry.get("compare", "value"),
                error=entry.get("error", False), app=entry.get("app", ""), fixture=entry.get("fixture", ""),
                request=json.loads(entry["request"]) if "request" in entry else {},
                experiment=json.loads(entry["experiment"]) if "experiment" in entry else {},
                actions=json.loads(entry["actions"]) if "actions" in entry else {},
            )
        )  # fmt: skip
    return cases


def all_cases() -> tuple[list[Case], dict[str, list[dict[str, Any]]]]:
    """Every case, and the fixtures (``fixtures.json``: PostHog's test events by name, in capture's shape)."""
    cases = function_cases()
    for file in ("hogql.toml", "insights.toml", "experiments.toml"):
        if (HERE / file).exists():
            cases += toml_cases(file)
    ids = [c.id for c in cases]
    assert len(ids) == len(set(ids)), "case ids must be unique"
    fixtures = json.loads((HERE / "fixtures.json").read_text())
    missing = {c.fixture for c in cases if c.fixture} - fixtures.keys()
    assert not missing, f"cases name fixtures that fixtures.json lacks: {missing}"
    return cases, fixtures


def known() -> dict[str, dict[str, str]]:
    if not KNOWN.exists():
        return {}
    return dict(tomllib.loads(KNOWN.read_text()).get("known", {}))


CASES, FIXTURES = all_cases()
KNOWN_CASES = known()


# ---------------------------------------------------------------------------------------------------- comparing

_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$")


def normal(value: Any) -> Any:
    """One spelling per value: booleans as 0/1 (PostHog's Python answers compare True == 1), datetimes as UTC
    instants, decimals as numbers, tuples as lists."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, list | tuple):
        return [normal(v) for v in value]
    if isinstance(value, dict):
        return {k: normal(v) for k, v in value.items()}
    if isinstance(value, str) and _ISO.match(value):
        parsed = dt.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=dt.UTC)
        return parsed.astimezone(dt.UTC).isoformat()
    return value


def same(a: Any, b: Any) -> bool:
    a, b = normal(a), normal(b)
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b or math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    if (isinstance(a, str) and isinstance(b, int | float)) or (isinstance(b, str) and isinstance(a, int | float)):
        try:  # a Decimal PostHog's test writes as text, a number in JSON
            return math.isclose(float(a), float(b), rel_tol=1e-9)
        except ValueError:
            return False
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return bool(a == b)


def short(value: Any, n: int = 160) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= n else text[: n - 1] + "…"


# ---------------------------------------------------------------------------------------------------- asking


class Service:
    """The session's hoglab service, a project per fixture, and the engine for the oracle."""

    def __init__(self, service: LocalService) -> None:
        self.service = service
        self.projects: dict[str, tuple[int, dict[str, str]]] = {}
        self.made: dict[tuple[str, str, str], int] = {}  # (fixture, "experiment"|"action", key) -> id
        self.http = httpx.Client(base_url=service.url, timeout=120)

    def project(self, fixture: str) -> tuple[int, dict[str, str]]:
        """The project of a fixture (its events captured, and arrived) and the headers of a key to it."""
        if fixture not in self.projects:
            store = self.service.state.store
            record = store.projects.create(f"conformance {fixture or 'empty'}")
            _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="conformance")
            self.projects[fixture] = (record.id, {"Authorization": f"Bearer {key}"})
            events = FIXTURES.get(fixture, []) if fixture else []
            if events:
                sent = self.http.post("/batch/", json={"api_key": record.api_token, "batch": events})
                assert sent.status_code == 200, sent.text
                self._wait(fixture, len(events))
        return self.projects[fixture]

    def _wait(self, fixture: str, n: int) -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, body = self.hogql("SELECT count() FROM events", fixture)
            if status == 200 and body["results"][0][0] >= n:
                return
            time.sleep(0.05)
        raise AssertionError(f"the fixture's {n} events did not arrive")

    def ask(self, query: dict[str, Any], fixture: str = "") -> tuple[int, dict[str, Any]]:
        project, headers = self.project(fixture)
        body = {"query": query, "refresh": "force_blocking"}
        answer = self.http.post(f"/api/projects/{project}/query/", json=body, headers=headers)
        try:
            body = answer.json()
        except ValueError:
            body = {"detail": answer.text}
        return answer.status_code, body

    def _make(self, fixture: str, what: str, key: str, body: dict[str, Any]) -> int:
        """An experiment (with its flag) or an action in the fixture's project, made once through the API."""
        if (fixture, what, key) not in self.made:
            project, headers = self.project(fixture)
            made = self.http.post(f"/api/projects/{project}/{what}s/", json=body, headers=headers)
            assert made.status_code == 201, made.text
            self.made[fixture, what, key] = made.json()["id"]
        return self.made[fixture, what, key]

    def experiment(self, case: Case) -> tuple[int, dict[str, Any]]:
        """The case's query (an ``ExperimentQuery`` or ``ExperimentExposureQuery``) on its experiment, the
        experiment (with its flag) and the actions it names made first."""
        ids = {name: self._make(case.fixture, "action", name, {"name": name, "steps": steps})
               for name, steps in case.actions.items()}  # fmt: skip
        key = case.experiment["feature_flag_key"]
        body = {"name": f"PostHog's {case.test}", **case.experiment}
        query = {**case.request, "experiment_id": self._make(case.fixture, "experiment", key, body)}
        text = json.dumps(query)
        for name, action_id in ids.items():
            text = text.replace(json.dumps(f"$action:{name}"), str(action_id))
        return self.ask(json.loads(text), case.fixture)

    def hogql(self, sql: str, fixture: str = "", **fields: Any) -> tuple[int, dict[str, Any]]:
        return self.ask({"kind": "HogQLQuery", "query": sql, **fields}, fixture)

    def raw(self, sql: str) -> tuple[list[Any], list[str]] | str:
        """ClickHouse's answer to PostHog's form, on the engine itself: rows and types, or the error text."""
        engine = self.service.state.engine
        assert engine is not None
        try:
            result = engine.execute_json(sql, settings=POSTHOG_SETTINGS)
        except Exception as exc:
            return str(exc)
        return orjson.loads(result.data or b"[]"), result.types


def _select(exprs: list[str], agg: bool) -> str:
    cols = ", ".join(f"{e} AS c{i}" for i, e in enumerate(exprs))
    return f"SELECT {cols}" + (" FROM numbers(10)" if agg else "")


def _batched(cases: list[Case], ask: Any) -> dict[str, Any]:
    """Ask expressions many at a time (one statement per batch); a batch that fails is asked one by one."""
    out: dict[str, Any] = {}
    for agg in (False, True):
        group = [c for c in cases if c.kind == ("agg" if agg else "expr")]
        for start in range(0, len(group), BATCH):
            chunk = group[start : start + BATCH]
            answer = ask(chunk, agg)
            if answer is not None:
                out.update(answer)
                continue
            for case in chunk:
                out.update(ask([case], agg) or {})
    return out


def _refusal(status: int, body: dict[str, Any]) -> str:
    return f"{status}: {body.get('detail') or body}"


def run_all(service: Service) -> dict[str, Outcome]:
    """Every case's outcome (the oracle first, then hoglab)."""
    outcomes: dict[str, Outcome] = {}
    expected: dict[str, Any] = {}

    # PostHog's answers to function calls: ClickHouse on PostHog's form
    oracle_cases = [c for c in CASES if c.kind in ("expr", "agg", "query") and c.expect is MISSING and not c.app]

    def ask_raw(chunk: list[Case], agg: bool) -> dict[str, Any] | None:
        got = service.raw(_select([c.clickhouse for c in chunk], agg))
        if isinstance(got, str):
            return {chunk[0].id: ("error", got)} if len(chunk) == 1 else None
        rows, types = got
        return {c.id: ("ok", rows[0][i], types[i]) for i, c in enumerate(chunk)}

    expected.update(_batched(oracle_cases, ask_raw))
    for case in oracle_cases:
        if case.kind == "query":
            got = service.raw(case.clickhouse)
            expected[case.id] = ("error", got) if isinstance(got, str) else ("ok", got[0], got[1])

    # hoglab's answers
    def ask_hoglab(chunk: list[Case], agg: bool) -> dict[str, Any] | None:
        status, body = service.hogql(_select([c.hogql for c in chunk], agg))
        if status != 200:
            return {chunk[0].id: ("refused", _refusal(status, body))} if len(chunk) == 1 else None
        row, types = body["results"][0], [t for _, t in body["types"]]
        return {c.id: ("ok", row[i], types[i]) for i, c in enumerate(chunk)}

    plain = [c for c in CASES if c.kind in ("expr", "agg")]
    likely = [c for c in plain if c.id not in KNOWN_CASES]
    answers = _batched(likely, ask_hoglab)
    for case in (c for c in plain if c.id in KNOWN_CASES):
        answers.update(ask_hoglab([case], case.kind == "agg") or {})
    for case in CASES:
        if case.kind == "query":
            status, body = service.hogql(case.hogql)
            answers[case.id] = (
                ("ok", body["results"], [t for _, t in body["types"]]) if status == 200
                else ("refused", _refusal(status, body))
            )  # fmt: skip
        elif case.kind == "hogql":
            status, body = service.hogql(case.hogql, case.fixture, **case.request)
            answers[case.id] = ("ok", body.get("results"), []) if status == 200 else ("refused", _refusal(status, body))
        elif case.kind in ("insight", "experiment"):
            status, body = (service.experiment(case) if case.kind == "experiment"
                            else service.ask(case.request, case.fixture))  # fmt: skip
            answers[case.id] = ("ok", body, []) if status == 200 else ("refused", _refusal(status, body))

    for case in CASES:
        outcomes[case.id] = classify(case, answers[case.id], expected.get(case.id))
    return outcomes


def classify(case: Case, answer: tuple[Any, ...], oracle: tuple[Any, ...] | None) -> Outcome:
    if oracle is not None and oracle[0] == "error" and not case.error:
        return Outcome("broken", f"ClickHouse refuses PostHog's form {case.clickhouse!r}: {oracle[1][:300]}")
    if answer[0] == "refused":
        if case.error and answer[1].startswith("400"):
            return Outcome("equal", "refused, as PostHog cannot answer it either")
        return Outcome("refused", answer[1])
    got, got_types = answer[1], answer[2]
    if case.app:
        return Outcome("different", f"answered {short(got)}; PostHog's answer needs {case.app}")
    if case.error:
        return Outcome("different", f"answered {short(got)}; PostHog cannot answer this call")
    if case.expect is not MISSING:
        want: Any = case.expect
    else:
        assert oracle is not None, case.id
        want = oracle[1]
        if case.compare == "type":
            types = oracle[2] if case.kind != "query" else oracle[2][0]
            mine = got_types if case.kind != "query" else got_types[0]
            return Outcome("equal") if types == mine else Outcome("different", f"type {mine}, PostHog's {types}")
    if case.compare == "cells":
        for row, col, value in want:
            if not got or len(got) <= row or len(got[row]) <= col or not same(got[row][col], value):
                cell = got[row][col] if got and len(got) > row and len(got[row]) > col else "(none)"
                return Outcome("different", f"cell [{row}][{col}] is {short(cell)}, PostHog's {short(value)}")
        return Outcome("equal")
    if case.compare == "rows>=":
        return Outcome("equal") if len(got) >= want else Outcome("different", f"{len(got)} rows, PostHog ≥ {want}")
    if case.compare == "paths":
        for path, value in want:
            mine = _at(got, path)
            if mine is MISSING or not same(mine, value):
                return Outcome("different", f"{path} is {short(None if mine is MISSING else mine)}, "
                                            f"PostHog's {short(value)}")  # fmt: skip
        return Outcome("equal")
    return Outcome("equal") if same(got, want) else Outcome("different", f"{short(got)}, PostHog's {short(want)}")


def _at(value: Any, path: str) -> Any:
    """The part of an answer at a dotted path (``results.0.data``; ``length`` of a list; ``#`` every element, in
    order: PostHog's ``pluck``; ``*`` every element, the values sorted: an assertion on a set; ``?key=<json>`` the
    first element whose ``key`` is that value: PostHog's lookup by breakdown value)."""
    head, each, rest = path.partition(".#.")
    if each and "*" not in head:
        items = _at(value, head)
        if not isinstance(items, list):
            return MISSING
        found = [_at(item, rest) for item in items]
        return MISSING if any(f is MISSING for f in found) else found
    head, star, rest = path.partition(".*.")
    if star:
        items = _at(value, head)
        if not isinstance(items, list):
            return MISSING
        found = [_at(item, rest) for item in items]
        return MISSING if MISSING in found else sorted(found, key=json.dumps)
    for part in path.split("."):
        if isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part == "length":
            value = len(value)
        elif isinstance(value, list) and part.startswith("?") and "=" in part:
            key, wanted = part[1:].split("=", 1)
            value = next((item for item in value if isinstance(item, dict) and item.get(key) == json.loads(wanted)),
                         MISSING)  # fmt: skip
            if value is MISSING:
                return MISSING
        else:
            return MISSING
    return value


# ---------------------------------------------------------------------------------------------------- the suite


@pytest.fixture(scope="session")
def outcomes(hoglab_service: LocalService) -> Iterator[dict[str, Outcome]]:
    service = Service(hoglab_service)
    try:
        found = run_all(service)
        if WRITE:
            write_known(found)
            write_docs(found)
        yield found
    finally:
        service.http.close()


def _params() -> list[Any]:
    params = []
    for case in CASES:
        marks = []
        entry = KNOWN_CASES.get(case.id)
        if entry and not WRITE:
            reason = f"{entry['outcome']}: {entry['reason']}"
            marks.append(pytest.mark.xfail(strict=True, raises=NotAsPostHog, reason=reason))
        params.append(pytest.param(case, id=case.id, marks=marks))
    return params


class NotAsPostHog(AssertionError):
    """hoglab's answer is not PostHog's."""


@pytest.mark.parametrize("case", _params())
def test_case(case: Case, outcomes: dict[str, Outcome], record_property: Any) -> None:
    outcome = outcomes[case.id]
    if outcome.kind == "broken":  # the case's data is wrong: PostHog's form of the call fails on ClickHouse
        raise AssertionError(f"{case.id}: {outcome.detail}")
    record_property("conformance", outcome.kind)
    entry = KNOWN_CASES.get(case.id)
    if entry and outcome.kind != "equal" and entry["outcome"] != outcome.kind:
        raise AssertionError(f"known.toml says {entry['outcome']}, the run says {outcome.kind}: {outcome.detail}")
    if outcome.kind != "equal":
        raise NotAsPostHog(f"{outcome.kind} ({case.source} {case.test}): {outcome.detail}")


def test_docs_table_is_current() -> None:
    """docs/hogql.md's conformance table is the one known.toml and the cases make."""
    text = DOCS.read_text()
    start, end = text.index(DOCS_START), text.index(DOCS_END)
    assert text[start:end] == docs_section(KNOWN_CASES), "run with HOGLAB_CONFORMANCE_WRITE=1 to regenerate"


# ---------------------------------------------------------------------------------------------------- writing

DOCS_START = "<!-- conformance: generated by tests/conformance (HOGLAB_CONFORMANCE_WRITE=1) -->"
DOCS_END = "<!-- conformance: end -->"


def _known_from(found: dict[str, Outcome]) -> dict[str, dict[str, str]]:
    kept = ("different", "refused")
    return {cid: {"outcome": o.kind, "reason": o.detail} for cid, o in found.items() if o.kind in kept}


def write_known(found: dict[str, Outcome]) -> None:
    lines = ["# Cases hoglab does not (yet) answer like PostHog: strict expected failures of test_conformance.py.",
             "# Generated from a run with HOGLAB_CONFORMANCE_WRITE=1; an entry goes when its case answers as PostHog.",
             "", "[known]"]  # fmt: skip
    for cid, entry in sorted(_known_from(found).items()):
        lines.append(f"{json.dumps(cid)} = {{ outcome = {json.dumps(entry['outcome'])}, "
                     f"reason = {json.dumps(entry['reason'], ensure_ascii=False)} }}")  # fmt: skip
    KNOWN.write_text("\n".join(lines) + "\n")


def docs_section(entries: dict[str, dict[str, str]]) -> str:
    by_id = {c.id: c for c in CASES}
    counts = {"equal": len(CASES), "different": 0, "refused": 0}
    for entry in entries.values():
        counts[entry["outcome"]] += 1
        counts["equal"] -= 1
    total = len(CASES)
    out = [DOCS_START, "", "| cases | equal | different | refused |", "|---|---|---|---|",
           f"| {total} | {counts['equal']} | {counts['different']} | {counts['refused']} "
           f"({100 * counts['refused'] / total:.1f}%) |", ""]  # fmt: skip
    if entries:
        out += ["| case | PostHog's source | outcome | hoglab's answer |", "|---|---|---|---|"]
        for cid in sorted(entries, key=lambda c: (entries[c]["outcome"], c)):
            case = by_id.get(cid)
            source = f"`{case.source}` {case.test}" if case else ""
            reason = entries[cid]["reason"].replace("|", "\\|").replace("\n", " ")
            if len(reason) > 200:
                reason = reason[:199] + "…"
            out.append(f"| `{cid}` | {source} | {entries[cid]['outcome']} | {reason} |")
        out.append("")
    return "\n".join(out)


def write_docs(found: dict[str, Outcome]) -> None:
    text = DOCS.read_text()
    start, end = text.index(DOCS_START), text.index(DOCS_END)
    DOCS.write_text(text[:start] + docs_section(_known_from(found)) + text[end:])
