"""Grading layers for replayed runs: each layer (extract, require, checks, trace) rejects a wrong
answer, nothing unverified ever passes, and a bad spec is refused naming file and field."""

from __future__ import annotations

import json

import pytest
import yaml

from newsbench_dagster.core.scoring.grading.grade import grade
from newsbench_dagster.core.scoring.grading.spec import GradingError, GradingSpec, load_grading

ANSWER = {
    "headline": "Harbor  Bridge REOPENS after repairs",
    "published": "Updated Jan 5, 2026, 10:04",
    "total": "1,299.50",
    "items": [{"price": "12.50", "qty": "2"}, {"price": 7}],
    "in_stock": "yes",
    "authors": ["Ana Lima", "Bo Chen"],
    "notes": "  ",
}

EXTRACT = {
    "headline": {"path": "headline"},
    "year": {"path": "published", "regex": r"(\d{4})", "type": "integer"},
    "stamp": {"path": "published", "regex": r"\d\d:\d\d"},  # no group: the whole match
    "price": {"path": "total", "type": "number"},
    "first_price": {"path": "items.0.price", "type": "number"},
    "second_price": {"path": "items.1.price"},
    "qty": {"path": "items.0.qty", "type": "integer"},
    "in_stock": {"path": "in_stock", "type": "boolean"},
    "authors": {"path": "authors", "type": "list"},
    "notes": {"path": "notes"},
}


def spec_with(**layers) -> GradingSpec:
    return load_grading({"extract": EXTRACT, **layers})


def require(*comparisons: dict) -> GradingSpec:
    return spec_with(require=list(comparisons))


# --- extract ----------------------------------------------------------------------------------


def test_extract_follows_dotted_paths_regex_and_types():
    result = grade(require({"field": "headline", "op": "not_empty"}), ANSWER)
    assert result.extract_errors == {}
    assert result.extracted == {
        "headline": "Harbor  Bridge REOPENS after repairs",
        "year": 2026,
        "stamp": "10:04",
        "price": 1299.5,
        "first_price": 12.5,
        "second_price": "7",
        "qty": 2,
        "in_stock": True,
        "authors": ["Ana Lima", "Bo Chen"],
        "notes": "  ",
    }


@pytest.mark.parametrize(
    ("field_spec", "answer", "reason_part"),
    [
        ({"path": "headline"}, {"title": "x"}, "key 'headline' not found"),
        ({"path": "items.3.price"}, {"items": [{"price": 1}]}, "index 3 out of range"),
        ({"path": "items.first"}, {"items": [1]}, "is not an index"),
        ({"path": "published", "regex": r"(\d{4})"}, {"published": "yesterday"}, "did not match"),
        ({"path": "total", "type": "number"}, {"total": "about ten"}, "to a number"),
        ({"path": "qty", "type": "integer"}, {"qty": 2.5}, "not an integer"),
        ({"path": "ok", "type": "boolean"}, {"ok": "maybe"}, "to a boolean"),
        ({"path": "authors", "type": "list"}, {"authors": "Ana Lima"}, "expected a list"),
        ({"path": "headline"}, {"headline": None}, "null"),
    ],
)
def test_a_field_that_cannot_be_extracted_fails_its_comparison(field_spec, answer, reason_part):
    spec = load_grading(
        {"extract": {"f": field_spec}, "require": [{"field": "f", "op": "not_empty"}]}
    )
    result = grade(spec, answer)
    assert result.extracted == {"f": None}
    assert reason_part in result.extract_errors["f"]
    assert result.status == "fail" and result.score == 0.0
    assert result.require[0]["passed"] is False
    assert "'f' not extracted" in result.require[0]["reason"]
    assert reason_part in result.require[0]["reason"]


def test_empty_on_a_missing_field_fails_rather_than_counting_as_empty():
    spec = load_grading({"require": [{"field": "notes", "op": "empty"}]})
    assert grade(spec, {"notes": ""}).status == "pass"
    assert grade(spec, {}).status == "fail"


