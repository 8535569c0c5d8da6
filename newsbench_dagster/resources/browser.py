"""The browser the runner drives, and how runs are batched."""

from dagster import ConfigurableResource
from pydantic import Field

from newsbench_dagster.core.harness.browser import BrowserOptions
from newsbench_dagster.core.harness.settings import ARTIFACT_KINDS, RunSettings
from newsbench_dagster.paths import PROJECT_ROOT


class BrowserResource(ConfigurableResource):
    executable_path: str | None = Field(
        default=None, description="Chromium to launch; default: system Chromium, else Playwright's"
    )
    headless: bool = True
    trials: int = Field(default=1, ge=1, description="Runs of each task per agent")
    concurrency: int = Field(default=2, ge=1, description="Browser contexts in flight at once")
    screenshot: bool = True
    artifacts: list[str] = Field(
        default=list(ARTIFACT_KINDS),
        description=f"Artifacts kept per run, any of {', '.join(ARTIFACT_KINDS)}",
    )
    randomize_profiles: bool = Field(
        default=False,
        description="Draw the device / geo / network a task leaves open from its seed",
    )
    base_dir: str = Field(
        default=str(PROJECT_ROOT),
        description="Where tasks' relative files are found (recordings, rules, grading)",
    )

    def options(self) -> BrowserOptions:
        """What to launch (the harness builder gives it the world's routing)."""
        return BrowserOptions(executable_path=self.executable_path, headless=self.headless)

    def settings(self, task_set: dict | None = None, **overrides) -> RunSettings:
        """Run settings for one batch: these defaults, the task set it ran (kept with every
        run) and whatever the caller overrides (a release evaluation's trials)."""
        unknown = set(self.artifacts) - set(ARTIFACT_KINDS)
        if unknown:
            raise ValueError(f"browser.artifacts: unknown kinds {sorted(unknown)}")
        return RunSettings(
            **{
                "trials": self.trials,
                "concurrency": self.concurrency,
                "screenshot": self.screenshot,
                "artifacts": tuple(self.artifacts),
                "randomize_profiles": self.randomize_profiles,
                "base_dir": self.base_dir,
                "task_set": task_set,
                **overrides,
            }
        )
