"""Issue #21, defect 4, the CLI's lines: `agents try` prints the first error when no run was
scored; an endpoint that echoes the key (base64, URL-encoded) in its error puts it in no
printed line and no artifact. A control value in the same error text is printed, so the
scan looks where the key would be."""

from __future__ import annotations

import base64
import secrets
from urllib.parse import quote

from typer.testing import CliRunner

from newsbench_dagster.cli import app
from tests.support.net import free_port
from tests.support.openai_double import HttpError, OpenAIDouble
from tests.support.secret_scan import found, leaks_in_tree

KEY = "sk-nbtest-" + secrets.token_hex(10) + "+/Q="
CONTROL = "nbctrl-" + secrets.token_hex(6)


def test_agents_try_prints_no_key_the_endpoint_echoed(tmp_path, monkeypatch):
    monkeypatch.setenv("NEWSBENCH_TEST_KEY", KEY)
    echoed = base64.b64encode(KEY.encode()).decode()
    said = f"{CONTROL} upstream rejected {echoed} for {quote(KEY, safe='')}"
    with OpenAIDouble(lambda request: HttpError(500, said)) as model:
        manifest = tmp_path / "echo.yaml"
        manifest.write_text(
            "name: echo\nversion: '1'\nadapter: openai_tools\nmodel: m\n"
            f"params: {{base_url: '{model.base_url}', api_key_env: NEWSBENCH_TEST_KEY, "
            "retries: 0}\n"
        )
        result = CliRunner().invoke(
            app,
            ["agents", "try", str(manifest), "--site", "harbor", "--intent",
             "find_top_headline", "--tasks", "1", "--artifacts", str(tmp_path / "a"),
             "--port", str(free_port())],
        )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "no run was scored" in result.output and CONTROL in result.output
    assert "[redacted:NEWSBENCH_TEST_KEY]" in result.output
    assert not found(result.output, KEY), result.output
    assert not leaks_in_tree(tmp_path / "a", KEY)
