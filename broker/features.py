"""Feature levels (KIP-584): what the broker supports, what the cluster has finalized, and
UpdateFeatures' rules, as a single-node Kafka 4.4 cluster has them.

Supported ranges and the levels a new cluster finalizes are Kafka 4.4's (metadata.version 7-33 at
33, kraft.version 0-1 at 0, eligible.leader.replicas.version, group.version, streams.version at 1,
share.version at 2, transaction.version 0-2 at the broker's `transaction.version` setting); with
--kafka-version they are that release's (broker.kafka_versions). ApiVersions reports them (a level
of 0 is not finalized) with an epoch that grows with every change.

UpdateFeatures is validated as Kafka's FeatureControlManager does, one message per refusal, and an
update either applies whole or not at all (INVALID_UPDATE_VERSION "The update failed for all
features since the following feature had an error: ..."): an unknown feature, a level outside the
supported range, a downgrade without the SAFE_DOWNGRADE or UNSAFE_DOWNGRADE upgrade type (v0's
allow_downgrade does not count, as on Kafka), and any metadata.version downgrade. A feature named
twice takes its last update. What a level changes: transaction.version is the transaction
coordinator's (a coordinator built after the change runs it; clients pick their protocol from
ApiVersions at once); the other levels are reported, not enforced. Levels persist in
`__cluster_metadata/features.json`, saved as they will be before memory changes: a save that
fails (a full disk) raises OSError with the levels as they were (broker.all_or_nothing).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafkalite.storage.files import write_atomic

log = logging.getLogger("kafkalite.features")

# name: (min supported, max supported), Kafka 4.4's BrokerFeatures.defaultSupportedFeatures
SUPPORTED: dict[str, tuple[int, int]] = {
    "metadata.version": (7, 33),
    "kraft.version": (0, 1),
    "transaction.version": (0, 2),
    "group.version": (0, 1),
    "eligible.leader.replicas.version": (0, 1),
    "share.version": (0, 2),
    "streams.version": (0, 1),
}
# the levels a freshly formatted Kafka 4.4 cluster finalizes (transaction.version: the broker setting)
NEW_CLUSTER: dict[str, int] = {"metadata.version": 33, "kraft.version": 0, "group.version": 1,
                               "eligible.leader.replicas.version": 1, "share.version": 2, "streams.version": 1}
UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE = 1, 2, 3
METADATA_VERSION = "metadata.version"


class FeatureUpdateError(Exception):
    """A refused update; the message is Kafka's for the feature that failed."""


@dataclass(frozen=True)
class FeatureUpdate:
    feature: str
    level: int
    upgrade_type: int


class Features:
    def __init__(self, meta_dir: Path, config: Any, release: Any, node_id: int):
        self.path = meta_dir / "features.json"
        self.config = config
        self.node_id = node_id
        if release is None:
            self.supported = dict(SUPPORTED)
            levels = dict(NEW_CLUSTER)
        else:
            self.supported = dict(release.supported_features)
            levels = dict(release.finalized_features)
        levels["transaction.version"] = config["transaction.version"]
        self.levels: dict[str, int] = levels
        self.epoch = 1
        if self.path.exists():
            saved = json.loads(self.path.read_text())
            self.levels.update({k: int(v) for k, v in saved["levels"].items()})
            self.epoch = int(saved["epoch"])
            config.values["transaction.version"] = self.levels.get("transaction.version", 0)

    def finalized(self) -> dict[str, int]:
        """The finalized levels above 0 (what ApiVersions lists)."""
        return {n: level for n, level in self.levels.items() if level > 0}

    def check(self, update: FeatureUpdate) -> None:
        """FeatureControlManager.updateFeature's checks of one update."""
        name, level = update.feature, update.level
        prefix = f"Invalid update version {level} for feature {name}."
        if name not in self.supported:
            raise FeatureUpdateError(f"{prefix} Local controller {self.node_id} does not support this feature.")
        lo, hi = self.supported[name]
        if level > hi or (level < lo and level != 0):
            raise FeatureUpdateError(f"{prefix} Local controller {self.node_id} only supports versions {lo}-{hi}")
        current = self.levels.get(name, 0)
        if level < current:
            if update.upgrade_type not in (SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
                raise FeatureUpdateError(f"{prefix} Can't downgrade the version of this feature without setting the "
                                         "upgrade type to either safe or unsafe downgrade.")
            if name == METADATA_VERSION:
                why = ("Refusing to perform the requested downgrade because it might delete metadata information."
                       if update.upgrade_type == SAFE_DOWNGRADE else
                       "Unsafe metadata downgrade is not supported in this version.")
                raise FeatureUpdateError(f"Unsupported metadata.version downgrade from {current} to {level}. {why}")

    def update(self, updates: list[FeatureUpdate], *, validate_only: bool) -> list[str]:
        """Check every update (a feature named twice: its last), then apply them all; returns the
        features of the updates, in request order (v0-v1 answer one result for each)."""
        by_feature = {u.feature: u for u in updates}
        for u in by_feature.values():
            self.check(u)
        if validate_only:
            return [u.feature for u in updates]
        changed = {name: u.level for name, u in by_feature.items() if self.levels.get(name, 0) != u.level}
        if changed:
            # saved as they will be before memory changes: a save that fails raises OSError
            levels = {**self.levels, **changed}
            self._save(levels, self.epoch + 1)
            self.levels, self.epoch = levels, self.epoch + 1
            if "transaction.version" in changed:
                self.config.values["transaction.version"] = changed["transaction.version"]
            log.info("finalized features now %s (epoch %d)", self.finalized(), self.epoch)
        return [u.feature for u in updates]

    def _save(self, levels: dict[str, int], epoch: int) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps({"levels": levels, "epoch": epoch}, sort_keys=True).encode(),
                     fsync=True)
