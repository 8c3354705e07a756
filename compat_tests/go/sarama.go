package main

// IBM sarama: produce through SyncProducer, consume through PartitionConsumer (direct
// assignment), admin through ClusterAdmin, transactions through the transactional
// SyncProducer with AddMessageToTxnWithGroupMetadata (KIP-447 group metadata from the session).

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/IBM/sarama"
)

type saramaDriver struct{}

// saramaConfig is every client's configuration: Kafka 4.0 protocol versions, quick retries.
func saramaConfig() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V4_0_0_0
	c.ClientID = "kafkalite-compat-sarama"
	c.Net.DialTimeout = 5 * time.Second
	c.Metadata.Retry.Backoff = 100 * time.Millisecond
	c.Metadata.Retry.Max = 20
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	return c
}

var saramaCodecs = map[string]sarama.CompressionCodec{
	"none": sarama.CompressionNone, "gzip": sarama.CompressionGZIP, "snappy": sarama.CompressionSnappy,
	"lz4": sarama.CompressionLZ4, "zstd": sarama.CompressionZSTD,
}

func (saramaDriver) createTopic(r *Request) (any, error) {
	adm, err := sarama.NewClusterAdmin([]string{r.Bootstrap}, saramaConfig())
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	entries := map[string]*string{}
	for k, v := range r.Configs {
		v := v
		entries[k] = &v
	}
	detail := &sarama.TopicDetail{NumPartitions: r.NumParts, ReplicationFactor: 1, ConfigEntries: entries}
	if err := adm.CreateTopic(r.Topic, detail, false); err != nil {
		return nil, err
	}
	return map[string]any{"partitions": r.NumParts}, nil
}

