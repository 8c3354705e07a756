"""DescribeConfigs (key 32) v1-v4, AlterConfigs (33) v0-v2, IncrementalAlterConfigs (44) v0-v1.

Resources: topics (2), the node the request came to (4) and its loggers (8), client-metrics
subscriptions (16, broker.telemetry: SET and DELETE, with Kafka's validation) and groups (32,
broker.group_configs).

DescribeConfigs
- A topic lists every topic config Kafka defines, sorted by name, with its effective value and
  Kafka's config_source: TOPIC_CONFIG for an override, STATIC_BROKER_CONFIG when it falls back to a
  broker setting that was set (num.partitions and the like differ from Kafka's default),
  DEFAULT_CONFIG otherwise. include_synonyms adds the fallback chain (the override, then the
  broker settings, e.g. retention.ms -> log.retention.ms -> log.retention.hours);
  include_documentation (v3+) one line per config; config_type (v3+) is Kafka's type. An unknown
  topic is UNKNOWN_TOPIC_OR_PARTITION, a bad name INVALID_TOPIC_EXCEPTION. configuration_keys
  filters, silently skipping unknown keys; null or empty means all.
- The broker resource named by this node id lists the broker settings (broker.settings) and
  Kafka's dynamic broker configs: those are writable and report a dynamic value first
  (DYNAMIC_BROKER_CONFIG, then DYNAMIC_DEFAULT_BROKER_CONFIG, in the synonyms too); the resource ""
  lists the cluster defaults that are set. Another id is INVALID_REQUEST.
- The broker-logger resource lists `root` and the broker's loggers with their levels.

AlterConfigs / IncrementalAlterConfigs
- AlterConfigs replaces a topic's whole override set; IncrementalAlterConfigs applies SET,
  DELETE, APPEND and SUBTRACT (the last two only on LIST configs: "Can't APPEND to key x
  because its type is not LIST."; APPEND to a config with no override starts from Kafka's
  static default). The result is validated like CreateTopics (INVALID_CONFIG with Kafka's
  message), then the topic must exist (UNKNOWN_TOPIC_OR_PARTITION "The topic 'x' does not
  exist."). validate_only checks and changes nothing. Duplicate resources, duplicate keys in a
  resource and null values (other than DELETE) are INVALID_REQUEST, as Kafka's broker checks them.
- BROKER resources (a node id, or "" for the cluster default) take Kafka's dynamic broker configs
  (broker.dynamic_configs owns which keys, their validation and where they apply): AlterConfigs
  replaces the resource's dynamic set, IncrementalAlterConfigs SETs and DELETEs keys and APPENDs to
  and SUBTRACTs from LIST keys ("Config value append is not allowed for config key: k",
  INVALID_CONFIG, otherwise). A key the resource has no value for starts from Kafka's own default
  for it (log.cleanup.policy APPEND compact gives "delete,compact"), as Kafka's controller does,
  never from a static setting or the cluster default. GROUP resources refuse APPEND and SUBTRACT on
  every key, even the LIST-typed streams.rack.aware.assignment.tags ("Can't APPEND to key k
  because its type is not LIST.", INVALID_CONFIG), as Kafka 4.4's controller does. Logger levels (resource
  type 8, incremental only) can be SET to FATAL/ERROR/WARN/INFO/DEBUG/TRACE and DELETEd.

All or nothing: a resource's new configs are saved (topics.json, broker_configs.json,
group_configs.json, client_metrics.json) before they take effect; a save that fails (a full
disk) answers that resource KAFKA_STORAGE_ERROR and leaves its configs as they were. Logger
levels are not saved (as in Kafka, they last until the broker stops).

With an authorizer: DESCRIBE_CONFIGS (describe) or ALTER_CONFIGS (alter) on the cluster for
broker and logger resources, on the topic or group otherwise; refused resources get CLUSTER_ /
TOPIC_ / GROUP_AUTHORIZATION_FAILED with Kafka's message (DescribeConfigs lists them last).
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, Callable, Mapping, cast

from kio.schema.errors import ErrorCode

from kafkalite.protocol.messages import make

from ..context import RequestContext
from ..settings.broker_keys import BROKER_KEYS
from ..settings.describe import BrokerKeyLike, describe_broker_configs
from ..settings.topic_keys import is_list_config, topic_config_default, validate_topic_configs
from ..settings.values import ConfigError, ConfigSource, ConfigType
from ..authorizer import AUTHORIZATION_MESSAGES, AclOperation, ResourceType, allowed, allowed_cluster
from . import api
from .admin_topics import AdminError, topic_name_error
from ..all_or_nothing import storage_error_message
from .common import response_module

log = logging.getLogger("kafkalite.admin")

TOPIC, BROKER, BROKER_LOGGER, CLIENT_METRICS, GROUP = 2, 4, 8, 16, 32
RESOURCE_TYPE_NAMES = {0: "UNKNOWN", 2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OP_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}

LOG_LEVELS = {"FATAL": logging.CRITICAL, "ERROR": logging.ERROR, "WARN": logging.WARNING,
              "INFO": logging.INFO, "DEBUG": logging.DEBUG, "TRACE": 5}
ROOT_LOGGER = "root"
BROKER_LOGGER_PREFIX = "kafkalite"


# --- helpers shared by the three APIs -------------------------------------------------------


# Kafka words the same two refusals three ways: the alter paths (ConfigAdminManager), DescribeConfigs
# of a BROKER and of a BROKER_LOGGER (ConfigHelper); clients and the differ compare the text.
ALTER_NODE_ID = ("Node id must be an integer, but it is: {name}",
                 "Unexpected broker id, expected {node}, but received {name}")
DESCRIBE_BROKER_ID = ("Broker id must be an integer, but it is: {name}",
                      "Unexpected broker id, expected {node} or empty string, but received {name}")
DESCRIBE_LOGGER_ID = ("Broker id must be an integer, but it is: {name}",
                      "Unexpected broker id, expected {node} but received {name}")


def _check_node_id(ctx: RequestContext, name: str, messages: tuple[str, str] = ALTER_NODE_ID) -> None:
    """INVALID_REQUEST unless `name` is this broker's node id (`messages`: not an integer, another node)."""
    not_integer, other_node = messages
    try:
        node = int(name)
    except ValueError:
        raise AdminError(ErrorCode.invalid_request, not_integer.format(name=name)) from None
    if node != ctx.node_id:
        raise AdminError(ErrorCode.invalid_request, other_node.format(node=ctx.node_id, name=name))


