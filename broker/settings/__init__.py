"""The broker's settings, each kind defined once (a new setting touches one table).

- `values`: Kafka's config types and how a value given as text parses and prints (ConfigDef),
  with the validators the key tables use;
- `broker_keys`: every broker setting (BROKER_KEYS), its parser, default and documentation,
  and the check that a key exists;
- `topic_keys`: every topic config Kafka defines, its default, validator and the broker setting
  it falls back to, and LogConfig.validate;
- `group_keys`: the per-group configs (GROUP_KEYS);
- `describe`: how topic and broker settings are reported (DescribeConfigs, CreateTopics);
- `listeners`: the `listeners` grammar and the `listener.name.<listener>.<key>` keys, the TLS
  throwaway CA's paths;
- `sources`: where values come from besides the command line: Java properties files and
  `KAFKALITE_<KEY>` environment variables;
- `broker_config`: `BrokerConfig`, the settings one broker runs with;
- `layering`: the precedence defaults < file < env < CLI.
"""
