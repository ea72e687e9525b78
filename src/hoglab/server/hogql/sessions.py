"""HogQL's ``sessions`` table: the view over the engine's ``sessions`` aggregates, and PostHog's channel types.

The physical table (``engine/sessions_ddl.py``) holds partial aggregates per ``(team_id, session_id)``; the
view merges them (``GROUP BY session_id`` inside the team guard) into PostHog's session fields:

* ``$start_timestamp``/``$end_timestamp``: first and last event; ``$session_duration``: seconds between them;
* ``$entry_current_url``/``$exit_current_url``: ``$current_url`` of the first/last event that has one, and
  their paths as ``$entry_pathname``/``$exit_pathname``;
* ``$pageview_count``, ``$autocapture_count``, ``$screen_count``, ``$event_count``;
* ``$entry_utm_source`` .. ``$entry_fbclid``: those properties of the session's first event;
* ``$is_bounce``: NULL for a session without pageviews or autocaptures, else true unless it had more than one
  pageview, an autocapture, or lasted 10 seconds or more (PostHog's rule);
* ``$channel_type``: PostHog's default channel rules (GA4's, adapted) over the entry attribution, below.

>>> sorted(CHANNEL_TYPES)[:3]
['Affiliate', 'Audio', 'Cross Network']
"""

from __future__ import annotations

from sqlglot import exp, parse_one

from hoglab.translate.dialect import HogQLDialect

__all__ = [
    "ATTRIBUTION_KEYS",
    "CHANNEL_TYPES",
    "ORGANIC_MEDIUMS",
    "OTHER_NAMES",
    "PAID_MEDIUMS",
    "PAID_MEDIUM_PREFIXES",
    "PAID_MEDIUM_TYPES",
    "SESSION_FIELDS",
    "SOURCE_CATEGORIES",
    "category_of",
    "session_view_items",
]

ATTRIBUTION_KEYS = (
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_term",
    "utm_content",
    "$referring_domain",
    "gclid",
    "gad_source",
    "fbclid",
)
"""Event properties of a session's first event read as its entry attribution (``$entry_<key>``), in tuple order.

The engine keeps the first event's properties whole (``first_properties``, engine/sessions_ddl.py); which keys the
view reads is PostHog's sessions schema and the channel rules below (they read five of them), so it is the
compiler's to say."""

# Sources and referring domains by category, by their first significant name ("www.google.co.uk" -> "google",
# "t.co" -> "t"): a short list of GA4's source categories.
SOURCE_CATEGORIES: dict[str, tuple[str, ...]] = {
    "Search": ("google", "bing", "yahoo", "duckduckgo", "baidu", "yandex", "ecosia", "naver", "ask", "aol",
               "brave", "startpage", "qwant", "seznam"),
    "Social": ("facebook", "fb", "instagram", "twitter", "t", "x", "linkedin", "lnkd", "reddit", "pinterest",
               "tiktok", "snapchat", "threads", "whatsapp", "telegram", "mastodon", "quora", "tumblr", "discord"),
    "Video": ("youtube", "youtu", "vimeo", "twitch", "dailymotion", "wistia"),
    "Shopping": ("amazon", "ebay", "etsy", "shopify", "walmart", "aliexpress", "shopping"),
}  # fmt: skip

PAID_MEDIUM_PREFIXES = ("paid",)
PAID_MEDIUMS = ("cpc", "cpm", "cpv", "cpa", "ppc", "retargeting")
"""utm_medium values (and prefixes) that make a session paid."""

PAID_MEDIUM_TYPES: dict[str, tuple[str, ...]] = {
    "Display": ("display", "banner", "expandable", "interstitial", "cpm"),
    "Paid Social": ("social", "social-network", "social-media", "sm", "social network", "social media"),
    "Paid Video": ("video",),
    "Paid Shopping": ("shopping",),
}
ORGANIC_MEDIUMS: dict[str, tuple[str, ...]] = {
    "Organic Social": ("social", "social-network", "social-media", "sm", "social network", "social media"),
    "Organic Video": ("video",),
    "Organic Search": ("organic",),
    "Referral": ("referral", "app", "link"),
    "Affiliate": ("affiliate",),
    "Audio": ("audio",),
    "SMS": ("sms",),
    "Email": ("email", "e-mail", "e_mail", "e mail"),
}
CHANNEL_TYPES = frozenset(
    {"Cross Network", "Paid Search", "Paid Social", "Paid Video", "Paid Shopping", "Paid Unknown", "Display",
     "Direct", "Organic Search", "Organic Social", "Organic Video", "Organic Shopping", "Push", "Referral",
     "Email", "SMS", "Audio", "Affiliate", "Unknown"}
)  # fmt: skip