def _topic_for_alter(ctx: RequestContext, name: str):
    if name == "":
        raise AdminError(ErrorCode.invalid_request, "Default topic resources are not allowed.")
    reason = topic_name_error(name)
    if reason is not None:
        raise AdminError(ErrorCode.invalid_topic_exception, reason)


def _apply_topic_configs(ctx: RequestContext, name: str, new: dict[str, str | None], validate_only: bool) -> None:
    """Validate a topic's complete new override set, check the topic exists, and store it."""
    _topic_for_alter(ctx, name)
    try:
        normalized = validate_topic_configs(new, broker_values=ctx.broker.config.values)
    except ConfigError as exc:
        raise AdminError(ErrorCode.invalid_config, str(exc)) from None
    topic = ctx.cluster.topics.get(name)
    if topic is None:
        raise AdminError(ErrorCode.unknown_topic_or_partition, f"The topic '{name}' does not exist.")
    if not validate_only and normalized != topic.configs:
        ctx.cluster.alter_topic_configs(topic, normalized)
        log.info("topic %s configs now %s", name, normalized)


def _broker_resource_node(ctx: RequestContext, name: str) -> int | None:
    """The node a BROKER resource names (None: the cluster default, "")."""
    if name == "":
        return None
    _check_node_id(ctx, name)
    return int(name)


def _replace_broker_configs(ctx: RequestContext, node: int | None, props: dict[str, str],
                            validate_only: bool) -> None:
    from ..dynamic_configs import DynamicConfigError

    try:
        ctx.broker.dynamic_configs.replace(node, props, validate_only=validate_only)
    except DynamicConfigError as exc:
        code = ErrorCode.invalid_config if exc.invalid_config else ErrorCode.invalid_request
        raise AdminError(code, exc.message) from None