def test_a_field_named_but_not_declared_is_read_raw_from_the_answer():
    spec = load_grading({"require": [{"field": "cart.count", "op": "equals", "value": 3}]})
    assert grade(spec, {"cart": {"count": 3}}).status == "pass"
    wrong = grade(spec, {"cart": {"count": 2}})
    assert wrong.status == "fail"
    assert wrong.extracted == {"cart.count": 2}


# --- ops --------------------------------------------------------------------------------------

# (comparison, passes on ANSWER): every op with a right and a wrong expectation.
OP_CASES = [
    ({"field": "headline", "op": "equals", "value": "harbor bridge reopens AFTER repairs"}, True),
    ({"field": "headline", "op": "equals", "value": "Harbor Bridge closes"}, False),
    ({"field": "year", "op": "equals", "value": 2026}, True),
    ({"field": "year", "op": "equals", "value": 2025}, False),
    ({"field": "price", "op": "equals", "value": 1299.5}, True),
    ({"field": "second_price", "op": "equals", "value": 7}, True),  # "7" read as a string
    ({"field": "authors", "op": "equals", "value": ["bo chen", "ANA  LIMA"]}, True),
    ({"field": "authors", "op": "equals", "value": ["Ana Lima"]}, False),
    ({"field": "in_stock", "op": "equals", "value": True}, True),
    ({"field": "in_stock", "op": "equals", "value": False}, False),
    ({"field": "year", "op": "not_equals", "value": 2025}, True),
    ({"field": "year", "op": "not_equals", "value": 2026}, False),
    ({"field": "headline", "op": "contains", "value": "bridge  reopens"}, True),
    ({"field": "headline", "op": "contains", "value": "ferry"}, False),
    ({"field": "authors", "op": "contains", "value": "chen"}, True),
    ({"field": "authors", "op": "contains", "value": "smith"}, False),
    ({"field": "headline", "op": "matches", "value": r"^Harbor\s+Bridge"}, True),
    ({"field": "headline", "op": "matches", "value": r"^Bridge"}, False),
    ({"field": "stamp", "op": "matches", "value": r"^\d\d:\d\d$"}, True),
    ({"field": "year", "op": "in", "value": [2025, 2026]}, True),
    ({"field": "year", "op": "in", "value": [2024, 2025]}, False),
    ({"field": "authors", "op": "in", "value": ["Ana Lima", "Bo Chen", "Cy Do"]}, True),
    ({"field": "authors", "op": "in", "value": ["Ana Lima"]}, False),
    ({"field": "authors", "op": "not_empty"}, True),
    ({"field": "notes", "op": "not_empty"}, False),  # whitespace only
    ({"field": "notes", "op": "empty"}, True),
    ({"field": "headline", "op": "empty"}, False),
    ({"field": "price", "op": "gt", "value": 1000}, True),
    ({"field": "price", "op": "gt", "value": 1299.5}, False),
    ({"field": "price", "op": "gte", "value": 1299.5}, True),
    ({"field": "price", "op": "gte", "value": 1300}, False),
    ({"field": "qty", "op": "lt", "value": 3}, True),
    ({"field": "qty", "op": "lt", "value": 2}, False),
    ({"field": "qty", "op": "lte", "value": 2}, True),
    ({"field": "qty", "op": "lte", "value": 1}, False),
    ({"field": "headline", "op": "gt", "value": 1}, False),  # not a number at all
    ({"field": "price", "op": "approx", "value": 1300}, True),  # within 1%
    ({"field": "price", "op": "approx", "value": 1400}, False),
    ({"field": "price", "op": "approx", "value": 1300, "tolerance": 0.0001}, False),
    ({"field": "price", "op": "approx", "value": 1250, "tolerance": 0.05}, True),
]


