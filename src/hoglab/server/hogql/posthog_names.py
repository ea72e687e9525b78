"""PostHog's HogQL function names that are not ClickHouse's, written as the ClickHouse PostHog's printer sends.

PostHog's function lists (``posthog/hogql/functions/``) map some names to other ClickHouse functions or to
templates: the PostgreSQL-style names (``date_part``, ``to_timestamp``, ``split_part``, ``string_agg``, ...), its
conveniences (``toIntOrZero``, ``toDecimal(x, scale)``, ``md5``), its lookups of channel types, and the function
form of ``IN``. Each becomes here what PostHog prints, before the allow-lists, so everything after this step sees
ClickHouse's names (the time zone step then adds the project's zone where PostHog's printer adds it). A wrong
number of arguments is a 400 naming the function as written.

>>> from hoglab.translate.parse import parse_hogql
>>> tree = parse_hogql("select to_date('2024-01-02'), split_part('a,b', ',', 2), in(1, (1, 2)), md5('a')")
>>> print(rewrite_posthog_names(tree).sql("clickhouse"))  # doctest: +NORMALIZE_WHITESPACE
SELECT toDate('2024-01-02'), if(empty(splitByString(',', 'a,b')), '', if(length(splitByString(',', 'a,b')) >= 2,
arrayElement(splitByString(',', 'a,b'), 2), '')), 1 IN (1, 2), hex(MD5('a'))
"""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from hoglab.translate.dialect import HogQLDialect
from hoglab.translate.errors import HogQLError, node_span
from hoglab.translate.values import call

from .printer import TEXT_META
from .sessions import ORGANIC_MEDIUMS, PAID_MEDIUM_TYPES, SOURCE_CATEGORIES, category_of

__all__ = ["POSTHOG_ONLY", "rewrite_posthog_names"]

_RENAMES: dict[str, str] = {
    "tointorzero": "toInt64OrZero",
    "tofloatorzero": "toFloat64OrZero",
    "tofloatordefault": "toFloat64OrDefault",
    "to_date": "toDate",
    "btrim": "trim",
    "date_subtract": "date_sub",
    "make_date": "makeDate",
    "make_timestamp": "makeDateTime",
    "to_char": "formatDateTime",
    "array_agg": "groupArray",
    "todatetimeus": "parseDateTime64BestEffortUSOrNull",
    # ClickHouse here has no Theta sketches (the engine is built without them); uniqExact gives the count those
    # sketches estimate, exactly (they are exact themselves up to 4,096 distinct values)
    "uniqtheta": "uniqExact",
    "uniqthetaif": "uniqExactIf",
    # PostHog's mapping sends arrayReverseSort as ClickHouse's arraySort: ascending, as PostHog answers it
    "arrayreversesort": "arraySort",
}
"""Names PostHog sends to another ClickHouse function with the same arguments."""

_ARITY: dict[str, tuple[int, int | None]] = {
    "tointorzero": (1, 1), "tofloatorzero": (1, 1), "tofloatordefault": (1, 2), "to_date": (1, 1),
    "btrim": (1, 1), "date_subtract": (2, 2), "make_date": (3, 3), "make_timestamp": (6, 7), "to_char": (2, 3),
    "array_agg": (1, 1), "todatetimeus": (1, 2), "date_part": (2, 2), "to_timestamp": (1, 1),
    "make_interval": (6, 6), "make_timestamptz": (7, 7), "timezone": (2, 2), "date_bin": (3, 3),
    "split_part": (3, 3), "json_agg": (1, 1), "string_agg": (2, 2), "every": (1, 1), "md5": (1, 1),
    "current_timestamp": (0, 0), "current_date": (0, 0), "in": (2, 2), "notin": (2, 2), "todecimal": (1, 2),
    "touuid": (1, 1), "languagecodetoname": (1, 1), "hogql_lookupdomaintype": (1, 1),
    "hogql_lookuppaidsourcetype": (1, 1), "hogql_lookuporganicsourcetype": (1, 1),
    "hogql_lookuppaidmediumtype": (1, 1), "hogql_lookuporganicmediumtype": (1, 1), "uniqtheta": (1, None),
    "uniqthetaif": (2, None), "arrayreversesort": (1, None), "sortablesemver": (1, 1),
}  # fmt: skip

