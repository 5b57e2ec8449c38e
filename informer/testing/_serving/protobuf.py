"""Kubernetes protobuf request bodies (``application/vnd.kubernetes.protobuf``), decoded for the
types kubectl's typed commands send (``kubectl create configmap|secret|namespace|serviceaccount|
deployment|job|service``, ``kubectl auth can-i``); any other is answered 415 with a Status, as
by a server that cannot decode it.

client-go falls back to JSON after a 415 only for CBOR, so ``kubectl create configmap`` needs
its protobuf body read. No maintained Python library carries the Kubernetes message
descriptors; the wire format is small (varints and length-delimited fields), and the messages
needed are described below by field number as in k8s.io/api's generated.proto.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Any, Final

from informer.testing import _status as st

__all__ = ["PROTOBUF", "decode_protobuf"]

PROTOBUF: Final = "application/vnd.kubernetes.protobuf"
_MAGIC: Final = b"k8s\x00"

# message -> field number -> (json name, kind[, message]); kinds: str, int, bool, msg, msgs
# (repeated message), strs (repeated string), time, map (string->string), bmap (string->bytes,
# base64 in JSON), intstr (IntOrString), raw. Fields not listed are skipped: the messages list
# what kubectl's ``create`` subcommands set.
_Spec = dict[int, tuple[str, ...]]
_MESSAGES: Final[dict[str, _Spec]] = {
    "Unknown": {1: ("typeMeta", "msg", "TypeMeta"), 2: ("raw", "raw")},
    "TypeMeta": {1: ("apiVersion", "str"), 2: ("kind", "str")},
    "ObjectMeta": {
        1: ("name", "str"),
        2: ("generateName", "str"),
        3: ("namespace", "str"),
        5: ("uid", "str"),
        6: ("resourceVersion", "str"),
        7: ("generation", "int"),
        8: ("creationTimestamp", "time"),
        11: ("labels", "map"),
        12: ("annotations", "map"),
        13: ("ownerReferences", "msgs", "OwnerReference"),
        14: ("finalizers", "strs"),
    },
    "OwnerReference": {
        1: ("kind", "str"),
        3: ("name", "str"),
        4: ("uid", "str"),
        5: ("apiVersion", "str"),
        6: ("controller", "bool"),
        7: ("blockOwnerDeletion", "bool"),
    },
    "ConfigMap": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("data", "map"),
        3: ("binaryData", "bmap"),
        4: ("immutable", "bool"),
    },
    "Secret": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("data", "bmap"),
        3: ("type", "str"),
        4: ("stringData", "map"),
        5: ("immutable", "bool"),
    },
    "Namespace": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "NamespaceSpec")},
    "NamespaceSpec": {1: ("finalizers", "strs")},
    "ServiceAccount": {
        1: ("metadata", "msg", "ObjectMeta"),
        3: ("imagePullSecrets", "msgs", "LocalObjectReference"),
        4: ("automountServiceAccountToken", "bool"),
    },
    "LocalObjectReference": {1: ("name", "str")},
    "Empty": {},
    "Deployment": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "DeploymentSpec"),
        3: ("status", "msg", "Empty"),
    },
    "DeploymentSpec": {
        1: ("replicas", "int"),
        2: ("selector", "msg", "LabelSelector"),
        3: ("template", "msg", "PodTemplateSpec"),
        4: ("strategy", "msg", "DeploymentStrategy"),
        5: ("minReadySeconds", "int"),
        6: ("revisionHistoryLimit", "int"),
        7: ("paused", "bool"),
        9: ("progressDeadlineSeconds", "int"),
    },
    "DeploymentStrategy": {1: ("type", "str")},
    "LabelSelector": {1: ("matchLabels", "map")},
    "PodTemplateSpec": {1: ("metadata", "msg", "ObjectMeta"), 2: ("spec", "msg", "PodSpec")},
    "PodSpec": {
        2: ("containers", "msgs", "Container"),
        3: ("restartPolicy", "str"),
        4: ("terminationGracePeriodSeconds", "int"),
        6: ("dnsPolicy", "str"),
        7: ("nodeSelector", "map"),
        8: ("serviceAccountName", "str"),
    },
    "Container": {
        1: ("name", "str"),
        2: ("image", "str"),
        3: ("command", "strs"),
        4: ("args", "strs"),
        5: ("workingDir", "str"),
        6: ("ports", "msgs", "ContainerPort"),
        7: ("env", "msgs", "EnvVar"),
        8: ("resources", "msg", "Empty"),
        14: ("imagePullPolicy", "str"),
    },
    "ContainerPort": {
        1: ("name", "str"),
        2: ("hostPort", "int"),
        3: ("containerPort", "int"),
        4: ("protocol", "str"),
    },
    "EnvVar": {1: ("name", "str"), 2: ("value", "str")},
    "Job": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "JobSpec"),
        3: ("status", "msg", "Empty"),
    },
    "JobSpec": {
        1: ("parallelism", "int"),
        2: ("completions", "int"),
        3: ("activeDeadlineSeconds", "int"),
        6: ("template", "msg", "PodTemplateSpec"),
        7: ("backoffLimit", "int"),
    },
    "Service": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "ServiceSpec"),
        3: ("status", "msg", "Empty"),
    },
    "ServiceSpec": {
        1: ("ports", "msgs", "ServicePort"),
        2: ("selector", "map"),
        3: ("clusterIP", "str"),
        4: ("type", "str"),
    },
    "ServicePort": {
        1: ("name", "str"),
        2: ("protocol", "str"),
        3: ("port", "int"),
        4: ("targetPort", "intstr"),
        5: ("nodePort", "int"),
    },
    "SelfSubjectAccessReview": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "SelfSubjectAccessReviewSpec"),
    },
    "SelfSubjectAccessReviewSpec": {
        1: ("resourceAttributes", "msg", "ResourceAttributes"),
        2: ("nonResourceAttributes", "msg", "NonResourceAttributes"),
    },
    "ResourceAttributes": {
        1: ("namespace", "str"),
        2: ("verb", "str"),
        3: ("group", "str"),
        4: ("version", "str"),
        5: ("resource", "str"),
        6: ("subresource", "str"),
        7: ("name", "str"),
    },
    "NonResourceAttributes": {1: ("path", "str"), 2: ("verb", "str")},
    "SelfSubjectRulesReview": {
        1: ("metadata", "msg", "ObjectMeta"),
        2: ("spec", "msg", "SelfSubjectRulesReviewSpec"),
    },
    "SelfSubjectRulesReviewSpec": {1: ("namespace", "str")},
    "IntOrString": {1: ("type", "int"), 2: ("intVal", "int"), 3: ("strVal", "str")},
    "Time": {1: ("seconds", "int"), 2: ("nanos", "int")},
    "Entry": {1: ("key", "raw"), 2: ("value", "raw")},
}
_TOP_LEVEL: Final = {
    ("v1", "ConfigMap"),
    ("v1", "Secret"),
    ("v1", "Namespace"),
    ("v1", "ServiceAccount"),
    ("v1", "Service"),
    ("apps/v1", "Deployment"),
    ("batch/v1", "Job"),
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
}


class _Malformed(Exception):
    pass


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise _Malformed
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, varint value or bytes) of every field, in order; fixed-width skipped."""
    out: list[tuple[int, int | bytes]] = []
    at = 0
    while at < len(data):
        tag, at = _varint(data, at)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, at = _varint(data, at)
            out.append((number, value))
        elif wire == 2:
            length, at = _varint(data, at)
            if at + length > len(data):
                raise _Malformed
            out.append((number, data[at : at + length]))
            at += length
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            raise _Malformed
    return out