def _preprocess(resources, *, incremental: bool) -> dict[int, AdminError]:
    """Kafka's ConfigAdminManager.preprocess: duplicates and nulls, per resource index."""
    errors: dict[int, AdminError] = {}
    seen = Counter((r.resource_type, r.resource_name) for r in resources)
    for i, r in enumerate(resources):
        if seen[(r.resource_type, r.resource_name)] > 1:
            errors[i] = AdminError(ErrorCode.invalid_request, "Each resource must appear at most once.")
            continue
        names = [c.name for c in r.configs]
        if len(set(names)) != len(names):
            errors[i] = AdminError(ErrorCode.invalid_request, "Error due to duplicate config keys")
            continue
        nulls = [c.name for c in r.configs
                 if c.value is None and not (incremental and c.config_operation == DELETE)]
        if nulls:
            errors[i] = AdminError(ErrorCode.invalid_request, "Null value not supported for : " + ", ".join(nulls))
    return errors


def _apply_operations(props: dict[str, Any], configs: Any, is_list: Callable[[str], bool],
                      default_of: Callable[[str], str | None], not_list: Callable[[str, int], str]) -> None:
    """IncrementalAlterConfigs' SET, DELETE, APPEND and SUBTRACT on `props`, in request order
    (Kafka's ConfigAdminManager.prepareIncrementalConfigs): APPEND and SUBTRACT only on LIST keys
    (`not_list` words the refusal), starting from the key's default when it has no value."""
    for c in configs:
        op = c.config_operation
        if op == SET:
            props[c.name] = c.value
        elif op == DELETE:
            props.pop(c.name, None)
        elif op in (APPEND, SUBTRACT):
            if not is_list(c.name):
                raise AdminError(ErrorCode.invalid_config, not_list(c.name, op))
            current = props.get(c.name)
            if current is None:
                current = default_of(c.name)
            props[c.name] = _list_op(current, op, c.value)
        else:
            raise AdminError(ErrorCode.invalid_request, f"Unknown operations type {op}")


def _list_op(current: str | None, op: int, value: str) -> str:
    """APPEND (items not there yet) or SUBTRACT (items there) on a LIST config's value."""
    parts = [p for p in (current or "").split(",") if p]
    for item in value.split(","):
        if op == APPEND and item not in parts:
            parts.append(item)
        elif op == SUBTRACT and item in parts:
            parts.remove(item)
    return ",".join(parts)


def _python_level(level: str) -> int:
    return LOG_LEVELS[level]


def _kafka_level(level: int) -> str:
    for name, value in sorted(LOG_LEVELS.items(), key=lambda kv: kv[1]):
        if level <= value:
            return name
    return "FATAL"


def _broker_loggers() -> dict[str, logging.Logger]:
    found = {ROOT_LOGGER: logging.getLogger()}
    for name, obj in sorted(logging.root.manager.loggerDict.items()):
        if isinstance(obj, logging.Logger) and (name == BROKER_LOGGER_PREFIX
                                                or name.startswith(BROKER_LOGGER_PREFIX + ".")):
            found[name] = obj
    return found


# --- DescribeConfigs ------------------------------------------------------------------------


def _describe_entries(ctx: RequestContext, resource):
    rtype, name = resource.resource_type, resource.resource_name
    keys = resource.configuration_keys or None
    if rtype == TOPIC:
        reason = topic_name_error(name)
        if reason is not None:
            raise AdminError(ErrorCode.invalid_topic_exception, reason)
        topic = ctx.cluster.topics.get(name)
        if topic is None:
            raise AdminError(ErrorCode.unknown_topic_or_partition, "")
        return ctx.broker.dynamic_configs.describe_topic(topic.configs, keys)
    if rtype == BROKER:
        dynamic = ctx.broker.dynamic_configs
        if name == "":
            return dynamic.describe_default(keys)
        _check_node_id(ctx, name, DESCRIBE_BROKER_ID)
        node = int(name)
        # BrokerKey's fields are read-only (a frozen dataclass), which the protocol does not say
        keys_table = cast("Mapping[str, BrokerKeyLike]", BROKER_KEYS)
        return dynamic.overlay(node, describe_broker_configs(dynamic.static_values, keys_table, names=keys), keys)
    if rtype == BROKER_LOGGER:
        if name == "":
            raise AdminError(ErrorCode.invalid_request, "Broker id must not be empty")
        _check_node_id(ctx, name, DESCRIBE_LOGGER_ID)
        from ..settings.describe import ConfigEntry
        wanted = None if keys is None else set(keys)
        return [ConfigEntry(n, _kafka_level(lg.getEffectiveLevel()), ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG,
                            ConfigType.UNKNOWN, None)
                for n, lg in _broker_loggers().items() if wanted is None or n in wanted]
    if rtype == GROUP:
        return _describe_group(ctx, name, keys)
    if rtype == CLIENT_METRICS:
        return _describe_client_metrics(ctx, name, keys)
    raise AdminError(ErrorCode.invalid_request,
                     f"Unsupported resource type: {RESOURCE_TYPE_NAMES.get(rtype, rtype)}")


