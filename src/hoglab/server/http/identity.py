"""``GET /hoglab/identity/?challenge=HEX``: the service proves which data dir it serves, before a client sends it a
key. Anyone may ask; the answer is ``{"service": "hoglab", "proof": HMAC(data dir's secret, challenge)}``
(``private_files.py``), which only who can read the data dir can check, and which tells nothing of the secret.
``hoglab lab`` asks it with a fresh challenge before it hands the port's service its all-projects key.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import Depends, Query

from ..errors import InternalError, ValidationFailed
from ..private_files import identity_proof, identity_secret
from ..state import ServiceState, get_state
from .routing import SlashRouter

__all__ = ["IDENTITY_PATH", "router"]

IDENTITY_PATH = "/hoglab/identity/"
_CHALLENGE = re.compile(r"[0-9a-f]{32,128}")

router = SlashRouter(tags=["identity"])


@router.get(IDENTITY_PATH, summary="Prove which data dir this service serves (for a client holding its secret)")
def service_identity(
    state: Annotated[ServiceState, Depends(get_state)],
    challenge: Annotated[str, Query(min_length=32, max_length=128, description="32 to 128 lowercase hex digits.")],
) -> dict[str, Any]:
    if not _CHALLENGE.fullmatch(challenge):
        raise ValidationFailed("challenge must be 32 to 128 lowercase hex digits.", attr="challenge")
    secret = state.extras.get("identity_secret")
    if secret is None:
        secret = state.extras["identity_secret"] = identity_secret(state.config.data_dir)
    if secret is None:
        raise InternalError("This service's data dir has no identity secret.")
    return {"service": "hoglab", "proof": identity_proof(secret, challenge)}