SESSION_FIELDS: tuple[str, ...] = (
    "id",
    "session_id",
    "distinct_id",
    "$start_timestamp",
    "$end_timestamp",
    "$session_duration",
    "duration",
    "$entry_current_url",
    "$exit_current_url",
    "$end_current_url",
    "$entry_pathname",
    "$exit_pathname",
    "$end_pathname",
    "$pageview_count",
    "$autocapture_count",
    "$screen_count",
    "$event_count",
    "$is_bounce",
    "$channel_type",
    *(f"$entry_{key.lstrip('$')}" for key in ATTRIBUTION_KEYS),
)
"""Field names of HogQL's ``sessions`` (``id``, ``duration`` and ``$end_*`` are PostHog's other names)."""
OTHER_NAMES = frozenset({"id", "duration", "$end_current_url", "$end_pathname"})
"""Fields left out of ``*``: PostHog's aliases of other fields."""


def _array(values: tuple[str, ...]) -> str:
    return "[" + ", ".join("'" + v.replace("\\", "\\\\").replace("'", "\\'") + "'" for v in values) + "]"


def _lookup(mapping: dict[str, tuple[str, ...]], value: str, prefix: str = "") -> str:
    arms = ", ".join(f"has({_array(keys)}, {value}), '{prefix}{label}'" for label, keys in mapping.items())
    return f"multiIf({arms}, NULL)"


def _name(value: str) -> str:
    # "www.google.co.uk" -> "google", "google" -> "google", "t.co" -> "t"
    site = f"cutToFirstSignificantSubdomain({value})"
    return f"arrayElement(splitByChar('.', if({site} = '', {value}, {site})), 1)"


def category_of(value: exp.Expr, mapping: dict[str, tuple[str, ...]], prefix: str = "") -> exp.Expr:
    """The category ``mapping`` gives the site ``value`` names (by its first significant name), prefixed, or
    NULL: the channel rules' lookup as an expression over any value (PostHog's ``hogql_lookup*`` functions)."""
    placeholder = "__hq_category_value"
    tree = parse_one(_lookup(mapping, _name(placeholder), prefix), dialect=HogQLDialect)
    for column in list(tree.find_all(exp.Column)):
        if column.name == placeholder:
            column.replace(value.copy())
    return tree


def _channel_type_sql() -> str:
    src, med, camp = "__hq_source", "__hq_medium", "__hq_campaign"
    ref, gad = "`$entry_referring_domain`", "__hq_gad_source"
    has_gclid, has_fbclid = "(`$entry_gclid` != '')", "(`$entry_fbclid` != '')"
    prefixes = " OR ".join(f"startsWith({med}, '{prefix}')" for prefix in PAID_MEDIUM_PREFIXES)
    paid_medium = f"(has({_array(PAID_MEDIUMS)}, {med}) OR {prefixes})"
    shop = "'^(.*(([^a-df-z]|^)shop|shopping).*)$'"
    source_type = f"if({src} IS NULL, NULL, {_lookup(SOURCE_CATEGORIES, _name(src), '{kind} ')})"
    referrer_type = (
        f"if({ref} IN ('', '$direct'), NULL, {_lookup(SOURCE_CATEGORIES, _name(f'lower({ref})'), '{kind} ')})"
    )
    return f"""multiIf(
        match(ifNull({camp}, ''), 'cross-network'), 'Cross Network',
        ifNull({paid_medium}, 0) OR {has_gclid} OR {gad} IS NOT NULL,
        coalesce(
            {source_type.format(kind="Paid")},
            if(match(ifNull({camp}, ''), {shop}), 'Paid Shopping', NULL),
            if({med} IS NULL, NULL, {_lookup(PAID_MEDIUM_TYPES, med)}),
            {referrer_type.format(kind="Paid")},
            multiIf({gad} = '1', 'Paid Search', match(ifNull({camp}, ''), '^(.*video.*)$'), 'Paid Video',
                    {has_fbclid}, 'Paid Social', 'Paid Unknown')
        ),
        {ref} IN ('', '$direct') AND {med} IS NULL AND ({src} IS NULL OR {src} IN ('(direct)', 'direct', '$direct'))
            AND NOT {has_fbclid},
        'Direct',
        coalesce(
            {source_type.format(kind="Organic")},
            if(match(ifNull({camp}, ''), {shop}), 'Organic Shopping', NULL),
            if({med} IS NULL, NULL, {_lookup(ORGANIC_MEDIUMS, med)}),
            {referrer_type.format(kind="Organic")},
            multiIf(match(ifNull({camp}, ''), '^(.*video.*)$'), 'Organic Video',
                    match(ifNull({med}, ''), 'push$'), 'Push',
                    {has_fbclid}, 'Organic Social',
                    {ref} IN ('', '$direct'), 'Direct',
                    'Referral')
        )
    )"""


