// Command godriver drives two Go Kafka clients for the compatibility suite: franz-go (kgo,
// kadm) and IBM sarama.
//
//	godriver CLIENT < request.json > reply.json     (CLIENT is franz or sarama)
//	godriver CLIENT member '<json config>'          (a consumer-group member, see member.go)
//	godriver franz share-member '<json config>'     (a share consumer, see share_member.go)
//	godriver franz schema-registry '<json config>'  (pkg/sr against a schema registry, see schema_registry.go)
//	godriver franz ctp-worker < setup, "go" lines   (a consume-transform-produce worker, see ctp_worker.go)
//
// A request is one JSON object {cmd, bootstrap, ...}: cmd is create_topic, produce, consume,
// plan, fence, time_out, copy or admin (op and args: franz_admin.go, sarama_admin.go). The reply is one JSON line {"ok": true, "result": ...} or
// {"ok": false, "error": {"name", "message", "code"?}}; "code" is Kafka's error name
// (PRODUCER_FENCED, ...) when the client surfaced a Kafka error code. Bytes travel as base64
// (encoding/json's form of []byte), absent values as null. GODRIVER_DEBUG=1 logs to stderr.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Msg is a record as produced or consumed.
type Msg struct {
	Key       []byte     `json:"key"`
	Value     []byte     `json:"value"`
	Headers   [][2]any   `json:"headers"`
	Timestamp *int64     `json:"timestamp"`
	Partition *int32     `json:"partition"`
	Offset    int64      `json:"offset"`
	headers   []headerKV // decoded Headers
}

// targetPartition is the partition a record goes to: its own, else the request's; ok is false
// when neither names one (the client's partitioner chooses).
func (m Msg) targetPartition(partition *int32) (int32, bool) {
	if m.Partition != nil {
		return *m.Partition, true
	}
	if partition != nil {
		return *partition, true
	}
	return 0, false
}

type headerKV struct {
	Key   string
	Value []byte
}

// Security: TLS trusting the CA in the PEM file CA (when set) and a SASL login (franz-go only).
type Security struct {
	CA        string `json:"ca"`
	Mechanism string `json:"mechanism"`
	User      string `json:"user"`
	Password  string `json:"password"`
}

// Request is the union of every command's fields.
type Request struct {
	Cmd         string            `json:"cmd"`
	Bootstrap   string            `json:"bootstrap"`
	Security    *Security         `json:"security"`
	Topic       string            `json:"topic"`
	Partitions  json.RawMessage   `json:"partitions"`
	Configs     map[string]string `json:"configs"`
	NumParts    int32             `json:"num_partitions"`
	Partition   *int32            `json:"partition"`
	Compression string            `json:"compression"`
	Idempotent  bool              `json:"idempotent"`
	Acks        string            `json:"acks"`
	Messages    []Msg             `json:"messages"`
	Count       int               `json:"count"`
	Start       json.RawMessage   `json:"start"`
	Isolation   string            `json:"isolation"`
	TimeoutMs   int               `json:"timeoutMs"`

	TransactionalID string    `json:"transactional_id"`
	Txns            []Txn     `json:"txns"`
	TxnTimeoutMs    int       `json:"timeout_ms"`
	Until           string    `json:"until"`
	Op              string    `json:"op"`
	Batch           int       `json:"batch"`
	SessionMs       int       `json:"session_timeout_ms"`
	Progress        bool      `json:"progress"`
	Args            AdminArgs `json:"args"`
	Group           string    `json:"group"`
	Source          string    `json:"source"`
	Sink            string    `json:"sink"`
}

// Txn is one transaction of a plan: records [topic, partition, value] and its end.
type Txn struct {
	Records [][3]any `json:"records"`
	End     string   `json:"end"`
}

