"""Small helpers shared by handler modules."""

from __future__ import annotations

import sys
from types import ModuleType

from kafkalite.protocol.messages import response_type

from ..context import RequestContext


def response_module(ctx: RequestContext) -> ModuleType:
    """The kio module of the response type for this request's api key and version."""
    rt = response_type(ctx.header.api_key, ctx.header.api_version)
    return sys.modules[rt.__module__]


class CloseConnection(Exception):
    """Raised by a handler when Kafka would close the connection instead of answering
    (for example an error on an acks=0 produce, which has no response to carry it)."""

