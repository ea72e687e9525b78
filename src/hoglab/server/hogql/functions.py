"""Which ClickHouse functions HogQL may call, and the few that are rewritten.

The lists follow PostHog's HogQL allow-list (``posthog/hogql/functions/``): the scalar, string, date, JSON,
array, URL, hash and aggregate functions an analyst needs, and nothing that reads anything but its arguments.
Refused on purpose: table functions and anything that reads a table by name (``joinGet``, ``dictGet*``,
``in()``/``globalIn()`` on a table name, ``hasColumnInTable``); anything about the host or the server
(``hostName``, ``version``, ``uptime``, ``currentDatabase``, ``currentUser``, ``getSetting``, ``getMacro``,
``filesystem*``, ``timezone``/``serverTimezone``); anything that stalls or fails on purpose (``sleep``,
``sleepEachRow``, ``throwIf``); and anything that formats through server formats (``formatRow``).

Names are matched case-insensitively: ClickHouse itself only accepts a different case for functions it
registers as case-insensitive, and either way it can only mean the same function.

>>> is_allowed_function("JSONExtractString"), is_allowed_function("file"), is_allowed_function("sumIf")
(True, False, True)
"""

from __future__ import annotations

import functools

__all__ = [
    "AGGREGATE_COMBINATORS",
    "AGGREGATE_FUNCTIONS",
    "SCALAR_FUNCTIONS",
    "TZ_FUNCTIONS",
    "WINDOW_FUNCTIONS",
    "function_names",
    "is_aggregate",
    "is_allowed_function",
    "split_combinators",
]


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