def _message(data: bytes, name: str) -> dict[str, Any]:
    spec = _MESSAGES[name]
    out: dict[str, Any] = {}
    for number, value in _fields(data):
        described = spec.get(number)
        if described is None:
            continue
        field, kind = described[0], described[1]
        if kind in ("int", "bool"):
            if not isinstance(value, int):
                raise _Malformed
            if value:  # Go's omitempty: zero values are not in the JSON form
                out[field] = bool(value) if kind == "bool" else value
            continue
        if not value and kind in ("str", "time"):
            continue
        if not isinstance(value, bytes):
            raise _Malformed
        if kind == "raw":
            out[field] = value
        elif kind == "str":
            out[field] = value.decode()
        elif kind == "msg":
            out[field] = _message(value, described[2])
        elif kind == "intstr":
            both = _message(value, "IntOrString")
            out[field] = both.get("strVal", "") if both.get("type") else both.get("intVal", 0)
        elif kind == "msgs":
            out.setdefault(field, []).append(_message(value, described[2]))
        elif kind == "strs":
            out.setdefault(field, []).append(value.decode())
        elif kind == "time":
            seconds = _message(value, "Time").get("seconds", 0)
            stamp = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            out[field] = stamp
        elif kind in ("map", "bmap"):
            entry = _message(value, "Entry")
            key = bytes(entry.get("key", b"")).decode()
            raw = bytes(entry.get("value", b""))
            text = base64.b64encode(raw).decode() if kind == "bmap" else raw.decode()
            out.setdefault(field, {})[key] = text
    return out


def decode_protobuf(raw: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded object; 415 when its type is not one decoded here."""
    try:
        if not raw.startswith(_MAGIC):
            raise _Malformed
        unknown = _message(raw[len(_MAGIC) :], "Unknown")
        type_meta = unknown.get("typeMeta", {})
        api_version, kind = type_meta.get("apiVersion", ""), type_meta.get("kind", "")
        if (api_version, kind) not in _TOP_LEVEL:
            raise st.unsupported_media_type(PROTOBUF, ["application/json", "application/yaml"])
        obj = _message(bytes(unknown.get("raw", b"")), kind)
    except (_Malformed, UnicodeDecodeError, ValueError, OverflowError):
        raise st.bad_request("the protobuf request body could not be decoded") from None
    return {"apiVersion": api_version, "kind": kind, **obj}
