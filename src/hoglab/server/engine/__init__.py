"""Engine adapters: chDB in-process (default) and a ClickHouse server over HTTP (clickhouse-connect)."""
