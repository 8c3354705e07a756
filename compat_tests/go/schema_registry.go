// The schema-registry mode: franz-go's pkg/sr against a Confluent-compatible registry.
//
//	godriver franz schema-registry '{"url": "http://HOST:PORT/", "subject": "S", "bootstrap": "HOST:PORT"}'
//
// registers an Avro schema, reads it back by id, by version and by lookup, checks and registers
// an incompatible one (expects HTTP 409), sets and reads the subject's compatibility, registers a
// Protobuf schema, produces a record framed with sr.ConfluentHeader and reads the id back from
// the consumed record, then soft- and hard-deletes the subject. It prints one JSON line of what
// it saw: {"ok": true, "result": {...}} or {"ok": false, "error": {...}}.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sr"
)

type registryConfig struct {
	URL       string `json:"url"`
	Subject   string `json:"subject"`
	Bootstrap string `json:"bootstrap"`
}

const avroV1 = `{"type":"record","name":"Reading","fields":[{"name":"value","type":"double"}]}`
const avroV2 = `{"type":"record","name":"Reading","fields":[{"name":"value","type":"double"},{"name":"unit","type":"string","default":"C"}]}`
const avroBad = `{"type":"record","name":"Reading","fields":[{"name":"value","type":"string"}]}`
const protoText = "syntax = \"proto3\";\nmessage Reading {\n  double value = 1;\n}\n"

func runSchemaRegistry(raw string) int {
	var cfg registryConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		reply(map[string]any{"ok": false, "error": errorJSON(err)})
		return 2
	}
	result, err := registryScenario(cfg)
	if err != nil {
		reply(map[string]any{"ok": false, "error": errorJSON(err)})
		return 1
	}
	reply(map[string]any{"ok": true, "result": result})
	return 0
}

func registryScenario(cfg registryConfig) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cl, err := sr.NewClient(sr.URLs(cfg.URL))
	if err != nil {
		return nil, err
	}
	out := map[string]any{}
	types, err := cl.SupportedTypes(ctx)
	if err != nil {
		return nil, fmt.Errorf("types: %w", err)
	}
	var typeNames []string
	for _, t := range types {
		typeNames = append(typeNames, t.String())
	}
	out["types"] = typeNames
	v1, err := cl.CreateSchema(ctx, cfg.Subject, sr.Schema{Schema: avroV1})
	if err != nil {
		return nil, fmt.Errorf("create v1: %w", err)
	}
	out["v1"] = map[string]any{"id": v1.ID, "version": v1.Version, "subject": v1.Subject}
	byID, err := cl.SchemaByID(ctx, v1.ID)
	if err != nil {
		return nil, fmt.Errorf("by id: %w", err)
	}
	out["by_id"] = byID.Schema
	v2, err := cl.CreateSchema(ctx, cfg.Subject, sr.Schema{Schema: avroV2})
	if err != nil {
		return nil, fmt.Errorf("create v2: %w", err)
	}
	out["v2"] = map[string]any{"id": v2.ID, "version": v2.Version}
	latest, err := cl.SchemaByVersion(ctx, cfg.Subject, -1)
	if err != nil {
		return nil, fmt.Errorf("latest: %w", err)
	}
	out["latest_version"] = latest.Version
	found, err := cl.LookupSchema(ctx, cfg.Subject, sr.Schema{Schema: avroV1})
	if err != nil {
		return nil, fmt.Errorf("lookup: %w", err)
	}
	out["lookup_version"] = found.Version
	check, err := cl.CheckCompatibility(ctx, cfg.Subject, -1, sr.Schema{Schema: avroBad})
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	out["bad_is_compatible"] = check.Is
	_, err = cl.CreateSchema(ctx, cfg.Subject, sr.Schema{Schema: avroBad})
	var re *sr.ResponseError
	if !errors.As(err, &re) {
		return nil, fmt.Errorf("registering an incompatible schema: want a ResponseError, got %v", err)
	}
	out["bad_status"] = re.StatusCode
	set := cl.SetCompatibility(ctx, sr.SetCompatibility{Level: sr.CompatFull}, cfg.Subject)
	if set[0].Err != nil {
		return nil, fmt.Errorf("set compatibility: %w", set[0].Err)
	}
	got := cl.Compatibility(ctx, cfg.Subject)
	if got[0].Err != nil {
		return nil, fmt.Errorf("compatibility: %w", got[0].Err)
	}
	out["compatibility"] = got[0].Level.String()
	versions, err := cl.SubjectVersions(ctx, cfg.Subject)
	if err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	out["versions"] = versions
	proto, err := cl.CreateSchema(ctx, cfg.Subject+"-proto", sr.Schema{Schema: protoText, Type: sr.TypeProtobuf})
	if err != nil {
		return nil, fmt.Errorf("create protobuf: %w", err)
	}
	out["proto"] = map[string]any{"id": proto.ID, "type": proto.Type.String(), "schema": proto.Schema.Schema}
	if cfg.Bootstrap != "" {
		id, err := produceFramed(ctx, cfg, v2.ID)
		if err != nil {
			return nil, err
		}
		out["consumed_id"] = id
	}
	soft, err := cl.DeleteSubject(ctx, cfg.Subject, sr.SoftDelete)
	if err != nil {
		return nil, fmt.Errorf("soft delete: %w", err)
	}
	hard, err := cl.DeleteSubject(ctx, cfg.Subject, sr.HardDelete)
	if err != nil {
		return nil, fmt.Errorf("hard delete: %w", err)
	}
	out["deleted"] = map[string]any{"soft": soft, "hard": hard}
	subjects, err := cl.Subjects(ctx)
	if err != nil {
		return nil, fmt.Errorf("subjects: %w", err)
	}
	out["subjects"] = subjects
	return out, nil
}

// produceFramed writes one record framed as Confluent's serializers frame it (magic byte, id)
// and reads the id back from the consumed record.
func produceFramed(ctx context.Context, cfg registryConfig, id int) (int, error) {
	topic := cfg.Subject + "-topic"
	var header sr.ConfluentHeader
	value, err := header.AppendEncode(nil, id, nil)
	if err != nil {
		return 0, err
	}
	value = append(value, []byte{0x01, 0x02}...)
	cl, err := kgo.NewClient(kgo.SeedBrokers(cfg.Bootstrap), kgo.AllowAutoTopicCreation(),
		kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: value}).FirstErr(); err != nil {
		return 0, fmt.Errorf("produce: %w", err)
	}
	for {
		fetches := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return 0, fmt.Errorf("consume: %w", err)
		}
		for _, r := range fetches.Records() {
			got, _, err := header.DecodeID(r.Value)
			return got, err
		}
	}
}
