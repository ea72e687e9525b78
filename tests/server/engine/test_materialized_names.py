"""Materialized columns are only ever read for the exact key they were made for (issue 23, item 2).

The former naming (a plain ``mat_<key>`` for any ``[A-Za-z0-9_$]`` key, else a readable part and 8 hex digits of
SHA-1) let two keys share a name, and the second key was registered to the first key's column: project B's
``utm source`` read project A's ``utm_source_29477461``. Brute force finds such pairs in that naming at once; the
same searches find none in the new one. And names are not trusted anyway: over HTTP, with a crafted key taken
first, with columns an older version, the operator or a tampering hand left in the table, every project's
filter, group-by and trend on its own key answer what pandas and the plan without materialized columns answer.
"""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from typing import Any

import pytest

from hoglab.server.engine import materialized
from hoglab.server.engine.autoprops import AutoMaterializer
from hoglab.server.engine.settings import quote_identifier, quote_string

from .tenants import Tenant, wait_for


def old_column_name(key: str) -> str:
    """The naming of the versions before issue 23, kept to show what brute force finds in it."""
    if re.match(r"^[A-Za-z0-9_$]{1,100}$", key):
        return f"mat_{key}"
    readable = re.sub(r"[^A-Za-z0-9_$]+", "_", key)[:60]
    return f"mat_{readable}_{hashlib.sha1(key.encode()).hexdigest()[:8]}"


def _first_collision(names: dict[str, str]) -> tuple[str, str] | None:
    """Two keys whose names are equal ignoring case (a case-insensitive file system stores them in one file)."""
    seen: dict[str, str] = {}
    for key, name in names.items():
        if (other := seen.setdefault(name.lower(), key)) != key:
            return other, key
    return None


def _keys(rng: random.Random) -> list[str]:
    """Keys made to collide: 200,000 with one readable part under the old naming (only separators differ), random
    keys of safe and unsafe characters, case variants, long keys sharing their first 60 characters, and keys
    spelled like the names other keys get (the crafted key of the issue)."""
    separators = " -.`'\"\\/:!\x00é"
    keys = {"p" + "".join(rng.choice(separators) for _ in range(rng.randint(6, 14))) for _ in range(200_000)}
    alphabet = "aBz09_$ -.`'\"\\\x00é😀"
    randoms = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 10))) for _ in range(20_000)}
    keys |= randoms | {k.upper() for k in randoms} | {k.swapcase() for k in randoms}
    keys |= {"x" * 60 + str(i) for i in range(1000)} | {"Plan", "plan", "PLAN", "$Browser", "$browser"}
    sample = [*sorted(randoms)[:2000], "utm source"]
    keys |= {materialized.column_name(k)[4:] for k in sample} | {old_column_name(k)[4:] for k in sample}
    keys.discard("")
    return sorted(keys)


def test_brute_force_finds_collisions_in_the_old_naming_and_none_in_the_new() -> None:
    keys = _keys(random.Random(23))
    assert len(keys) > 230_000
    # The issue's pair, and a pair of the 200,000 found by brute force (birthday search on 32 bits).
    assert old_column_name("utm source") == old_column_name("utm_source_29477461") == "mat_utm_source_29477461"
    found = _first_collision({k: old_column_name(k) for k in keys})
    assert found is not None and found[0] != found[1]
    # New names: no two keys share a first name; and for a fifth of them (the search is the same, only longer),
    # every name a key may take (its first and its 7 fallbacks) belongs to that key alone.
    assert _first_collision({k: materialized.column_name(k) for k in keys}) is None
    lowered = [name.lower() for k in keys[::5] for name in materialized.candidate_names(k)]
    assert len(set(lowered)) == len(lowered) == 8 * len(keys[::5])
    # And the new name of the crafted key is not the name of the key it imitates.
    assert materialized.column_name(materialized.column_name("utm source")[4:]) != materialized.column_name(
        "utm source"
    )


def test_names_are_readable_and_keys_that_cannot_be_columns_are_refused() -> None:
    assert materialized.column_name("$browser") == "mat_$browser"
    assert materialized.column_name("email", "persons") == "pmat_email"
    assert re.fullmatch(r"mat_it_s_a_key_[0-9a-f]{16}", materialized.column_name("it's a `key`"))
    assert re.fullmatch(r"mat_plan_[0-9a-f]{16}", materialized.column_name("Plan"))
    for key in ["it's", "back`tick", "a\x00b", "a.b", "$x", "é😀", "\u0080\u009f", "x" * 400, "a\\b", "tab\there"]:
        assert materialized.refusal(key) is None, key
    for key in ["", "x" * 401, "a\ud800b", "\udcff"]:
        assert materialized.refusal(key) is not None, key
        with pytest.raises(ValueError, match="cannot materialize"):
            materialized.materialize(None, ["fine", key])  # refused before anything is asked of an engine


def _plant(engine: Any, name: str, definition: str) -> None:
    """A column as something other than this version left it in ``events``."""
    engine.command(f"ALTER TABLE hoglab.events ADD COLUMN {quote_identifier(name)} {definition}")


