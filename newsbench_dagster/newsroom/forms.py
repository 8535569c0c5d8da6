"""State-changing pages: newsletter, notification settings, correction reports, checkout.

handle() answers a request for one of these pages, or returns None for content routes. Each
page is rendered inside the site's own chrome from templates/pages/, in the run's seeded layout
variant (form_variant.py); field names, URLs and semantics never vary (form_fields.py). What a
reader changes lives in NewsroomState under the request's scope and is appended to the event
log together with the variant that was served (form_visit.py). Successful POSTs redirect (303)
to a GET page, so a reload never submits twice by accident. The pages themselves:
reader_forms.py (newsletter, notifications, reports) and checkout.py (the subscription trap).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from . import checkout, reader_forms
from .exchange import Request, Response
from .form_visit import FormVisit
from .site_world import SiteWorld
from .state import NewsroomState
from .templating import TEXT

Handler = Callable[[FormVisit], Response]
ROUTES: dict[str, dict[str, Handler]] = {
    "/newsletter": {"GET": reader_forms.newsletter_get, "POST": reader_forms.newsletter_post},
    "/newsletter/confirmed": {"GET": reader_forms.newsletter_confirmed},
    "/newsletter/premium": {"POST": reader_forms.newsletter_premium},
    "/account/notifications": {
        "GET": reader_forms.notifications_get,
        "POST": reader_forms.notifications_post,
    },
    "/corrections/report": {"GET": reader_forms.report_get, "POST": reader_forms.report_post},
    "/corrections/report/sent": {"GET": reader_forms.report_sent},
    "/subscribe": {"GET": checkout.subscribe_get},
    "/subscribe/checkout": {"POST": checkout.checkout_post},
    "/subscribe/details": {"GET": checkout.details_get, "POST": checkout.details_post},
    "/subscribe/payment": {"GET": checkout.payment_get},
    "/subscribe/pay": {"POST": checkout.pay_post},
    "/subscribe/complete": {"GET": checkout.complete_get},
}


def handle(
    site: SiteWorld, request: Request, at: datetime, state: NewsroomState | None
) -> Response | None:
    """Answer the request if it is one of ours, else None (content routes take it)."""
    routes = ROUTES.get(request.path)
    if routes is None:
        return None
    handler = routes.get("GET" if request.method == "HEAD" else request.method)
    if handler is None:
        allow = ", ".join([*routes, "HEAD"] if "GET" in routes else routes)
        return Response(405, TEXT, b"method not allowed\n", headers=(("Allow", allow),))
    # Rendering without a server (tests, generate()) still works; changes are just not kept.
    if state is None:
        state = NewsroomState(site.seed, [site.key])
    return handler(FormVisit(site, request, at, state))
