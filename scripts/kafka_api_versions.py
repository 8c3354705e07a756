"""Derive broker/kafka_releases.json's API version ranges from Apache Kafka's message schemas.

For each release, reads clients/src/main/resources/common/message/*Request.json (from a git
checkout of apache/kafka at the release tag, or from that release's kafka-clients jar, which
carries the same files under common/message/) and records, per API key a broker serves, the
range its ApiVersions advertises: `validVersions`, less the latest version when the schema marks
it `latestVersionUnstable` (a broker advertises unstable versions only with
unstable.api.versions.enable). APIs whose `listeners` name neither `broker` nor `zkBroker` are
the controller's and left out.

    python3 scripts/kafka_api_versions.py --git ~/kafka 2.8.0=2.8 3.0.0=3.0 ... \
        --jar 3.9=.../kafka-clients-3.9.2.jar --jar 4.0=.../kafka-clients-4.0.0.jar ...

prints the "apis" part of every release as JSON; the features part of broker/kafka_releases.json
is written by hand from each release's MetadataVersion/Feature classes (see that file's notes).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile

def _schema(text: str) -> dict:
    """The schemas are JSON with // comments, also after a value on the same line."""
    out = []
    in_string = False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1])
                i += 1
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = len(text) if end < 0 else end
            continue
        else:
            out.append(ch)
        i += 1
    # the first object only, as Kafka's generator (Jackson) reads it: 2.8's DescribeProducersRequest
    # has stray brackets after it
    return json.JSONDecoder().raw_decode("".join(out).strip())[0]


def ranges(schemas: list[str]) -> dict[str, list[int]]:
    out: dict[int, list[int]] = {}
    for text in schemas:
        s = _schema(text)
        if s.get("type") != "request":
            continue
        listeners = s.get("listeners")
        if listeners is not None and not ({"broker", "zkBroker"} & set(listeners)):
            continue
        if s["validVersions"] == "none":  # a removed API (4.x keeps the schema of some)
            continue
        lo, _, hi = s["validVersions"].partition("-")
        low, high = int(lo), int(hi or lo)
        if s.get("latestVersionUnstable"):
            high -= 1
        if high >= low:
            out[int(s["apiKey"])] = [low, high]
    return {str(k): out[k] for k in sorted(out)}


def from_git(repo: str, tag: str) -> list[str]:
    prefix = "clients/src/main/resources/common/message/"
    names = subprocess.run(["git", "-C", repo, "ls-tree", "--name-only", f"{tag}:{prefix}"], check=True,
                           capture_output=True, text=True).stdout.split()
    return [subprocess.run(["git", "-C", repo, "show", f"{tag}:{prefix}{n}"], check=True, capture_output=True,
                           text=True).stdout for n in names if n.endswith("Request.json")]


def from_jar(path: str) -> list[str]:
    with zipfile.ZipFile(path) as z:
        return [z.read(n).decode() for n in z.namelist()
                if n.startswith("common/message/") and n.endswith("Request.json")]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--git", help="a clone of apache/kafka with its release tags")
    p.add_argument("tags", nargs="*", metavar="TAG=RELEASE", help="git tag and the release it stands for")
    p.add_argument("--jar", action="append", default=[], metavar="RELEASE=PATH", help="a kafka-clients jar")
    args = p.parse_args(argv)
    out: dict[str, dict] = {}
    for item in args.tags:
        tag, _, release = item.partition("=")
        out[release or tag] = ranges(from_git(args.git, tag))
    for item in args.jar:
        release, _, path = item.partition("=")
        out[release] = ranges(from_jar(path))
    json.dump(out, sys.stdout, indent=None)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
