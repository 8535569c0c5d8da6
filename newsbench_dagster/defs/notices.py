"""The Dagster notices our definitions raise on every load, silenced one by one.

Dagster marks some APIs we rely on as preview or beta and warns each time the definitions are
imported: a newcomer's first `newsbench demo` opened on a screen of them and read it as "it is
broken". Each filter names the warning's category, its message and the module it is raised
from, so a new notice (or one about another API) still shows; warnings our own code raises
are never filtered. README "Dagster APIs in preview" says which APIs these are and why we use
them.
"""

from __future__ import annotations

import re
import warnings

from dagster import BetaWarning, PreviewWarning

# (category, message prefix, module the warning is attributed to); the comment says why it is
# harmless.
NOTICES: tuple[tuple[type[Warning], str, str], ...] = (
    (
        PreviewWarning,
        "Specifying a partitions_def on an AssetCheckSpec",
        r"dagster\._core\.definitions\.decorators\.asset_check_decorator$",
        # The per-partition gates need it (a check without partitions cannot gate one site-day),
        # and tests/defs pin its behaviour on the version we lock.
    ),
    (
        PreviewWarning,
        "Function `load_definitions_from_package_module`",
        r"newsbench_dagster\.definitions$",
        # Collects each stage folder's checks, jobs and sensors; test_project pins what it finds.
    ),
    (
        PreviewWarning,
        "Function `load_definitions_from_modules`",
        r"dagster\._core\.definitions\.module_loaders\.load_defs_from_module$",
        # The same loader, warning again from its own inner call.
    ),
    (
        BetaWarning,
        "Class `MultiToSingleDimensionPartitionMapping`",
        r"newsbench_dagster\.defs\.kpis\.assets$",
        # kpi_daily reads every site of its day; the rollup tests pin the mapping.
    ),
)


def silence() -> None:
    """Install the filters (idempotent: `warnings.filterwarnings` replaces an equal filter)."""
    for category, message, module in NOTICES:
        warnings.filterwarnings(
            "ignore", message=re.escape(message), category=category, module=module
        )
