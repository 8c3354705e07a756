package main

// A share consumer (KIP-932) with franz-go's share group support (kgo.ShareGroup), speaking the
// line protocol of compat_tests/share/members.py:
//
//	godriver franz share-member '{"bootstrap", "group", "topic", "client_id", "ack_mode"}'
//
// prints {"event": "record", "partition", "offset", "key", "value", "delivery_count"},
// {"event": "committed"}, {"event": "closed"}, {"event": "error", "message"}; reads
// "ack OFFSET ACCEPT|RELEASE|REJECT", "commit" (FlushAcks) and "close" on stdin. In explicit mode
// it polls again only once every delivered record is acknowledged (franz-go would accept the
// rest at the next poll).

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

type shareConfig struct {
	Bootstrap string `json:"bootstrap"`
	Group     string `json:"group"`
	Topic     string `json:"topic"`
	ClientID  string `json:"client_id"`
	AckMode   string `json:"ack_mode"`
}

func text(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

func runShareMember(raw string) int {
	var cfg shareConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		emit(map[string]any{"event": "error", "message": err.Error()})
		return 1
	}
	explicit := cfg.AckMode != "implicit"
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(cfg.Bootstrap),
		kgo.ClientID(orDefault(cfg.ClientID, "franz-share-member")),
		kgo.ShareGroup(cfg.Group),
		kgo.ConsumeTopics(cfg.Topic),
		kgo.FetchMaxWait(300*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond),
	)
	if err != nil {
		emit(map[string]any{"event": "error", "message": err.Error()})
		return 1
	}
	commands := make(chan string, 64)
	go func() {
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			commands <- strings.TrimSpace(in.Text())
		}
		commands <- "close"
	}()
	pending := map[int64]*kgo.Record{}
	statuses := map[string]kgo.AckStatus{"ACCEPT": kgo.AckAccept, "RELEASE": kgo.AckRelease, "REJECT": kgo.AckReject}
	for {
		var cmd string
		if len(pending) > 0 {
			select {
			case cmd = <-commands:
			case <-time.After(100 * time.Millisecond):
				continue
			}
		} else {
			select {
			case cmd = <-commands:
			default:
			}
		}
		if cmd != "" {
			parts := strings.Fields(cmd)
			switch parts[0] {
			case "close":
				cl.Close()
				emit(map[string]any{"event": "closed"})
				return 0
			case "ack":
				off, _ := strconv.ParseInt(parts[1], 10, 64)
				r, ok := pending[off]
				if !ok {
					emit(map[string]any{"event": "error", "message": "no pending record at " + parts[1]})
					continue
				}
				delete(pending, off)
				r.Ack(statuses[parts[2]])
			case "commit":
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				err := cl.FlushAcks(ctx)
				cancel()
				if err != nil {
					emit(map[string]any{"event": "error", "message": "commit: " + err.Error()})
				} else {
					emit(map[string]any{"event": "committed"})
				}
			}
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		fetches := cl.PollRecords(ctx, 500)
		cancel()
		for _, fe := range fetches.Errors() {
			if fe.Err != context.DeadlineExceeded && fe.Err != context.Canceled {
				emit(map[string]any{"event": "error", "message": fe.Err.Error()})
			}
		}
		fetches.EachRecord(func(r *kgo.Record) {
			if explicit {
				pending[r.Offset] = r
			}
			emit(map[string]any{"event": "record", "partition": r.Partition, "offset": r.Offset,
				"key": text(r.Key), "value": text(r.Value), "delivery_count": r.DeliveryCount()})
		})
	}
}
