"""The SQLite store: WAL, versioned migrations, nested transactions, key hashing, flag key uniqueness."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from hoglab.server.store import DuplicateFlagKey, Store, StoreError, migrations as migrations_module
from hoglab.server.store.migrations import Migration, available_migrations


@pytest.fixture
def store(tmp_path):
    with Store.open_at(tmp_path) as opened:
        yield opened


def _versions(path) -> list[int]:
    with sqlite3.connect(path / "hoglab.sqlite3") as conn:
        return [row[0] for row in conn.execute("SELECT version FROM schema_version ORDER BY version")]


def test_file_is_in_wal_mode_with_foreign_keys(store, tmp_path):
    with store.db.read() as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert (tmp_path / "hoglab.sqlite3").exists()


def test_migrations_are_recorded_and_applied_once(tmp_path):
    Store.open_at(tmp_path).close()
    Store.open_at(tmp_path).close()
    assert _versions(tmp_path) == [m.version for m in available_migrations()]
    assert _versions(tmp_path)[0] == 1


def test_a_new_migration_is_applied_on_the_next_open(tmp_path, monkeypatch):
    Store.open_at(tmp_path).close()
    known = available_migrations()
    extra = Migration(
        known[-1].version + 1,
        "v9999_query_status",
        lambda conn: conn.execute("CREATE TABLE query_status (id TEXT PRIMARY KEY)"),
    )
    monkeypatch.setattr(migrations_module, "available_migrations", lambda: [*known, extra])
    with Store.open_at(tmp_path) as store, store.db.read() as conn:
        assert conn.execute("SELECT count(*) FROM query_status").fetchone()[0] == 0
    assert _versions(tmp_path)[-1] == extra.version


def test_a_failing_migration_changes_nothing(tmp_path, monkeypatch):
    Store.open_at(tmp_path).close()
    known = available_migrations()

    def broken(conn):
        conn.execute("CREATE TABLE half_done (x INTEGER)")
        raise sqlite3.OperationalError("boom")

    monkeypatch.setattr(
        migrations_module, "available_migrations", lambda: [*known, Migration(known[-1].version + 1, "v_b", broken)]
    )
    with pytest.raises(StoreError, match="boom"):
        Store.open_at(tmp_path)
    with sqlite3.connect(tmp_path / "hoglab.sqlite3") as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "half_done" not in tables
    assert _versions(tmp_path) == [m.version for m in known]


def test_a_file_from_a_newer_hoglab_is_refused(tmp_path):
    Store.open_at(tmp_path).close()
    with sqlite3.connect(tmp_path / "hoglab.sqlite3") as conn:
        conn.execute("INSERT INTO schema_version VALUES (999, 'v0999_future', '2030-01-01')")
    with pytest.raises(StoreError, match="newer than this hoglab"):
        Store.open_at(tmp_path)


def test_unusable_data_dirs_raise_store_error(tmp_path):
    afile = tmp_path / "a-file"
    afile.write_text("x")
    with pytest.raises(StoreError, match="not a directory"):
        Store.open_at(afile)
    (tmp_path / "garbage").mkdir()
    (tmp_path / "garbage" / "hoglab.sqlite3").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        Store.open_at(tmp_path / "garbage")


def test_nested_transaction_rolls_back_to_its_savepoint(store):
    project = store.projects.create("P")
    with store.transaction():
        store.flags.create(project.id, "outer", filters={})
        with pytest.raises(DuplicateFlagKey):
            store.flags.create(project.id, "outer", filters={})
        store.flags.create(project.id, "after", filters={})
    assert sorted(f.key for f in store.flags.list(project.id)) == ["after", "outer"]
    with pytest.raises(RuntimeError), store.transaction():
        store.flags.create(project.id, "lost", filters={})
        raise RuntimeError
    assert store.flags.get_by_key(project.id, "lost") is None


def test_deleted_flag_frees_its_key(store):
    project = store.projects.create("P")
    flag = store.flags.create(project.id, "k", filters={})
    store.flags.update(flag.id, deleted=True)
    assert store.flags.create(project.id, "k", filters={}).id != flag.id
    assert len(store.flags.list(project.id, include_deleted=True)) == 2


def test_keys_authenticate_by_hash_and_keep_their_project_list(store):
    user = store.users.default()
    assert store.users.default() == user
    project = store.projects.create("P", timezone="Europe/Berlin")
    assert store.projects.get_by_token(project.api_token) == project
    record, plaintext = store.keys.create(user.id, ["query:read", "experiment:write"], [project.id], label="nb")
    assert store.keys.authenticate(plaintext).id == record.id
    assert store.keys.authenticate(plaintext + "x") is None
    assert record.project_ids == (project.id,) and record.scopes == ("query:read", "experiment:write")
    assert record.mask_value.startswith("phx_") and plaintext[-4:] in record.mask_value
    with pytest.raises(ValueError, match="unknown scope 'experiments:read'"):
        store.keys.create(user.id, ["experiments:read"])


def test_threads_share_the_store(store):
    project = store.projects.create("P")
    errors: list[BaseException] = []

    def create(worker: int) -> None:
        try:
            for i in range(20):
                with store.transaction():
                    flag = store.flags.create(project.id, f"t{worker}-{i}", filters={})
                    store.experiments.create(project.id, name="x", feature_flag_id=flag.id)
        except BaseException as exc:  # reported below, in the test's thread
            errors.append(exc)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert store.experiments.list(project.id).total == 160