func toSaramaMessage(topic string, m Msg, partition *int32) *sarama.ProducerMessage {
	pm := &sarama.ProducerMessage{Topic: topic}
	if m.Key != nil {
		pm.Key = sarama.ByteEncoder(m.Key)
	}
	if m.Value != nil {
		pm.Value = sarama.ByteEncoder(m.Value)
	}
	if m.Timestamp != nil {
		pm.Timestamp = time.UnixMilli(*m.Timestamp)
	}
	for _, h := range m.headers {
		pm.Headers = append(pm.Headers, sarama.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	if p, ok := m.targetPartition(partition); ok {
		pm.Partition = p
	}
	return pm
}

func (saramaDriver) produce(r *Request) (any, error) {
	c := saramaConfig()
	codec, ok := saramaCodecs[orDefault(r.Compression, "none")]
	if !ok {
		return nil, unsupported{"sarama: compression " + r.Compression}
	}
	c.Producer.Compression = codec
	c.Producer.Return.Successes = true
	c.Producer.Timeout = r.timeout()
	// Room for a 1 MiB record on a topic whose max.message.bytes allows it; the broker's
	// limit still applies per topic.
	c.Producer.MaxMessageBytes = 2 << 20
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	switch orDefault(r.Acks, "all") {
	case "all", "-1":
		c.Producer.RequiredAcks = sarama.WaitForAll
	case "1":
		c.Producer.RequiredAcks = sarama.WaitForLocal
	case "0":
		c.Producer.RequiredAcks = sarama.NoResponse
	default:
		return nil, fmt.Errorf("bad acks %q", r.Acks)
	}
	if r.Idempotent {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
	}
	explicit := r.Partition != nil
	for _, m := range r.Messages {
		if m.Partition != nil {
			explicit = true
		}
	}
	if explicit {
		c.Producer.Partitioner = sarama.NewManualPartitioner
	}
	p, err := sarama.NewSyncProducer([]string{r.Bootstrap}, c)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, len(r.Messages))
	for i, m := range r.Messages {
		msgs[i] = toSaramaMessage(r.Topic, m, r.Partition)
	}
	if err := p.SendMessages(msgs); err != nil {
		var pe sarama.ProducerErrors
		if errors.As(err, &pe) && len(pe) > 0 {
			return nil, pe[0].Err
		}
		return nil, err
	}
	out := make([]produced, len(msgs))
	for i, m := range msgs {
		out[i] = produced{Partition: m.Partition, Offset: m.Offset}
	}
	return out, nil
}

func saramaOut(m *sarama.ConsumerMessage) outMsg {
	hs := make([]headerKV, 0, len(m.Headers))
	for _, h := range m.Headers {
		hs = append(hs, headerKV{string(h.Key), h.Value})
	}
	return outMsg{Partition: m.Partition, Offset: m.Offset, Timestamp: m.Timestamp.UnixMilli(),
		Key: m.Key, Value: m.Value, Headers: headersOut(hs)}
}

func saramaIsolation(isolation string) sarama.IsolationLevel {
	if isolation == "read_committed" {
		return sarama.ReadCommitted
	}
	return sarama.ReadUncommitted
}

// forwardUntil sends every value of src to ch, as wrap(value), until src or done is closed.
func forwardUntil[T, I any](src <-chan T, wrap func(T) I, ch chan<- I, done <-chan struct{}) {
	for {
		select {
		case v, ok := <-src:
			if !ok {
				return
			}
			select {
			case ch <- wrap(v):
			case <-done:
				return
			}
		case <-done:
			return
		}
	}
}

func (saramaDriver) consume(r *Request) (any, error) {
	parts, starts, err := r.consumeStarts()
	if err != nil {
		return nil, err
	}
	c := saramaConfig()
	c.Consumer.IsolationLevel = saramaIsolation(r.Isolation)
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	c.Consumer.Fetch.Default = 4 << 20
	consumer, err := sarama.NewConsumer([]string{r.Bootstrap}, c)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	type item struct {
		msg *sarama.ConsumerMessage
		err error
	}
	ch := make(chan item, 1024)
	done := make(chan struct{})
	defer close(done)
	var wg sync.WaitGroup
	for _, p := range parts {
		pc, err := consumer.ConsumePartition(r.Topic, p, starts[p])
		if err != nil {
			return nil, fmt.Errorf("partition %d: %w", p, err)
		}
		defer pc.AsyncClose()
		wg.Add(2)
		go func() {
			defer wg.Done()
			forwardUntil(pc.Messages(), func(m *sarama.ConsumerMessage) item { return item{msg: m} }, ch, done)
		}()
		go func() {
			defer wg.Done()
			forwardUntil(pc.Errors(), func(e *sarama.ConsumerError) item { return item{err: e} }, ch, done)
		}()
	}
	deadline := time.After(r.timeout())
	out := []outMsg{}
	for len(out) < r.Count {
		select {
		case it := <-ch:
			if it.err != nil {
				return nil, it.err
			}
			out = append(out, saramaOut(it.msg))
		case <-deadline:
			return out, nil
		}
	}
	return out, nil
}

// --- transactions ---------------------------------------------------------------------------

func saramaTxnConfig(r *Request) *sarama.Config {
	c := saramaConfig()
	c.Producer.Transaction.ID = r.TransactionalID
	c.Producer.Idempotent = true
	c.Net.MaxOpenRequests = 1
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Transaction.Retry.Backoff = 100 * time.Millisecond
	return c
}

func saramaSend(p sarama.SyncProducer, topic string, partition int32, value []byte) error {
	_, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: partition, Value: sarama.ByteEncoder(value)})
	return err
}

func (saramaDriver) plan(r *Request) (any, error) {
	p, err := sarama.NewSyncProducer([]string{r.Bootstrap}, saramaTxnConfig(r))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	for _, txn := range r.Txns {
		if err := p.BeginTxn(); err != nil {
			return nil, err
		}
		for _, raw := range txn.Records {
			rec, err := planRecord(raw)
			if err != nil {
				return nil, err
			}
			if err := saramaSend(p, rec.Topic, rec.Partition, rec.Value); err != nil {
				return nil, err
			}
		}
		if txn.End == "abort" {
			err = p.AbortTxn()
		} else {
			err = p.CommitTxn()
		}
		if err != nil {
			return nil, err
		}
	}
	return true, nil
}

