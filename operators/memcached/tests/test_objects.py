"""The objects a Memcached owns, built from its spec."""

from __future__ import annotations

from operators.memcached import objects
from operators.memcached.resource import Memcached, MemcachedSpec, ProxySpec
from setpoint.resources.models.core_v1 import ResourceRequirements, Toleration
from setpoint.testing import present


def memcached(**spec: object) -> Memcached:
    return Memcached(name="m", spec=MemcachedSpec.model_validate(spec))


def test_scheduling_intent_reaches_every_pod_and_container() -> None:
    resources = ResourceRequirements(requests={"cpu": "250m", "memory": "256Mi"},
                                     limits={"cpu": "250m", "memory": "256Mi"})
    toleration = Toleration(key="dedicated", operator="Equal", value="cache",
                            effect="NoSchedule")
    mc = memcached(resources=resources, node_selector={"pool": "cache"},
                   tolerations=[toleration])

    templates = [present(objects.statefulset(mc).spec).template,
                 present(objects.proxy_deployment(mc, "m-mcrouter-x").spec).template]
    for template in templates:
        pod = present(template).spec
        assert present(pod).node_selector == {"pool": "cache"}
        assert present(pod).tolerations == [toleration]
        for container in present(present(pod).containers):
            assert container.resources == resources


def test_backends_run_the_requested_memcached_version_sized_by_the_memory_limit() -> None:
    mc = memcached(version="1.6.21", replicas=5,
                   resources={"limits": {"memory": "1Gi"}})

    sts = objects.statefulset(mc)
    (container,) = present(present(present(present(sts.spec).template).spec).containers)
    assert container.image == "memcached:1.6.21"
    assert "--memory-limit=870" in present(container.args)
    assert present(sts.spec).replicas == 5
    assert present(sts.spec).service_name == objects.headless_service(mc).metadata.name
    spec = present(sts.spec)
    selected = present(present(spec.selector).match_labels)
    assert selected.items() <= present(present(present(spec.template).metadata).labels).items()


def test_memcached_keeps_its_default_cache_size_without_a_memory_limit() -> None:
    assert objects.cache_megabytes(None) == 64
    assert objects.cache_megabytes(ResourceRequirements(limits={"cpu": "1"})) == 64
    assert objects.cache_megabytes(ResourceRequirements(limits={"memory": "64Mi"})) == 54


def test_the_proxy_mounts_the_named_configuration_so_a_new_one_rolls_it() -> None:
    mc = memcached(proxy=ProxySpec(replicas=3))

    one = objects.proxy_deployment(mc, "m-mcrouter-aaaa")
    two = objects.proxy_deployment(mc, "m-mcrouter-bbbb")
    assert present(one.spec).replicas == 3
    pod = present(present(present(one.spec).template).spec)
    assert present(present(pod.volumes)[0].config_map).name == "m-mcrouter-aaaa"
    assert present(one.spec).template != present(two.spec).template
    (container,) = present(present(present(present(one.spec).template).spec).containers)
    assert container.command == ["mcrouter"]
    assert "--config-file=/etc/mcrouter/config.json" in present(container.args)
    assert container.image == "jphalip/mcrouter:0.36.0"
    assert present(present(present(one.spec).strategy).rolling_update).max_unavailable == 0


def test_configurations_are_immutable_and_named_after_their_content() -> None:
    mc = memcached()

    one = objects.config_map(mc, '{"a": 1}\n')
    again = objects.config_map(mc, '{"a": 1}\n')
    other = objects.config_map(mc, '{"a": 2}\n')
    assert one.immutable is True
    assert one.data == {"config.json": '{"a": 1}\n'}
    assert one.metadata.name == again.metadata.name != other.metadata.name
    assert present(one.metadata.name).startswith("m-mcrouter-")


def test_clients_reach_the_proxies_through_the_service_named_like_the_memcached() -> None:
    mc = memcached()

    service = objects.proxy_service(mc)
    assert service.metadata.name == "m"
    assert present(service.spec).selector == objects.proxy_selector(mc)
    assert present(present(service.spec).ports)[0].port == 11211
    assert present(objects.headless_service(mc).spec).cluster_ip == "None"


def test_quantities_are_written_as_the_server_stores_them() -> None:
    mc = memcached(resources={"requests": {"cpu": "0.5", "memory": "0.5Gi"},
                              "limits": {"cpu": "0.5"}})

    pod = present(present(present(objects.statefulset(mc).spec).template).spec)
    (container,) = present(pod.containers)
    assert present(container.resources).requests == {"cpu": "500m", "memory": "512Mi"}
    assert present(container.resources).limits == {"cpu": "500m"}


def test_the_proxy_pods_are_probed_for_readiness_as_often_as_the_spec_asks() -> None:
    """A rollout replaces a proxy pod once its successor passes a readiness probe, so the
    period bounds how long each step waits (5 s unless the spec says otherwise)."""
    def period(mc: Memcached) -> int | None:
        template = present(present(objects.proxy_deployment(mc, "m-mcrouter-x").spec).template)
        (container,) = present(present(template.spec).containers)
        return present(container.readiness_probe).period_seconds

    assert period(memcached()) == 5
    assert period(memcached(proxy=ProxySpec(readiness_period_seconds=1))) == 1
