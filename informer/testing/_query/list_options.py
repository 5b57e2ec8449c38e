"""Query parameters of reads: parsing as Go's strconv does, ListOptions validation as the
personality's apiserver version does it (422), and label/field selectors."""

from __future__ import annotations

from typing import Final

from informer.testing import _status as st
from informer.testing._options import ServerOptions
from informer.testing._query.field_labels import FieldLabels
from informer.testing._query.selectors import Selector, parse_field_selector, parse_label_selector

__all__ = ["TRUE", "parse_bool", "parse_int", "selector", "validate"]

TRUE: Final = frozenset({"1", "t", "T", "TRUE", "true", "True"})
FALSE: Final = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def parse_bool(q: dict[str, str], name: str) -> bool | None:
    """``strconv.ParseBool`` of parameter ``name`` (None when absent); 400 when malformed."""
    value = q.get(name)
    if value is None:
        return None
    if value in TRUE:
        return True
    if value in FALSE:
        return False
    raise st.bad_request(f'strconv.ParseBool: parsing "{value}": invalid syntax')


def parse_int(q: dict[str, str], name: str) -> int:
    """``strconv.ParseInt`` of parameter ``name`` (0 when absent or empty); 400 when malformed."""
    value = q.get(name)
    if not value:
        return 0
    try:
        return int(value)
    except ValueError:
        raise st.bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def selector(
    query: dict[str, str], name: str | None = None, fields_of: FieldLabels | None = None
) -> Selector:
    """The label and field selectors of ``query`` (field labels of the kind: ``fields_of``),
    narrowed to ``name`` when given."""
    labels = parse_label_selector(query.get("labelSelector", ""))
    fields = parse_field_selector(query.get("fieldSelector", ""), fields_of)
    result = labels & fields
    if name is not None:
        result = result & Selector([lambda o: (o.get("metadata") or {}).get("name") == name])
    return result


def validate(
    options: ServerOptions, watch: bool, rv: str, rvm: str, cont: str, sie: bool | None
) -> None:
    """ListOptions validation as the personality's apiserver version does it (422)."""
    if options.legacy:
        return
    errs: list[tuple[str, str, str]] = []
    if not options.watch_list:  # v1.21
        if rvm:
            if watch:
                errs.append(
                    st.forbidden(
                        "resourceVersionMatch", "resourceVersionMatch is forbidden for watch"
                    )
                )
            errs.extend(_list_rvm_errors(rv, rvm, cont))
    elif watch:
        if sie is not None and rvm != "NotOlderThan":
            errs.append(
                st.forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                )
            )
        if rvm:
            if sie is None:
                errs.append(
                    st.forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden for watch unless "
                        "sendInitialEvents is provided",
                    )
                )
            if rvm != "NotOlderThan":
                errs.append(st.not_supported("resourceVersionMatch", rvm, ["NotOlderThan"]))
            if cont:
                errs.append(
                    st.forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    )
                )
    else:
        if rvm:
            errs.extend(_list_rvm_errors(rv, rvm, cont))
        if sie is not None:
            errs.append(
                st.forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list")
            )
    if errs:
        raise st.invalid_list_options(errs)


def _list_rvm_errors(rv: str, rvm: str, cont: str) -> list[tuple[str, str, str]]:
    errs: list[tuple[str, str, str]] = []
    if not rv:
        errs.append(
            st.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )
        )
    if cont:
        errs.append(
            st.forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            )
        )
    if rvm not in ("Exact", "NotOlderThan"):
        errs.append(st.not_supported("resourceVersionMatch", rvm, ["Exact", "NotOlderThan", ""]))
    if rvm == "Exact" and rv == "0":
        errs.append(
            st.forbidden(
                "resourceVersionMatch",
                'resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
            )
        )
    return errs