_ARITHMETIC = _names("""
plus minus multiply divide intDiv intDivOrZero modulo moduloOrZero positiveModulo pmod negate abs gcd lcm
max2 min2 least greatest sign exp exp2 exp10 log ln log2 log10 log1p sqrt cbrt erf erfc lgamma tgamma sin cos
tan asin acos atan atan2 sinh cosh tanh asinh acosh atanh hypot pow power intExp2 intExp10 round roundBankers
floor ceil ceiling trunc truncate roundToExp2 roundDuration roundAge roundDown pi e degrees radians factorial
width_bucket isNaN isFinite isInfinite ifNotFinite bitAnd bitOr bitXor bitNot bitShiftLeft bitShiftRight
bitCount bitTest bitTestAll bitTestAny mod bitRotateLeft bitRotateRight bitSlice bitHammingDistance multiplyDecimal
divideDecimal
""")
_LOGIC = _names("""
equals notEquals less greater lessOrEquals greaterOrEquals and or not xor if multiIf coalesce ifNull nullIf
isNull isNotNull assumeNotNull toNullable isZeroOrNull isNotDistinctFrom
""")
_CONVERSIONS = _names("""
toInt8 toInt16 toInt32 toInt64 toInt128 toInt256 toUInt8 toUInt16 toUInt32 toUInt64 toUInt128 toUInt256
toFloat32 toFloat64 toInt8OrZero toInt16OrZero toInt32OrZero toInt64OrZero toUInt8OrZero toUInt16OrZero
toUInt32OrZero toUInt64OrZero toFloat32OrZero toFloat64OrZero toInt8OrNull toInt16OrNull toInt32OrNull
toInt64OrNull toUInt8OrNull toUInt16OrNull toUInt32OrNull toUInt64OrNull toFloat32OrNull toFloat64OrNull
toInt64OrDefault toFloat64OrDefault toDecimal32 toDecimal64 toDecimal128 toDecimal256 toDecimal32OrNull
toDecimal64OrNull toDecimal128OrNull toDecimal256OrNull toDecimal64OrZero toString toFixedString
toStringCutToZero toUUID toUUIDOrNull toUUIDOrZero toBool toTypeName toLowCardinality accurateCast
accurateCastOrNull accurateCastOrDefault reinterpretAsString reinterpretAsUInt64 reinterpretAsInt64
reinterpretAsFloat64 reinterpretAsUInt8 reinterpretAsUInt16 reinterpretAsUInt32 reinterpretAsUInt128
reinterpretAsUInt256 reinterpretAsInt8 reinterpretAsInt16 reinterpretAsInt32 reinterpretAsInt128 reinterpretAsInt256
reinterpretAsFloat32 reinterpretAsUUID
toIPv4 toIPv6 toIPv4OrNull toIPv6OrNull IPv4NumToString IPv4StringToNum IPv6NumToString
IPv6StringToNum isIPv4String isIPv6String isIPAddressInRange UUIDStringToNum UUIDNumToString toJSONString
toInt toFloat toDecimal
""")
_DATES = _names("""
now now64 today yesterday toDate toDate32 toDateOrNull toDateOrZero toDate32OrNull toDateTime toDateTime64
toDateTimeOrNull toDateTimeOrZero toDateTime64OrNull toDateTime64OrZero toTimeZone toTimezone timeZoneOf
timeZoneOffset toYear toQuarter toMonth toDayOfYear toDayOfMonth toDayOfWeek toHour toMinute toSecond
toMillisecond toUnixTimestamp toUnixTimestamp64Milli toUnixTimestamp64Micro toUnixTimestamp64Nano
fromUnixTimestamp fromUnixTimestamp64Milli fromUnixTimestamp64Micro fromUnixTimestamp64Nano FROM_UNIXTIME
toStartOfYear toStartOfISOYear toStartOfQuarter toStartOfMonth toStartOfWeek toStartOfDay toStartOfHour
toStartOfMinute toStartOfSecond toStartOfMillisecond toStartOfMicrosecond toStartOfFiveMinutes
toStartOfFiveMinute toStartOfTenMinutes toStartOfFifteenMinutes toStartOfInterval toMonday toLastDayOfMonth
toLastDayOfWeek toTime toISOYear toISOWeek toWeek toYearWeek toYYYYMM toYYYYMMDD toYYYYMMDDhhmmss
toRelativeYearNum toRelativeQuarterNum toRelativeMonthNum toRelativeWeekNum toRelativeDayNum
toRelativeHourNum toRelativeMinuteNum toRelativeSecondNum age dateAdd dateSub date_add date_sub
dateDiff date_diff DATE_DIFF timestampAdd timestampSub timeStampAdd timeStampSub dateTrunc date_trunc
addYears addQuarters addMonths addWeeks addDays addHours addMinutes addSeconds addMilliseconds
addMicroseconds subtractYears subtractQuarters subtractMonths subtractWeeks subtractDays subtractHours
subtractMinutes subtractSeconds subtractMilliseconds subtractMicroseconds timeSlot timeSlots formatDateTime
formatDateTimeInJodaSyntax dateName monthName makeDate makeDate32 makeDateTime makeDateTime64
parseDateTime parseDateTimeOrNull parseDateTimeOrZero parseDateTimeInJodaSyntax
parseDateTimeInJodaSyntaxOrNull parseDateTimeBestEffort parseDateTimeBestEffortOrNull
parseDateTimeBestEffortOrZero parseDateTimeBestEffortUS parseDateTimeBestEffortUSOrNull
parseDateTime64BestEffort parseDateTime64BestEffortOrNull parseDateTime64BestEffortOrZero
parseDateTime64BestEffortUSOrNull UUIDv7ToDateTime nowInBlock tumble tumbleStart tumbleEnd hop hopStart hopEnd
toIntervalSecond toIntervalMinute toIntervalHour toIntervalDay toIntervalWeek toIntervalMonth
toIntervalQuarter toIntervalYear toIntervalMillisecond toModifiedJulianDay toModifiedJulianDayOrNull
fromModifiedJulianDay fromModifiedJulianDayOrNull
""")
_STRINGS = _names("""
length lengthUTF8 char_length character_length empty notEmpty lower upper lowerUTF8 upperUTF8 lcase ucase
reverse reverseUTF8 concat concatWithSeparator concatAssumeInjective substring substr mid substringUTF8
substringIndex substringIndexUTF8 left right leftUTF8 rightUTF8 leftPad rightPad leftPadUTF8 rightPadUTF8
lpad rpad trim trimLeft trimRight trimBoth ltrim rtrim replace replaceOne replaceAll replaceRegexpOne
replaceRegexpAll regexpExtract REGEXP_EXTRACT extract extractAll extractAllGroups extractAllGroupsHorizontal
extractAllGroupsVertical extractGroups splitByChar splitByString splitByRegexp splitByWhitespace
splitByNonAlpha splitByAlpha alphaTokens arrayStringConcat base64Encode base64Decode tryBase64Decode
base64URLEncode base64URLDecode hex unhex bin unbin format formatReadableSize formatReadableDecimalSize
formatReadableQuantity formatReadableTimeDelta position positionCaseInsensitive positionUTF8
positionCaseInsensitiveUTF8 locate startsWith endsWith startsWithUTF8 endsWithUTF8 hasToken
hasTokenCaseInsensitive hasTokenOrNull like notLike ilike notILike match REGEXP_MATCHES multiMatchAny
multiMatchAnyIndex multiMatchAllIndices multiSearchAny multiSearchFirstIndex multiSearchFirstPosition
multiSearchAllPositions countSubstrings countSubstringsCaseInsensitive countMatches
countMatchesCaseInsensitive repeat space toValidUTF8 isValidUTF8 normalizeUTF8NFC normalizeUTF8NFD
normalizeUTF8NFKC normalizeUTF8NFKD encodeURLComponent decodeURLComponent encodeURLFormComponent
decodeURLFormComponent encodeXMLComponent decodeXMLComponent decodeHTMLComponent extractTextFromHTML ascii
soundex levenshteinDistance editDistance editDistanceUTF8 damerauLevenshteinDistance jaroSimilarity
jaroWinklerSimilarity stringJaccardIndex stringJaccardIndexUTF8 ngramDistance ngramSimhash initcap
initcapUTF8 firstLine convertCharset printf overlay overlayUTF8 left right sparseGrams base58Encode base58Decode
tryBase58Decode appendTrailingCharIfAbsent countSubstringsCaseInsensitiveUTF8 multiSearchAllPositionsUTF8
multiFuzzyMatchAny multiFuzzyMatchAnyIndex multiFuzzyMatchAllIndices ngramSearch ngrams tokens translate
translateUTF8 regexpQuoteMeta
""")
_URLS = _names("""
protocol domain domainWithoutWWW domainRFC domainWithoutWWWRFC topLevelDomain topLevelDomainRFC
firstSignificantSubdomain cutToFirstSignificantSubdomain cutToFirstSignificantSubdomainWithWWW port portRFC
path pathFull queryString fragment queryStringAndFragment extractURLParameter extractURLParameters
extractURLParameterNames URLHierarchy URLPathHierarchy cutWWW cutQueryString cutFragment
cutQueryStringAndFragment cutURLParameter netloc
""")
_HASHES = _names("""
cityHash64 sipHash64 sipHash128 farmHash64 farmFingerprint64 xxHash32 xxHash64 xxh3 murmurHash2_32
murmurHash2_64 murmurHash3_32 murmurHash3_64 murmurHash3_128 MD4 MD5 SHA1 SHA224 SHA256 SHA384 SHA512
halfMD5 javaHash hiveHash intHash32 intHash64 wyHash64 kostikConsistentHash jumpConsistentHash
""")
_JSON = _names("""
JSONHas JSONLength JSONArrayLength JSONType JSONExtract JSONExtractUInt JSONExtractInt JSONExtractFloat
JSONExtractBool JSONExtractString JSONExtractRaw JSONExtractArrayRaw JSONExtractKeys JSONExtractKeysAndValues
JSONExtractKeysAndValuesRaw JSONExtractArrayRawCaseInsensitive JSONExtractStringCaseInsensitive
JSON_VALUE JSON_QUERY JSON_EXISTS isValidJSON simpleJSONHas simpleJSONExtractUInt simpleJSONExtractInt
simpleJSONExtractFloat simpleJSONExtractBool simpleJSONExtractRaw simpleJSONExtractString visitParamHas
visitParamExtractUInt visitParamExtractInt visitParamExtractFloat visitParamExtractBool visitParamExtractRaw
visitParamExtractString
""")
_ARRAYS = _names("""
array has hasAll hasAny hasSubstr indexOf indexOfAssumeSorted countEqual arrayCount arrayExists arrayAll
arrayMap arrayFilter arrayFirst arrayLast arrayFirstOrNull arrayLastOrNull arrayFirstIndex arrayLastIndex
arraySum arrayAvg arrayMin arrayMax arrayProduct arraySort arrayReverseSort arrayPartialSort
arrayPartialReverseSort arrayReverse arrayDistinct arrayUniq arrayEnumerate arrayEnumerateUniq
arrayEnumerateDense arrayConcat arraySlice arrayPushBack arrayPushFront arrayPopBack arrayPopFront
arrayResize arrayZip arrayFlatten flatten arrayCompact arrayCumSum arrayCumSumNonNegative arrayDifference
arrayReduce arrayReduceInRanges arrayElement arrayElementOrNull arrayIntersect arrayUnion arrayExcept
arraySymmetricDifference arrayJoin arraySplit arrayReverseSplit arrayFill arrayReverseFill arrayShuffle
arrayRandomSample arrayAUC arrayROCAUC arrayFold arrayShingles arrayWithConstant arrayRotateLeft
arrayRotateRight arrayShiftLeft arrayShiftRight arrayDotProduct arrayNormalizedGini arrayLevenshteinDistance
emptyArrayUInt8 emptyArrayUInt64 emptyArrayInt64 emptyArrayFloat64 emptyArrayString emptyArrayDate
emptyArrayDateTime emptyArrayToSingle range replicate tuple tupleElement untuple tupleHammingDistance
tupleNames map mapKeys mapValues mapContains mapContainsKey mapFromArrays mapAdd mapSubtract mapPopulateSeries
mapFilter mapApply mapExists mapAll mapSort mapUpdate mapConcat mapContainsKeyLike mapExtractKeyLike L1Norm L2Norm
LinfNorm LpNorm L1Distance L2Distance LinfDistance LpDistance L1Normalize L2Normalize LinfNormalize LpNormalize
cosineDistance dotProduct tupleToNameValuePairs tuplePlus tupleMinus tupleMultiply tupleDivide tupleNegate
tupleMultiplyByNumber tupleDivideByNumber bitmapBuild bitmapToArray bitmapSubsetInRange bitmapSubsetLimit subBitmap
bitmapContains bitmapHasAny bitmapHasAll bitmapCardinality bitmapMin bitmapMax bitmapTransform bitmapAnd bitmapOr
bitmapXor bitmapAndnot bitmapAndCardinality bitmapOrCardinality bitmapXorCardinality bitmapAndnotCardinality
""")
_GEO = _names("""
greatCircleDistance geoDistance greatCircleAngle pointInEllipses pointInPolygon geohashEncode geohashDecode
geohashesInBox h3IsValid h3GetResolution h3GetBaseCell h3EdgeAngle h3EdgeLengthM h3EdgeLengthKm geoToH3 h3ToGeo
h3ToGeoBoundary h3kRing h3HexAreaM2 h3HexAreaKm2 h3IndexesAreNeighbors h3ToChildren h3ToParent h3ToString stringToH3
h3IsResClassIII h3IsPentagon h3GetFaces h3CellAreaM2 h3CellAreaRads2 h3ToCenterChild h3ExactEdgeLengthM
h3ExactEdgeLengthKm h3ExactEdgeLengthRads h3NumHexagons h3PointDistM h3PointDistKm h3PointDistRads h3GetRes0Indexes
h3GetPentagonIndexes h3Line h3Distance h3HexRing h3GetUnidirectionalEdge h3UnidirectionalEdgeIsValid
h3GetOriginIndexFromUnidirectionalEdge h3GetDestinationIndexFromUnidirectionalEdge h3GetIndexesFromUnidirectionalEdge
h3GetUnidirectionalEdgesFromHexagon h3GetUnidirectionalEdgeBoundary
""")
_OTHER = _names("""
generateUUIDv4 generateUUIDv7 rand rand32 rand64 randCanonical randUniform randNormal randBernoulli
materialize ignore identity bar transform runningDifference runningDifferenceStartingWithFirstValue
runningAccumulate neighbor rowNumberInBlock rowNumberInAllBlocks toColumnTypeName isConstant
isNullable nullIn nullInIgnoreSet indexHint
""") - {"nullIn", "nullInIgnoreSet"}  # IN by function name can take a table name: refused like in()

