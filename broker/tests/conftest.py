from __future__ import annotations

import pytest

import kafkalite
from kafkalite.protocol.client import WireClient


@pytest.fixture(scope="module")
def broker():
    with kafkalite.running() as b:
        yield b


@pytest.fixture(scope="module")
def controls_broker():
    """A broker of the module with its test controls on a free port."""
    with kafkalite.running(controls=0) as b:
        yield b


@pytest.fixture
def wire(broker):
    with WireClient(broker.bootstrap) as c:
        yield c
