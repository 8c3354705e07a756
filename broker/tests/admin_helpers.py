"""confluent-kafka admin calls the isolation tests make, each awaited."""

from __future__ import annotations

from confluent_kafka.admin import (
    AclBinding, AclOperation, AclPermissionType, AdminClient, ResourcePatternType, ResourceType, ScramCredentialInfo,
    ScramMechanism, UserScramCredentialUpsertion,
)


def allow_read_and_add_user(admin: AdminClient, topic: str, user: str, mechanism: ScramMechanism,
                            password: bytes) -> None:
    """An ACL letting User:alice read `topic`, and a SCRAM user added at run time."""
    for fut in admin.create_acls([AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, "User:alice",
                                             "*", AclOperation.READ, AclPermissionType.ALLOW)]).values():
        fut.result(10)
    for fut in admin.alter_user_scram_credentials([UserScramCredentialUpsertion(
            user, ScramCredentialInfo(mechanism, 4096), password)]).values():
        fut.result(10)
