"""A broker whose transaction markers are written slowly, for the crash tests: the marker
channel waits `--marker-delay-ms` before each partition's marker and once more before the
transaction completes, so that a test can kill the broker after PrepareCommit/PrepareAbort is
durable and before the markers, or between two markers. It is the broker's own CLI with one
part of the services wired differently (broker.services.Wiring), not a switch in the product.

    kafkalite.start(module="kafkalite.broker.tests.slow_markers", extra_args=["--marker-delay-ms", "400"])
"""

from __future__ import annotations

import argparse
import logging
import sys
from functools import partial

import trio

from kafkalite.broker.cli import main
from kafkalite.broker.services import Wiring
from kafkalite.broker.transactions.markers import MarkerChannel

log = logging.getLogger("kafkalite.tests.slow_markers")


class SlowMarkerChannel(MarkerChannel):
    def __init__(self, broker, delay_s: float):
        super().__init__(broker)
        self.delay_s = delay_s

    async def send(self, producer_id, producer_epoch, coordinator_epoch, commit, partitions):
        results = {}
        for tp in partitions:
            await trio.sleep(self.delay_s)
            log.info("writing the %s marker of producer %d to %s-%d", "COMMIT" if commit else "ABORT",
                     producer_id, tp[0], tp[1])
            results.update(await super().send(producer_id, producer_epoch, coordinator_epoch, commit, [tp]))
        await trio.sleep(self.delay_s)
        return results


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument("--marker-delay-ms", type=int, required=True)
    ours, rest = parser.parse_known_args(argv)
    wiring = Wiring(marker_channel=partial(SlowMarkerChannel, delay_s=ours.marker_delay_ms / 1000))
    return main(rest, wiring=wiring)


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
