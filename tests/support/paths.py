"""Where the repository and the test fixtures are, wherever a test file sits."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
