"""The registry's errors: Confluent Schema Registry's HTTP status, `error_code` and message for
each failure (Confluent's `Errors.java` and rest-utils; the same codes in Karapace). Every refusal
of the registry is one of these, raised where the rule lives and turned into
`{"error_code": CODE, "message": TEXT}` with its status by the HTTP layer (api.py).

Codes: 40401 subject not found, 40402 version not found, 40403 schema not found, 40404 subject
soft-deleted, 40405 subject not soft-deleted (a permanent delete needs a soft delete first),
40406 version soft-deleted, 40407 version not soft-deleted, 40408 no subject-level compatibility,
40409 no subject-level mode, 409 incompatible schema (HTTP 409), 42201 invalid schema, 42202
invalid version, 42203 invalid compatibility level, 42204 invalid mode, 42205 operation not
permitted (modes, explicit ids), 42206 a referenced schema cannot be deleted, 50001 store error."""

from __future__ import annotations


class RegistryError(Exception):
    def __init__(self, http_status: int, error_code: int, message: str):
        super().__init__(message)
        self.http_status = http_status
        self.error_code = error_code
        self.message = message


def subject_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40401, f"Subject '{subject}' not found.")


def version_not_found(version: int | str) -> RegistryError:
    return RegistryError(404, 40402, f"Version {version} not found.")


def schema_not_found(schema_id: int | None = None) -> RegistryError:
    return RegistryError(404, 40403, "Schema not found" if schema_id is None else f"Schema {schema_id} not found")


def subject_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40404, f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")


def subject_not_soft_deleted(subject: str) -> RegistryError:
    return RegistryError(404, 40405, f"Subject '{subject}' was not deleted first before being permanently deleted")


def version_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40406, f"Subject '{subject}' Version {version} was soft deleted.Set permanent=true "
                                     "to delete permanently")


def version_not_soft_deleted(subject: str, version: int) -> RegistryError:
    return RegistryError(404, 40407, f"Subject '{subject}' Version {version} was not deleted first before being "
                                     "permanently deleted")


def subject_config_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40408, f"Subject '{subject}' does not have subject-level compatibility configured")


def subject_mode_not_found(subject: str) -> RegistryError:
    return RegistryError(404, 40409, f"Subject '{subject}' does not have subject-level mode configured")


def incompatible(subject: str, messages: list[str]) -> RegistryError:
    # Confluent answers HTTP 409 with body code 409 (40901 only in its newest releases; Karapace 409)
    return RegistryError(409, 409, f"Schema being registered is incompatible with an earlier schema for subject "
                                   f"\"{subject}\", details: {messages}")


def invalid_schema(detail: str) -> RegistryError:
    return RegistryError(422, 42201, f"Invalid schema {detail}")


def invalid_version(version: str) -> RegistryError:
    return RegistryError(422, 42202, f"The specified version '{version}' is not a valid version id. Allowed values "
                                     "are between [1, 2^31-1] and the string \"latest\"")


def invalid_compatibility_level() -> RegistryError:
    return RegistryError(422, 42203, "Invalid compatibility level. Valid values are none, backward, forward, full, "
                                     "backward_transitive, forward_transitive, and full_transitive")


def invalid_mode(mode: object) -> RegistryError:
    return RegistryError(422, 42204, f"Invalid mode. Valid values are READWRITE, READONLY and IMPORT, not {mode!r}")


def not_permitted(message: str) -> RegistryError:
    return RegistryError(422, 42205, message)


def reference_exists(subject: str, version: int) -> RegistryError:
    return RegistryError(422, 42206, f"One or more references exist to the schema {{subject={subject},version={version}}}.")


def bad_request(message: str) -> RegistryError:
    # a body that is not JSON, or not the object asked for: Confluent's 400 with a string message
    return RegistryError(400, 400, message)


def store_error(message: str) -> RegistryError:
    return RegistryError(500, 50001, f"Error while storing the schema: {message}")
