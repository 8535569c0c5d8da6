"""The one reader of users' YAML and JSON files: ordinary documents (aliases, merge keys,
dates) load as the safe loader loads them; an alias bomb, deep nesting, an impossible date,
non-UTF-8 bytes and an oversized file are InputFileErrors naming the file and line. The
bombs here are refused while composing, before anything expands them."""

from __future__ import annotations

from datetime import date

import pytest
import yaml

from newsbench_dagster.core import input_files
from newsbench_dagster.core.errors import ConfigError, InputFileError
from newsbench_dagster.core.input_files import load_json, load_yaml, read_text


def test_ordinary_yaml_loads_as_the_safe_loader_loads_it():
    text = (
        "base: &base {geo: US, device: desktop}\n"
        "mobile:\n  <<: *base\n  device: mobile\n"
        "day: 2026-11-29\n"
        "list: [*base, *base]\n"
    )
    assert load_yaml(text, "x.yaml") == yaml.safe_load(text)
    assert load_yaml(text, "x.yaml")["day"] == date(2026, 11, 29)


def test_an_alias_bomb_is_refused_where_its_budget_runs_out():
    levels = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    levels += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 9)]
    with pytest.raises(InputFileError) as e:
        load_yaml("\n".join(levels), "suites/regression/bomb.yaml")
    # 9**6 > 200,000: the sixth level (line 6) is where the expansion passes the budget.
    assert str(e.value) == (
        "suites/regression/bomb.yaml:6: YAML aliases expand to more than 200000 nodes "
        "(an alias bomb?)"
    )
    assert isinstance(e.value, ConfigError)  # what every config reader already catches


def test_many_aliases_deep_nesting_and_an_impossible_date_are_named_by_line():
    many = "a: &a 1\n" + "".join(f"k{i}: *a\n" for i in range(input_files.MAX_ALIASES + 1))
    with pytest.raises(InputFileError, match=r"^m.yaml:102: more than 100 YAML aliases$"):
        load_yaml(many, "m.yaml")
    with pytest.raises(InputFileError, match=r"^d.yaml:1: nested deeper than 64 levels$"):
        load_yaml("[" * 65 + "]" * 65, "d.yaml")
    load_yaml("[" * 64 + "]" * 64, "d.yaml")  # at the limit: fine
    with pytest.raises(InputFileError) as e:
        load_yaml("site: harbor\nday: 2026-13-45\n", "t.yaml")
    assert str(e.value) == "t.yaml:2: invalid date '2026-13-45': month must be in 1..12"
    with pytest.raises(InputFileError, match=r"^b.yaml:2: not valid YAML: expected ','"):
        load_yaml("a: [1\n", "b.yaml")


def test_json_nesting_and_syntax_are_named():
    assert load_json('{"a": [[1]]}', "t.json") == {"a": [[1]]}
    for text in ("[" * 65 + "]" * 65, "[" * 100_000 + "]" * 100_000):
        with pytest.raises(InputFileError, match=r"^t.json: JSON nested deeper than 64 levels$"):
            load_json(text, "t.json")
    with pytest.raises(InputFileError, match=r"^t.json:2: not valid JSON: Expecting"):
        load_json('{"a": 1,\n}', "t.json")


def test_files_missing_oversized_or_not_utf8_are_named(tmp_path, monkeypatch):
    with pytest.raises(InputFileError, match=r"nope.yaml: no such file$"):
        read_text(tmp_path / "nope.yaml")
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(b"a: 1\nb: caf\xe9\n")
    with pytest.raises(InputFileError, match=r"latin.yaml:2: not UTF-8 text \(byte 11"):
        read_text(latin)
    monkeypatch.setattr(input_files, "MAX_FILE_BYTES", 10)
    big = tmp_path / "big.yaml"
    big.write_text("a: 12345678901\n")
    with pytest.raises(InputFileError, match=r"big.yaml: 15 bytes, over the 10 byte limit$"):
        read_text(big)
