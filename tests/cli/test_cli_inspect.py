"""`newsbench inspect` on many saved pages in one process: a directory walk, one JSON object
per line with its file, and a bad page that is reported without losing the others."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from newsbench_dagster.cli import app

PAGE = (
    "<!doctype html><html lang='en'><head><title>{t} | Kestrel Ledger</title></head><body>"
    "<article><h1>{t}</h1><p class='byline'>By {a}</p></article></body></html>"
)


def test_a_directory_of_pages_is_read_in_one_process(tmp_path):
    (tmp_path / "b.html").write_text(PAGE.format(t="Second story", a="John Roe"))
    (tmp_path / "a.html").write_text(PAGE.format(t="First story", a="Jane Doe"))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "c.htm").write_text(PAGE.format(t="Third story", a="Ann Lee"))
    (tmp_path / "broken.html").write_bytes(b"GIF89a\x00\x01")
    (tmp_path / "notes.txt").write_text("not a page")
    result = CliRunner().invoke(app, ["inspect", str(tmp_path), "--json"])
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert result.exit_code == 2  # one page was not HTML: the worst status of the batch
    assert [x["file"].removeprefix(f"{tmp_path}/") for x in lines] == [
        "a.html", "b.html", "broken.html", "sub/c.htm"
    ]  # fmt: skip
    assert [x.get("headline") for x in lines] == [
        "First story",
        "Second story",
        None,
        "Third story",
    ]
    assert lines[0]["authors"] == ["Jane Doe"] and lines[3]["authors"] == ["Ann Lee"]
    assert lines[2] == {
        "file": str(tmp_path / "broken.html"),
        "error": "not an HTML page (GIF image)",
    }
    assert "broken.html: not an HTML page (GIF image)" in result.stderr


def test_one_url_for_many_pages_is_refused_and_an_empty_directory_named(tmp_path):
    (tmp_path / "a.html").write_text(PAGE.format(t="First story", a="Jane Doe"))
    (tmp_path / "b.html").write_text(PAGE.format(t="Second story", a="John Roe"))
    result = CliRunner().invoke(app, ["inspect", str(tmp_path), "--url", "https://x.test/a"])
    assert result.exit_code == 1 and "--url names one page's address" in result.stderr
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(app, ["inspect", str(tmp_path / "empty")])
    assert result.exit_code == 1 and "empty: no saved pages" in result.stderr


def test_a_single_page_prints_the_keys_it_always_printed_first(tmp_path):
    page = tmp_path / "a.html"
    page.write_text(PAGE.format(t="First story", a="Jane Doe"))
    result = CliRunner().invoke(app, ["inspect", str(page), "--json", "--url", "https://k.test/1"])
    doc = json.loads(result.stdout)
    assert result.exit_code == 0 and "file" not in doc
    assert list(doc)[:3] == ["headline", "authors", "published"]
    assert doc["headline"] == "First story" and doc["sources"]["authors"] == "byline"


def test_inspect_imports_neither_the_gate_nor_a_browser_nor_dagster(tmp_path):
    import subprocess
    import sys

    page = tmp_path / "a.html"
    page.write_text(PAGE.format(t="First story", a="Jane Doe"))
    probe = (
        "import sys\n"
        f"sys.argv = ['newsbench', 'inspect', {str(page)!r}, '--json']\n"
        "from newsbench_dagster.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = ('dagster', 'playwright', 'pandas', 'numpy', 'newsbench_dagster.cli.gate')\n"
        "print('loaded:', sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert '"headline": "First story"' in done.stdout
    assert done.stdout.rstrip().endswith("loaded: []"), done.stdout


def test_help_of_every_command_imports_neither_dagster_nor_a_browser_nor_pandas():
    import subprocess
    import sys

    from newsbench_dagster.cli import COMMANDS

    probe = (
        "import sys\n"
        "from newsbench_dagster.cli import main\n"
        f"for argv in [[], *[[c] for c in {sorted(COMMANDS)!r}]]:\n"
        "    sys.argv = ['newsbench', *argv, '--help']\n"
        "    try:\n        main()\n    except SystemExit as e:\n"
        "        assert not e.code, (argv, e.code)\n"
        "heavy = ('dagster', 'playwright', 'pandas', 'duckdb')\n"
        "print('loaded:', sorted(m for m in heavy if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Usage: newsbench" in done.stdout
    assert done.stdout.rstrip().endswith("loaded: []"), done.stdout[-500:]


# -- newsroom URLs: the command starts the newsroom when none runs ------------------------------
BEFORE = "2026-11-15T15:00:00Z"


def test_newsroom_urls_are_read_from_a_newsroom_the_command_starts_and_stops():
    """`inspect URL` and `feeds inspect URL` on newsroom URLs failed with "Connection refused"
    unless a newsroom happened to run; like `agents try`, they start one (and stop it)."""
    from newsbench_dagster.newsroom.launcher import health
    from tests.support.net import free_port

    port = free_port()
    page = CliRunner().invoke(
        app, ["inspect", "http://harbor-herald.test/", "--json", "--port", str(port)]
    )
    assert page.exit_code == 0, page.output
    assert json.loads(page.stdout)["canonical"] == "http://harbor-herald.test/"
    assert f"newsroom started on 127.0.0.1:{port}" in page.stderr
    assert health(port) is None  # stopped with the command

    feed = CliRunner().invoke(
        app,
        [
            "feeds", "inspect", "http://harbor-herald.test/feeds/latest.xml", "--json",
            "--port", str(port), "--at", BEFORE,
        ],
    )  # fmt: skip
    assert feed.exit_code == 0, feed.output
    assert "clock frozen at 2026-11-15T15:00:00+00:00" in feed.stderr
    published = [json.loads(line)["published"] for line in feed.stdout.splitlines()]
    # That instant's feed: nothing after it, its latest story from the hour before.
    assert published and max(published) <= "2026-11-15T15:00:00+00:00"
    assert max(published) >= "2026-11-15T14:00:00+00:00", published


def test_a_running_newsroom_is_reused_and_at_is_refused_where_it_cannot_apply(
    newsroom_server, tmp_path
):
    page = CliRunner().invoke(
        app,
        ["inspect", "http://harbor-herald.test/", "--json", "--port", str(newsroom_server.port)],
    )
    assert page.exit_code == 0, page.output
    assert "already running" in page.stderr
    # Frozen at another instant than the one running: refused, as by `agents try`.
    frozen = CliRunner().invoke(
        app, ["inspect", "http://harbor-herald.test/", "--at", BEFORE,
              "--port", str(newsroom_server.port)],
    )  # fmt: skip
    assert frozen.exit_code == 2 and "on real time" in frozen.stderr, frozen.output
    saved = tmp_path / "a.html"
    saved.write_text(PAGE.format(t="First story", a="Jane Doe"))
    file = CliRunner().invoke(app, ["inspect", str(saved), "--at", BEFORE])
    assert file.exit_code == 2 and "--at freezes the embedded newsroom" in file.stderr