def _describe_group(ctx: RequestContext, name: str, keys):
    """GROUP resources: the group configs broker.group_configs serves."""
    if not name:
        raise AdminError(ErrorCode.invalid_request, "Group name must not be empty")
    return ctx.broker.services.group_configs.describe_entries(name, keys)


def _describe_client_metrics(ctx: RequestContext, name: str, keys):
    """CLIENT_METRICS resources: a subscription's keys (broker.telemetry)."""
    from ..settings.describe import ConfigEntry

    if not name:
        raise AdminError(ErrorCode.invalid_request, "Client metrics subscription name must not be empty")
    props = ctx.broker.telemetry.subscriptions.get(name, {})
    types = {"interval.ms": ConfigType.INT, "match": ConfigType.LIST, "metrics": ConfigType.LIST}
    return [ConfigEntry(k, v, ConfigSource.CLIENT_METRICS_CONFIG, types[k], None,
                        synonyms=[(k, v, ConfigSource.CLIENT_METRICS_CONFIG)])
            for k, v in sorted(props.items()) if keys is None or k in keys]


def _incremental_client_metrics(ctx: RequestContext, resource, validate_only: bool) -> None:
    from ..telemetry import TelemetryConfigError

    if not resource.resource_name:
        raise AdminError(ErrorCode.invalid_request, "Client metrics subscription name must not be empty")
    props = dict(ctx.broker.telemetry.subscriptions.get(resource.resource_name, {}))
    for c in resource.configs:
        if c.config_operation == SET:
            props[c.name] = c.value
        elif c.config_operation == DELETE:
            props.pop(c.name, None)
        else:
            raise AdminError(ErrorCode.invalid_request,
                             f"{OP_NAMES.get(c.config_operation, c.config_operation)} operation is not allowed "
                             "for the CLIENT_METRICS resource")
    try:
        ctx.broker.telemetry.alter(resource.resource_name, props, validate_only=validate_only)
    except TelemetryConfigError as exc:
        raise AdminError(ErrorCode.invalid_config if exc.invalid_config else ErrorCode.invalid_request,
                         exc.message) from None


def _incremental_group(ctx: RequestContext, resource, validate_only: bool) -> None:
    from ..settings.group_keys import GroupConfigError

    if not resource.resource_name:
        raise AdminError(ErrorCode.invalid_request, "Group name must not be empty")
    changes = []
    for c in resource.configs:
        if c.config_operation == SET:
            changes.append((c.name, c.value))
        elif c.config_operation == DELETE:
            changes.append((c.name, None))
        elif c.config_operation in (APPEND, SUBTRACT):
            # Kafka's controller splits no GROUP key into a list (KafkaConfigSchema has no GROUP
            # ConfigDef), not even streams.rack.aware.assignment.tags, whose type is LIST
            raise AdminError(ErrorCode.invalid_config, f"Can't {OP_NAMES[c.config_operation]} to key {c.name} "
                             "because its type is not LIST.")
        else:
            raise AdminError(ErrorCode.invalid_request, f"Unknown operations type {c.config_operation}")
    try:
        ctx.broker.services.group_configs.alter(resource.resource_name, changes, validate_only=validate_only)
    except GroupConfigError as exc:
        raise AdminError(ErrorCode.invalid_config, str(exc)) from None