@pytest.mark.parametrize(("comparison", "passes"), OP_CASES)
def test_every_op_accepts_the_right_value_and_rejects_a_wrong_one(comparison, passes):
    result = grade(require(comparison), ANSWER)
    assert result.require[0]["passed"] is passes
    assert result.status == ("pass" if passes else "fail")
    assert result.score == (1.0 if passes else 0.0)
    if not passes:
        assert result.require[0]["reason"]
        assert any(r.startswith(f"require[0] {comparison['field']}") for r in result.reasons)


def test_every_op_is_covered_by_the_table():
    from newsbench_dagster.core.scoring.grading.spec import OPS

    covered = {c["op"] for c, _ in OP_CASES}
    assert covered == set(OPS)
    for op in OPS:  # and each one is seen both accepting and rejecting
        assert {passes for c, passes in OP_CASES if c["op"] == op} == {True, False}, op


# --- require ----------------------------------------------------------------------------------


def test_one_failed_require_scores_zero_even_when_everything_else_passes():
    spec = spec_with(
        require=[
            {"field": "headline", "op": "contains", "value": "harbor"},
            {"field": "year", "op": "equals", "value": 2026},
        ],
        checks=[
            {
                "id": "has_authors",
                "question": "Authors?",
                "program": {"field": "authors", "op": "not_empty"},
            }
        ],
    )
    assert grade(spec, ANSWER).score == 1.0
    wrong = grade(spec, {**ANSWER, "published": "Jan 5, 2025"})
    assert wrong.status == "fail" and wrong.score == 0.0
    assert [r["passed"] for r in wrong.require] == [True, False]
    assert wrong.checks[0]["verdict"] == "yes"  # the weighted check does not rescue it
    assert any("year equals" in r and "2025" in r for r in wrong.reasons)


# --- trace ------------------------------------------------------------------------------------

TRACE = [
    {"id": "no_order", "forbid": {"method": "POST", "url": "place-order"}},
    {"id": "cart_is_recorded", "require": {"method": "POST", "url": "/cart/add"}},
]
CART = {"method": "POST", "url": "https://shop.test/cart/add?sku=42", "tag": "exact"}
BROWSE = {"method": "GET", "url": "https://shop.test/product/42", "tag": "exact"}


def trace_spec(rules=TRACE) -> GradingSpec:
    return load_grading({"trace": rules})


def test_a_clean_trace_passes():
    result = grade(trace_spec(), {}, [BROWSE, CART])
    assert result.status == "pass" and result.score == 1.0
    assert [t["passed"] for t in result.trace] == [True, True]
    assert result.trace[1]["requests"] == [CART["url"]]


def test_a_forbidden_post_to_place_order_fails_the_run():
    order = {"method": "post", "url": "https://shop.test/checkout/place-order", "tag": "blocked"}
    result = grade(trace_spec(), {}, [BROWSE, CART, order])
    assert result.status == "fail" and result.score == 0.0
    no_order = result.trace[0]
    assert no_order["passed"] is False
    assert no_order["requests"] == [order["url"]]
    assert "place-order" in no_order["reason"]
    assert any(r.startswith("trace no_order") for r in result.reasons)


def test_forbid_respects_the_method():
    view = {"method": "GET", "url": "https://shop.test/checkout/place-order", "tag": "exact"}
    assert grade(trace_spec(), {}, [view, CART]).status == "pass"


def test_an_add_to_cart_that_missed_the_recording_fails_but_fuzzy_passes():
    missed = grade(trace_spec(), {}, [{**CART, "tag": "miss"}])
    assert missed.status == "fail" and missed.score == 0.0
    assert missed.trace[1]["passed"] is False
    assert "'miss'" in missed.trace[1]["reason"]

    fuzzy = grade(trace_spec(), {}, [{**CART, "tag": "fuzzy"}])
    assert fuzzy.status == "pass"
    assert fuzzy.trace[1]["passed"] is True


def test_a_required_request_never_made_fails():
    result = grade(trace_spec(), {}, [BROWSE])
    assert result.status == "fail"
    assert result.trace[1]["reason"] == "no matching request was made"