// waitForPath blocks until the file exists: the test creates it once the condition it watches
// from outside (the broker aborted a transaction) holds.
func waitForPath(path string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not appear within 60s", path)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// unsupported is a thing the client has no API for; the adapter turns it into Unsupported.
type unsupported struct{ msg string }

func (u unsupported) Error() string { return u.msg }

func debugf(format string, args ...any) {
	if os.Getenv("GODRIVER_DEBUG") != "" {
		fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
	}
}

func (r *Request) timeout() time.Duration {
	if r.TimeoutMs <= 0 {
		return 30 * time.Second
	}
	return time.Duration(r.TimeoutMs) * time.Millisecond
}

func (r *Request) partitionList() ([]int32, error) {
	var ps []int32
	if len(r.Partitions) == 0 {
		return nil, nil
	}
	err := json.Unmarshal(r.Partitions, &ps)
	return ps, err
}

// consumeStarts is the partitions a consume request names and the offset each starts at.
func (r *Request) consumeStarts() ([]int32, map[int32]int64, error) {
	parts, err := r.partitionList()
	if err != nil {
		return nil, nil, err
	}
	starts, err := r.startOffsets(parts)
	return parts, starts, err
}

// startOffsets decodes "earliest", "latest", an offset or {"partition": offset}: -2 earliest,
// -1 latest (Kafka's ListOffsets sentinels).
func (r *Request) startOffsets(partitions []int32) (map[int32]int64, error) {
	out := map[int32]int64{}
	var s string
	if err := json.Unmarshal(r.Start, &s); err == nil {
		v := int64(-2)
		switch s {
		case "earliest":
		case "latest":
			v = -1
		default:
			return nil, fmt.Errorf("bad start %q", s)
		}
		for _, p := range partitions {
			out[p] = v
		}
		return out, nil
	}
	var n int64
	if err := json.Unmarshal(r.Start, &n); err == nil {
		for _, p := range partitions {
			out[p] = n
		}
		return out, nil
	}
	var m map[string]int64
	if err := json.Unmarshal(r.Start, &m); err != nil {
		return nil, fmt.Errorf("bad start %s", r.Start)
	}
	for _, p := range partitions {
		v, ok := m[fmt.Sprint(p)]
		if !ok {
			return nil, fmt.Errorf("no start offset for partition %d", p)
		}
		out[p] = v
	}
	return out, nil
}

func decodeHeaders(msgs []Msg) error {
	for i := range msgs {
		for _, h := range msgs[i].Headers {
			k, ok := h[0].(string)
			if !ok {
				return fmt.Errorf("header key %v", h[0])
			}
			var v []byte
			if h[1] != nil {
				s, ok := h[1].(string)
				if !ok {
					return fmt.Errorf("header value %v", h[1])
				}
				b, err := decodeB64(s)
				if err != nil {
					return err
				}
				v = b
			}
			msgs[i].headers = append(msgs[i].headers, headerKV{k, v})
		}
	}
	return nil
}

func decodeB64(s string) ([]byte, error) {
	var b []byte
	err := json.Unmarshal([]byte(`"`+s+`"`), &b)
	if b == nil {
		b = []byte{}
	}
	return b, err
}

// outMsg is a consumed record in the reply's form.
type outMsg struct {
	Partition int32    `json:"partition"`
	Offset    int64    `json:"offset"`
	Timestamp int64    `json:"timestamp"`
	Key       []byte   `json:"key"`
	Value     []byte   `json:"value"`
	Headers   [][2]any `json:"headers"`
}

func headersOut(hs []headerKV) [][2]any {
	out := make([][2]any, 0, len(hs))
	for _, h := range hs {
		if h.Value == nil {
			out = append(out, [2]any{h.Key, nil})
		} else {
			out = append(out, [2]any{h.Key, h.Value})
		}
	}
	return out
}

type produced struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// errorCode is Kafka's name for the error code the client surfaced, or "".
func errorCode(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Message
	}
	var se sarama.KError
	if errors.As(err, &se) {
		if e, ok := kerr.ErrorForCode(int16(se)).(*kerr.Error); ok {
			return e.Message
		}
	}
	return ""
}