WINDOW_FUNCTIONS = _names("""
row_number rank dense_rank percent_rank cume_dist ntile lag lead lagInFrame leadInFrame first_value
last_value nth_value nonNegativeDerivative
""")

AGGREGATE_FUNCTIONS = _names("""
count sum avg min max any anyLast anyHeavy any_value anyValue first_value last_value argMin argMax uniq
uniqExact uniqHLL12 uniqCombined uniqCombined64 uniqTheta uniqUpTo groupArray groupArrayLast groupUniqArray
groupArrayInsertAt groupArrayMovingAvg groupArrayMovingSum groupArraySample groupArraySorted groupBitAnd
groupBitOr groupBitXor groupBitmap groupBitmapAnd groupBitmapOr groupBitmapXor
groupConcat median medianExact medianExactLow medianExactHigh
medianExactWeighted medianTiming medianTDigest medianBFloat16 quantile quantiles quantileExact
quantilesExact quantileExactLow quantileExactHigh quantileExactWeighted quantilesExactWeighted
quantileExactInclusive quantileExactExclusive quantilesExactInclusive quantilesExactExclusive
quantileTiming quantilesTiming quantileTimingWeighted quantileDeterministic quantilesDeterministic
quantileTDigest quantilesTDigest quantileTDigestWeighted quantileBFloat16 quantilesBFloat16
quantileInterpolatedWeighted quantileGK quantilesGK stddevPop stddevSamp varPop varSamp covarPop covarSamp
corr skewPop skewSamp kurtPop kurtSamp topK topKWeighted approx_top_k sumMap minMap maxMap avgWeighted
simpleLinearRegression stochasticLinearRegression histogram windowFunnel retention sequenceMatch
sequenceCount sequenceNextNode entropy deltaSum deltaSumTimestamp boundingRatio sumCount sumKahan
sumWithOverflow mannWhitneyUTest studentTTest welchTTest meanZTest kolmogorovSmirnovTest contingency cramersV
cramersVBiasCorrected theilsU maxIntersections maxIntersectionsPosition exponentialMovingAverage
intervalLengthSum largestTriangleThreeBuckets rankCorr categoricalInformationValue count_distinct
stddev variance
""")