// saramaTxnBegun is a transactional producer with a transaction open and `value` sent in it to
// partition 0 of r.Topic.
func saramaTxnBegun(r *Request, c *sarama.Config, value string) (sarama.SyncProducer, error) {
	p, err := sarama.NewSyncProducer([]string{r.Bootstrap}, c)
	if err != nil {
		return nil, err
	}
	err = p.BeginTxn()
	if err == nil {
		err = saramaSend(p, r.Topic, 0, []byte(value))
	}
	if err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

func (saramaDriver) fence(r *Request) (any, error) {
	a, err := saramaTxnBegun(r, saramaTxnConfig(r), "zombie-1")
	if err != nil {
		return nil, err
	}
	defer a.Close()
	b, err := saramaTxnBegun(r, saramaTxnConfig(r), "winner")
	if err != nil {
		return nil, err
	}
	if err := b.CommitTxn(); err != nil {
		return nil, err
	}
	b.Close()
	err = saramaSend(a, r.Topic, 0, []byte("zombie-2"))
	if err == nil {
		err = a.CommitTxn()
	}
	return errorName(err), nil
}

func (saramaDriver) timeOut(r *Request) (any, error) {
	c := saramaTxnConfig(r)
	c.Producer.Transaction.Timeout = time.Duration(r.TxnTimeoutMs) * time.Millisecond
	p, err := saramaTxnBegun(r, c, "late")
	if err != nil {
		return nil, err
	}
	defer p.Close()
	if err := waitForPath(r.Until); err != nil {
		return nil, err
	}
	return errorName(p.CommitTxn()), nil
}

// saramaCopier copies what a group session claims, one transaction per gathered batch.
type saramaCopier struct {
	p       sarama.SyncProducer
	group   string
	sink    string
	mu      sync.Mutex
	copied  int
	target  int
	reached chan struct{}
	once    sync.Once
}

func (h *saramaCopier) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (h *saramaCopier) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *saramaCopier) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	meta := &sarama.ConsumerGroupMetadata{GroupID: h.group, GenerationID: sess.GenerationID(), MemberID: sess.MemberID()}
	for {
		var batch []*sarama.ConsumerMessage
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			batch = append(batch, m)
		case <-sess.Context().Done():
			return nil
		}
	gather:
		for len(batch) < 200 {
			select {
			case m, ok := <-claim.Messages():
				if !ok {
					break gather
				}
				batch = append(batch, m)
			default:
				break gather
			}
		}
		if err := h.p.BeginTxn(); err != nil {
			return err
		}
		var err error
		for _, m := range batch {
			if err = saramaSend(h.p, h.sink, m.Partition, append([]byte("copied:"), m.Value...)); err != nil {
				break
			}
			if err = h.p.AddMessageToTxnWithGroupMetadata(m, meta, nil); err != nil {
				break
			}
		}
		if err == nil {
			err = h.p.CommitTxn()
		}
		if err != nil {
			_ = h.p.AbortTxn()
			return err
		}
		h.mu.Lock()
		h.copied += len(batch)
		if h.copied >= h.target {
			h.once.Do(func() { close(h.reached) })
		}
		h.mu.Unlock()
	}
}

func (saramaDriver) copy(r *Request) (any, error) {
	p, err := sarama.NewSyncProducer([]string{r.Bootstrap}, saramaTxnConfig(r))
	if err != nil {
		return nil, err
	}
	defer p.Close()
	c := saramaConfig()
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Heartbeat.Interval = time.Second
	c.Consumer.MaxWaitTime = 200 * time.Millisecond
	group, err := sarama.NewConsumerGroup([]string{r.Bootstrap}, r.Group, c)
	if err != nil {
		return nil, err
	}
	defer group.Close()
	h := &saramaCopier{p: p, group: r.Group, sink: r.Sink, target: r.Count, reached: make(chan struct{})}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout())
	defer cancel()
	errs := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{r.Source}, h); err != nil {
				if ctx.Err() == nil {
					errs <- err
				}
				return
			}
		}
	}()
	select {
	case <-h.reached:
	case err := <-errs:
		return nil, err
	case <-ctx.Done():
	}
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.copied, nil
}
