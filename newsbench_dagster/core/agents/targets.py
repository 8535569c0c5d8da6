"""How a tool call names an element: a target (a CSS selector, an ARIA role with its accessible
name, a label, a placeholder or a visible text), the locator it resolves to, and the slice of
DOM the harness keeps around it.
"""

from __future__ import annotations

from typing import TypedDict

from playwright.async_api import Locator, Page

DOM_SLICE_MAX_BYTES = 32 * 1024


class Target(TypedDict, total=False):
    """The keywords that name an element, beside a tool's positional CSS selector."""

    role: str | None
    name: str | None
    label: str | None
    text: str | None
    placeholder: str | None


# Every way of naming an element, and what each means (models are told the same).
TARGET: dict[str, str] = {
    "selector": "CSS selector",
    "role": "ARIA role, e.g. link, button, heading",
    "name": "accessible name (with role)",
    "label": "label text of a form field",
    "text": "visible text (alone, or narrowing another)",
    "placeholder": "placeholder of a field",
}

# The target grown outward while its outerHTML still fits: the element with as much of its
# surroundings (form, fieldset, card) as a slice can hold. Sizes are UTF-8 bytes. Also says
# whether the target holds a secret (password, card data), whose typed value is not recorded.
DOM_SLICE_JS = """(el, limit) => {
  const size = (s) => new TextEncoder().encode(s).length;
  const ac = (el.getAttribute('autocomplete') || '').toLowerCase();
  const secret = el.type === 'password' || /(^|\\s)cc-/.test(ac);
  let best = el.outerHTML;
  if (size(best) > limit) return [best, secret];
  let node = el;
  while (node.parentElement) {
    const html = node.parentElement.outerHTML;
    if (size(html) > limit) break;
    node = node.parentElement;
    best = html;
  }
  return [best, secret];
}"""


def names_target(selector: str | None, target: Target) -> bool:
    """Whether a call names an element at all (press and scroll need not)."""
    return selector is not None or any(v is not None for v in target.values())


def locate(
    page: Page, tool: str, selector: str | None, target: Target, *, enabled: bool = False
) -> tuple[Locator, dict]:
    """The first element a target names, and the target as the trajectory records it (the
    keywords given). `text` beside another kind narrows it to elements containing that text.
    With `enabled`, disabled controls are passed over, as a person passes over a greyed-out
    button (a control that is disabled only until the page is ready is waited for). A target
    that names nothing is a bug in the caller: ValueError; a keyword that is no target is a
    TypeError, as for any keyword a function does not take."""
    unknown = sorted(set(target) - set(Target.__annotations__))
    if unknown:
        raise TypeError(f"{tool}() got an unexpected keyword argument {unknown[0]!r}")
    given = {"selector": selector, **target}
    args = {k: given[k] for k in TARGET if given.get(k) is not None}
    selector, role, name = args.get("selector"), args.get("role"), args.get("name")
    label, text, placeholder = args.get("label"), args.get("text"), args.get("placeholder")
    if name is not None and role is None:
        raise ValueError(f"{tool}: name is the accessible name of a role; give role too")
    if selector:
        locator = page.locator(selector)
    elif role:
        locator = page.get_by_role(role, name=name)  # type: ignore[arg-type]
    elif label:
        locator = page.get_by_label(label)
    elif placeholder:
        locator = page.get_by_placeholder(placeholder)
    elif text:
        locator, text = page.get_by_text(text), None  # the text is the target, not a filter
    else:
        raise ValueError(
            f"{tool} needs a target: one of selector, role (+ name), label, text, placeholder"
        )
    if text:
        locator = locator.filter(has_text=text)
    if enabled:
        locator = locator.and_(page.locator(":not(:disabled)"))
    return locator.first, args
