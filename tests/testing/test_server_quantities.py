"""Resource quantities of built-in objects as a v1.36 apiserver stores them: canonical
(``cpu: 1000m`` reads back as ``"1"``), resource lists rounded up to 1m, a Pod's limits its
requests where it names none; a malformed quantity fails decoding (400, 422 for a patch, 500
for server-side apply) with Go's words, and container resources that are negative or requested
above their limit are invalid (422)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from informer.testing import ApiServer

from .server_helpers import Client

pytestmark = pytest.mark.asyncio

PODS = "/api/v1/namespaces/default/pods"
REGEX = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def pod(name: str, *containers: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {"name": f"c{index}", "image": "nginx:1.27", **container}
                for index, container in enumerate(containers)
            ]
        },
    }


def resources(**lists: dict[str, Any]) -> dict[str, Any]:
    return {"resources": lists}


async def test_quantities_of_a_pod_are_stored_canonical(
    api_server: ApiServer, client: Client
) -> None:
    written = {  # as written -> as a v1.36 server stores it
        "1000m": "1",
        "1024Mi": "1Gi",
        "1.5Gi": "1536Mi",
        "0.5Gi": "512Mi",
        "1.1Ki": "1126400m",
        "1500M": "1500M",
        "2000000k": "2G",
        "1n": "1m",  # resource lists are rounded up to 1m (SetDefaults_ResourceList)
        "1500u": "2m",
        " 250m ": "250m",  # the decoder trims white space
        "+1": "+1",  # already canonical to the parser's test: kept as written
        "1.500": "1.500",
        "1e3": "1e3",
        "1.5e3": "1500",
        "00": "0",
    }
    body = pod(
        "canonical",
        *(resources(limits={"memory": given}) for given in written),
        resources(requests={"cpu": 0.5, "memory": 2000000}),  # JSON numbers: their text
    )

    created = await client.request(api_server, "POST", PODS, body)

    assert created.status == 201, created.text
    stored = await client.get(api_server, f"{PODS}/canonical")
    containers = stored.body["spec"]["containers"]
    assert [c["resources"]["limits"]["memory"] for c in containers[:-1]] == list(written.values())
    assert containers[-1]["resources"] == {"requests": {"cpu": "500m", "memory": "2M"}}
    assert created.body["spec"] == stored.body["spec"]


async def test_a_pod_requests_its_limits_where_it_names_no_request(
    api_server: ApiServer, client: Client
) -> None:
    body = pod(
        "limited",
        resources(limits={"memory": "128Mi", "cpu": "500m"}, requests={"cpu": "100m"}),
        resources(limits={"cpu": "1000m"}),
    )

    created = await client.request(api_server, "POST", PODS, body)

    assert created.status == 201, created.text
    first, second = (c["resources"] for c in created.body["spec"]["containers"])
    assert first == {
        "limits": {"cpu": "500m", "memory": "128Mi"},  # resource lists in key order, as Go's
        "requests": {"cpu": "100m", "memory": "128Mi"},
    }
    assert second == {"limits": {"cpu": "1"}, "requests": {"cpu": "1"}}
    assert created.body["status"]["qosClass"] == "Burstable"


async def test_quantities_outside_pods_are_canonical_and_field_refs_get_a_divisor(
    api_server: ApiServer, client: Client
) -> None:
    quota = {
        "metadata": {"name": "q"},
        "spec": {"hard": {"requests.memory": "2048Mi", "pods": "10", "limits.cpu": "4000m"}},
    }
    claim = {
        "metadata": {"name": "data"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1024Gi"}},
        },
    }
    ref = {"resourceFieldRef": {"resource": "limits.memory"}}
    with_ref = pod("refs", {"env": [{"name": "MEM", "valueFrom": ref}]})
    with_ref["spec"]["volumes"] = [{"name": "scratch", "emptyDir": {"sizeLimit": "1000Mi"}}]

    got_quota = await client.request(
        api_server, "POST", "/api/v1/namespaces/default/resourcequotas", quota
    )
    got_claim = await client.request(
        api_server, "POST", "/api/v1/namespaces/default/persistentvolumeclaims", claim
    )
    got_pod = await client.request(api_server, "POST", PODS, with_ref)

    assert got_quota.body["spec"]["hard"] == {
        "limits.cpu": "4",
        "pods": "10",
        "requests.memory": "2Gi",
    }
    assert got_claim.body["spec"]["resources"]["requests"] == {"storage": "1Ti"}
    spec = got_pod.body["spec"]
    assert spec["containers"][0]["env"][0]["valueFrom"]["resourceFieldRef"] == {
        "resource": "limits.memory",
        "divisor": "0",  # a struct field without omitempty: always written
    }
    assert spec["volumes"][0]["emptyDir"] == {"sizeLimit": "1000Mi"}  # not a list: not rounded


async def test_a_malformed_quantity_fails_decoding_as_go_words_it(
    api_server: ApiServer, client: Client
) -> None:
    bad_value = pod("bad", resources(limits={"cpu": "abc"}))
    bad_suffix = pod("bad", resources(limits={"memory": "32MMi"}))
    not_a_string = pod("bad", resources(limits={"memory": True}))

    created = [
        await client.request(api_server, "POST", PODS, body)
        for body in (bad_value, bad_suffix, not_a_string)
    ]

    assert [(r.status, r.body["reason"]) for r in created] == [(400, "BadRequest")] * 3
    prefix = 'Pod in version "v1" cannot be handled as a Pod: '
    assert [r.body["message"] for r in created] == [
        prefix + REGEX,
        prefix + "unable to parse quantity's suffix",
        prefix + REGEX,
    ]
    assert (await client.get(api_server, f"{PODS}/bad")).status == 404


async def test_a_patch_to_a_malformed_quantity_is_invalid_quoting_what_was_decoded(
    api_server: ApiServer, client: Client
) -> None:
    good = await client.request(api_server, "POST", PODS, pod("p", resources(limits={"cpu": "1"})))
    assert good.status == 201, good.text
    patch = {"spec": {"containers": [{"name": "c0", "resources": {"limits": {"cpu": "1x"}}}]}}

    strategic = await client.request(
        api_server, "PATCH", f"{PODS}/p", patch, "application/strategic-merge-patch+json"
    )
    json_patch = await client.request(
        api_server,
        "PATCH",
        f"{PODS}/p",
        [{"op": "replace", "path": "/spec/containers/0/resources/limits/cpu", "value": "1x"}],
        "application/json-patch+json",
    )

    assert strategic.status == 422 and strategic.body["reason"] == "Invalid"
    assert strategic.body["message"] == (
        ' "" is invalid: patch: Invalid value: '
        '"map[spec:map[containers:[map[name:c0 resources:map[limits:map[cpu:1x]]]]]]": ' + REGEX
    )
    assert strategic.body["details"]["causes"][0]["field"] == "patch"
    assert json_patch.status == 422
    message = json_patch.body["message"].removesuffix(": " + REGEX)
    quoted = json.loads(message.split("Invalid value: ", 1)[1])  # the patched object's JSON
    assert json.loads(quoted)["spec"]["containers"][0]["resources"]["limits"] == {"cpu": "1x"}
    stored = await client.get(api_server, f"{PODS}/p")
    assert stored.body["metadata"]["resourceVersion"] == good.body["metadata"]["resourceVersion"]


async def test_server_side_apply_of_a_malformed_quantity_fails_converting_the_merged_object(
    api_server: ApiServer, client: Client
) -> None:
    applied = pod("applied", resources(requests={"cpu": "one"}))
    applied["metadata"]["namespace"] = "default"

    reply = await client.request(
        api_server,
        "PATCH",
        f"{PODS}/applied",
        applied,
        "application/apply-patch+yaml",
        fieldManager="tester",
    )

    assert reply.status == 500
    assert reply.body["message"] == (
        "failed to convert new object (default/applied; /v1, Kind=Pod) to proper version: "
        "unable to convert unstructured object to /v1, Kind=Pod: " + REGEX
    )


async def test_container_resources_negative_fractional_or_above_their_limit_are_invalid(
    api_server: ApiServer, client: Client
) -> None:
    body = pod(
        "over",
        resources(limits={"cpu": "1"}, requests={"cpu": "1500m", "memory": "-1Gi"}),
        resources(limits={"example.com/gpu": "1.5"}),
        resources(requests={"example.com/gpu": "1"}),
        resources(limits={"gpu": "1"}),
    )

    reply = await client.request(api_server, "POST", PODS, body)

    assert reply.status == 422 and reply.body["reason"] == "Invalid"
    causes = [(c["field"], c["message"]) for c in reply.body["details"]["causes"]]
    at = "spec.containers[{}].resources.{}".format
    not_standard = 'Invalid value: "gpu": must be a standard resource for containers'
    assert causes == [
        (at(0, "requests"), 'Invalid value: "1500m": must be less than or equal to cpu limit of 1'),
        (at(0, "requests[memory]"), 'Invalid value: "-1Gi": must be greater than or equal to 0'),
        (at(1, "limits[example.com/gpu]"), 'Invalid value: "1500m": must be an integer'),
        # the Pod's defaulters made the limit its request before validation
        (at(1, "requests[example.com/gpu]"), 'Invalid value: "1500m": must be an integer'),
        (at(2, "limits"), "Required value: Limit must be set for non overcommitable resources"),
        (at(3, "limits[gpu]"), not_standard),
        (at(3, "requests[gpu]"), not_standard),
    ]
    assert reply.body["message"].startswith('Pod "over" is invalid: [spec.containers[0]')


async def test_the_qos_class_compares_cpu_and_memory_by_value(
    api_server: ApiServer, client: Client
) -> None:
    both = {"cpu": "1", "memory": "1Gi"}
    equal = resources(limits=both, requests={"cpu": "+1", "memory": "1024Mi"})  # "+1" is kept
    classes = {
        "guaranteed": pod("guaranteed", equal, resources(limits=both)),
        "burstable": pod("burstable", equal, resources(limits={"cpu": "1"})),
        "storage-only": pod("storage-only", resources(limits={"ephemeral-storage": "1Gi"})),
        "zero": pod("zero", resources(requests={"cpu": "0", "memory": "0"})),
    }

    created = {
        name: await client.request(api_server, "POST", PODS, body) for name, body in classes.items()
    }

    assert {name: reply.body["status"]["qosClass"] for name, reply in created.items()} == {
        "guaranteed": "Guaranteed",
        "burstable": "Burstable",
        "storage-only": "BestEffort",  # only cpu and memory count
        "zero": "BestEffort",
    }
