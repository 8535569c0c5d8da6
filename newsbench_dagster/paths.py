"""Where the project's files are, relative to the repository (not the working directory).

Only the edge reads these (definitions, resources, the CLI, tests and benchmarks); `core` is
handed the directories it works in."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SITES_FILE = PROJECT_ROOT / "sites.yaml"
AGENTS_DIR = PROJECT_ROOT / "agents"
DATA_DIR = PROJECT_ROOT / "data"
WAREHOUSE_FILE = DATA_DIR / "warehouse.duckdb"
DAGSTER_HOME = PROJECT_ROOT / "dagster_home"
ARTIFACTS_DIR = DATA_DIR / "artifacts"
LOG_DIR = DATA_DIR / "logs"  # the long commands' progress, one line per step
SUITES_DIR = PROJECT_ROOT / "suites"
