from __future__ import annotations

import pytest

from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running() as b:
        yield b


@pytest.fixture(scope="module")
def controls_broker():
    """A broker of the module with its test controls on a free port."""
    with suite_brokers.running(controls=0) as b:
        yield b


@pytest.fixture
def wire(broker):
    with WireClient(broker.bootstrap) as c:
        yield c


@pytest.fixture(scope="module")
def console_broker():
    """A broker serving the web console on a free port, one for each test module."""
    with suite_brokers.running(console=0) as b:
        assert b.console_url, "the ready line names no console"
        yield b
