from __future__ import annotations

import pytest

import kafkalite
from kafkalite.protocol.client import WireClient


@pytest.fixture(scope="module")
def broker():
    with kafkalite.running() as b:
        yield b


@pytest.fixture
def wire(broker):
    with WireClient(broker.bootstrap) as c:
        yield c
