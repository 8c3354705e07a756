"""The Spring Boot application (spring/SpringEosApp.java; Boot 4.0.7, spring-kafka 4.0.x) as a
process: started with a plain ``java -cp`` classpath of the spring-kafka jar set, pointed at the
broker by spring.kafka.bootstrap-servers."""

from __future__ import annotations

from pathlib import Path

from compat_tests.clients import java
from compat_tests.frameworks import JvmApp

SOURCES = Path(__file__).resolve().parent / "spring"


def classpath() -> str:
    return java.build(SOURCES, jars=java.jar_set("spring-kafka"), with_driver=False).classpath


def topics(prefix: str) -> dict[str, str]:
    return {role: f"{prefix}-{role}" for role in ("in", "out", "in-dlt", "plain", "plain-dlt", "events")}


class SpringApp(JvmApp):
    def __init__(self, name: str, bootstrap: str, topic_names: dict[str, str], group: str, log_path: Path):
        args = [f"--spring.kafka.bootstrap-servers={bootstrap}", f"--app.group={group}",
                "--logging.level.root=WARN", "--logging.level.org.springframework.kafka=INFO"]
        args += [f"--app.{role}={name}" for role, name in topic_names.items()]
        super().__init__(name, classpath(), "springeos.SpringEosApp", args, log_path)

    def attempts(self, listener: str, value: str) -> int:
        return sum(1 for e in self.events
                   if e.get("event") == "attempt" and e["listener"] == listener and e["value"] == value)

    def close(self, timeout: float = 40.0) -> None:
        """SIGTERM: Spring closes the context (the listener containers stop) and prints "closed"."""
        self.stop(timeout)
        if not any(e.get("event") == "closed" for e in self.events):
            raise AssertionError(f"{self.name} did not close cleanly (exit {self.proc.returncode}):\n{self.log_tail()}")