AGGREGATE_COMBINATORS: tuple[str, ...] = tuple(
    sorted(
        [
            "If", "Array", "ArrayIf", "Map", "State", "SimpleState", "Merge", "MergeState", "ForEach",
            "Distinct", "OrDefault", "OrNull", "Resample", "ArgMin", "ArgMax",
        ],
        key=len,
        reverse=True,
    )
)  # fmt: skip

SCALAR_FUNCTIONS = (
    _ARITHMETIC | _LOGIC | _CONVERSIONS | _DATES | _STRINGS | _URLS | _HASHES | _JSON | _ARRAYS | _GEO | _OTHER
)

_LOWER_SCALARS = {n.lower() for n in SCALAR_FUNCTIONS | WINDOW_FUNCTIONS}
_LOWER_AGGREGATES = {n.lower() for n in AGGREGATE_FUNCTIONS}

TZ_FUNCTIONS: dict[str, int] = {
    # name (lower case) -> number of arguments at which the time zone argument is missing and gets appended
    "now": 0,
    "todatetime": 1,
    "todatetimeornull": 1,
    "todatetimeorzero": 1,
    "todatetime64": 2,
    "todatetime64ornull": 2,
    "todatetime64orzero": 2,
    "parsedatetimebesteffort": 1,
    "parsedatetimebesteffortornull": 1,
    "parsedatetimebesteffortorzero": 1,
    "parsedatetimebesteffortus": 1,
    "parsedatetimebesteffortusornull": 1,
    "parsedatetime64besteffort": 2,
    "parsedatetime64besteffortornull": 2,
    "parsedatetime64besteffortorzero": 2,
    "parsedatetime": 2,
    "parsedatetimeornull": 2,
    "parsedatetimeorzero": 2,
    "makedatetime": 6,
    "parsedatetime64besteffortusornull": 2,
    "uuidv7todatetime": 1,
}
"""Functions that build a DateTime from something without a time zone: the project's zone is appended."""


