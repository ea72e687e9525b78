"""The demo data set: a deterministic, seeded project of ~60 days of events with one experiment whose effect is
real and significant (``hoglab serve --demo``, ``hoglab demo``, the tour notebooks).

* :mod:`.experiment`: :data:`DEMO_EXPERIMENT` (flag ``new-checkout``, the legacy funnel metric, the API body),
  the variants' conversions and the window's end (:func:`default_end`: today, 00:00 UTC);
* :mod:`.events`: :func:`generate_events`, the events as an Arrow table in PostHog's export shape (same seed and
  end, the same bytes); exposures use the flags' own hashing (``flags/hashing.py``); signed-up users work at
  :data:`DEMO_COMPANIES` companies (group type ``company``, with plans), set by ``$groupidentify``;
* :mod:`.history`: :data:`PAST_EXPERIMENTS`, 40 past experiments with planted true effects, concluded (some
  shipped), their events and create bodies, for a project of their own (:data:`HISTORY_PROJECT`);
* :mod:`.seeding`: :func:`seed`, what the service's startup hook runs: the events through the file loader and the
  experiment with its flag through the experiments' rules, each once; then :func:`seed_history`.

>>> DEMO_EXPERIMENT.feature_flag_key, DEMO_SEED
('new-checkout', 20260101)
"""

from .events import DEMO_COMPANIES, DEMO_DAYS, DEMO_SEED, DEMO_USERS, generate_events
from .experiment import DEMO_EXPERIMENT, DemoExperiment, default_end
from .history import HISTORY_PROJECT, PAST_EXPERIMENTS
from .seeding import seed, seed_events, seed_history

__all__ = [
    "DEMO_COMPANIES",
    "DEMO_DAYS",
    "DEMO_EXPERIMENT",
    "DEMO_SEED",
    "DEMO_USERS",
    "HISTORY_PROJECT",
    "PAST_EXPERIMENTS",
    "DemoExperiment",
    "default_end",
    "generate_events",
    "seed",
    "seed_events",
    "seed_history",
]