POSTHOG_ONLY: dict[str, str] = {
    "sparkline": "it is a display tag PostHog's app draws as a chart",
    "recording_button": "it is a display tag PostHog's app draws as a session-replay button",
    "explain_csp_report": "it asks PostHog's AI service to explain a CSP report",
    "convertcurrency": "it reads the exchange rates PostHog loads into its own ClickHouse",
    **{
        name: "it is PostHog's own ClickHouse UDF, a program installed on PostHog's servers"
        for name in (
            "aggregate_funnel", "aggregate_funnel_array", "aggregate_funnel_cohort", "aggregate_funnel_test",
            "aggregate_funnel_trends", "aggregate_funnel_array_trends", "aggregate_funnel_cohort_trends",
            "aggregate_funnel_array_trends_test",
        )
    },
}  # fmt: skip
"""Functions of PostHog's lists that need PostHog itself, with why: refused with that reason."""

# ISO 639-1 codes and names, as PostHog's languageCodeToName (posthog/hogql/language_mappings.py) answers them
_LANGUAGES = (
    "aa Afar|ab Abkhazian|ae Avestan|af Afrikaans|ak Akan|am Amharic|an Aragonese|ar Arabic|as Assamese|av Avaric|"
    "ay Aymara|az Azerbaijani|ba Bashkir|be Belarusian|bg Bulgarian|bh Bihari languages|bi Bislama|bm Bambara|"
    "bn Bengali|bo Tibetan|br Breton|bs Bosnian|ca Catalan|ce Chechen|ch Chamorro|co Corsican|cr Cree|cs Czech|"
    "cu Church Slavic|cv Chuvash|cy Welsh|da Danish|de German|dv Divehi|dz Dzongkha|ee Ewe|el Greek|en English|"
    "eo Esperanto|es Spanish|et Estonian|eu Basque|fa Persian|ff Fulah|fi Finnish|fj Fijian|fo Faroese|fr French|"
    "fy Western Frisian|ga Irish|gd Scottish Gaelic|gl Galician|gn Guarani|gu Gujarati|gv Manx|ha Hausa|he Hebrew|"
    "hi Hindi|ho Hiri Motu|hr Croatian|ht Haitian|hu Hungarian|hy Armenian|hz Herero|ia Interlingua|id Indonesian|"
    "ie Interlingue|ig Igbo|ii Sichuan Yi|ik Inupiaq|io Ido|is Icelandic|it Italian|iu Inuktitut|ja Japanese|"
    "jv Javanese|ka Georgian|kg Kongo|ki Kikuyu|kj Kuanyama|kk Kazakh|kl Kalaallisut|km Central Khmer|kn Kannada|"
    "ko Korean|kr Kanuri|ks Kashmiri|ku Kurdish|kv Komi|kw Cornish|ky Kirghiz|la Latin|lb Luxembourgish|lg Ganda|"
    "li Limburgan|ln Lingala|lo Lao|lt Lithuanian|lu Luba-Katanga|lv Latvian|mg Malagasy|mh Marshallese|mi Maori|"
    "mk Macedonian|ml Malayalam|mn Mongolian|mr Marathi|ms Malay|mt Maltese|my Burmese|na Nauru|"
    "nb Norwegian Bokmål|nd North Ndebele|ne Nepali|ng Ndonga|nl Dutch|nn Norwegian Nynorsk|no Norwegian|"
    "nr South Ndebele|nv Navajo|ny Chichewa|oc Occitan|oj Ojibwa|om Oromo|or Oriya|os Ossetian|pa Panjabi|pi Pali|"
    "pl Polish|ps Pashto|pt Portuguese|qu Quechua|rm Romansh|rn Rundi|ro Romanian|ru Russian|rw Kinyarwanda|"
    "sa Sanskrit|sc Sardinian|sd Sindhi|se Northern Sami|sg Sango|si Sinhala|sk Slovak|sl Slovenian|sm Samoan|"
    "sn Shona|so Somali|sq Albanian|sr Serbian|ss Swati|st Southern Sotho|su Sundanese|sv Swedish|sw Swahili|"
    "ta Tamil|te Telugu|tg Tajik|th Thai|ti Tigrinya|tk Turkmen|tl Tagalog|tn Tswana|to Tonga|tr Turkish|"
    "ts Tsonga|tt Tatar|tw Twi|ty Tahitian|ug Uighur|uk Ukrainian|ur Urdu|uz Uzbek|ve Venda|vi Vietnamese|"
    "vo Volapük|wa Walloon|wo Wolof|xh Xhosa|yi Yiddish|yo Yoruba|za Zhuang|zh Chinese|zu Zulu"
)
_DATE_PARTS = ("year", "month", "day", "hour", "minute", "second", "dow", "doy", "quarter")
_DATE_PART_FUNCTIONS = ("toYear", "toMonth", "toDayOfMonth", "toHour", "toMinute", "toSecond", "toDayOfWeek",
                        "toDayOfYear", "toQuarter")  # fmt: skip


def _string(value: str) -> exp.Expr:
    return exp.Literal.string(value)


