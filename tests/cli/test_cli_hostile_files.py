"""Hostile task files through `newsbench tasks validate`, each in a child process capped at
2 GB of address space with its peak RSS measured: a YAML alias bomb, JSON nested 100,000
deep, an impossible date and non-UTF-8 bytes are each one problem naming the file and line,
and the other files of the suites still load."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.support.bombs import alias_bomb, entity_bomb
from tests.support.bounded import GB, run_capped

GOOD = {
    "site": "harbor",
    "day": "2026-11-29",
    "intent": "extract_article_metadata",
    "entry_url": "http://harbor-herald.test/news/city/article-1",
    "inputs": {"prompt": "Give the headline and authors of this article."},
    "reason": "a typical day",
    "source": {"kind": "incident", "date": "2026-11-29"},
}


def suites(tmp_path: Path, files: dict[str, bytes]) -> Path:
    root = tmp_path / "suites"
    (root / "regression").mkdir(parents=True)
    (root / "regression" / "good.yaml").write_text(yaml.safe_dump(GOOD), encoding="utf-8")
    for name, data in files.items():
        (root / "regression" / name).write_bytes(data)
    return root


def test_an_alias_bomb_is_refused_at_its_line_within_bounded_memory(tmp_path):
    root = suites(tmp_path, {"bomb.yaml": alias_bomb() + b"site: harbor\n"})
    done = run_capped(["tasks", "validate", "--root", str(root)], cap_bytes=2 * GB, timeout=60)
    assert done.returncode == 1, done.stderr
    bomb = root / "regression" / "bomb.yaml"
    [line] = [x for x in done.stdout.splitlines() if "bomb.yaml" in x]
    assert line.startswith(f"{bomb}:")
    assert line.endswith("-: $: YAML aliases expand to more than 200000 nodes (an alias bomb?)")
    assert "1 problem(s); 1 task(s) loaded (regression 1" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert done.peak_mb < 300, done.peak_mb


def test_deep_json_an_impossible_date_and_non_utf8_are_each_named_and_the_rest_load(tmp_path):
    bad_day = yaml.safe_dump(GOOD, sort_keys=False).replace("'2026-11-29'", "2026-13-45", 1)
    line_of_day = bad_day.splitlines().index("day: 2026-13-45") + 1  # unquoted: a date
    root = suites(
        tmp_path,
        {
            "deep.json": b"[" * 100_000 + b"]" * 100_000,
            "date.yaml": bad_day.encode(),
            "latin.yaml": b"site: harbor\nreason: caf\xe9 au lait\n",
        },
    )
    done = run_capped(["tasks", "validate", "--root", str(root)], cap_bytes=2 * GB, timeout=60)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    regression = root / "regression"
    assert sorted(done.stdout.splitlines()) == [
        f"{regression}/date.yaml:{line_of_day}: -: $: invalid date '2026-13-45': month must be "
        "in 1..12",
        f"{regression}/deep.json: -: $: JSON nested deeper than 64 levels",
        f"{regression}/latin.yaml:2: -: $: not UTF-8 text (byte 24: b'\\xe9')",
    ]
    assert "3 problem(s); 1 task(s) loaded (regression 1" in done.stderr, done.stderr


def test_an_entity_bomb_feed_is_refused_before_it_is_parsed(tmp_path):
    feed = tmp_path / "bomb.xml"
    feed.write_bytes(entity_bomb())
    done = run_capped(["feeds", "inspect", str(feed)], cap_bytes=2 * GB, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.message == (
        f"error: {feed}: entity declarations refused: the DOCTYPE declares an entity (byte 38), "
        "which can expand to gigabytes (an XML entity bomb?)"
    )
    assert done.peak_mb < 300, done.peak_mb
