"""The hoglab service: PostHog's Experiments and Query HTTP API over events in chDB or ClickHouse.

Never imported by the notebook half at module level; ``hoglab.local`` imports it lazily to start a service in
the notebook's own process (chDB is owned by exactly one process, see ``engine/``).
"""