def _items_sql(raw: str, zone: str | None) -> list[str]:
    def in_zone(sql: str) -> str:
        return sql if zone is None else f"toTimeZone({sql}, '{zone}')"

    wanted = ", ".join(f"`{key}` String" for key in ATTRIBUTION_KEYS)
    attribution = f"JSONExtract(argMinMerge({raw}.first_properties), 'Tuple({wanted})')"
    entry = [
        f"tupleElement(__hq_attribution, {i + 1}) AS `$entry_{key.lstrip('$')}`"
        for i, key in enumerate(ATTRIBUTION_KEYS)
    ]
    start, end = f"min({raw}.min_timestamp)", f"max({raw}.max_timestamp)"
    return [
        f"{raw}.session_id AS session_id",
        "session_id AS id",
        f"argMinMerge({raw}.first_distinct_id) AS distinct_id",
        f"{in_zone(start)} AS `$start_timestamp`",
        f"{in_zone(end)} AS `$end_timestamp`",
        f"dateDiff('second', {start}, {end}) AS `$session_duration`",
        "`$session_duration` AS duration",
        f"argMinMerge({raw}.entry_url) AS `$entry_current_url`",
        f"argMaxMerge({raw}.exit_url) AS `$exit_current_url`",
        "`$exit_current_url` AS `$end_current_url`",
        "path(`$entry_current_url`) AS `$entry_pathname`",
        "path(`$exit_current_url`) AS `$exit_pathname`",
        "`$exit_pathname` AS `$end_pathname`",
        f"sum({raw}.pageview_count) AS `$pageview_count`",
        f"sum({raw}.autocapture_count) AS `$autocapture_count`",
        f"sum({raw}.screen_count) AS `$screen_count`",
        f"sum({raw}.event_count) AS `$event_count`",
        "if(`$pageview_count` + `$autocapture_count` = 0, NULL, NOT (`$pageview_count` > 1 OR "
        "`$autocapture_count` > 0 OR `$session_duration` >= 10)) AS `$is_bounce`",
        f"{attribution} AS __hq_attribution",
        *entry,
        "lower(nullIf(nullIf(`$entry_utm_source`, ''), 'null')) AS __hq_source",
        "lower(nullIf(nullIf(`$entry_utm_medium`, ''), 'null')) AS __hq_medium",
        "lower(nullIf(nullIf(`$entry_utm_campaign`, ''), 'null')) AS __hq_campaign",
        "nullIf(nullIf(`$entry_gad_source`, ''), 'null') AS __hq_gad_source",
        f"{_channel_type_sql()} AS `$channel_type`",
    ]


def session_view_items(raw: str, zone: str) -> list[exp.Expr]:
    """The view's select items over the raw table alias ``raw`` (timestamps converted to ``zone``)."""
    items = _items_sql(raw, None if zone == "UTC" else zone)
    return [parse_one(item, dialect=HogQLDialect) for item in items]
