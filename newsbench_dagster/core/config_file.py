"""Reading a reviewed YAML config file (sites, profiles, agent manifests) into its typed model,
with one error that names the file and every offending field."""

from __future__ import annotations

from typing import TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from newsbench_dagster.core.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def parse_config(text: str, where: str, model: type[M]) -> M:
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError(f"{where}: not valid YAML: {e}") from e
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}" for err in e.errors()
        )
        raise ConfigError(f"{where}: {problems}") from e
