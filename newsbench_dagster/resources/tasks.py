"""Which tasks the producer makes for each site and day."""

from dagster import ConfigurableResource
from pydantic import Field, field_validator

from newsbench_dagster.core.tasks.intents import ALL_INTENTS


class TaskSetResource(ConfigurableResource):
    """The intents of a partition's task set (all by default, in the registry's step order)
    and how many articles get a metadata task. A deployment whose agent is costly per run
    narrows it here, once, for every partition."""

    intents: list[str] = Field(
        default=list(ALL_INTENTS), description="Intents to make tasks of (default: all)"
    )
    articles_per_site: int = Field(
        default=3, ge=1, description="extract_article_metadata tasks per site and day"
    )

    @field_validator("intents")
    @classmethod
    def _known(cls, intents: list[str]) -> list[str]:
        if not intents:
            raise ValueError("tasks.intents: give at least one intent")
        if unknown := [i for i in intents if i not in ALL_INTENTS]:
            raise ValueError(
                f"tasks.intents: unknown intent(s) {', '.join(unknown)}; "
                f"known: {', '.join(ALL_INTENTS)}"
            )
        return intents

    def selected(self) -> tuple[str, ...]:
        """The chosen intents, in the registry's order (the order tasks are made in)."""
        return tuple(i for i in ALL_INTENTS if i in self.intents)