@api(32, 1, 4)
async def describe_configs(ctx: RequestContext, request: Any) -> Any:
    mod = response_module(ctx)
    synonyms_wanted = request.include_synonyms
    docs_wanted = getattr(request, "include_documentation", False)
    results = []
    unauthorized = []  # answered after the rest, as Kafka's ConfigHelper does
    for resource in request.resources:
        refused = _refused(ctx, resource, AclOperation.DESCRIBE_CONFIGS)
        if refused is not None:
            unauthorized.append(make(mod.DescribeConfigsResult, error_code=refused,
                                error_message=AUTHORIZATION_MESSAGES[refused], resource_type=resource.resource_type,
                                resource_name=resource.resource_name, configs=()))
            continue
        try:
            entries = _describe_entries(ctx, resource)
        except AdminError as exc:
            results.append(make(mod.DescribeConfigsResult, error_code=exc.code, error_message=exc.message,
                                resource_type=resource.resource_type, resource_name=resource.resource_name,
                                configs=()))
            continue
        configs = tuple(
            make(mod.DescribeConfigsResourceResult, name=e.name, value=None if e.sensitive else e.value,
                 read_only=e.read_only, config_source=int(e.source), is_sensitive=e.sensitive,
                 synonyms=tuple(make(mod.DescribeConfigsSynonym, name=n, value=v, source=int(s))
                                for n, v, s in e.synonyms) if synonyms_wanted else (),
                 config_type=int(e.type), documentation=e.doc if docs_wanted else None)
            for e in entries
        )
        results.append(make(mod.DescribeConfigsResult, error_code=ErrorCode.none, error_message="",
                            resource_type=resource.resource_type, resource_name=resource.resource_name,
                            configs=configs))
    return make(mod.DescribeConfigsResponse, throttle_time=0, results=tuple(results + unauthorized))


def _refused(ctx: RequestContext, resource, op: AclOperation) -> ErrorCode | None:
    """The authorisation error for a config resource (Kafka's ConfigHelper / ControllerApis):
    broker, logger and client-metrics resources need `op` on the cluster, topics and groups on
    themselves."""
    if ctx.broker.authorizer is None:
        return None
    rtype = resource.resource_type
    if rtype in (BROKER, BROKER_LOGGER, CLIENT_METRICS):
        return None if allowed_cluster(ctx, op) else ErrorCode.cluster_authorization_failed
    if rtype == TOPIC:
        return None if allowed(ctx, op, ResourceType.TOPIC, resource.resource_name) \
            else ErrorCode.topic_authorization_failed
    if rtype == GROUP:
        return None if allowed(ctx, op, ResourceType.GROUP, resource.resource_name) \
            else ErrorCode.group_authorization_failed
    return None


# --- AlterConfigs ---------------------------------------------------------------------------


def _alter_one(ctx: RequestContext, resource, validate_only: bool) -> None:
    rtype, name = resource.resource_type, resource.resource_name
    if rtype == TOPIC:
        _apply_topic_configs(ctx, name, {c.name: c.value for c in resource.configs}, validate_only)
    elif rtype == BROKER:
        node = _broker_resource_node(ctx, name)
        _replace_broker_configs(ctx, node, {c.name: c.value for c in resource.configs}, validate_only)
    else:
        raise AdminError(ErrorCode.invalid_request, f"Unknown resource type {rtype}")


def _alter_each(ctx: RequestContext, request, *, incremental: bool, alter_one) -> tuple:
    """Both AlterConfigs APIs: check every resource, apply the valid ones, one result each."""
    mod = response_module(ctx)
    errors = _preprocess(request.resources, incremental=incremental)
    results = []
    for i, resource in enumerate(request.resources):
        err = errors.get(i)
        if err is None:
            refused = _refused(ctx, resource, AclOperation.ALTER_CONFIGS)
            if refused is not None:
                err = AdminError(refused, AUTHORIZATION_MESSAGES[refused])
        if err is None:
            try:
                alter_one(ctx, resource, request.validate_only)
            except AdminError as exc:
                err = exc
            except OSError as exc:
                log.error("saving the configs of %s %r failed: %s",
                          RESOURCE_TYPE_NAMES.get(resource.resource_type), resource.resource_name, exc)
                err = AdminError(ErrorCode.kafka_storage_error, storage_error_message(exc))
        results.append(make(mod.AlterConfigsResourceResponse, error_code=err.code if err else ErrorCode.none,
                            error_message=err.message if err else None, resource_type=resource.resource_type,
                            resource_name=resource.resource_name))
    return mod, tuple(results)


@api(33, 0, 2)
async def alter_configs(ctx: RequestContext, request: Any) -> Any:
    mod, results = _alter_each(ctx, request, incremental=False, alter_one=_alter_one)
    return make(mod.AlterConfigsResponse, throttle_time=0, responses=results)


