"""Reading a reviewed YAML config file (sites, profiles, agent manifests) into its typed model,
with one error that names the file and every offending field."""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from newsbench_dagster.core.errors import ConfigError
from newsbench_dagster.core.input_files import load_yaml, read_text

M = TypeVar("M", bound=BaseModel)


def load_config(path: str | Path, model: type[M]) -> M:
    """A config file read within the limits of `input_files` (missing, not UTF-8, too big:
    an InputFileError, a ConfigError naming the file)."""
    return parse_config(read_text(path), str(path), model)


def parse_config(text: str, where: str, model: type[M]) -> M:
    raw = load_yaml(text, where)  # InputFileError (a ConfigError): file:line and why
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or '<top>'}: {err['msg']}" for err in e.errors()
        )
        raise ConfigError(f"{where}: {problems}") from e
