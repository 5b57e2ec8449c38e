"""Query parameters of writes (``CreateOptions``, ``UpdateOptions``, ``PatchOptions``,
``DeleteOptions``): dryRun, fieldManager, fieldValidation, force, validated as the apiserver's
handlers do (422 ``<Kind>Options.meta.k8s.io "" is invalid``), and the warnings a write collects.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from informer.testing import _status as st

__all__ = ["FieldValidation", "PatchType", "WriteOptions", "default_manager", "parse_write_options"]

FieldValidation = Literal["Ignore", "Warn", "Strict"]
PatchType = Literal["", "json", "merge", "strategic"]

_OPTIONS_KIND: Final = {
    "create": "CreateOptions",
    "update": "UpdateOptions",
    "patch": "PatchOptions",
    "delete": "DeleteOptions",
}
_FIELD_VALIDATION: Final = ("", "Ignore", "Strict", "Warn")
_MANAGER_MAX: Final = 128


@dataclass
class WriteOptions:
    """How one write is to be done, and what it has to say back (``Warning`` headers)."""

    dry_run: bool = False
    field_manager: str | None = None
    """The manager recorded in ``managedFields``; None: writes through the Python API record
    no manager (as objects written straight to etcd)."""
    field_validation: FieldValidation = "Ignore"
    field_validation_given: bool = False
    """Whether the request named ``fieldValidation`` (custom resources prune silently without)."""
    force: bool = False
    apply: bool = False
    validate: bool = False
    """Validate as the apiserver does (HTTP writes); the Python API stores what it is given."""
    warnings: list[str] = field(default_factory=list)
    duplicate_fields: list[str] = field(default_factory=list)
    """Fields the JSON body names twice (its paths), for ``fieldValidation``."""
    document: Any = None
    """The body as the strict decoder reads it (its keys in order, repeated ones included),
    when it names some field twice; None otherwise."""
    patch_type: PatchType = ""
    """The format of a PATCH ("json", "merge", "strategic"): its strict errors are 422."""
    patch: Any = None
    """The decoded patch (a strategic merge patch is quoted in its strict errors)."""
    patch_problems: list[str] = field(default_factory=list)
    """The strict decoder's complaints about the patch itself (its duplicate fields)."""
    yaml_problems: list[str] = field(default_factory=list)
    """YAML's strict decoder's complaints about a server-side apply body (keys named twice)."""

    def field_problems(self, unknown: list[str]) -> list[str]:
        """The strict decoder's complaints: duplicate fields, then unknown ones."""
        return [f'duplicate field "{path}"' for path in self.duplicate_fields] + [
            f'unknown field "{path}"' for path in unknown
        ]


def default_manager(user_agent: str) -> str:
    """The manager of a write without ``fieldManager``: the User-Agent up to its first ``/``
    (``kubectl/v1.34 (linux/amd64)`` -> ``kubectl``), as the apiserver's prefixFromUserAgent."""
    return user_agent.split("/", 1)[0][:_MANAGER_MAX] or "unknown"


def parse_write_options(
    verb: str,
    dry_run: list[str],
    field_manager: str | None,
    field_validation: str | None,
    force: str | None,
    user_agent: str,
    *,
    apply: bool = False,
) -> WriteOptions:
    """The options of a ``verb`` request; 422 for values the apiserver refuses."""
    errs: list[tuple[str, str, str]] = []
    if field_manager is not None:
        if len(field_manager) > _MANAGER_MAX:
            errs.append(
                (
                    "FieldValueTooLong",
                    "fieldManager",
                    f"Too long: may not be more than {_MANAGER_MAX} bytes",
                )
            )
        for index, char in enumerate(field_manager):
            if not char.isprintable() and char != " ":
                name = unicodedata.name(char, "")
                errs.append(
                    (
                        "FieldValueInvalid",
                        "fieldManager",
                        f'Invalid value: "{field_manager}": invalid character '
                        f"U+{ord(char):04X}{' ' + repr(name) if name else ''} "
                        f"(at position {index})",
                    )
                )
    if apply and not field_manager:
        errs.append(
            ("FieldValueRequired", "fieldManager", "Required value: is required for apply patch")
        )
    if any(value != "All" for value in dry_run):
        values = ", ".join(f'"{v}"' for v in dry_run)
        errs.append(
            (
                "FieldValueNotSupported",
                "dryRun",
                f'Unsupported value: []string{{{values}}}: supported values: "All"',
            )
        )
    if field_validation is not None and field_validation not in _FIELD_VALIDATION:
        errs.append(st.not_supported("fieldValidation", field_validation, list(_FIELD_VALIDATION)))
    forced = False
    if force is not None and verb == "patch":
        forced = force in ("1", "t", "T", "true", "TRUE", "True")
        if forced and not apply:
            errs.append(st.forbidden("force", "may not be specified for non-apply patch"))
    if errs:
        raise st.invalid_options(_OPTIONS_KIND.get(verb, "CreateOptions"), errs)
    validation: FieldValidation
    if field_validation in ("Ignore", "Warn", "Strict"):
        validation = field_validation  # type: ignore[assignment]
    else:
        # the default since 1.27: Warn for requests, Strict for apply (in the apply body)
        validation = "Strict" if apply else "Warn"
    return WriteOptions(
        dry_run=bool(dry_run),
        field_manager=field_manager or default_manager(user_agent),
        field_validation=validation,
        field_validation_given=field_validation is not None,
        force=forced,
        apply=apply,
        validate=True,
    )
