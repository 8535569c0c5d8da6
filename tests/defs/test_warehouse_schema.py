"""A warehouse written by an earlier version keeps working: declared columns it lacks are
added on the next write, and its rows stay."""

from __future__ import annotations

import duckdb

from newsbench_dagster.core.analytics import tables


def test_an_older_table_gains_the_new_columns_and_keeps_its_rows(tmp_path):
    con = duckdb.connect(str(tmp_path / "old.duckdb"))
    con.execute("CREATE SCHEMA nb")
    old = {c: k for c, k in tables.TABLES["feed_items"].items() if c != "role"}
    cols = ", ".join(f"{c} {tables.TYPES[k][0]}" for c, k in old.items())
    con.execute(f"CREATE TABLE nb.feed_items ({cols})")
    con.execute("INSERT INTO nb.feed_items (site, kind, position) VALUES ('harbor', 'rss', 0)")
    con.execute(tables.ddl("feed_items", "nb"))  # what every write runs first: a no-op here
    for statement in tables.evolve("feed_items", "nb"):
        con.execute(statement)
    names = [r[0] for r in con.execute("DESCRIBE nb.feed_items").fetchall()]
    assert names[-1] == "role" and set(names) == set(tables.TABLES["feed_items"])
    assert con.execute("SELECT site, role FROM nb.feed_items").fetchall() == [("harbor", None)]
    for statement in tables.evolve("feed_items", "nb"):  # and again: nothing changes
        con.execute(statement)
    assert len(con.execute("DESCRIBE nb.feed_items").fetchall()) == len(names)
