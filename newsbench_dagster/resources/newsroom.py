"""The world the pipeline evaluates in. Enabled (the embedded default), every `*.test` site
is served by the newsroom on loopback, reached through it as a proxy; disabled, the pipeline
talks to the real sites listed in sites.yaml directly."""

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from newsbench_dagster.core.web.network import World
from newsbench_dagster.newsroom.launcher import newsroom_world
from newsbench_dagster.newsroom.world import DEFAULT_SEED


class NewsroomResource(ConfigurableResource):
    enabled: bool = True
    port: int = 8411
    seed: int = Field(default=DEFAULT_SEED, description="The world: content of every site")
    variant: int | None = Field(
        default=None,
        description="Seeded layout variant of the newsroom's forms (None: canonical layout)",
    )

    _server: object | None = PrivateAttr(default=None)
    _health: dict = PrivateAttr(default_factory=dict)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        if self.enabled:
            from newsbench_dagster.newsroom.launcher import ensure_newsroom

            self._server, self._health = ensure_newsroom(self.port, self.seed)

    def teardown_after_execution(self, context: InitResourceContext) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def world(self, allowed_origins: set[str]) -> World:
        """The runs' world: the newsroom (routing, and the manifest every run records), or
        the live sites of the allowlist when disabled."""
        if not self.enabled:
            return World.live(allowed_origins)
        return newsroom_world(self.port, {"seed": self.seed, **self._health}, self.variant)
