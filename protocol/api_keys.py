"""Kafka's numbers of the APIs that code names outside the API table (protocol.apis, which reads
kio's api_key_map): the one place an API key is written as a number. Imports nothing, so that
modules that must not import kio yet (kafkalite.admin) use it too."""

from __future__ import annotations

from enum import IntEnum


class ApiKey(IntEnum):
    """Named as kio's api_key_map names them (protocol/tests/test_api_keys.py holds them to it)."""

    PRODUCE = 0
    FETCH = 1
    METADATA = 3
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    SASL_AUTHENTICATE = 36
