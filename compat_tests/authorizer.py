"""How the compatibility suite turns authorisation on, the same way on kafkalite and Apache Kafka.

Both run StandardAuthorizer with ``allow.everyone.if.no.acl.found=true``: what no ACL covers
stays open to the clients' principal (``User:ANONYMOUS`` on PLAINTEXT), and tests refuse things
with ACLs on the resources they use. Apache Kafka authorises its own controller traffic before
its ACLs are loaded, so its controller listener authenticates as ``User:admin`` (SASL PLAIN), a
super user; kafkalite has no controller listener and takes the same ``super.users``.
"""

from __future__ import annotations

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"

# Apache Kafka only: the controller listener authenticates its traffic as User:admin
KAFKA_CONTROLLER_AS_ADMIN = {
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:SASL_PLAINTEXT",
    "sasl.mechanism.controller.protocol": "PLAIN",
    "listener.name.controller.sasl.enabled.mechanisms": "PLAIN",
    "listener.name.controller.plain.sasl.jaas.config":
        'org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret";',
}


def secured_config(on_kafka: bool, super_users: str = "User:admin") -> dict[str, str]:
    """Broker settings that turn the authorizer on (Kafka's names)."""
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "allow.everyone.if.no.acl.found": "true",
              "super.users": super_users}
    if on_kafka:
        config.update(KAFKA_CONTROLLER_AS_ADMIN)
    return config
