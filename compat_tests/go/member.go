package main

// One consumer-group member for compat_tests/groups/members.py's line protocol: JSON events
// ({"event": "assigned" | "record" | "committed" | "closed" | "error"}) on stdout, "commit" and
// "close" on stdin. franz-go joins with the classic or the KIP-848 consumer protocol; sarama
// has the classic protocol only. "assigned" always carries the member's whole assignment.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

type memberConfig struct {
	Bootstrap   string  `json:"bootstrap"`
	Group       string  `json:"group"`
	Topic       string  `json:"topic"`
	Protocol    string  `json:"protocol"`
	InstanceID  *string `json:"instance_id"`
	SessionMs   int     `json:"session_timeout_ms"`
	HeartbeatMs int     `json:"heartbeat_interval_ms"`
	Assignor    *string `json:"assignor"`
	ClientID    string  `json:"client_id"`
}

var emitMu sync.Mutex

func emit(ev map[string]any) {
	b, _ := json.Marshal(ev)
	emitMu.Lock()
	defer emitMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

func emitAssigned(owned map[int32]bool) {
	ps := []int{}
	for p := range owned {
		ps = append(ps, int(p))
	}
	sort.Ints(ps)
	emit(map[string]any{"event": "assigned", "partitions": ps})
}

type member interface {
	commit() error
	close()
}

func runMember(client, raw string) int {
	var cfg memberConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		emit(map[string]any{"event": "error", "message": err.Error()})
		return 1
	}
	if cfg.SessionMs == 0 {
		cfg.SessionMs = 6000
	}
	if cfg.HeartbeatMs == 0 {
		cfg.HeartbeatMs = 500
	}
	var m member
	var err error
	switch client {
	case "franz":
		m, err = startFranzMember(cfg)
	case "sarama":
		m, err = startSaramaMember(cfg)
	default:
		err = fmt.Errorf("unknown client %s", client)
	}
	if err != nil {
		emit(map[string]any{"event": "error", "message": err.Error()})
		return 1
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "commit":
			if err := m.commit(); err != nil {
				emit(map[string]any{"event": "error", "message": "commit: " + err.Error()})
			} else {
				emit(map[string]any{"event": "committed"})
			}
		case "close":
			m.close()
			emit(map[string]any{"event": "closed"})
			return 0
		}
	}
	m.close() // stdin closed: the test is gone
	emit(map[string]any{"event": "closed"})
	return 0
}

// --- franz-go -------------------------------------------------------------------------------

type franzMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
}

