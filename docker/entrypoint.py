#!/usr/bin/env python3
"""Container entry point: run the broker, configured by KAFKALITE_* environment variables.

    docker run -p 9092:9092 kafkalite                        # 0.0.0.0:9092, advertised as localhost:9092
    docker run -e KAFKALITE_NUM_PARTITIONS=3 kafkalite       # any broker key: KAFKALITE_<KEY>
    docker run kafkalite --log-level DEBUG                   # flags are passed to the broker
    docker run kafkalite sh                                  # anything else is run instead

The broker reads the environment itself (see `kafkalite --help`); this script only adds:

* KAFKALITE_WAIT_FOR_ENV_FILE=/path: wait until that file exists, then add its KEY=VALUE
  lines to the environment before starting. Container tooling uses it to hand over settings
  that are known only once the container runs, such as the advertised listener with the port
  Docker mapped (kafkalite.testcontainers does this).
"""

import os
import sys
import time

WAIT_TIMEOUT_S = 600


def read_env_file(path):
    values = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
    return values


def wait_for_env_file(path, timeout=WAIT_TIMEOUT_S):
    # said once, so that the container's log (and a test) shows where the start is held
    print(f"kafkalite-entrypoint: waiting for {path}", file=sys.stderr, flush=True)
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            sys.exit(f"kafkalite-entrypoint: {path} did not appear within {timeout} s")
        time.sleep(0.05)
    # the writer may still be filling it: wait until its size stops changing
    size = -1
    while size != os.path.getsize(path):
        size = os.path.getsize(path)
        time.sleep(0.02)
    return read_env_file(path)


def main(argv):
    if argv and not argv[0].startswith("-"):
        os.execvp(argv[0], argv)
    env = dict(os.environ)
    wait_file = env.pop("KAFKALITE_WAIT_FOR_ENV_FILE", "")
    if wait_file:
        env.update(wait_for_env_file(wait_file))
    env.setdefault("PYTHONUNBUFFERED", "1")
    cmd = [sys.executable, "-P", "-m", "kafkalite", *argv]
    os.execvpe(cmd[0], cmd, env)


if __name__ == "__main__":
    main(sys.argv[1:])
