package main

// The admin operations of compat_tests/clients/admin.py through franz-go: kadm where it has the
// call, kmsg requests (which kgo routes to the right broker) where kadm has none (by topic id,
// ListOffsets with an isolation level, DescribeConfigs with read-only flags). Broker errors come
// back with their Kafka name in "code".

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// AdminArgs are the arguments of one admin operation.
type AdminArgs struct {
	Names        []string          `json:"names"`
	Name         string            `json:"name"`
	Kind         string            `json:"kind"`
	IDs          []string          `json:"ids"`
	Partitions   *int32            `json:"partitions"`
	RF           *int16            `json:"replication_factor"`
	Configs      map[string]string `json:"configs"`
	ValidateOnly bool              `json:"validate_only"`
	Ops          [][3]*string      `json:"ops"`
	Total        int               `json:"total"`
	Parts        []int32           `json:"parts"`
	Spec         json.RawMessage   `json:"spec"`
	Isolation    string            `json:"isolation"`
	Before       map[string]int64  `json:"before"`
}

func topicIDString(id [16]byte) string { return base64.RawURLEncoding.EncodeToString(id[:]) }

func parseTopicID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != 16 {
		return id, fmt.Errorf("bad topic id %q", s)
	}
	copy(id[:], b)
	return id, nil
}

// eachTopicID parses every id of a request and hands it to add (which puts it in the request
// being built), or fails on the first bad one.
func eachTopicID(ids []string, add func(id [16]byte)) error {
	for _, s := range ids {
		id, err := parseTopicID(s)
		if err != nil {
			return err
		}
		add(id)
	}
	return nil
}

// listOffsetsTimestamp is the ListOffsets timestamp a request's spec names: "earliest" (-2),
// "latest" (-1), "max_timestamp" (-3) or a timestamp in milliseconds.
func listOffsetsTimestamp(raw json.RawMessage) (int64, error) {
	var spec any
	if err := json.Unmarshal(raw, &spec); err != nil {
		return 0, err
	}
	switch s := spec.(type) {
	case string:
		ts, ok := map[string]int64{"earliest": -2, "latest": -1, "max_timestamp": -3}[s]
		if !ok {
			return 0, fmt.Errorf("bad spec %q", s)
		}
		return ts, nil
	case float64:
		return int64(s), nil
	}
	return 0, fmt.Errorf("bad spec %s", raw)
}

func codeErr(code int16, msg *string) error {
	if err := kerr.ErrorForCode(code); err != nil {
		if msg != nil && *msg != "" {
			return fmt.Errorf("%w: %s", err, *msg)
		}
		return err
	}
	return nil
}

