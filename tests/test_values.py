"""Value normalisation: dates, money, percentages, durations, section references."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tasks.check.values import (
    DateOrder,
    Kind,
    Match,
    compare,
    decide_date_order,
    extract_values,
    find_dates,
    find_durations,
    find_money,
    find_percentages,
    section_refs,
    words_to_number,
)


def one(values, kind):
    got = [v for v in values if v.kind is kind]
    assert len(got) == 1, got
    return got[0]


@pytest.mark.parametrize(
    "text, ymd",
    [
        ("the 1st day of March, 2020", (2020, 3, 1)),
        ("this 22nd day of June 2021", (2021, 6, 22)),
        ("March 1, 2020", (2020, 3, 1)),
        ("1 March 2020", (2020, 3, 1)),
        ("Sept. 3rd, 2019", (2019, 9, 3)),
        ("2020-03-01", (2020, 3, 1)),
        ("made and effective as of1 August 2019", (2019, 8, 1)),  # glued PDF text
        ("March 2020", (2020, 3, None)),
    ],
)
def test_written_dates(text, ymd):
    v = one(find_dates(text), Kind.date)
    assert v.dates == (ymd,) and not v.ambiguous and v.problem is None


def test_no_calendar_date_is_kept_with_a_problem():
    v = one(find_dates("terminate on June 31, 2015"), Kind.date)
    assert v.dates == () and v.problem == "not a calendar date" and v.raw == "June 31, 2015"


def test_numeric_date_is_ambiguous_until_the_document_decides():
    v = one(find_dates("dated 03/01/2020"), Kind.date)
    assert v.ambiguous and set(v.dates) == {(2020, 3, 1), (2020, 1, 3)} and v.raw == "03/01/2020"
    assert one(find_dates("dated 03/01/2020", DateOrder.mdy), Kind.date).dates == ((2020, 3, 1),)
    assert one(find_dates("dated 03/01/2020", DateOrder.dmy), Kind.date).dates == ((2020, 1, 3),)
    # the same date written twice claims no order: equal, not "ambiguous"
    assert compare(v, one(find_dates("03/01/2020"), Kind.date)) is Match.equal
    # an unambiguous statement equal to one reading only is "ambiguous"
    assert compare(one(find_dates("March 1, 2020"), Kind.date), v) is Match.ambiguous


def test_date_order_is_decided_per_document_and_never_flipped():
    us = "Signed 12/31/2020. Payment due 03/01/2021."
    eu = "Signed 31/12/2020. Payment due 03/01/2021."
    assert decide_date_order(us) is DateOrder.mdy
    assert decide_date_order(eu) is DateOrder.dmy
    assert decide_date_order("due 03/01/2021 and 04/02/2021") is DateOrder.unknown
    assert decide_date_order(us + " " + eu) is DateOrder.conflicting
    assert one(find_dates("03/01/2021", decide_date_order(us)), Kind.date).dates == ((2021, 3, 1),)
    assert one(find_dates("03/01/2021", decide_date_order(eu)), Kind.date).dates == ((2021, 1, 3),)
    # a conflicting document keeps both readings rather than picking one
    assert one(find_dates("03/01/2021", DateOrder.conflicting), Kind.date).ambiguous
    # a date that does not fit the decided order keeps its only reading and says so
    odd = one(find_dates("13/01/2021", DateOrder.mdy), Kind.date)
    assert odd.dates == ((2021, 1, 13),) and "MDY" in odd.problem


@pytest.mark.parametrize(
    "text, amount, currency",
    [
        ("USD 1.5 million", "1500000", "USD"),
        ("US$0.5m", "500000", "USD"),
        ("EUR 1.250.000,00", "1250000", "EUR"),
        ("$1,250,000.50", "1250000.50", "USD"),
        ("£2m", "2000000", "GBP"),
        ("HK$1,000", "1000", "HKD"),
        ("CAD $5,000", "5000", "CAD"),
        ("5,000 dollars", "5000", "USD"),
        ("1.5 million euros", "1500000", "EUR"),
        ("five hundred thousand dollars ($500,000)", "500000", "USD"),
        ("One Million Five Hundred Thousand Dollars (US$1,500,000)", "1500000", "USD"),
    ],
)
def test_money(text, amount, currency):
    v = one(find_money(text), Kind.money)
    assert v.amount == Decimal(amount) and v.unit == currency and v.problem is None


def test_money_words_and_figures_are_checked_against_each_other():
    v = one(find_money("five hundred thousand dollars ($600,000)"), Kind.money)
    assert v.amount == Decimal(600000) and "500000" in v.problem and "600000" in v.problem


def test_several_amounts_in_one_clause_stay_apart():
    got = find_money("a fee of $10,000 per month, USD 1.5 million in total and EUR 1.250.000,00 for Europe")
    assert [(v.amount, v.unit) for v in got] == [
        (Decimal(10000), "USD"),
        (Decimal(1500000), "USD"),
        (Decimal(1250000), "EUR"),
    ]
    assert [v.raw for v in got] == ["$10,000", "USD 1.5 million", "EUR 1.250.000,00"]


def test_currency_is_part_of_money_equality():
    usd = one(find_money("$1,000,000"), Kind.money)
    eur = one(find_money("EUR 1,000,000"), Kind.money)
    assert compare(usd, eur) is Match.different
    assert compare(usd, one(find_money("US$ 1 million"), Kind.money)) is Match.equal


@pytest.mark.parametrize(
    "text, pct, problem",
    [
        ("8.75% per annum", "8.75", False),
        ("ten percent (10%)", "10", False),
        ("twenty-five percent (25%)", "25", False),
        ("2.5 per cent", "2.5", False),
        ("fifty percent", "50", False),
        ("ten percent (15%)", "15", True),
    ],
)
def test_percentages(text, pct, problem):
    v = one(find_percentages(text), Kind.percent)
    assert v.amount == Decimal(pct) and bool(v.problem) is problem


@pytest.mark.parametrize(
    "text, n, unit",
    [
        ("thirty (30) days", 30, "day"),
        ("five (5) years", 5, "year"),
        ("twelve (12) months", 12, "month"),
        ("sixty (60) calendar days", 60, "day"),
        ("ten (10) business days", 10, "business_day"),
        ("a 30-day period", 30, "day"),
        ("one year", 1, "year"),
        ("90 days", 90, "day"),
    ],
)
def test_durations(text, n, unit):
    v = one(find_durations(text), Kind.duration)
    assert v.amount == Decimal(n) and v.unit == unit and v.problem is None


def test_duration_words_and_figures_are_checked_against_each_other():
    v = one(find_durations("thirty (60) days"), Kind.duration)
    assert v.amount == Decimal(60) and v.problem == "words say 30, figures say 60"


def test_duration_units_differ():
    a = one(find_durations("thirty (30) days"), Kind.duration)
    b = one(find_durations("thirty (30) months"), Kind.duration)
    assert compare(a, b) is Match.different
    assert compare(a, one(find_durations("30 days"), Kind.duration)) is Match.equal


def test_a_day_of_the_month_is_a_date_not_a_duration():
    vals = extract_values("made this 22nd day of June 2021 for five (5) years")
    assert [(v.kind, v.raw) for v in vals] == [
        (Kind.date, "this 22nd day of June 2021"),
        (Kind.duration, "five (5) years"),
    ]


def test_section_references_are_not_decimals():
    assert section_refs("USD 1.5 million") == []
    assert section_refs("as set out in Section 1.5(a) and § 4, Article IV") == ["1.5(a)", "4", "iv"]
    assert [v.kind for v in extract_values("Section 1.5")] == []


@pytest.mark.parametrize(
    "words, n",
    [
        ("five hundred thousand", 500000),
        ("thirty", 30),
        ("one hundred and twenty-five", 125),
        ("One Million Five Hundred Thousand", 1500000),
        ("a hundred", 100),
        ("forty-five", 45),
    ],
)
def test_number_words(words, n):
    assert words_to_number(words) == Decimal(n)


def test_number_words_reject_other_text():
    assert words_to_number("thirty days") is None
    assert words_to_number("") is None


@pytest.mark.parametrize(
    "text, amount, unit",
    [
        ("CHF 1'250'000.00", "1250000", "CHF"),
        ("CHF 1\u2019250\u2019000.00", "1250000", "CHF"),  # typographic apostrophe U+2019
        ("a fee of 1'250'000.00 CHF per year", "1250000", "CHF"),
        ("1.45 milliards INR", "1450000000", "INR"),
        ("INR 1.45 milliards", "1450000000", "INR"),
        ("\u20ac 2 milliards", "2000000000", "EUR"),
        ("EUR 3 milliards", "3000000000", "EUR"),
        ("Rs. 2 crore", "20000000", "INR"),
        ("Rs. 1.5 crores", "15000000", "INR"),
        ("5 lakh rupees", "500000", "INR"),
        ("\u20b9 5 lakh", "500000", "INR"),
        ("Rs 5 lacs", "500000", "INR"),
        ("five lakh rupees", "500000", "INR"),
        ("one lakh twenty thousand rupees", "120000", "INR"),
        ("1.250.000 \u20ac", "1250000", "EUR"),
    ],
)
def test_apostrophe_groups_and_indian_and_long_scale_multipliers(text, amount, unit):
    v = one(extract_values(text), Kind.money)
    assert (v.amount, v.unit) == (Decimal(amount), unit)


def test_lower_case_code_after_a_figure_is_no_currency():
    assert find_money("12 usd") == []  # codes after a figure count only in capitals ("cad" is a word)


@pytest.mark.parametrize(
    "quote, stated, verdict",
    [
        ("liability shall not exceed CHF 1'250'000.00 in aggregate", "CHF 1", "contradicted"),
        ("liability shall not exceed CHF 1\u2019250\u2019000.00 in aggregate", "CHF 1", "contradicted"),
        ("liability shall not exceed CHF 1'250'000.00 in aggregate", "CHF 1'250'000.00", "verified"),
        ("liability shall not exceed CHF 1'250'000.00 in aggregate", "CHF 1,250,000", "verified"),
        ("liability shall not exceed 1.45 milliards INR in aggregate", "INR 1.45 milliards", "verified"),
        ("liability shall not exceed 1.45 milliards INR in aggregate", "INR 1,450,000,000", "verified"),
        ("liability shall not exceed 1.45 milliards INR in aggregate", "INR 1.45", "contradicted"),
        ("liability shall not exceed Rs. 2 crore", "INR 20,000,000", "verified"),
        ("liability shall not exceed Rs. 2 crore", "Rs. 2", "contradicted"),
        ("liability shall not exceed 5 lakh rupees", "INR 500000", "verified"),
    ],
)
def test_stated_value_against_grouped_or_scaled_quote(quote, stated, verdict):
    from schemas.findings import Finding, FindingValue
    from tasks.check.factcheck import check_values

    finding = Finding(
        clause_type="cap_on_liability",
        summary="cap",
        risk="high",
        evidence=quote,
        page=1,
        values=[FindingValue(name="cap_amount", value=stated)],
    )
    assert check_values(finding).verdict.value == verdict


def test_a_percentage_column_never_glues_onto_an_amount():
    """Ulta's income statement as its text layer reads: each amount is followed by its share of net sales.
    One group separator throughout a figure, so "3,226,773 100.0%" is an amount and a percentage."""
    got = find_money("Net sales $ 3,226,773 100.0% $ 2,729,388 100.0%")
    assert [(v.raw, v.amount) for v in got] == [("$ 3,226,773", Decimal(3226773)), ("$ 2,729,388", Decimal(2729388))]
    assert one(find_money("EUR 1 000 000"), Kind.money).amount == Decimal(1000000)  # space grouping still reads


def test_a_correct_figure_beside_its_percentage_is_verified_not_contradicted():
    from schemas.findings import Finding, FindingValue
    from tasks.check.factcheck import check_values

    finding = Finding(
        clause_type="other",
        summary="net sales",
        risk="low",
        evidence="Net sales $ 3,226,773 100.0% $ 2,729,388 100.0%",
        page=1,
        values=[FindingValue(name="revenue", value="$3,226,773")],
    )
    assert check_values(finding).verdict.value == "verified"


@pytest.mark.parametrize(
    "text, amount",
    [
        ("a dividend of $1.025 per share", Decimal("1.025")),  # 3M's 2015 dividend, not USD 1,025
        ("diluted EPS $ 0.705", Decimal("0.705")),  # Amcor's, not USD 705
        ("a quarterly dividend of $0.1225", Decimal("0.1225")),  # not "$0.122" read as 122
        ("US$ 1.000.000", Decimal(1000000)),  # two dot groups: thousands
        ("EUR 1.025", Decimal(1025)),  # a euro amount keeps the European grouping
    ],
)
def test_a_dollar_amount_with_three_decimals_is_read_as_written(text, amount):
    assert one(find_money(text), Kind.money).amount == amount
