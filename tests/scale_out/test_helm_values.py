"""The Kubernetes values (on paper: no cluster here) stay true to the code they deploy: the
workspace target exists, its secrets are the ones the definitions read, the tag limited is
one the sensors set."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
VALUES = yaml.safe_load((ROOT / "deploy/helm/values.yaml").read_text())


def test_the_user_deployment_loads_a_definitions_target_that_exists():
    (deployment,) = VALUES["dagster-user-deployments"]["deployments"]
    args = deployment["dagsterApiGrpcArgs"]
    module = importlib.import_module(args[args.index("--module-name") + 1])
    target = getattr(module, args[args.index("--attribute") + 1])
    assert callable(target)
    assert (
        deployment["envSecrets"] == VALUES["runLauncher"]["config"]["k8sRunLauncher"]["envSecrets"]
    )


def test_the_secrets_named_are_the_ones_the_definitions_read():
    source = (ROOT / "newsbench_dagster/definitions.py").read_text()
    read = set(re.findall(r'EnvVar\("([A-Z_]+)"\)', source))
    text = (ROOT / "deploy/helm/values.yaml").read_text()
    assert read and all(name in text for name in read), read


def test_the_limited_tag_is_one_a_sensor_sets():
    limits = VALUES["dagsterDaemon"]["runCoordinator"]["config"]["queuedRunCoordinator"][
        "tagConcurrencyLimits"
    ]
    sensors = "".join(p.read_text() for p in (ROOT / "newsbench_dagster/defs").rglob("*.py"))
    for limit in limits:
        assert f'"{limit["key"]}": "{limit["value"]}"' in sensors, limit
    assert VALUES["dagsterDaemon"]["runMonitoring"]["enabled"] is True
