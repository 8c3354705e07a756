package kafkalitetest_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"kafkalite/kafkalitetest"
)

func franzClient(t *testing.T, bootstrap string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	client, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(bootstrap), kgo.AllowAutoTopicCreation()}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
}

func produce(t *testing.T, client *kgo.Client, topic string, values ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, v := range values {
		if err := client.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}).FirstErr(); err != nil {
			t.Fatalf("produce %q: %v", v, err)
		}
	}
}

// consumeAll reads topic from the start until want records came.
func consumeAll(t *testing.T, bootstrap, topic string, want int) []string {
	t.Helper()
	client := franzClient(t, bootstrap, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	for len(got) < want {
		fetches := client.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("got %v before the timeout, wanted %d records", got, want)
		}
		fetches.EachRecord(func(r *kgo.Record) { got = append(got, string(r.Value)) })
	}
	return got
}

func topicExists(t *testing.T, client *kgo.Client, topic string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	topics, err := kadm.NewClient(client).ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return topics.Has(topic)
}

func TestSnapshotRestoreAndResetWithFranz(t *testing.T) {
	broker := kafkalitetest.Start(t, kafkalitetest.Setting("num.partitions", "1"))
	client := franzClient(t, broker.Bootstrap)
	produce(t, client, "orders", "first")
	broker.Snapshot(t, "base")
	produce(t, client, "orders", "second")
	if got := consumeAll(t, broker.Bootstrap, "orders", 2); !reflect.DeepEqual(got, []string{"first", "second"}) {
		t.Fatalf("before restore: %v", got)
	}
	broker.Restore(t, "base")
	produce(t, client, "orders", "third")
	if got := consumeAll(t, broker.Bootstrap, "orders", 2); !reflect.DeepEqual(got, []string{"first", "third"}) {
		t.Fatalf("after restore: %v", got)
	}
	broker.Reset(t)
	if topicExists(t, client, "orders") {
		t.Fatal("the topic is still there after reset")
	}
}

func TestFaultReachesFranz(t *testing.T) {
	broker := kafkalitetest.Start(t)
	// the topic made first (its first Metadata answers UNKNOWN_TOPIC_OR_PARTITION, as Kafka's
	// auto-creation does, which a client without retries would take as final)
	produce(t, franzClient(t, broker.Bootstrap), "payments", "warm-up")
	client := franzClient(t, broker.Bootstrap, kgo.RecordRetries(0))
	produce(t, client, "payments", "known") // this client knows the partition's leader
	_, err := broker.Controls.FailRequests(kafkalitetest.FailRequestsArgs{
		API: "Produce", Error: "TOPIC_AUTHORIZATION_FAILED", Count: kafkalitetest.Int(1),
		Topic: kafkalitetest.String("payments")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = client.ProduceSync(ctx, &kgo.Record{Topic: "payments", Value: []byte("refused")}).FirstErr()
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce under the fault: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	produce(t, client, "payments", "accepted") // the fault was for one request
	faults, err := broker.Controls.ListFaults()
	if err != nil || string(faults) != "[]" {
		t.Fatalf("faults left armed: %s %v", faults, err)
	}
}

func TestManualClockAndSarama(t *testing.T) {
	broker := kafkalitetest.Start(t, kafkalitetest.ManualClock())
	clock := func() (state struct {
		NowMs int64  `json:"now_ms"`
		Mode  string `json:"mode"`
	}) {
		raw, err := broker.Controls.Clock()
		if err == nil {
			err = json.Unmarshal(raw, &state)
		}
		if err != nil {
			t.Fatal(err)
		}
		return state
	}
	before := clock()
	broker.AdvanceClock(t, time.Hour)
	after := clock()
	if before.Mode != "manual" || after.NowMs-before.NowMs != time.Hour.Milliseconds() {
		t.Fatalf("clock before %+v, after an hour %+v", before, after)
	}

	config := sarama.NewConfig()
	config.Producer.Return.Successes = true
	config.Version = sarama.V3_0_0_0
	producer, err := sarama.NewSyncProducer([]string{broker.Bootstrap}, config)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	partition, offset, err := producer.SendMessage(&sarama.ProducerMessage{Topic: "clocked", Value: sarama.StringEncoder("tick")})
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := sarama.NewConsumer([]string{broker.Bootstrap}, config)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition("clocked", partition, offset)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	select {
	case msg := <-pc.Messages():
		// the record's timestamp is the broker's clock when the client leaves it to the broker,
		// or the client's; either way the value came back
		if string(msg.Value) != "tick" {
			t.Fatalf("consumed %q", msg.Value)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("sarama consumed nothing in 30 s")
	}
}

func TestOneBrokerResetBetweenTests(t *testing.T) {
	broker, err := kafkalitetest.Launch()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := broker.Close(); err != nil {
			t.Error(err)
		}
	})
	for _, name := range []string{"first", "second"} {
		t.Run(name, func(t *testing.T) {
			broker.Reset(t)
			client := franzClient(t, broker.Bootstrap)
			if topicExists(t, client, "shared") {
				t.Fatal("the previous test's topic leaked into this one")
			}
			produce(t, client, "shared", name)
		})
	}
}

func TestControlsMatchTheBroker(t *testing.T) {
	broker := kafkalitetest.Start(t)
	listed, err := broker.Controls.List()
	if err != nil {
		t.Fatal(err)
	}
	var fromBroker []map[string]any
	for _, c := range listed {
		params := map[string]any{}
		for name, spec := range c.Parameters {
			var v any
			if err := json.Unmarshal(spec, &v); err != nil {
				t.Fatal(err)
			}
			params[name] = v
		}
		fromBroker = append(fromBroker, map[string]any{"name": c.Name, "parameters": params})
	}
	var generated []map[string]any
	if err := json.Unmarshal([]byte(kafkalitetest.ControlTable()), &generated); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(roundTrip(t, fromBroker), generated) {
		t.Fatalf("controls_gen.go was generated from another control table than the broker's: "+
			"run go generate (python3 -m kafkalite.controls_codegen)\nbroker:    %v\ngenerated: %v", fromBroker, generated)
	}
	var unknown *kafkalitetest.ControlError
	if _, err := broker.Controls.Call("no-such-control", nil); !errors.As(err, &unknown) || unknown.Status != 400 {
		t.Fatalf("an unknown control: %v", err)
	}
}

func roundTrip(t *testing.T, v any) (out []map[string]any) {
	data, err := json.Marshal(v)
	if err == nil {
		err = json.Unmarshal(data, &out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return out
}