# --- IncrementalAlterConfigs ----------------------------------------------------------------


def _incremental_topic(ctx: RequestContext, resource, validate_only: bool) -> None:
    topic = ctx.cluster.topics.get(resource.resource_name)
    new: dict[str, str | None] = dict(topic.configs) if topic is not None else {}
    _apply_operations(new, resource.configs, is_list_config, topic_config_default,
                      lambda name, op: f"Can't {OP_NAMES[op]} to key {name} because its type is not LIST.")
    _apply_topic_configs(ctx, resource.resource_name, new, validate_only)


def _incremental_broker(ctx: RequestContext, resource, validate_only: bool) -> None:
    """ConfigAdminManager.prepareIncrementalConfigs on the resource's stored set, then validated whole."""
    from ..dynamic_configs import is_list_config as is_dynamic_list_config
    from ..dynamic_configs import kafka_default

    node = _broker_resource_node(ctx, resource.resource_name)
    for c in resource.configs:
        if c.config_operation not in OP_NAMES:
            raise AdminError(ErrorCode.invalid_request, f"Unknown operations type {c.config_operation}")
    props = ctx.broker.dynamic_configs.current(node)
    _apply_operations(props, resource.configs, is_dynamic_list_config, kafka_default,
                      lambda name, op: f"Config value {OP_NAMES[op].lower()} is not allowed for config key: {name}")
    _replace_broker_configs(ctx, node, props, validate_only)


def _incremental_logger(ctx: RequestContext, resource, validate_only: bool) -> None:
    name = resource.resource_name
    try:
        node = int(name)
    except ValueError:
        raise AdminError(ErrorCode.invalid_request, f"Node id must be an integer, but it is: {name}") from None
    if node != ctx.node_id:
        raise AdminError(ErrorCode.invalid_request,
                         f"Unexpected node id. Expected {ctx.node_id}, but received {name}")
    loggers = _broker_loggers()
    for c in resource.configs:
        op = c.config_operation
        if op in (SET, DELETE) and c.name not in loggers:
            raise AdminError(ErrorCode.invalid_config, f"Logger {c.name} does not exist!")
        if op == SET:
            if c.value not in LOG_LEVELS:
                raise AdminError(ErrorCode.invalid_config,
                                 f"Cannot set the log level of {c.name} to {c.value} as it is not a supported log "
                                 "level. Valid log levels are " + ", ".join(LOG_LEVELS))
        elif op == DELETE:
            if c.name == ROOT_LOGGER:
                raise AdminError(ErrorCode.invalid_request,
                                 f"Removing the log level of the {ROOT_LOGGER} logger is not allowed")
        elif op in (APPEND, SUBTRACT):
            raise AdminError(ErrorCode.invalid_request,
                             f"{OP_NAMES[op]} operation is not allowed for the BROKER_LOGGER resource")
        else:
            raise AdminError(ErrorCode.invalid_request,
                             f"Unknown operation type {op} is not allowed for the BROKER_LOGGER resource")
    if validate_only:
        return
    for c in resource.configs:
        if c.config_operation == SET:
            loggers[c.name].setLevel(_python_level(c.value))
            log.warning("Updated the log level of %s to %s", c.name, c.value)
        else:
            loggers[c.name].setLevel(logging.NOTSET)
            log.warning("Unset the log level of %s", c.name)


def _incremental_one(ctx: RequestContext, resource, validate_only: bool) -> None:
    if resource.resource_type == TOPIC:
        _incremental_topic(ctx, resource, validate_only)
    elif resource.resource_type == BROKER:
        _incremental_broker(ctx, resource, validate_only)
    elif resource.resource_type == BROKER_LOGGER:
        _incremental_logger(ctx, resource, validate_only)
    elif resource.resource_type == GROUP:
        _incremental_group(ctx, resource, validate_only)
    elif resource.resource_type == CLIENT_METRICS:
        _incremental_client_metrics(ctx, resource, validate_only)
    else:
        raise AdminError(ErrorCode.invalid_request, f"Unknown resource type {resource.resource_type}")


@api(44, 0, 1)
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> Any:
    mod, results = _alter_each(ctx, request, incremental=True, alter_one=_incremental_one)
    return make(mod.IncrementalAlterConfigsResponse, throttle_time=0, responses=results)
