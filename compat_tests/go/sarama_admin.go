package main

// The admin operations of compat_tests/clients/admin.py through sarama's ClusterAdmin, and its
// Client/Broker for ListOffsets (a raw OffsetRequest, so that the isolation level can be set).
// sarama has no by-id topic calls, and its CreateTopic returns no answer.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/IBM/sarama"
)

func (saramaDriver) admin(r *Request) (any, error) {
	c := saramaConfig()
	c.Metadata.AllowAutoTopicCreation = false // an admin looks topics up, it does not create them
	client, err := sarama.NewClient([]string{r.Bootstrap}, c)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	adm, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	a := r.Args
	switch r.Op {
	case "create_topic":
		d := &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1, ConfigEntries: map[string]*string{}}
		if a.Partitions != nil {
			d.NumPartitions = *a.Partitions
		}
		if a.RF != nil {
			d.ReplicationFactor = *a.RF
		}
		for k, v := range a.Configs {
			v := v
			d.ConfigEntries[k] = &v
		}
		if err := adm.CreateTopic(a.Name, d, a.ValidateOnly); err != nil {
			return nil, err
		}
		return map[string]any{"partitions": nil, "topic_id": nil}, nil
	case "delete_topics":
		for _, n := range a.Names {
			if err := adm.DeleteTopic(n); err != nil {
				return nil, err
			}
		}
		return true, nil
	case "delete_topics_by_id", "describe_topics_by_id":
		return nil, unsupported{"sarama: " + r.Op}
	case "list_topics":
		ts, err := adm.ListTopics()
		if err != nil {
			return nil, err
		}
		names := []string{}
		for n := range ts {
			names = append(names, n)
		}
		return names, nil
	case "describe_topics":
		md, err := adm.DescribeTopics(a.Names)
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, t := range md {
			if t.Err != sarama.ErrNoError {
				return nil, t.Err
			}
			ps := append([]*sarama.PartitionMetadata(nil), t.Partitions...)
			sort.Slice(ps, func(i, j int) bool { return ps[i].ID < ps[j].ID })
			ids, leaders := []int32{}, []int32{}
			for _, p := range ps {
				ids = append(ids, p.ID)
				leaders = append(leaders, p.Leader)
			}
			out[t.Name] = map[string]any{"topic_id": topicIDString(t.Uuid), "partitions": ids, "leaders": leaders}
		}
		return out, nil
	case "describe_cluster":
		brokers, controller, err := adm.DescribeCluster()
		if err != nil {
			return nil, err
		}
		nodes := []map[string]any{}
		for _, b := range brokers {
			host, port, err := splitHostPort(b.Addr())
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, map[string]any{"id": b.ID(), "host": host, "port": port})
		}
		// DescribeCluster drops the cluster id: a Metadata request of our own has it
		b, err := client.Controller()
		if err != nil {
			return nil, err
		}
		md, err := b.GetMetadata(&sarama.MetadataRequest{Version: 10})
		if err != nil {
			return nil, err
		}
		return map[string]any{"cluster_id": md.ClusterID, "controller": controller, "nodes": nodes}, nil
	case "describe_configs":
		entries, err := adm.DescribeConfig(sarama.ConfigResource{Type: saramaResource(a.Kind), Name: a.Name})
		if err != nil {
			return nil, err
		}
		out := map[string]any{}
		for _, e := range entries {
			var v *string
			if !e.Sensitive {
				v = &e.Value
			}
			out[e.Name] = map[string]any{"value": v, "source": configSourceName(e.Source),
				"is_default": e.Default || e.Source == sarama.SourceDefault, "read_only": e.ReadOnly}
		}
		return out, nil
	case "alter_configs":
		entries := map[string]*string{}
		for k, v := range a.Configs {
			v := v
			entries[k] = &v
		}
		return true, adm.AlterConfig(saramaResource(a.Kind), a.Name, entries, false)
	case "incremental_alter_configs":
		ops := map[string]sarama.IncrementalAlterConfigsOperation{"SET": sarama.IncrementalAlterConfigsOperationSet,
			"DELETE": sarama.IncrementalAlterConfigsOperationDelete, "APPEND": sarama.IncrementalAlterConfigsOperationAppend,
			"SUBTRACT": sarama.IncrementalAlterConfigsOperationSubtract}
		entries := map[string]sarama.IncrementalAlterConfigsEntry{}
		for _, o := range a.Ops {
			op, ok := ops[*o[0]]
			if !ok {
				return nil, fmt.Errorf("bad op %s", *o[0])
			}
			entries[*o[1]] = sarama.IncrementalAlterConfigsEntry{Operation: op, Value: o[2]}
		}
		return true, adm.IncrementalAlterConfig(saramaResource(a.Kind), a.Name, entries, a.ValidateOnly)
	case "create_partitions":
		return true, adm.CreatePartitions(a.Name, int32(a.Total), nil, a.ValidateOnly)
	case "list_offsets":
		ts, err := listOffsetsTimestamp(a.Spec)
		if err != nil {
			return nil, err
		}
		out := map[string][2]int64{}
		for _, p := range a.Parts {
			leader, err := client.Leader(a.Name, p)
			if err != nil {
				return nil, err
			}
			req := &sarama.OffsetRequest{Version: 7}
			if a.Isolation == "read_committed" {
				req.IsolationLevel = sarama.ReadCommitted
			}
			req.AddBlock(a.Name, p, ts, 1)
			resp, err := leader.GetAvailableOffsets(req)
			if err != nil {
				return nil, err
			}
			block := resp.GetBlock(a.Name, p)
			if block == nil {
				return nil, fmt.Errorf("no ListOffsets answer for %s[%d]", a.Name, p)
			}
			if block.Err != sarama.ErrNoError {
				return nil, block.Err
			}
			out[fmt.Sprint(p)] = [2]int64{block.Offset, block.Timestamp}
		}
		return out, nil
	case "delete_records":
		before := map[int32]int64{}
		for p, o := range a.Before {
			n, err := strconv.Atoi(p)
			if err != nil {
				return nil, err
			}
			before[int32(n)] = o
		}
		if err := adm.DeleteRecords(a.Name, before); err != nil {
			return nil, unwrapSaramaErr(err)
		}
		// sarama's DeleteRecords returns no low watermarks: read them back
		out := map[string]int64{}
		for p := range before {
			low, err := client.GetOffset(a.Name, p, sarama.OffsetOldest)
			if err != nil {
				return nil, err
			}
			out[fmt.Sprint(p)] = low
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown admin op %s", r.Op)
}

func unwrapSaramaErr(err error) error {
	var ke sarama.KError
	if errors.As(err, &ke) {
		return ke
	}
	return err
}

func saramaResource(kind string) sarama.ConfigResourceType {
	if kind == "broker" {
		return sarama.BrokerResource
	}
	return sarama.TopicResource
}

func configSourceName(s sarama.ConfigSource) string {
	return map[sarama.ConfigSource]string{
		sarama.SourceTopic: "DYNAMIC_TOPIC_CONFIG", sarama.SourceDynamicBroker: "DYNAMIC_BROKER_CONFIG",
		sarama.SourceDynamicDefaultBroker: "DYNAMIC_DEFAULT_BROKER_CONFIG", sarama.SourceStaticBroker: "STATIC_BROKER_CONFIG",
		sarama.SourceDefault: "DEFAULT_CONFIG",
	}[s]
}

func splitHostPort(addr string) (string, int, error) {
	for i := len(addr) - 1; i >= 0; i-- {
		if addr[i] == ':' {
			port, err := strconv.Atoi(addr[i+1:])
			return addr[:i], port, err
		}
	}
	return "", 0, fmt.Errorf("bad address %q", addr)
}
