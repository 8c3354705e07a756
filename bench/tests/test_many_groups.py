"""bench.many_groups: groups that join, read and commit at once, and the check of their offsets."""

from __future__ import annotations

import asyncio
import uuid

import kafkalite
from bench import many_groups
from bench.peers import Peer


def test_every_group_commits_and_its_offsets_are_found_and_a_group_that_never_joined_has_none():
    with kafkalite.running() as broker:
        topic = f"groups-{uuid.uuid4().hex[:8]}"
        names = [f"{topic}-g{i}" for i in range(3)]
        many_groups.fill(broker.bootstrap, topic, 2)
        probe = many_groups.RssProbe(Peer("kafkalite", broker.bootstrap, broker.process.pid))
        seconds, each, with_members, after = asyncio.run(many_groups.all_groups(broker.bootstrap, topic, names, 2,
                                                                                probe))
        assert len(each) == 3 and 0 < max(each) <= seconds
        assert with_members > 1 and after > 1  # MiB of the broker process
        assert many_groups.committed_everywhere(broker.bootstrap, topic, names, 2) == 3
        assert many_groups.committed_everywhere(broker.bootstrap, topic, [f"{topic}-never"], 2) == 0
