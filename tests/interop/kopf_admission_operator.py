"""A kopf operator with admission webhooks (for the interop test, ``kopf run --standalone``):
kopf's webhook server listens on 127.0.0.1 with a certificate of a CA the test made (paths in
``KOPF_TEST_CERT``, ``KOPF_TEST_KEY``, ``KOPF_TEST_CA``) and kopf writes the webhook
configurations (``admission.kopf.dev``) itself."""

from __future__ import annotations

import os
from typing import Any

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.watching.server_timeout = 30
    settings.posting.level = 0
    settings.admission.server = kopf.WebhookServer(
        addr="127.0.0.1",
        host="127.0.0.1",
        port=None,  # a free port
        certfile=os.environ["KOPF_TEST_CERT"],
        pkeyfile=os.environ["KOPF_TEST_KEY"],
        cafile=os.environ["KOPF_TEST_CA"],
    )
    settings.admission.managed = "admission.kopf.dev"


@kopf.on.mutate("kopf.dev", "v1", "kopfexamples", id="defaults")
def mutate(spec: Any, patch: kopf.Patch, **_: Any) -> None:
    if "owner" not in spec:
        patch.spec["owner"] = "kopf"


@kopf.on.validate("kopf.dev", "v1", "kopfexamples", id="policy")
def validate(spec: Any, **_: Any) -> None:
    if spec.get("field") == "forbidden":
        raise kopf.AdmissionError("field may not be forbidden", code=422)
