"""Kafka's own command-line tools (kafka-tools 4.4.0) run against the suite's broker.

Each tool runs through its real main class (the one its ``bin/kafka-*.sh`` script starts), in
one long-lived JVM that runs the tools one after another (ToolHarness.java): a tool's exit
status, stdout and stderr come back per run. The harness is compiled at first use, like the Java
client driver (compat_tests/clients/java.py), against the jar set ``kafka-tools``
(scripts/maven/kafka-tools/pom.xml). A run that does not finish in its time takes the JVM down;
the next run starts a new one.

    result = tools.run("kafka-topics", "--bootstrap-server", bootstrap, "--list")
    assert result.status == 0 and topic in result.lines()
"""

from __future__ import annotations

import atexit
import base64
import re
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

from compat_tests.clients.java import JVM_FLAGS, JvmProcess, build, jar_set

HERE = Path(__file__).resolve().parent

# The scripts' names and the main classes they run (Kafka 4.4's bin/*.sh).
MAIN_CLASSES = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-console-share-consumer": "org.apache.kafka.tools.consumer.ConsoleShareConsumer",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-share-groups": "org.apache.kafka.tools.consumer.group.ShareGroupCommand",
    "kafka-streams-groups": "org.apache.kafka.tools.streams.StreamsGroupCommand",
    "kafka-groups": "org.apache.kafka.tools.GroupsCommand",
    "kafka-transactions": "org.apache.kafka.tools.TransactionsCommand",
    "kafka-configs": "org.apache.kafka.tools.ConfigCommand",
    "kafka-acls": "org.apache.kafka.tools.AclCommand",
    "kafka-features": "org.apache.kafka.tools.FeatureCommand",
    "kafka-metadata-quorum": "org.apache.kafka.tools.MetadataQuorumCommand",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-client-metrics": "org.apache.kafka.tools.ClientMetricsCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
    "kafka-broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-verifiable-producer": "org.apache.kafka.tools.VerifiableProducer",
    "kafka-verifiable-consumer": "org.apache.kafka.tools.VerifiableConsumer",
}

# Kafka's config/tools-log4j2.yaml (what bin/kafka-run-class.sh gives the tools): WARN and above
# to stderr. `follow` makes the appender write to the current System.err, the run's own.
_LOG4J2 = """\
status = error
appender.stderr.type = Console
appender.stderr.name = STDERR
appender.stderr.target = SYSTEM_ERR
appender.stderr.follow = true
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = WARN
rootLogger.appenderRef.stderr.ref = STDERR
"""

_LOG_LINE = re.compile(r"\[\d{4}-\d\d-\d\d [\d:,.]+\] (TRACE|DEBUG|INFO|WARN|ERROR|FATAL) ")


@dataclass
class ToolResult:
    tool: str
    args: tuple[str, ...]
    status: int
    stdout: str
    stderr: str

    def lines(self) -> list[str]:
        """stdout's non-blank lines, stripped."""
        return [line.strip() for line in self.stdout.splitlines() if line.strip()]

    def tool_stderr(self) -> str:
        """stderr without the clients' log lines (_LOG4J2's "[date] LEVEL ..."), stripped: what the tool
        itself printed. A busy machine can make the admin client log a WARN (a first connection attempt
        that timed out) before the tool's own error; that is the client's, not the broker's answer."""
        return "\n".join(line for line in self.stderr.strip().splitlines()
                         if not _LOG_LINE.match(line)).strip()

    def __str__(self) -> str:
        return (f"{self.tool} {' '.join(self.args)} -> status {self.status}\n"
                f"--- stdout\n{self.stdout[-6000:]}\n--- stderr\n{self.stderr[-6000:]}")


class ToolError(AssertionError):
    """A tool ended with a status other than the one expected."""


class _Harness(JvmProcess):
    """The JVM running ToolHarness; one run at a time."""

    def __init__(self) -> None:
        b = build(HERE, jars=jar_set("kafka-tools"), with_driver=False)
        workdir = Path(tempfile.mkdtemp(prefix="kafka-tools-"))
        log4j = workdir / "log4j2.properties"
        log4j.write_text(_LOG4J2)
        cmd = ["java", *JVM_FLAGS, "-Djava.security.manager=allow",
               "--add-opens", "java.base/java.lang=ALL-UNNAMED", f"-Dlog4j2.configurationFile={log4j}",
               "-cp", b.classpath, "ToolHarness"]
        super().__init__(cmd, stderr_lines=100)
        self.next_id = 0

    def run(self, main: str, args: tuple[str, ...], stdin: bytes, timeout: float) -> tuple[str, str, str]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.next_id += 1
        fields = [str(self.next_id), str(int(timeout * 1000)), main, _b64(stdin), *(_b64(a.encode()) for a in args)]
        self.proc.stdin.write("\t".join(fields).encode() + b"\n")
        self.proc.stdin.flush()
        # The harness answers within timeout (or says "timeout" and halts); the margin covers a
        # JVM that is itself stuck.
        answer: list[bytes] = []
        reader = threading.Thread(target=lambda: answer.append(self.proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout + 30)
        if not answer or not answer[0]:
            self.kill()
            raise TimeoutError(f"the tool harness did not answer for {main}; its stderr: {self.stderr_text()}")
        rid, status, out, err = answer[0].decode().rstrip("\n").split("\t")
        assert rid == str(self.next_id), (rid, self.next_id)
        return status, base64.b64decode(out).decode(errors="replace"), base64.b64decode(err).decode(errors="replace")

    def stderr_text(self) -> str:
        return "\n".join(self.stderr)[-4000:]


_harness: _Harness | None = None
_lock = threading.Lock()


@atexit.register
def stop() -> None:
    """Ends the harness JVM (the next run starts another). The tools' package fixture calls it
    after its last test: what a tool left running (a client's threads) and the idle JVM itself
    would otherwise cost CPU until the worker's last file."""
    global _harness
    with _lock:
        if _harness is not None:
            _harness.kill()
        _harness = None


def run(tool: str, *args: str, stdin: str | bytes = b"", timeout: float = 60.0, expect: int | None = 0) -> ToolResult:
    """Runs the tool (a script name of MAIN_CLASSES, e.g. "kafka-topics") with `args`.

    With `expect` (0 by default) a different exit status raises ToolError with the tool's output;
    expect=None returns whatever status came."""
    global _harness
    main = MAIN_CLASSES[tool]
    data = stdin.encode() if isinstance(stdin, str) else stdin
    with _lock:
        if _harness is None or not _harness.alive():
            _harness = _Harness()
        harness = _harness
        status, out, err = harness.run(main, tuple(args), data, timeout)
    if status == "timeout":
        harness.kill()
        raise TimeoutError(f"{tool} {' '.join(args)} did not finish in {timeout}s\n--- stdout\n{out[-4000:]}\n"
                           f"--- stderr\n{err[-4000:]}")
    result = ToolResult(tool, tuple(args), int(status), out, err)
    if expect is not None and result.status != expect:
        raise ToolError(f"expected status {expect}\n{result}")
    return result


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()