def _old_version_column(engine: Any, key: str) -> str:
    """The column the old version made for ``key``, with its very statement."""
    name = old_column_name(key)
    _plant(engine, name, f"LowCardinality(Nullable(String)) MATERIALIZED {materialized.extraction(key)} "
           f"COMMENT {quote_string(materialized.COMMENT_PREFIX + key)}")  # fmt: skip
    return name


def _comment(engine: Any, column: str) -> str:
    rows = engine.execute(
        "SELECT comment FROM system.columns WHERE database = 'hoglab' AND table = 'events' "
        f"AND name = {quote_string(column)}"
    ).to_pylist()
    return str(rows[0]["comment"])


@pytest.fixture
def job(hoglab_service: Any) -> Any:
    """The service's automatic job, running in its own thread every 0.2 s with room for every key here."""
    engine = hoglab_service.state.engine
    materialized.take_usage("events")  # what earlier tests counted is not this test's business
    running = AutoMaterializer(engine, interval=0.2, min_uses=30, max_columns=10_000, project_columns=50)
    running.start()
    yield running
    running.close()


def test_the_issue_case_each_project_reads_its_own_key(make_project: Any, hoglab_service: Any, job: Any) -> None:
    """Project A's crafted keys (the old name of ``utm source``, and its new name) are made first; project B's
    ``utm source`` still gets a column of its own, and B's filter, group-by and trend answer B's events."""
    engine = hoglab_service.state.engine
    crafted = ["utm_source_29477461", materialized.column_name("utm source")[4:]]
    a = Tenant.of(make_project(scopes=["query:read"]), engine, [{k: f"a{i % 2}" for k in crafted} for i in range(6)])
    b_rows = [{"utm source": ["google", "bing", "google"][i % 3]} for i in range(9)] + [{}]
    b = Tenant.of(make_project(scopes=["query:read"]), engine, b_rows)
    for key in crafted:
        a.heat(key, 30)
    wait_for(lambda: all(k in materialized.materialized_columns() for k in crafted), "A's columns")
    b.heat("utm source", 30)
    wait_for(lambda: "utm source" in materialized.materialized_columns(), "B's column")
    columns = materialized.materialized_columns()
    mine = [columns[k] for k in [*crafted, "utm source"]]
    assert len(set(mine)) == 3
    for key in [*crafted, "utm source"]:  # each column says, itself, which key it holds
        assert _comment(engine, columns[key]) == materialized.COMMENT_PREFIX + key
    assert f"events.`{columns['utm source']}`" in b.check("utm source", "google")
    assert f"events.`{columns['utm source']}`" in b.check("utm source", "bing")
    for key in crafted:
        assert f"events.`{columns[key]}`" in a.check(key, "a1")
    assert job.alive and job.restarts == 0 and not {k for _, k in job.failed} & {*crafted, "utm source"}


def test_columns_left_by_others_are_read_only_for_their_own_key(
    make_project: Any, hoglab_service: Any, job: Any
) -> None:
    """In the table before this version: the old version's column for ``<x> source`` (named like the safe key
    ``<x>_source_<sha1>``), the operator's own column named as a key's column would be, and a column whose
    comment was changed by hand to another key. Each key gets a column that holds it, and answers stay right."""
    engine = hoglab_service.state.engine
    tag = uuid.uuid4().hex[:6]
    spaced = f"{tag} source"
    crafted = old_column_name(spaced)[4:]  # a safe key: under the new naming too its name is mat_<key>
    operators, tampered = f"ops_{tag}", f"tampered_{tag}"
    old_name = _old_version_column(engine, spaced)
    assert old_name == materialized.column_name(crafted) == f"mat_{crafted}"
    _plant(engine, materialized.column_name(operators), "Nullable(String) DEFAULT 'operator data'")
    says_tampered = quote_string(materialized.COMMENT_PREFIX + tampered)
    _plant(engine, f"mat_hand_edited_{tag}", f"LowCardinality(Nullable(String)) MATERIALIZED "
           f"{materialized.extraction(operators)} COMMENT {says_tampered}")  # fmt: skip
    materialized.refresh(engine)
    known = materialized.materialized_columns()
    assert known[spaced] == old_name  # the old column is read, for its own key
    assert tampered not in known  # says it holds `tampered` but extracts another key: not read

    rows = [{spaced: f"s{i % 2}", crafted: f"c{i % 3}", operators: f"o{i % 2}", tampered: f"t{i % 3}"}
            for i in range(12)]  # fmt: skip
    tenant = Tenant.of(make_project(scopes=["query:read"]), engine, rows)
    for key in (crafted, operators, tampered):
        tenant.heat(key, 30)
    wait_for(lambda: all(k in materialized.materialized_columns() for k in (crafted, operators, tampered)), "columns")
    columns = materialized.materialized_columns()
    assert len({columns[k] for k in (spaced, crafted, operators, tampered)}) == 4
    assert columns[crafted] != old_name and columns[operators] != materialized.column_name(operators)
    for key, value in ((spaced, "s1"), (crafted, "c2"), (operators, "o1"), (tampered, "t0")):
        assert f"events.`{columns[key]}`" in tenant.check(key, value)
        assert _comment(engine, columns[key]) == materialized.COMMENT_PREFIX + key
    assert job.alive and not {k for _, k in job.failed} & {spaced, crafted, operators, tampered}
