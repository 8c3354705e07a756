"""Several listeners at once: each answers Metadata with its own advertised address."""

from __future__ import annotations

import socket

import pytest
import trio
from kio.schema.metadata.v1.request import MetadataRequest as MetadataV1
from kio.schema.metadata.v12.request import MetadataRequest

from kafkalite.broker import server
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers


def metadata_brokers(address: str, v1: bool = False):
    with WireClient(address) as c:
        resp = c.request(MetadataV1(topics=None) if v1 else MetadataRequest(
            topics=None, allow_auto_topic_creation=False, include_topic_authorized_operations=False))
    return [(b.host, b.port) for b in resp.brokers]


def port_of(address: str) -> int:
    return int(address.rsplit(":", 1)[1])


def ipv6_loopback() -> bool:
    if not socket.has_ipv6:
        return False
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


needs_ipv6 = pytest.mark.skipif(not ipv6_loopback(), reason="no IPv6 loopback on this machine")


def test_two_listeners_each_advertise_their_own_host():
    with suite_brokers.running(listeners=["INTERNAL://127.0.0.1:0", "EXTERNAL://127.0.0.1:0"],
                               advertised_listeners=["INTERNAL://kafka.internal:0", "EXTERNAL://localhost:0"]) as b:
        internal, external = b.listeners["INTERNAL"], b.listeners["EXTERNAL"]
        assert internal.startswith("kafka.internal:") and external.startswith("localhost:")
        assert port_of(internal) != port_of(external)
        assert b.bootstrap == internal  # the first listener
        # connect to each bound port; each answers with its own advertised address
        assert metadata_brokers(f"127.0.0.1:{port_of(internal)}") == [("kafka.internal", port_of(internal))]
        assert metadata_brokers(f"127.0.0.1:{port_of(external)}") == [("localhost", port_of(external))]
        assert metadata_brokers(f"127.0.0.1:{port_of(external)}", v1=True) == [("localhost", port_of(external))]


def test_advertised_port_differs_from_bound_port():
    # as behind a Docker port mapping: bound on one port, clients told another
    with suite_brokers.running(listeners=["PLAINTEXT://127.0.0.1:0"],
                               advertised_listeners=["PLAINTEXT://docker-host.example:32768"]) as b:
        assert b.bootstrap == "docker-host.example:32768"
        log = b.log_text()
        assert "advertised docker-host.example:32768" in log
        port = int(log.split("PLAINTEXT://127.0.0.1:")[1].split()[0])
        assert metadata_brokers(f"127.0.0.1:{port}") == [("docker-host.example", 32768)]


def test_listener_without_advertised_address_advertises_itself():
    with suite_brokers.running(listeners=["A://127.0.0.1:0", "B://127.0.0.1:0"],
                               advertised_listeners=["B://b.example:0"]) as b:
        a = b.listeners["A"]
        assert a.startswith("127.0.0.1:")
        assert metadata_brokers(a) == [("127.0.0.1", port_of(a))]


def test_wildcard_listener_advertises_localhost():
    with suite_brokers.running(listeners=["PLAINTEXT://0.0.0.0:0"]) as b:
        assert b.bootstrap.startswith("localhost:")
        assert metadata_brokers(f"127.0.0.1:{b.port}") == [("localhost", b.port)]


@needs_ipv6
def test_ipv6_loopback_listener():
    with suite_brokers.running(host="::1", port=0) as b:
        assert b.bootstrap.startswith("[::1]:")
        assert metadata_brokers(b.bootstrap) == [("::1", b.port)]


@needs_ipv6
def test_ipv4_and_ipv6_listeners_side_by_side():
    with suite_brokers.running(listeners=["V4://127.0.0.1:0", "V6://[::1]:0"]) as b:
        v6 = b.listeners["V6"]
        assert v6.startswith("[::1]:")
        assert metadata_brokers(v6) == [("::1", port_of(v6))]
        assert metadata_brokers(b.listeners["V4"]) == [("127.0.0.1", port_of(b.listeners["V4"]))]


class _BothLoopbacks(trio.abc.HostnameResolver):
    """A resolver that gives one name both loopback addresses, as most machines' /etc/hosts gives
    localhost (not every machine's: on some it is 127.0.0.1 only)."""

    NAME = "both-loopbacks"

    async def getaddrinfo(self, host, port, family=0, type=0, proto=0, flags=0):  # noqa: A002 - trio's names
        assert host in (self.NAME, self.NAME.encode()), host
        port = int(port or 0)
        return [(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("127.0.0.1", port)),
                (socket.AF_INET6, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", ("::1", port, 0, 0))]

    async def getnameinfo(self, sockaddr, flags):
        raise NotImplementedError


@needs_ipv6
def test_a_host_of_two_addresses_with_port_0_binds_one_port_on_both():
    async def main() -> None:
        trio.socket.set_custom_hostname_resolver(_BothLoopbacks())  # for this trio run only
        listeners, port = await server._bind(_BothLoopbacks.NAME, 0)
        try:
            assert sorted(listener.socket.family for listener in listeners) == [socket.AF_INET, socket.AF_INET6]
            assert port != 0 and {listener.socket.getsockname()[1] for listener in listeners} == {port}
            for address in ("127.0.0.1", "::1"):
                await (await trio.open_tcp_stream(address, port)).aclose()
        finally:
            for listener in listeners:
                await listener.aclose()

    trio.run(main)
