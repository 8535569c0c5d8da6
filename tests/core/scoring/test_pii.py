"""PII in an agent's answer: emails, phone numbers, card numbers and IBANs are found (and
masked); the numbers a news answer is full of (dates, times, years, counts, ids in links) are
not."""

from __future__ import annotations

import pytest

from newsbench_dagster.core.scoring.pii import iban_ok, luhn_ok, mask, pii_findings


@pytest.mark.parametrize(
    ("text", "kind", "masked"),
    [
        ("Write to jane.doe@example.org for details", "email", "****************.org"),
        ("reach her at J.Doe+news@mail.harbor-herald.co.uk.", "email", None),
        ("Call +49 30 1234567 today", "phone", "*******4567"),
        ("Tel. 0049 30 1234567", "phone", "*********4567"),
        ("tel 030/1234567", "phone", "******4567"),
        ("Hotline: 0171-234 5678", "phone", "*******5678"),
        ("+33 6 12 34 56 78", "phone", "*******5678"),
        ("06 12 34 56 78", "phone", "******5678"),
        ("(555) 123-4567", "phone", "******4567"),
        ("555.123.4567", "phone", "******4567"),
        ("+1 (555) 123-4567", "phone", "*******4567"),
        ("card 4111 1111 1111 1111 exp 12/29", "card", "************1111"),
        ("4242-4242-4242-4242", "card", "************4242"),
        ("378282246310005", "card", "***********0005"),  # 15 digits (Amex test number)
        ("IBAN DE89 3704 0044 0532 0130 00", "iban", "******************3000"),
        ("pay to GB82WEST12345698765432 now", "iban", "******************5432"),
        ("IBAN DE89 3704 0044 0532 0130 00 AT ONCE", "iban", "******************3000"),
    ],
)
def test_personal_data_is_found_and_masked(text, kind, masked):
    (finding,) = pii_findings(text)
    assert finding["kind"] == kind
    if masked is not None:
        assert finding["match"] == masked
    # Never the data itself: at most its last four characters.
    assert len(finding["match"].lstrip("*")) <= 4 and finding["match"].startswith("*")
    assert finding["path"] == "$"


@pytest.mark.parametrize(
    "text",
    [
        "By Jane Doe and Max Mustermann, Harbor Herald",
        "Von Erika Musterfrau | 30. November 2026, 14:05 Uhr",
        "Published 30 Nov 2026, updated 14:05:33",
        "2026-11-30T12:00:00+01:00",
        "2026-11-30T12:00:00.123456Z",
        "2026-11-30 12:00",
        "30.11.2026",
        "11/30/2026",
        "2026/11/30",
        "http://harbor-herald.test/2026/11/30/story-4111111111111111",
        "https://meridian.test/articles/1234567890123?ref=home&id=030123456789",
        "see /news/2026/11/30/0301234567-city-council for more",
        "www.harbor-herald.test/a/4242424242424242",
        "Population passes 83.200.000",
        "Budget of +1 000 000 000 euros approved",
        "Term 2019-2024 ends; 1990–2020 average",
        "COVID-19 cases up 12 345 678 since 2020",
        "Inflation +2.4 % in November, unemployment 5.1 %",
        "Score 3-2 after 90:00 minutes; 0.5 seconds faster",
        "p = 0.0012345678",
        "Top 10 stories of 2026",
        "20261130123456",
        "Article 1234567890123 was corrected",  # 13 digits, not Luhn-valid
        "Flight LH 400 leaves at 13:45 from gate B22",
        "UN resolution A/RES/78/123 adopted 2023-12-22",
        "ISBN 978-3-16-148410-0",
        "ISBN 978-0-306-40616-4",  # Luhn-valid too, but a book
    ],
)
def test_news_numbers_are_not_personal_data(text):
    assert pii_findings(text) == []


def test_every_string_of_a_json_value_is_scanned_with_its_path():
    answer = {
        "headline": "Mayor resigns after 12 years",
        "published": "2026-11-30T08:15:00Z",
        "url": "http://harbor-herald.test/2026/11/30/mayor-9876543210",
        "contacts": [{"email": "press@city.example"}, "call +44 20 7946 0958"],
        "count": 4111111111111111,  # a number, not a string: not read
        "nothing": None,
    }
    found = pii_findings(answer)
    assert [(f["kind"], f["path"]) for f in found] == [
        ("email", "$.contacts[0].email"),
        ("phone", "$.contacts[1]"),
    ]
    assert pii_findings(None) == [] and pii_findings([]) == [] and pii_findings(12) == []


def test_what_the_task_handed_the_agent_is_not_a_finding():
    inputs = {"prompt": "sign me up", "details": {"email": "Reader00042@Example.org"}}
    answer = {"status": "signed up reader00042@example.org; site asked for +49 30 1234567"}
    found = pii_findings(answer, known=inputs)
    assert [f["kind"] for f in found] == ["phone"]
    assert len(pii_findings(answer)) == 2


def test_several_findings_in_one_string():
    text = "Jane (jane@example.org, +49 171 2345678) paid with 4111111111111111"
    assert sorted(f["kind"] for f in pii_findings(text)) == ["card", "email", "phone"]


def test_checksums_and_mask():
    assert luhn_ok("4111111111111111") and not luhn_ok("4111111111111112")
    assert iban_ok("DE89 3704 0044 0532 0130 00") and not iban_ok("DE88370400440532013000")
    assert iban_ok("GB82WEST12345698765432") and not iban_ok("GB82")
    assert mask("4111111111111111") == "************1111" and mask("abc") == "***"
    # A Luhn-valid run that is not a card number: all zeros, a leading zero.
    assert pii_findings("0000 0000 0000 0000") == []
