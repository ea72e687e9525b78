"""Personal API keys can expire (``expires_at``) and be revoked (``revoked_at``, kept for ``hoglab key list``)."""

STATEMENTS = (
    "ALTER TABLE personal_api_keys ADD COLUMN expires_at TEXT",
    "ALTER TABLE personal_api_keys ADD COLUMN revoked_at TEXT",
)
