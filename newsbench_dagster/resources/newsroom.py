"""The world the pipeline evaluates in. Enabled (the embedded default), every `*.test` site
is served by the newsroom on loopback, reached through it as a proxy; disabled, the pipeline
talks to the real sites listed in sites.yaml directly."""

from dagster import ConfigurableResource, InitResourceContext
from pydantic import Field, PrivateAttr

from newsbench_dagster.core.web.network import Routing
from newsbench_dagster.newsroom.exchange import RUN_HEADER, VARIANT_HEADER
from newsbench_dagster.newsroom.launcher import newsroom_routing
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

    def routing(self, allowed_origins: set[str]) -> Routing:
        if self.enabled:
            headers = {VARIANT_HEADER: str(self.variant)} if self.variant is not None else {}
            return newsroom_routing(f"http://127.0.0.1:{self.port}", headers)
        return Routing.direct(allowed_origins)

    def world(self) -> dict:
        """Recorded in every run's environment manifest."""
        if not self.enabled:
            return {"kind": "live"}
        return {
            "kind": "newsroom",
            "seed": self._health.get("seed", self.seed),
            "revision": self._health.get("revision"),
            "variant": self.variant,
            "run_scope_header": RUN_HEADER,
        }