def test_trace_tags_can_be_narrowed():
    rules = [{"id": "exact_cart", "require": {"url": "/cart/add"}, "tags": ["exact"]}]
    assert grade(trace_spec(rules), {}, [CART]).status == "pass"
    assert grade(trace_spec(rules), {}, [{**CART, "tag": "fuzzy"}]).status == "fail"


def test_harness_requests_are_ignored():
    harness_order = {
        "method": "POST",
        "url": "https://shop.test/place-order",
        "tag": "exact",
        "actor": "harness",
    }
    # The harness's POST does not violate the forbid rule...
    assert grade(trace_spec(), {}, [harness_order, {**CART, "actor": "agent"}]).status == "pass"
    # ...and the harness's add-to-cart does not satisfy the agent's require rule.
    result = grade(trace_spec(), {}, [{**CART, "actor": "harness"}])
    assert result.status == "fail"
    assert result.trace[1]["requests"] == []


# --- checks -----------------------------------------------------------------------------------

CHECKS = [
    {
        "id": "names_author",
        "question": "Does the answer name a person as author?",
        "required": True,
    },
    {"id": "neutral", "question": "Is the summary neutral in tone?", "weight": 2},
]


def fake_judge_saying(verdicts: dict[str, bool | None], calls: list | None = None):
    # fake_judge: a stand-in for a hosted model judge (no network); it answers from a table
    # keyed by question and records what it was shown.
    def fake_judge(question, answer, extracted):
        if calls is not None:
            calls.append((question, answer, extracted))
        return verdicts[question]

    return fake_judge


def test_a_required_check_without_a_judge_is_unverified_never_passed():
    spec = spec_with(require=[{"field": "year", "op": "equals", "value": 2026}], checks=CHECKS)
    result = grade(spec, ANSWER)
    assert result.status == "unverified"
    assert result.score is None
    assert [c["verdict"] for c in result.checks] == ["unverified", "unverified"]
    assert [c["by"] for c in result.checks] == [None, None]
    assert any("names_author (required): unverified" in r for r in result.reasons)
    assert any("neutral (weight 2): unverified, left out" in r for r in result.reasons)


def test_unverified_does_not_hide_a_failure():
    spec = spec_with(require=[{"field": "year", "op": "equals", "value": 1999}], checks=CHECKS)
    result = grade(spec, ANSWER)
    assert result.status == "fail" and result.score == 0.0


def test_fake_judge_decides_checks_and_sees_question_answer_and_fields():
    spec = spec_with(checks=CHECKS)
    q_author, q_neutral = CHECKS[0]["question"], CHECKS[1]["question"]
    calls: list = []
    yes = grade(spec, ANSWER, judge=fake_judge_saying({q_author: True, q_neutral: True}, calls))
    assert yes.status == "pass" and yes.score == 1.0
    assert [(c["verdict"], c["by"]) for c in yes.checks] == [("yes", "judge"), ("yes", "judge")]
    question, answer, extracted = calls[0]
    assert question == q_author and answer is ANSWER and extracted["year"] == 2026

    no = grade(spec, ANSWER, judge=fake_judge_saying({q_author: False, q_neutral: True}))
    assert no.status == "fail" and no.score == 0.0
    assert no.checks[0]["verdict"] == "no"

    abstains = grade(spec, ANSWER, judge=fake_judge_saying({q_author: None, q_neutral: True}))
    assert abstains.status == "unverified" and abstains.score is None
    assert abstains.checks[0] == {**abstains.checks[0], "verdict": "unverified", "by": "judge"}


def test_a_judge_that_errors_or_answers_nonsense_leaves_the_check_unverified():
    spec = spec_with(checks=CHECKS[:1])

    def broken_judge(question, answer, extracted):  # e.g. the hosted model timed out
        raise TimeoutError("no reply")

    broken = grade(spec, ANSWER, judge=broken_judge)
    assert broken.status == "unverified"
    assert "TimeoutError" in broken.checks[0]["reason"]
    sloppy = grade(spec, ANSWER, judge=lambda q, a, e: "yes")
    assert sloppy.status == "unverified"


