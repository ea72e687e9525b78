"""Feature flag evaluation for PostHog's SDKs: PostHog's matching rules over hoglab's flags and persons.

* ``evaluate`` — one flag for one person: condition groups, rollout and variants by ``flags.hashing``;
* ``properties`` — PostHog's property operators for flag conditions (``regex``/``not_regex`` by RE2 in linear
  time: ``filters/patterns.py``);
* ``service`` — a whole request: which flags, whose properties, cohort membership, experience continuity;
* ``request`` / ``responses`` — the ``/flags`` and ``/decide`` bodies in every version SDKs use;
* ``continuity`` — hash key overrides (``ensure_experience_continuity``).

The HTTP side is ``hoglab.server.http.flags``.

>>> from hoglab.server.flags import FlagSpec, Person, evaluate_flag
>>> flag = FlagSpec(1, "exp", {"groups": [{"properties": [], "rollout_percentage": 100}],
...                            "multivariate": {"variants": [{"key": "control", "rollout_percentage": 100}]}})
>>> evaluate_flag(flag, Person("user-1")).value
'control'
"""

from .evaluate import FlagMatch, FlagSpec, Person, evaluate_flag
from .properties import match_property
from .request import FlagsRequest, FlagsRequestError, parse_flags_request
from .responses import decide_body, flags_body, remote_config
from .service import Evaluation, evaluate_request, flag_spec, project_flags

__all__ = [
    "Evaluation",
    "FlagMatch",
    "FlagSpec",
    "FlagsRequest",
    "FlagsRequestError",
    "Person",
    "decide_body",
    "evaluate_flag",
    "evaluate_request",
    "flag_spec",
    "flags_body",
    "match_property",
    "parse_flags_request",
    "project_flags",
    "remote_config",
]
