"""The browser the runner drives, and how runs are batched."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.browser import BrowserOptions
from newsbench_dagster.core.network import Routing
from newsbench_dagster.core.runner import RunSettings


class BrowserResource(ConfigurableResource):
    executable_path: str | None = Field(
        default=None, description="Chromium to launch; default: system Chromium, else Playwright's"
    )
    headless: bool = True
    trials: int = Field(default=1, ge=1, description="Runs of each task per agent")
    concurrency: int = Field(default=2, ge=1, description="Browser contexts in flight at once")
    screenshot: bool = True

    def options(self, routing: Routing) -> BrowserOptions:
        return BrowserOptions(
            executable_path=self.executable_path, headless=self.headless, routing=routing
        )

    def settings(self) -> RunSettings:
        return RunSettings(
            trials=self.trials, concurrency=self.concurrency, screenshot=self.screenshot
        )