@functools.lru_cache(maxsize=4096)
def _split(name: str) -> tuple[str, tuple[str, ...]] | None:
    if name.lower() in _LOWER_AGGREGATES:
        return name, ()
    for suffix in AGGREGATE_COMBINATORS:
        if name.endswith(suffix) and len(name) > len(suffix):
            found = _split(name[: -len(suffix)])
            if found is not None:
                return found[0], (*found[1], suffix)
    return None


def split_combinators(name: str) -> tuple[str, list[str]]:
    """``"uniqExactIfState"`` -> ``("uniqExact", ["If", "State"])``: the aggregate under combinator suffixes, trying
    every way to split (``groupArrayIf`` is groupArray + If, not group + ArrayIf); ``(name, [])`` if none fits.

    >>> split_combinators("countIf"), split_combinators("sumMap"), split_combinators("groupArrayIf")
    (('count', ['If']), ('sumMap', []), ('groupArray', ['If']))
    """
    found = _split(name) if len(name) <= 128 else None
    return (found[0], list(found[1])) if found else (name, [])


def is_aggregate(name: str) -> bool:
    """Whether ``name`` is an allowed aggregate, possibly with combinators (``sumIf``, ``uniqMerge``)."""
    base, _ = split_combinators(name)
    return base.lower() in _LOWER_AGGREGATES


def is_allowed_function(name: str) -> bool:
    """Whether HogQL may call ``name`` (scalar, window or aggregate with combinators)."""
    return name.lower() in _LOWER_SCALARS or is_aggregate(name)


@functools.cache
def function_names() -> frozenset[str]:
    """Every name HogQL may call as written most often: the lists above and each aggregate with ``If`` (the
    candidates of a did-you-mean when a call names none of them).

    >>> {"count", "countIf", "toStartOfDay"} <= function_names()
    True
    """
    return SCALAR_FUNCTIONS | WINDOW_FUNCTIONS | AGGREGATE_FUNCTIONS | {f"{name}If" for name in AGGREGATE_FUNCTIONS}