def _array(values: list[str]) -> exp.Expr:
    return exp.Array(expressions=[_string(v) for v in values])


def _copy(node: exp.Expr) -> exp.Expr:
    return node.copy()


def _date_part(part: exp.Expr, value: exp.Expr) -> exp.Expr:
    result: exp.Expr = exp.null()
    for name, function in reversed(list(zip(_DATE_PARTS, _DATE_PART_FUNCTIONS, strict=True))):
        condition = exp.EQ(this=_copy(part), expression=_string(name))
        result = call("if", condition, call(function, _copy(value)), result)
    return result


def _split_part(text: exp.Expr, separator: exp.Expr, index: exp.Expr) -> exp.Expr:
    def parts() -> exp.Expr:
        return call("splitByString", _copy(separator), _copy(text))

    enough = exp.GTE(this=call("length", parts()), expression=_copy(index))
    inner = call("if", enough, call("arrayElement", parts(), _copy(index)), _string(""))
    return call("if", call("empty", parts()), _string(""), inner)


def _make_interval(*parts: exp.Expr) -> exp.Expr:
    units = ("Year", "Month", "Day", "Hour", "Minute", "Second")
    total: exp.Expr = call(f"toInterval{units[0]}", parts[0])
    for unit, part in zip(units[1:], parts[1:], strict=True):
        total = exp.Add(this=total, expression=call(f"toInterval{unit}", part))
    return exp.Paren(this=total)


def _in(value: exp.Expr, values: exp.Expr, negate: bool) -> exp.Expr:
    inner = values.this if isinstance(values, exp.Paren) else values
    if isinstance(inner, exp.Query):
        node: exp.Expr = exp.In(this=value, query=exp.Subquery(this=inner))
    elif isinstance(values, exp.Tuple):
        node = exp.In(this=value, expressions=list(values.expressions))
    else:
        node = exp.In(this=value, expressions=[values])
    return exp.Not(this=node) if negate else node


def _to_decimal(node: exp.Func, args: list[exp.Expr]) -> exp.Expr:
    if len(args) == 1:  # hoglab's one-argument form (PostHog's first): ten decimal places
        return call("accurateCastOrNull", args[0], _string("Decimal64(10)"))
    scale = args[1]
    if not (isinstance(scale, exp.Literal) and not scale.is_string and scale.this.isdigit() and int(scale.this) <= 18):
        raise _error("toDecimal's scale must be a whole number from 0 to 18", node)
    return call("accurateCastOrNull", args[0], _string(f"Decimal64({int(scale.this)})"))


def _category_lookup(value: exp.Expr, mapping: dict[str, tuple[str, ...]], prefix: str = "") -> exp.Expr:
    """A source or domain's category as PostHog's channel dictionary gives it (the first significant name of a
    domain, lower case); NULL when it names none."""
    return category_of(call("lower", _copy(value)), mapping, prefix)


def _medium_lookup(value: exp.Expr, mapping: dict[str, tuple[str, ...]]) -> exp.Expr:
    arms: list[exp.Expr] = []
    for label, keys in mapping.items():
        arms += [call("has", _array(list(keys)), call("lower", _copy(value))), _string(label)]
    return call("multiIf", *arms, exp.null())


_TEMPLATES: dict[str, Callable[..., exp.Expr]] = {
    "date_part": _date_part,
    "to_timestamp": lambda x: call("toDateTime", call("fromUnixTimestamp", x)),
    "make_interval": _make_interval,
    # makeDateTime without a zone is the server's, which is UTC at PostHog: the components are UTC
    "make_timestamptz": lambda y, mo, d, h, mi, s, tz: call(
        "toTimeZone", call("makeDateTime", y, mo, d, h, mi, s, _string("UTC")), tz
    ),
    "timezone": lambda tz, value: call("toTimeZone", value, tz),
    "date_bin": lambda interval, value, origin: call("toStartOfInterval", value, interval, origin),
    "split_part": _split_part,
    "json_agg": lambda x: call("toJSONString", call("groupArray", x)),
    "string_agg": lambda x, sep: call("arrayStringConcat", call("groupArray", x), sep),
    "every": lambda x: call("toBool", call("min", x)),
    "md5": lambda x: call("hex", call("MD5", x)),
    "current_timestamp": lambda: call("now64", exp.Literal.number(6)),
    "current_date": lambda: call("today"),
    "in": lambda value, values: _in(value, values, negate=False),
    "notin": lambda value, values: _in(value, values, negate=True),
    "touuid": lambda x: call("accurateCastOrNull", x, _string("UUID")),
    "languagecodetoname": lambda code: call(
        "transform",
        code,
        _array([item.split(" ", 1)[0] for item in _LANGUAGES.split("|")]),
        _array([item.split(" ", 1)[1] for item in _LANGUAGES.split("|")]),
        _string("Unknown"),
    ),
    # PostHog's semantic-version UDF: the leading dotted numbers as an array of integers
    "sortablesemver": lambda v: call(
        "arrayMap",
        exp.Lambda(this=call("toUInt32OrZero", exp.column("part")), expressions=[exp.to_identifier("part")]),
        call("splitByChar", _string("."), call("extract", v, _string(r"(\d+(\.\d+)+)"))),
    ),
    "hogql_lookupdomaintype": lambda x: _category_lookup(x, SOURCE_CATEGORIES),
    "hogql_lookuppaidsourcetype": lambda x: _category_lookup(x, SOURCE_CATEGORIES, "Paid "),
    "hogql_lookuporganicsourcetype": lambda x: _category_lookup(x, SOURCE_CATEGORIES, "Organic "),
    "hogql_lookuppaidmediumtype": lambda x: _medium_lookup(x, PAID_MEDIUM_TYPES),
    "hogql_lookuporganicmediumtype": lambda x: _medium_lookup(x, ORGANIC_MEDIUMS),
}
"""Names PostHog sends as another expression of the arguments (its templates, written as trees)."""


