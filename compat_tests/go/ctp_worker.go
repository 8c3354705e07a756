package main

// One worker of compat_tests/jepsen's consume-transform-produce workload with franz-go: a
// GroupTransactSession (KIP-447: its offsets go with the group's generation, so a zombie is
// fenced) reading the input topic and writing each record to the same partition of the output
// topic. The line protocol is compat_tests/jepsen/java/CtpWorker.java's: the setup as the first
// stdin line, then "go" per pause point; events on stdout. The session commits its offsets
// inside End, so a transaction has one pause point ("open", its records written). End
// answering not committed is "aborted" (the session has gone back to the committed offsets);
// an error from End is "unknown" and ends the process (the runner starts it again).

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type ctpSetup struct {
	Bootstrap       string `json:"bootstrap"`
	Group           string `json:"group"`
	Input           string `json:"input"`
	Output          string `json:"output"`
	TransactionalID string `json:"transactional_id"`
	Batch           int    `json:"batch"`
	Protocol        string `json:"protocol"`
	ClientID        string `json:"client_id"`
	SessionMs       int    `json:"session_timeout_ms"`
	HeartbeatMs     int    `json:"heartbeat_interval_ms"`
	TxnTimeoutMs    int    `json:"transaction_timeout_ms"`
}

func runCtpWorker() int {
	in := bufio.NewReader(os.Stdin)
	line, err := in.ReadString('\n')
	if err != nil {
		fmt.Fprintln(os.Stderr, "no setup:", err)
		return 2
	}
	var s ctpSetup
	if err := json.Unmarshal([]byte(line), &s); err != nil {
		fmt.Fprintln(os.Stderr, "bad setup:", err)
		return 2
	}
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.Bootstrap),
		kgo.ClientID(s.ClientID),
		kgo.TransactionalID(s.TransactionalID),
		kgo.TransactionTimeout(time.Duration(s.TxnTimeoutMs) * time.Millisecond),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ConsumerGroup(s.Group),
		kgo.ConsumeTopics(s.Input),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.RequireStableFetchOffsets(),
		kgo.FetchMaxWait(200 * time.Millisecond),
		kgo.MetadataMinAge(250 * time.Millisecond),
		kgo.RetryBackoffFn(func(int) time.Duration { return 100 * time.Millisecond }),
	}
	// range: the assignor every client of a mixed classic group has, and one of the two with
	// which franz-go speaks KIP-848 when ServerSideBalancer asks for it (kgo.GroupProtocol is the
	// classic protocol type, not this)
	opts = append(opts, kgo.Balancers(kgo.RangeBalancer()))
	if s.Protocol == "consumer" {
		opts = append(opts, kgo.ServerSideBalancer())
	} else {
		opts = append(opts, kgo.SessionTimeout(time.Duration(s.SessionMs)*time.Millisecond),
			kgo.HeartbeatInterval(time.Duration(s.HeartbeatMs)*time.Millisecond))
	}
	if os.Getenv("GODRIVER_DEBUG") != "" {
		opts = append(opts, kgo.WithLogger(franzLog{}))
	}
	sess, err := kgo.NewGroupTransactSession(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "session:", err)
		return 2
	}
	emit(map[string]any{"event": "ready"})
	awaitGo := func() {
		if _, err := in.ReadString('\n'); err != nil {
			os.Exit(0)
		}
	}
	ctx := context.Background()
	for n := 1; ; {
		pollCtx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := sess.PollRecords(pollCtx, s.Batch)
		cancel()
		if fs.IsClientClosed() {
			return 1
		}
		for _, fe := range fs.Errors() {
			if !errors.Is(fe.Err, context.DeadlineExceeded) && !errors.Is(fe.Err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "fetch %s[%d]: %v\n", fe.Topic, fe.Partition, fe.Err)
			}
		}
		var in []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { in = append(in, r) })
		if len(in) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			fmt.Fprintln(os.Stderr, "begin:", err)
			return 1
		}
		out := make([]*kgo.Record, len(in))
		for i, r := range in {
			out[i] = &kgo.Record{Topic: s.Output, Partition: r.Partition, Key: r.Value,
				Value: []byte(fmt.Sprintf("%d:%d:%s", r.Partition, r.Offset, r.Value))}
		}
		produceErr := sess.ProduceSync(ctx, out...).FirstErr()
		if produceErr == nil {
			done := make([][]int64, len(in))
			for i, r := range in {
				v, _ := strconv.ParseInt(string(r.Value), 10, 64)
				done[i] = []int64{int64(r.Partition), r.Offset, v, out[i].Offset}
			}
			emit(map[string]any{"event": "open", "txn": n, "records": done})
			awaitGo()
		}
		end := kgo.TryCommit
		if produceErr != nil {
			end = kgo.TryAbort
		}
		endCtx, endCancel := context.WithTimeout(ctx, 20*time.Second)
		committed, err := sess.End(endCtx, end)
		endCancel()
		switch {
		case err != nil:
			emit(map[string]any{"event": "unknown", "txn": n, "error": err.Error()})
			return 1
		case committed:
			emit(map[string]any{"event": "committed", "txn": n})
		default:
			why := "the session aborted (a rebalance or a failed offset commit)"
			if produceErr != nil {
				why = produceErr.Error()
			}
			emit(map[string]any{"event": "aborted", "txn": n, "error": why})
		}
		n++
	}
}
