"""Per-unit data in (a units frame: one row per exposed unit), effects beyond the average out.

* ``frame``: the units frame, checked once and reduced to per-cell sufficient statistics;
* ``segments``: the effect in each segment, and whether it differs between segments;
* ``heterogeneity``: the scan for segments that respond differently from the rest;
* ``quantiles``: the difference in a quantile (p50, p90, ...) between variants;
* ``novelty``: the effect by days since each unit's first exposure, and whether it fades or grows.
"""
