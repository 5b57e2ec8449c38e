"""The authorizer's self-subject reviews (``authorization.k8s.io/v1``), answered, never stored.

The test server authorizes every request (no RBAC is enforced), so a
``SelfSubjectAccessReview`` is allowed and a ``SelfSubjectRulesReview`` lists every verb on
every resource and URL, which is what ``kubectl auth can-i`` reads from a cluster-admin's
cluster.
"""

from __future__ import annotations

from typing import Any

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._catalog.specs import SELFSUBJECTACCESSREVIEWS

__all__ = ["review"]

Json = dict[str, Any]


def review(resource: Resource, body: Any) -> Json:
    """The answer to a create of a review: the request with its ``status`` filled in."""
    if not isinstance(body, dict):
        raise st.bad_request("the request body must be a JSON object")
    spec = body.get("spec")
    meta = body.get("metadata")
    answer: Json = {
        "kind": resource.kind,
        "apiVersion": resource.api_version,
        "metadata": {"creationTimestamp": None, **(meta if isinstance(meta, dict) else {})},
        "spec": spec if isinstance(spec, dict) else {},
    }
    if resource == SELFSUBJECTACCESSREVIEWS:
        attributes = answer["spec"]
        if not attributes.get("resourceAttributes") and not attributes.get("nonResourceAttributes"):
            raise st.invalid_object(
                resource,
                resource.kind,
                "",
                [
                    (
                        "FieldValueRequired",
                        "spec.resourceAttributes",
                        "Required value: exactly one of nonResourceAttributes or "
                        "resourceAttributes must be specified",
                    )
                ],
            )
        answer["status"] = {"allowed": True, "reason": "the test server authorizes everyone"}
    else:
        answer["status"] = {
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
            "incomplete": False,
        }
    return answer
