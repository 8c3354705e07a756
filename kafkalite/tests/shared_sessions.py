"""A pytest plugin of this repository (scripts/test.sh loads it: `-p kafkalite.tests.shared_sessions`):
with `--dist loadfile` (scripts/test.sh), the test files that share an expensive fixture go to one
xdist worker together, so that it is started once per pass instead of once per worker that happens
to get one of them. Their files run one after another there, so the fixture is a package fixture
(each group's files are one package's): it ends after the group's last test instead of idling,
a JVM's idle CPU and all, until the worker's last file.

pytest-xdist's loadfile scheduler sends each file to whichever worker asks next, and a session
fixture lives in one worker: three workers each given one Spark file each start a Spark session
(about 27 core-seconds apiece on this project's machines). Here a file named in SHARED_SESSIONS
is scheduled as part of its group, one unit of work; every other file is its own unit as before.
The group is still ordered among the units by its test count (xdist's --loadscope-reorder), so a
large group starts early rather than ending the pass alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from xdist.scheduler import LoadFileScheduling

# group name -> the test files (paths from the repository's root, as in node ids) whose tests use
# the same package fixture; kafkalite/tests/test_shared_sessions.py checks that each file exists
SHARED_SESSIONS: dict[str, tuple[str, ...]] = {
    # spark_tests/conftest.py's `spark`: one Spark driver JVM with the connector's jars
    "spark session": (
        "spark_tests/test_pyspark_kafka.py",
        "spark_tests/test_spark_schema_registry.py",
    ),
    # compat_tests/differ/conftest.py's `reference_bootstrap` and `subject_bootstrap`: an Apache
    # Kafka broker (a JVM) and a kafkalite started with the differ's settings
    "the differ's brokers": (
        "compat_tests/differ/test_differ.py",
        "compat_tests/differ/test_acl_conversations.py",
    ),
}

GROUP_OF_FILE: dict[str, str] = {path: group for group, paths in SHARED_SESSIONS.items() for path in paths}


class SharedSessionScheduling(LoadFileScheduling):
    """loadfile, with each SHARED_SESSIONS group one unit of work."""

    def _split_scope(self, nodeid: str) -> str:
        path = super()._split_scope(nodeid)
        group = GROUP_OF_FILE.get(path)
        return f"shared session: {group}" if group else path


# optional: a run without xdist (`-p no:xdist`) has no such hook, and no workers to schedule
@pytest.hookimpl(optionalhook=True, trylast=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadFileScheduling | None:
    """The scheduler for `--dist loadfile`; any other mode is xdist's own (None)."""
    if config.getvalue("dist") != "loadfile":
        return None
    return SharedSessionScheduling(config, log)
