"""FormVisit: one request to a form page as its handler sees it.

It carries the site's form labels and the layout variant served, renders form pages inside the
site's chrome, and appends every change to the event log with the variant that was served.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from .exchange import Request, Response
from .form_fields import FORM_FIELDS, Field, error_summary, labels
from .form_variant import Variant
from .site_world import SiteWorld
from .state import NewsroomState, RunState
from .templating import TEXT, Visit

VARIANT_QUERY = "nr_variant"


@dataclass
class FormVisit:
    """A request to a form page: the site, the reader's state, and their labels and variant."""

    site: SiteWorld
    request: Request
    at: datetime
    state: NewsroomState
    F: Mapping[str, str] = field(init=False)
    v: Variant = field(init=False)

    def __post_init__(self) -> None:
        self.F = labels(self.site.spec.language)
        self.v = Variant.for_request(self.request)

    @property
    def key(self) -> str:
        return self.site.key

    @property
    def run(self) -> RunState:
        return self.state.run(self.request.scope)

    def record(self, kind: str, data: dict[str, Any]) -> None:
        """Append a mutation with the variant served; call it under state.locked()."""
        variant = self.request.variant
        self.run.variant = variant
        self.state.record(self.request.scope, self.key, kind, {**data, "variant": variant}, self.at)

    def href(self, path: str, **params: str) -> str:
        """A link to our own page; a variant chosen by query string stays in the URL."""
        raw = self.request.arg(VARIANT_QUERY)
        if raw is not None and self.request.variant is not None:
            params[VARIANT_QUERY] = raw
        return f"{path}?{urlencode(params)}" if params else path

    def redirect(self, path: str, **params: str) -> Response:
        return Response(303, TEXT, b"See other\n", location=self.href(path, **params))

    def page(self, template: str, status: int = 200, **extra: Any) -> Response:
        """A template of templates/pages/ in the site's chrome, with labels `F` and variant `v`."""
        visit = Visit(self.site, self.request, self.at, self.state)
        return visit.page(f"pages/{template}", status=status, F=self.F, v=self.v, **extra)

    def ordered(self, form: str, fields: Mapping[str, Field]) -> list[Field]:
        """The fields of `form` in the order of the variant served."""
        return self.v.arrange(form, [fields[name] for name in FORM_FIELDS[form]])

    def form_page(
        self,
        template: str,
        form: str,
        fields: Mapping[str, Field],
        errors: Mapping[str, str] | None,
        action: str,
        **extra: Any,
    ) -> Response:
        """A page with one form posting to `action`; after a post with errors, a 400 with the
        error summary on top."""
        return self.page(
            template,
            400 if errors else 200,
            errors=error_summary(form, fields),
            fields=self.ordered(form, fields),
            action=self.href(action),
            **extra,
        )

    def notice(
        self, title: str, lines: list[str], links: list[tuple[str, str]], status: int = 200
    ) -> Response:
        return self.page("notice.html", status, title=title, lines=lines, links=links)