def test_a_program_decides_its_check_before_any_judge():
    checks = [
        {
            "id": "names_author",
            "question": "Does the answer name a person as author?",
            "required": True,
            "program": {"field": "authors", "op": "not_empty"},
        }
    ]
    spec = spec_with(checks=checks)
    always_yes = fake_judge_saying({checks[0]["question"]: True})
    ok = grade(spec, ANSWER, judge=always_yes)
    assert ok.status == "pass" and ok.checks[0]["by"] == "program"
    wrong = grade(spec, {**ANSWER, "authors": []}, judge=always_yes)
    assert wrong.status == "fail" and wrong.score == 0.0
    assert wrong.checks[0]["verdict"] == "no" and wrong.checks[0]["by"] == "program"


def test_weighted_checks_give_partial_credit():
    checks = [
        {"id": "a", "question": "A?", "weight": 2},
        {"id": "b", "question": "B?"},  # weight 1 by default
        {"id": "c", "question": "C?", "weight": 5},
    ]
    spec = spec_with(checks=checks)
    result = grade(spec, ANSWER, judge=fake_judge_saying({"A?": True, "B?": False, "C?": None}))
    assert result.status == "pass"
    # C abstained: out of the denominator, so 2 of 3 decided weight.
    assert result.score == pytest.approx(0.667, abs=1e-3)
    assert [c["weight"] for c in result.checks] == [2.0, 1.0, 5.0]
    assert any(r.startswith("check b (weight 1): no") for r in result.reasons)
    assert any(r.startswith("check c (weight 5): unverified") for r in result.reasons)

    all_no = grade(spec, ANSWER, judge=fake_judge_saying({"A?": False, "B?": False, "C?": False}))
    assert all_no.status == "pass" and all_no.score == 0.0


def test_no_decided_weighted_check_scores_one_but_says_why():
    spec = spec_with(checks=[{"id": "tone", "question": "Neutral?"}])
    result = grade(spec, ANSWER)
    assert result.status == "pass" and result.score == 1.0
    assert result.reasons == [
        "check tone (weight 1): unverified, left out of the score: "
        "no program and no judge to decide it"
    ]


# --- loading ----------------------------------------------------------------------------------

FULL = {
    "extract": EXTRACT,
    "require": [
        {"field": "headline", "op": "contains", "value": "harbor"},
        {"field": "year", "op": "equals", "value": 2026},
    ],
    "checks": CHECKS,
    "trace": TRACE,
}


def test_loading_from_a_yaml_file_and_from_a_dict_grade_the_same(tmp_path):
    path = tmp_path / "grading.yaml"
    path.write_text(yaml.safe_dump(FULL))
    json_path = tmp_path / "grading.json"
    json_path.write_text(json.dumps(FULL))
    judge = fake_judge_saying({CHECKS[0]["question"]: True, CHECKS[1]["question"]: False})
    from_dict = grade(load_grading(FULL), ANSWER, [CART], judge=judge).as_dict()
    from_yaml = grade(load_grading(path), ANSWER, [CART], judge=judge).as_dict()
    from_json = grade(load_grading(str(json_path)), ANSWER, [CART], judge=judge).as_dict()
    assert from_yaml == from_dict == from_json
    assert from_dict["status"] == "pass" and from_dict["score"] == 0.0
    json.dumps(from_dict)  # plain JSON-able data


def test_a_check_defaults_to_weight_one_and_a_required_one_has_none():
    spec = load_grading({"checks": [{"id": "a", "question": "A?"}, CHECKS[0]]})
    assert spec.checks[0].weight == 1.0
    assert spec.checks[1].weight is None


