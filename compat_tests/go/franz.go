package main

// franz-go (kgo, kadm): produce with kgo's batching and idempotence (on by default, so a plain
// produce turns it off), consume by direct assignment (ConsumePartitions), admin through kadm,
// transactions through kgo's transactional client and GroupTransactSession.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

type franzDriver struct{}

type franzLog struct{}

func (franzLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (franzLog) Log(level kgo.LogLevel, msg string, kv ...any) {
	debugf("franz %s %s %v", level, msg, kv)
}

// franzOpts are every client's options: loopback seed, quick metadata refresh, the debug log.
func franzOpts(r *Request, extra ...kgo.Opt) []kgo.Opt {
	opts := []kgo.Opt{
		kgo.SeedBrokers(r.Bootstrap),
		kgo.ClientID("kafkalite-compat-franz"),
		kgo.MetadataMinAge(100 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	if os.Getenv("GODRIVER_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(franzLog{}))
	}
	opts = append(opts, franzSecurity(r.Security)...)
	return append(opts, extra...)
}

// franzSecurity: TLS dialing that trusts the request's CA, and its SASL mechanism.
func franzSecurity(s *Security) []kgo.Opt {
	if s == nil {
		return nil
	}
	var opts []kgo.Opt
	if s.CA != "" {
		pem, err := os.ReadFile(s.CA)
		if err != nil {
			panic(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		opts = append(opts, kgo.DialTLSConfig(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}))
	}
	switch s.Mechanism {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.User, Pass: s.Password}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.User, Pass: s.Password}.AsSha512Mechanism()))
	}
	return opts
}

var franzCodecs = map[string]kgo.CompressionCodec{
	"none": kgo.NoCompression(), "gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
	"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
}