def _error(message: str, node: exp.Expr) -> HogQLError:
    start, end = node_span(node)
    return HogQLError(message, start=start, end=end)


def _check_arity(name: str, node: exp.Expr, count: int) -> None:
    low, high = _ARITY[name]
    if low <= count and (high is None or count <= high):
        return
    written = node.name
    wanted = str(low) if low == high else f"at least {low}" if high is None else f"{low} to {high}"
    plural = "" if low == high == 1 else "s"
    raise _error(f"Function '{written}' takes {wanted} argument{plural}, found {count}", node)


def _lag_lead(node: exp.Func) -> exp.Expr | None:
    """``lag(x)``/``lead(x)`` over a window as PostHog prints them: ``lagInFrame(toNullable(x))`` over the whole
    partition unless a frame is given, so a row with no neighbour reads NULL (not the type's default)."""
    window = node.parent
    if not isinstance(window, exp.Window) or window.this is not node or not node.expressions:
        return None
    args = list(node.expressions)
    if len(args) > 3:
        raise _error(f"Function '{node.name}' takes 1 to 3 arguments, found {len(args)}", node)
    if window.args.get("spec") is None and not window.args.get("alias"):
        frame = exp.WindowSpec(kind="ROWS", start="UNBOUNDED", start_side="PRECEDING", end="UNBOUNDED",
                               end_side="FOLLOWING")  # fmt: skip
        window.set("spec", frame)
    name = "lagInFrame" if node.name.lower() == "lag" else "leadInFrame"
    return call(name, call("toNullable", args[0]), *args[1:])


def _rewrite(node: exp.Func) -> exp.Expr | None:
    name = node.name.lower()
    if name in ("lag", "lead"):
        return _lag_lead(node)
    if name not in _RENAMES and name not in _TEMPLATES and name != "todecimal":
        return None
    args = list(node.expressions)
    _check_arity(name, node, len(args))
    if name == "todecimal":
        return _to_decimal(node, args)
    if name in _RENAMES:
        renamed = node.copy()
        renamed.set("this", _RENAMES[name])
        return renamed
    return _TEMPLATES[name](*args)


def _keep_column_texts(tree: exp.Expr) -> None:
    # an unnamed output column is named after its text as written (PostHog's rule), not after the rewrite
    if not isinstance(tree, exp.Select):
        return
    for item in tree.expressions:
        if not isinstance(item, exp.Alias) and any(
            node.name.lower() in _ARITY or node.name.lower() in ("todecimal", "lag", "lead")
            for node in item.find_all(exp.Anonymous, exp.AnonymousAggFunc)
        ):
            item.meta[TEXT_META] = item.sql(dialect=HogQLDialect, comments=False)


def rewrite_posthog_names(tree: exp.Expr) -> exp.Expr:
    """Every call of a PostHog name in ``tree`` as the ClickHouse PostHog prints for it; returns the tree."""
    _keep_column_texts(tree)
    for node in list(tree.find_all(exp.Anonymous, exp.AnonymousAggFunc)):
        replacement = _rewrite(node)
        if replacement is None:
            continue
        if TEXT_META in node.meta:
            replacement.meta[TEXT_META] = node.meta[TEXT_META]
        for part in replacement.walk():  # errors about the new nodes point at the call the user wrote
            for key in ("line", "col", "start", "end"):
                if key in node.meta and key not in part.meta:
                    part.meta[key] = node.meta[key]
        if node is tree:
            return replacement
        node.replace(replacement)
    return tree
