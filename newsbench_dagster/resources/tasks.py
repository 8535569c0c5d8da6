"""Which tasks the producer makes for each site and day."""

from dagster import ConfigurableResource
from pydantic import Field, field_validator

from newsbench_dagster.core.tasks.intents import ALL_INTENTS, ARTICLES_PER_SITE, unknown_intents


class TaskSetResource(ConfigurableResource):
    """The intents of a partition's task set (all by default; tasks are made in the registry's
    step order whatever the order here) and how many articles get a metadata task. A
    deployment whose agent is costly per run narrows it here, once, for every partition."""

    intents: list[str] = Field(
        default=list(ALL_INTENTS), description="Intents to make tasks of (default: all)"
    )
    articles_per_site: int = Field(
        default=ARTICLES_PER_SITE,
        ge=1,
        description="extract_article_metadata tasks per site and day",
    )
    reserve: bool = Field(
        default=True,
        description="Also keep every other answerable task of the poll as the release gate's "
        "held-out reserve (never run daily; 12 looks of 100 need it)",
    )

    @field_validator("intents")
    @classmethod
    def _known(cls, intents: list[str]) -> list[str]:
        if not intents:
            raise ValueError("tasks.intents: give at least one intent")
        if problem := unknown_intents(intents):
            raise ValueError(f"tasks.intents: {problem}")
        return intents