func errorJSON(err error) map[string]any {
	out := map[string]any{"name": fmt.Sprintf("%T", err), "message": err.Error()}
	var u unsupported
	if errors.As(err, &u) {
		out["unsupported"] = true
	}
	if c := errorCode(err); c != "" {
		out["code"] = c
	}
	return out
}

func reply(v map[string]any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]any{"ok": false, "error": map[string]any{"name": "encode", "message": err.Error()}})
	}
	os.Stdout.Write(append(b, '\n'))
}

type driver interface {
	createTopic(r *Request) (any, error)
	produce(r *Request) (any, error)
	consume(r *Request) (any, error)
	plan(r *Request) (any, error)
	fence(r *Request) (any, error)
	timeOut(r *Request) (any, error)
	copy(r *Request) (any, error)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: godriver franz|sarama [member CONFIG]")
		os.Exit(2)
	}
	client := os.Args[1]
	if client == "sarama" && os.Getenv("GODRIVER_DEBUG") != "" {
		sarama.Logger = saramaLogger{}
	}
	if len(os.Args) >= 4 && os.Args[2] == "member" {
		os.Exit(runMember(client, os.Args[3]))
	}
	if len(os.Args) >= 4 && os.Args[2] == "share-member" && client == "franz" {
		os.Exit(runShareMember(os.Args[3]))
	}
	if len(os.Args) >= 3 && os.Args[2] == "ctp-worker" && client == "franz" {
		os.Exit(runCtpWorker())
	}
	if len(os.Args) >= 4 && os.Args[2] == "schema-registry" && client == "franz" {
		os.Exit(runSchemaRegistry(os.Args[3]))
	}
	var d driver
	switch client {
	case "franz":
		d = franzDriver{}
	case "sarama":
		d = saramaDriver{}
	default:
		fmt.Fprintln(os.Stderr, "unknown client", client)
		os.Exit(2)
	}
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		reply(map[string]any{"ok": false, "error": errorJSON(err)})
		return
	}
	var req Request
	if err := json.Unmarshal(raw, &req); err != nil {
		reply(map[string]any{"ok": false, "error": errorJSON(err)})
		return
	}
	if err := decodeHeaders(req.Messages); err != nil {
		reply(map[string]any{"ok": false, "error": errorJSON(err)})
		return
	}
	// A hard limit, so that a stuck client answers instead of hanging the test.
	hard := req.timeout() + 20*time.Second
	go func() {
		time.Sleep(hard)
		reply(map[string]any{"ok": false, "error": map[string]any{"name": "DriverTimeout",
			"message": fmt.Sprintf("%s %s: no answer within %s", client, req.Cmd, hard)}})
		os.Exit(1)
	}()
	commands := map[string]func(*Request) (any, error){
		"create_topic": d.createTopic, "produce": d.produce, "consume": d.consume,
		"plan": d.plan, "fence": d.fence, "time_out": d.timeOut, "copy": d.copy,
	}
	switch drv := d.(type) {
	case franzDriver:
		commands["admin"] = drv.admin
	case saramaDriver:
		commands["admin"] = drv.admin
	}
	cmd, ok := commands[req.Cmd]
	if !ok {
		reply(map[string]any{"ok": false, "error": map[string]any{"name": "BadRequest", "message": "unknown cmd " + req.Cmd}})
		return
	}
	result, err := cmd(&req)
	if err != nil {
		reply(map[string]any{"ok": false, "error": errorJSON(err)})
		return
	}
	reply(map[string]any{"ok": true, "result": result})
}

type saramaLogger struct{}

func (saramaLogger) Print(v ...any)                 { debugf("%s", strings.TrimSpace(fmt.Sprint(v...))) }
func (saramaLogger) Printf(format string, v ...any) { debugf(strings.TrimSpace(format), v...) }
func (saramaLogger) Println(v ...any)               { debugf("%s", strings.TrimSpace(fmt.Sprint(v...))) }