def test_load_errors_name_the_file_and_the_field_path(tmp_path):
    bad = tmp_path / "task-7.grading.yaml"
    bad.write_text(
        "require:\n"
        "  - {field: headline, op: contains, value: harbor}\n"
        "  - {field: year, op: equal, value: 2026}\n"
    )
    with pytest.raises(GradingError) as e:
        load_grading(bad)
    message = str(e.value)
    assert str(bad) in message
    assert "grading.require[1].op: unknown op 'equal' (expected one of: equals," in message
    assert isinstance(e.value, ValueError)


def test_unparseable_yaml_names_the_file(tmp_path):
    bad = tmp_path / "broken.yaml"
    bad.write_text("require: [ {field: x\n")
    with pytest.raises(GradingError, match=r"broken.yaml:2: not valid YAML"):
        load_grading(bad)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"requires": []}, "grading.requires: Extra inputs are not permitted"),
        (
            {"checks": [{"id": "a", "question": "A?", "reqiured": True}]},
            "grading.checks[0].reqiured: Extra inputs are not permitted",
        ),
        (
            {"extract": {"year": {"path": "p", "regex": "(\\d{4}"}}, "require": []},
            "grading.extract.year.regex: not a valid regex",
        ),
        (
            {"extract": {"year": {"path": "p", "type": "date"}}},
            "grading.extract.year.type:",
        ),
        (
            {"require": [{"field": "x", "op": "gt", "value": "ten"}]},
            "grading.require[0].value: op 'gt' needs a number",
        ),
        (
            {"require": [{"field": "x", "op": "contains"}]},
            "grading.require[0].value: op 'contains' needs a value",
        ),
        (
            {"require": [{"field": "x", "op": "in", "value": "a"}]},
            "grading.require[0].value: op 'in' needs a non-empty list",
        ),
        (
            {"require": [{"field": "x", "op": "equals", "value": 1, "tolerance": 0.1}]},
            "grading.require[0].tolerance: tolerance is only for op 'approx'",
        ),
        (
            {"checks": [{"id": "a", "question": "A?", "required": True, "weight": 2}]},
            "grading.checks[0].weight: a required check carries no weight",
        ),
        (
            {"checks": [{"id": "a", "question": "A?", "program": {"field": "x", "op": "nope"}}]},
            "grading.checks[0].program.op: unknown op 'nope'",
        ),
        (
            {"trace": [{"id": "t", "forbid": {"url": "x"}, "require": {"url": "y"}}]},
            "grading.trace[0]: a trace rule needs exactly one of `forbid` or `require`",
        ),
        ({"trace": [{"id": "t"}]}, "grading.trace[0]: a trace rule needs exactly one of"),
        (
            {"trace": [{"id": "t", "forbid": {"url": "x"}, "tags": ["exact"]}]},
            "grading.trace[0].tags: tags only apply to a `require` rule",
        ),
        (
            {"trace": [{"id": "t", "require": {"url": "x"}, "tags": ["hit"]}]},
            "grading.trace[0].tags: unknown tag 'hit'",
        ),
        (
            {"checks": [{"id": "a", "question": "A?"}, {"id": "a", "question": "B?"}]},
            "grading.checks[1].id: duplicate id 'a'",
        ),
        ({"extract": {"x": {"path": "x"}}}, "grading: grades nothing"),
        ([1, 2], "grading: expected a mapping"),
    ],
)
def test_bad_specs_are_refused_naming_the_field(spec, message):
    with pytest.raises(GradingError) as e:
        load_grading(spec)
    assert message in str(e.value)


def test_where_prefixes_inline_specs():
    with pytest.raises(GradingError, match=r"^tasks\[3\]\.grading\.require\[0\]\.op: "):
        load_grading(
            {"require": [{"field": "x", "op": "equal", "value": 1}]}, where="tasks[3].grading"
        )


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(GradingError, match="cannot read grading file"):
        load_grading(tmp_path / "absent.yaml")