func (franzDriver) createTopic(r *Request) (any, error) {
	cl, err := kgo.NewClient(franzOpts(r)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	n := r.NumParts
	configs := map[string]*string{}
	for k, v := range r.Configs {
		configs[k] = kadm.StringPtr(v)
	}
	resp, err := kadm.NewClient(cl).CreateTopics(ctx, n, 1, configs, r.Topic)
	if err != nil {
		return nil, err
	}
	t, ok := resp[r.Topic]
	if !ok {
		return nil, fmt.Errorf("CreateTopics answered without topic %s", r.Topic)
	}
	if t.Err != nil {
		return nil, t.Err
	}
	return map[string]any{"partitions": t.NumPartitions, "topic_id": fmt.Sprintf("%x", t.ID[:])}, nil
}

func toFranzRecord(topic string, m Msg, partition *int32) *kgo.Record {
	rec := &kgo.Record{Topic: topic, Key: m.Key, Value: m.Value}
	if m.Timestamp != nil {
		rec.Timestamp = time.UnixMilli(*m.Timestamp)
	}
	for _, h := range m.headers {
		rec.Headers = append(rec.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
	}
	if p, ok := m.targetPartition(partition); ok {
		rec.Partition = p
	}
	return rec
}

// franzAcks maps the request's acks to franz-go's.
var franzAcks = map[string]kgo.Acks{
	"all": kgo.AllISRAcks(), "-1": kgo.AllISRAcks(), "1": kgo.LeaderAck(), "0": kgo.NoAck(),
}

func (franzDriver) produce(r *Request) (any, error) {
	codec, ok := franzCodecs[orDefault(r.Compression, "none")]
	if !ok {
		return nil, unsupported{"franz-go: compression " + r.Compression}
	}
	opts := []kgo.Opt{
		kgo.ProducerBatchCompression(codec),
		kgo.AllowAutoTopicCreation(),
		// A topic just created may be missing from Kafka's metadata for a moment: wait for it
		// (bounded by the request's deadline), as the Java producer does for max.block.ms.
		kgo.UnknownTopicRetries(-1),
		// Room for a 1 MiB record on a topic whose max.message.bytes allows it (like the Java
		// client's max.request.size raised); the broker's limit still applies per topic.
		kgo.ProducerBatchMaxBytes(2 << 20),
		kgo.ProducerLinger(5 * time.Millisecond),
	}
	acks, ok := franzAcks[orDefault(r.Acks, "all")]
	if !ok {
		return nil, fmt.Errorf("bad acks %q", r.Acks)
	}
	opts = append(opts, kgo.RequiredAcks(acks))
	if !r.Idempotent {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	explicit := r.Partition != nil
	for _, m := range r.Messages {
		if m.Partition != nil {
			explicit = true
		}
	}
	if explicit {
		for _, m := range r.Messages {
			if m.Partition == nil && r.Partition == nil {
				return nil, fmt.Errorf("some records have a partition and some do not")
			}
		}
		opts = append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	}
	cl, err := kgo.NewClient(franzOpts(r, opts...)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	recs := make([]*kgo.Record, len(r.Messages))
	for i, m := range r.Messages {
		recs[i] = toFranzRecord(r.Topic, m, r.Partition)
	}
	results := cl.ProduceSync(ctx, recs...)
	if err := results.FirstErr(); err != nil {
		return nil, err
	}
	// kgo fills each record in place; ProduceSync's results come in completion order.
	out := make([]produced, len(recs))
	for i, rec := range recs {
		out[i] = produced{Partition: rec.Partition, Offset: rec.Offset}
	}
	return out, nil
}

func franzOffset(o int64) kgo.Offset {
	switch o {
	case -2:
		return kgo.NewOffset().AtStart()
	case -1:
		return kgo.NewOffset().AtEnd()
	}
	return kgo.NewOffset().At(o)
}

func franzIsolation(isolation string) kgo.IsolationLevel {
	if isolation == "read_committed" {
		return kgo.ReadCommitted()
	}
	return kgo.ReadUncommitted()
}

func franzOut(rec *kgo.Record) outMsg {
	hs := make([]headerKV, 0, len(rec.Headers))
	for _, h := range rec.Headers {
		hs = append(hs, headerKV{h.Key, h.Value})
	}
	return outMsg{Partition: rec.Partition, Offset: rec.Offset, Timestamp: rec.Timestamp.UnixMilli(),
		Key: rec.Key, Value: rec.Value, Headers: headersOut(hs)}
}

func (franzDriver) consume(r *Request) (any, error) {
	_, starts, err := r.consumeStarts()
	if err != nil {
		return nil, err
	}
	assign := map[int32]kgo.Offset{}
	for p, o := range starts {
		assign[p] = franzOffset(o)
	}
	cl, err := kgo.NewClient(franzOpts(r,
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{r.Topic: assign}),
		kgo.FetchIsolationLevel(franzIsolation(r.Isolation)),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.FetchMaxPartitionBytes(4<<20),
	)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	out := []outMsg{}
	for len(out) < r.Count && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for _, fe := range fs.Errors() {
			if errors.Is(fe.Err, context.DeadlineExceeded) || errors.Is(fe.Err, context.Canceled) {
				continue
			}
			return nil, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
		}
		fs.EachRecord(func(rec *kgo.Record) {
			if len(out) < r.Count {
				out = append(out, franzOut(rec))
			}
		})
	}
	return out, nil
}

// --- transactions ---------------------------------------------------------------------------

func franzTxnClient(r *Request, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.TransactionalID(r.TransactionalID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
	}
	return kgo.NewClient(franzOpts(r, append(opts, extra...)...)...)
}

func planRecord(rec [3]any) (*kgo.Record, error) {
	topic, ok1 := rec[0].(string)
	partition, ok2 := rec[1].(float64)
	value, ok3 := rec[2].(string)
	if !ok1 || !ok2 || !ok3 {
		return nil, fmt.Errorf("bad plan record %v", rec)
	}
	return &kgo.Record{Topic: topic, Partition: int32(partition), Value: []byte(value)}, nil
}

func (franzDriver) plan(r *Request) (any, error) {
	cl, err := franzTxnClient(r)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	for _, txn := range r.Txns {
		if err := cl.BeginTransaction(); err != nil {
			return nil, err
		}
		for _, raw := range txn.Records {
			rec, err := planRecord(raw)
			if err != nil {
				return nil, err
			}
			if err := cl.ProduceSync(ctx, rec).FirstErr(); err != nil {
				return nil, err
			}
		}
		end := kgo.TryCommit
		if txn.End == "abort" {
			end = kgo.TryAbort
		}
		if err := cl.EndTransaction(ctx, end); err != nil {
			return nil, err
		}
	}
	return true, nil
}

// errorName is what fence and time_out report: Kafka's error name, else the Go error's text.
func errorName(err error) string {
	if err == nil {
		return "NONE"
	}
	if c := errorCode(err); c != "" {
		return c
	}
	return "UNKNOWN: " + strings.ReplaceAll(err.Error(), "\n", " ")
}

// franzTxnBegun is a transactional client with a transaction open and `value` produced in it
// to partition 0 of r.Topic.
func franzTxnBegun(ctx context.Context, r *Request, value string, extra ...kgo.Opt) (*kgo.Client, error) {
	cl, err := franzTxnClient(r, extra...)
	if err != nil {
		return nil, err
	}
	err = cl.BeginTransaction()
	if err == nil {
		err = cl.ProduceSync(ctx, &kgo.Record{Topic: r.Topic, Value: []byte(value)}).FirstErr()
	}
	if err != nil {
		cl.Close()
		return nil, err
	}
	return cl, nil
}

func (franzDriver) fence(r *Request) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	a, err := franzTxnBegun(ctx, r, "zombie-1")
	if err != nil {
		return nil, err
	}
	defer a.Close()
	b, err := franzTxnBegun(ctx, r, "winner")
	if err != nil {
		return nil, err
	}
	if err := b.EndTransaction(ctx, kgo.TryCommit); err != nil {
		return nil, err
	}
	b.Close()
	err = a.ProduceSync(ctx, &kgo.Record{Topic: r.Topic, Value: []byte("zombie-2")}).FirstErr()
	if err == nil {
		err = a.EndTransaction(ctx, kgo.TryCommit)
	}
	return errorName(err), nil
}

func (franzDriver) timeOut(r *Request) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	cl, err := franzTxnBegun(ctx, r, "late", kgo.TransactionTimeout(time.Duration(r.TxnTimeoutMs)*time.Millisecond))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	if err := waitForPath(r.Until); err != nil {
		return nil, err
	}
	return errorName(cl.EndTransaction(ctx, kgo.TryCommit)), nil
}

func (franzDriver) copy(r *Request) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	sess, err := kgo.NewGroupTransactSession(franzOpts(r,
		kgo.TransactionalID(r.TransactionalID),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ConsumerGroup(r.Group),
		kgo.ConsumeTopics(r.Source),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.SessionTimeout(time.Duration(orDefaultInt(r.SessionMs, 10000))*time.Millisecond),
		kgo.HeartbeatInterval(time.Duration(orDefaultInt(r.SessionMs, 10000)/6)*time.Millisecond),
		kgo.TransactionTimeout(10*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond),
	)...)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	copied := 0
	for copied < r.Count && ctx.Err() == nil {
		pollCtx, pollCancel := context.WithTimeout(ctx, time.Second)
		var fs kgo.Fetches
		if r.Batch > 0 {
			fs = sess.PollRecords(pollCtx, r.Batch)
		} else {
			fs = sess.PollFetches(pollCtx)
		}
		pollCancel()
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				return nil, fmt.Errorf("fetch %s[%d]: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		var recs []*kgo.Record
		fs.EachRecord(func(rec *kgo.Record) {
			recs = append(recs, &kgo.Record{Topic: r.Sink, Partition: rec.Partition, Key: rec.Key,
				Value: append([]byte("copied:"), rec.Value...)})
		})
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			return nil, err
		}
		produceErr := sess.ProduceSync(ctx, recs...).FirstErr()
		end := kgo.TryCommit
		if produceErr != nil {
			end = kgo.TryAbort
		}
		committed, err := sess.End(ctx, end)
		if produceErr != nil {
			return nil, produceErr
		}
		if err != nil {
			return nil, err
		}
		if committed {
			copied += len(recs)
			if r.Progress { // one line per transaction, for a test that kills this process
				fmt.Printf("{\"progress\": %d}\n", copied)
			}
		}
	}
	return copied, nil
}

func orDefaultInt(v, d int) int {
	if v == 0 {
		return d
	}
	return v
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