func startFranzMember(cfg memberConfig) (member, error) {
	var mu sync.Mutex
	owned := map[int32]bool{}
	change := func(ps map[string][]int32, add bool) {
		mu.Lock()
		defer mu.Unlock()
		for _, p := range ps[cfg.Topic] {
			if add {
				owned[p] = true
			} else {
				delete(owned, p)
			}
		}
		emitAssigned(owned)
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(cfg.Bootstrap),
		kgo.ClientID(orDefault(cfg.ClientID, "franz-member")),
		kgo.ConsumerGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.DisableAutoCommit(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(time.Duration(cfg.SessionMs) * time.Millisecond),
		kgo.HeartbeatInterval(time.Duration(cfg.HeartbeatMs) * time.Millisecond),
		kgo.FetchMaxWait(300 * time.Millisecond),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { change(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { change(ps, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { change(ps, false) }),
	}
	if cfg.Protocol == "consumer" {
		// KIP-848 in franz-go is ServerSideBalancer with a range or sticky balancer first (the one
		// named sets the server's assignor); kgo.GroupProtocol names the classic protocol's type
		opts = append(opts, kgo.ServerSideBalancer())
		if cfg.Assignor == nil {
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
		}
	}
	if cfg.InstanceID != nil {
		opts = append(opts, kgo.InstanceID(*cfg.InstanceID))
	}
	if cfg.Assignor != nil {
		switch *cfg.Assignor {
		case "cooperative-sticky":
			opts = append(opts, kgo.Balancers(kgo.CooperativeStickyBalancer()))
		case "range":
			opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
		case "roundrobin":
			opts = append(opts, kgo.Balancers(kgo.RoundRobinBalancer()))
		case "sticky":
			opts = append(opts, kgo.Balancers(kgo.StickyBalancer()))
		default:
			return nil, fmt.Errorf("franz-go has no balancer %q", *cfg.Assignor)
		}
	}
	if os.Getenv("GODRIVER_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(franzLog{}))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &franzMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			fs := cl.PollFetches(ctx)
			if fs.IsClientClosed() {
				return
			}
			for _, fe := range fs.Errors() {
				if !errors.Is(fe.Err, context.Canceled) {
					emit(map[string]any{"event": "error", "message": fmt.Sprintf("fetch %s[%d]: %v", fe.Topic, fe.Partition, fe.Err)})
				}
			}
			fs.EachRecord(func(r *kgo.Record) {
				emit(map[string]any{"event": "record", "partition": r.Partition, "offset": r.Offset, "value": string(r.Value)})
			})
		}
	}()
	return m, nil
}

func (m *franzMember) commit() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return m.cl.CommitUncommittedOffsets(ctx)
}

func (m *franzMember) close() {
	m.cancel()
	<-m.done
	m.cl.Close() // leaves the group (a static member does not: KIP-345)
}

// --- sarama ---------------------------------------------------------------------------------

type saramaMember struct {
	group  sarama.ConsumerGroup
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	sess   sarama.ConsumerGroupSession
	topic  string
	owned  map[int32]bool
}

// The member's assignment is the set of partitions whose claim is running: with the
// cooperative-sticky strategy sarama keeps one session and starts or stops single claims.
func (m *saramaMember) setOwned(change func(map[int32]bool)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := fmt.Sprint(sortedKeys(m.owned))
	change(m.owned)
	if fmt.Sprint(sortedKeys(m.owned)) != before {
		emitAssigned(m.owned)
	}
}

func sortedKeys(set map[int32]bool) []int {
	out := []int{}
	for p := range set {
		out = append(out, int(p))
	}
	sort.Ints(out)
	return out
}

func (m *saramaMember) Setup(sess sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.sess = sess
	m.mu.Unlock()
	m.setOwned(func(owned map[int32]bool) {
		for p := range owned {
			delete(owned, p)
		}
		for _, p := range sess.Claims()[m.topic] {
			owned[p] = true
		}
	})
	return nil
}

func (m *saramaMember) Cleanup(sarama.ConsumerGroupSession) error {
	m.mu.Lock()
	m.sess = nil
	m.mu.Unlock()
	return nil
}

func (m *saramaMember) ConsumeClaim(sess sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	p := claim.Partition()
	m.setOwned(func(owned map[int32]bool) { owned[p] = true })
	defer m.setOwned(func(owned map[int32]bool) { delete(owned, p) })
	for msg := range claim.Messages() {
		emit(map[string]any{"event": "record", "partition": msg.Partition, "offset": msg.Offset, "value": string(msg.Value)})
		sess.MarkMessage(msg, "")
	}
	return nil
}

func startSaramaMember(cfg memberConfig) (member, error) {
	if cfg.Protocol != "" && cfg.Protocol != "classic" {
		return nil, unsupported{"sarama has no KIP-848 consumer protocol"}
	}
	c := saramaConfig()
	c.ClientID = orDefault(cfg.ClientID, "sarama-member")
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.AutoCommit.Enable = false
	c.Consumer.Return.Errors = true
	c.Consumer.MaxWaitTime = 300 * time.Millisecond
	c.Consumer.Group.Session.Timeout = time.Duration(cfg.SessionMs) * time.Millisecond
	c.Consumer.Group.Heartbeat.Interval = time.Duration(cfg.HeartbeatMs) * time.Millisecond
	c.Consumer.Group.Rebalance.Retry.Backoff = 200 * time.Millisecond
	c.Metadata.RefreshFrequency = time.Second
	if cfg.InstanceID != nil {
		c.Consumer.Group.InstanceId = *cfg.InstanceID
	}
	if cfg.Assignor != nil {
		switch *cfg.Assignor {
		case "cooperative-sticky":
			c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyCooperativeSticky()}
		case "range":
			c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRange()}
		case "roundrobin":
			c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategyRoundRobin()}
		case "sticky":
			c.Consumer.Group.Rebalance.GroupStrategies = []sarama.BalanceStrategy{sarama.NewBalanceStrategySticky()}
		default:
			return nil, fmt.Errorf("sarama has no balance strategy %q", *cfg.Assignor)
		}
	}
	group, err := sarama.NewConsumerGroup([]string{cfg.Bootstrap}, cfg.Group, c)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &saramaMember{group: group, cancel: cancel, done: make(chan struct{}), topic: cfg.Topic, owned: map[int32]bool{}}
	go func() {
		for err := range group.Errors() {
			debugf("sarama group error: %v", err)
		}
	}()
	go func() {
		defer close(m.done)
		for ctx.Err() == nil {
			if err := group.Consume(ctx, []string{cfg.Topic}, m); err != nil {
				if errors.Is(err, sarama.ErrClosedConsumerGroup) {
					return
				}
				debugf("sarama Consume: %v", err)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}()
	return m, nil
}

func (m *saramaMember) commit() error {
	m.mu.Lock()
	sess := m.sess
	m.mu.Unlock()
	if sess == nil {
		return errors.New("no group session to commit in")
	}
	sess.Commit()
	return nil
}

func (m *saramaMember) close() {
	m.cancel()
	_ = m.group.Close()
	<-m.done
}