func (franzDriver) admin(r *Request) (any, error) {
	cl, err := kgo.NewClient(franzOpts(r)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	a := r.Args
	switch r.Op {
	case "create_topic":
		n, rf := int32(-1), int16(-1)
		if a.Partitions != nil {
			n = *a.Partitions
		}
		if a.RF != nil {
			rf = *a.RF
		}
		configs := map[string]*string{}
		for k, v := range a.Configs {
			configs[k] = kadm.StringPtr(v)
		}
		create := adm.CreateTopics
		if a.ValidateOnly {
			create = adm.ValidateCreateTopics
		}
		resp, err := create(ctx, n, rf, configs, a.Name)
		if err != nil {
			return nil, err
		}
		t := resp[a.Name]
		if t.Err != nil {
			return nil, fmt.Errorf("%w: %s", t.Err, t.ErrMessage)
		}
		out := map[string]any{"partitions": t.NumPartitions, "topic_id": topicIDString(t.ID)}
		cfg := map[string]any{}
		for k, c := range t.Configs {
			cfg[k] = c.Value
		}
		out["configs"] = cfg
		return out, nil
	case "delete_topics":
		resp, err := adm.DeleteTopics(ctx, a.Names...)
		if err != nil {
			return nil, err
		}
		for _, name := range a.Names {
			if t := resp[name]; t.Err != nil {
				return nil, t.Err
			}
		}
		return true, nil
	case "delete_topics_by_id":
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.TimeoutMillis = 20000
		if err := eachTopicID(a.IDs, func(id [16]byte) {
			t := kmsg.NewDeleteTopicsRequestTopic()
			t.TopicID = id
			req.Topics = append(req.Topics, t)
		}); err != nil {
			return nil, err
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		for _, t := range resp.Topics {
			if err := codeErr(t.ErrorCode, t.ErrorMessage); err != nil {
				return nil, err
			}
		}
		return true, nil
	case "list_topics":
		ts, err := adm.ListTopics(ctx)
		if err != nil {
			return nil, err
		}
		return ts.Names(), nil
	case "describe_topics", "describe_topics_by_id":
		req := kmsg.NewPtrMetadataRequest()
		if r.Op == "describe_topics" {
			for _, n := range a.Names {
				t := kmsg.NewMetadataRequestTopic()
				t.Topic = kmsg.StringPtr(n)
				req.Topics = append(req.Topics, t)
			}
		} else {
			if err := eachTopicID(a.IDs, func(id [16]byte) {
				t := kmsg.NewMetadataRequestTopic()
				t.TopicID = id
				req.Topics = append(req.Topics, t)
			}); err != nil {
				return nil, err
			}
		}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, t := range resp.Topics {
			if err := codeErr(t.ErrorCode, nil); err != nil {
				return nil, err
			}
			ps := append([]kmsg.MetadataResponseTopicPartition(nil), t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i].Partition < ps[j].Partition })
			ids, leaders := []int32{}, []int32{}
			for _, p := range ps {
				ids = append(ids, p.Partition)
				leaders = append(leaders, p.Leader)
			}
			name := ""
			if t.Topic != nil {
				name = *t.Topic // by id too: the answer names the topic
			}
			out[name] = map[string]any{"topic_id": topicIDString(t.TopicID), "partitions": ids, "leaders": leaders,
				"name": t.Topic}
		}
		return out, nil
	case "describe_cluster":
		md, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return nil, err
		}
		nodes := []map[string]any{}
		for _, b := range md.Brokers {
			nodes = append(nodes, map[string]any{"id": b.NodeID, "host": b.Host, "port": b.Port})
		}
		return map[string]any{"cluster_id": md.Cluster, "controller": md.Controller, "nodes": nodes}, nil
	case "describe_configs":
		req := kmsg.NewPtrDescribeConfigsRequest()
		res := kmsg.NewDescribeConfigsRequestResource()
		res.ResourceType, res.ResourceName = resourceType(a.Kind), a.Name
		req.Resources = append(req.Resources, res)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, rr := range resp.Resources {
			if err := codeErr(rr.ErrorCode, rr.ErrorMessage); err != nil {
				return nil, err
			}
			for _, c := range rr.Configs {
				out[c.Name] = map[string]any{"value": c.Value, "source": c.Source.String(),
					"is_default": c.Source == kmsg.ConfigSourceDefaultConfig, "read_only": c.ReadOnly}
			}
		}
		return out, nil
	case "alter_configs", "incremental_alter_configs":
		var alters []kadm.AlterConfig
		if r.Op == "alter_configs" {
			for k, v := range a.Configs {
				alters = append(alters, kadm.AlterConfig{Name: k, Value: kadm.StringPtr(v)})
			}
		} else {
			ops := map[string]kadm.IncrementalOp{"SET": kadm.SetConfig, "DELETE": kadm.DeleteConfig,
				"APPEND": kadm.AppendConfig, "SUBTRACT": kadm.SubtractConfig}
			for _, o := range a.Ops {
				op, ok := ops[*o[0]]
				if !ok {
					return nil, fmt.Errorf("bad op %s", *o[0])
				}
				alters = append(alters, kadm.AlterConfig{Op: op, Name: *o[1], Value: o[2]})
			}
		}
		var resp kadm.AlterConfigsResponses
		switch {
		case a.Kind == "broker":
			id, err := strconv.Atoi(a.Name)
			if err != nil {
				return nil, err
			}
			if r.Op == "alter_configs" {
				resp, err = adm.AlterBrokerConfigsState(ctx, alters, int32(id))
			} else {
				resp, err = adm.AlterBrokerConfigs(ctx, alters, int32(id))
			}
			if err != nil {
				return nil, err
			}
		case r.Op == "alter_configs":
			resp, err = adm.AlterTopicConfigsState(ctx, alters, a.Name)
		case a.ValidateOnly:
			resp, err = adm.ValidateAlterTopicConfigs(ctx, alters, a.Name)
		default:
			resp, err = adm.AlterTopicConfigs(ctx, alters, a.Name)
		}
		if err != nil {
			return nil, err
		}
		for _, rr := range resp {
			if rr.Err != nil {
				return nil, fmt.Errorf("%w: %s", rr.Err, rr.ErrMessage)
			}
		}
		return true, nil
	case "create_partitions":
		update := adm.UpdatePartitions
		if a.ValidateOnly {
			update = adm.ValidateUpdatePartitions
		}
		resp, err := update(ctx, a.Total, a.Name)
		if err != nil {
			return nil, err
		}
		for _, rr := range resp {
			if rr.Err != nil {
				return nil, fmt.Errorf("%w: %s", rr.Err, rr.ErrMessage)
			}
		}
		return true, nil
	case "list_offsets":
		ts, err := listOffsetsTimestamp(a.Spec)
		if err != nil {
			return nil, err
		}
		req := kmsg.NewPtrListOffsetsRequest()
		req.ReplicaID = -1
		if a.Isolation == "read_committed" {
			req.IsolationLevel = 1
		}
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = a.Name
		for _, p := range a.Parts {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			return nil, err
		}
		out := map[string][2]int64{}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := codeErr(rp.ErrorCode, nil); err != nil {
					return nil, err
				}
				out[fmt.Sprint(rp.Partition)] = [2]int64{rp.Offset, rp.Timestamp}
			}
		}
		return out, nil
	case "delete_records":
		os := kadm.Offsets{}
		for p, o := range a.Before {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, err
			}
			os.AddOffset(a.Name, int32(n), o, -1)
		}
		resp, err := adm.DeleteRecords(ctx, os)
		if err != nil {
			return nil, err
		}
		out := map[string]int64{}
		for _, ps := range resp {
			for p, rr := range ps {
				if rr.Err != nil {
					return nil, rr.Err
				}
				out[fmt.Sprint(p)] = rr.LowWatermark
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown admin op %s", r.Op)
}

func resourceType(kind string) kmsg.ConfigResourceType {
	if kind == "broker" {
		return kmsg.ConfigResourceTypeBroker
	}
	return kmsg.ConfigResourceTypeTopic
}
