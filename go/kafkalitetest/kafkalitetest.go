// Package kafkalitetest starts a kafkalite broker (a Kafka-compatible broker for tests) for Go
// tests and drives its test controls: reset, snapshots, faults, the clock, topology.
//
//	func TestOrders(t *testing.T) {
//		broker := kafkalitetest.Start(t)               // a broker of this test's own
//		client, _ := kgo.NewClient(kgo.SeedBrokers(broker.Bootstrap))
//		...
//		broker.Snapshot(t, "base")
//		broker.Controls.FailRequests(kafkalitetest.FailRequestsArgs{API: "Produce", Error: "NOT_ENOUGH_REPLICAS"})
//	}
//
// One broker for a whole package, reset before each test, is Launch in TestMain and Reset(t)
// at the top of each test. The broker is the `kafkalite` command found as Command says. Its
// Controls methods are generated from the broker's control table (controls_gen.go).
package kafkalitetest

//go:generate sh -c "cd ../.. && python3 -m kafkalite.controls_codegen"

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// CommandEnv names the variable that says how to run the broker: a command line split at
// spaces ("kafkalite", "python3 -m kafkalite") or the path of a bundle file (kafkalite.pyz),
// which is run as `python3 -I -S FILE`.
const CommandEnv = "KAFKALITE_CMD"

// BundleName is the file name of `kafkalite bundle` output that Command looks for.
const BundleName = "kafkalite.pyz"

// Broker is one running kafkalite process.
type Broker struct {
	// Bootstrap is the first listener's advertised address, HOST:PORT.
	Bootstrap string
	// Listeners maps each listener's name (PLAINTEXT, SSL, ...) to its address.
	Listeners map[string]string
	// Nodes maps each node id to its address on the first listener (with Nodes(n), n > 1).
	Nodes map[int]string
	// ControlsURL, ConsoleURL and RegistryURL are the HTTP endpoints ("" when not on).
	ControlsURL, ConsoleURL, RegistryURL string
	// CA is the CA certificate of a broker started with TLS(): clients of its SSL listeners trust it.
	CA string
	// Controls runs the broker's test controls.
	Controls *Controls
	// LogPath is the broker's log (its stderr).
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

type config struct {
	args    []string
	timeout time.Duration
}

// Option changes how the broker starts.
type Option func(*config)

// Setting sets a broker setting by Kafka's name (num.partitions, ...).
func Setting(key, value string) Option {
	return func(c *config) { c.args = append(c.args, "-c", key+"="+value) }
}

// Nodes runs n node ids in one process, each on its own port (leaders and coordinators can move).
func Nodes(n int) Option {
	return func(c *config) { c.args = append(c.args, "--nodes", fmt.Sprint(n)) }
}

// Seed loads a seed file (topics, records, offsets, ACLs, users) before the broker is ready.
func Seed(path string) Option { return func(c *config) { c.args = append(c.args, "--seed", path) } }

// ManualClock starts the broker with time standing still until AdvanceClock moves it.
func ManualClock() Option { return func(c *config) { c.args = append(c.args, "--clock", "manual") } }

// Console serves the web console on a free port (ConsoleURL).
func Console() Option { return func(c *config) { c.args = append(c.args, "--console", "0") } }

// SchemaRegistry serves the schema registry on a free port (RegistryURL).
func SchemaRegistry() Option {
	return func(c *config) { c.args = append(c.args, "--schema-registry", "0") }
}

// TLS adds an SSL listener on a free port with a throwaway CA (CA, Listeners["SSL"]).
func TLS() Option {
	return func(c *config) {
		c.args = append(c.args, "--listener", "PLAINTEXT://127.0.0.1:0", "--listener", "SSL://127.0.0.1:0",
			"--tls-self-signed")
	}
}

// Args passes command-line options of the `kafkalite` command as they are.
func Args(args ...string) Option { return func(c *config) { c.args = append(c.args, args...) } }

// Timeout bounds the wait for the ready line (default 60 s).
func Timeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// Command is how the broker is run: $KAFKALITE_CMD; else a kafkalite.pyz in the working
// directory or one of its parents (beside the tests or at the root of the module); else
// `kafkalite` on PATH.
func Command() ([]string, error) {
	if line := strings.TrimSpace(os.Getenv(CommandEnv)); line != "" {
		fields := strings.Fields(line)
		if len(fields) == 1 && strings.HasSuffix(fields[0], ".pyz") {
			return bundleCommand(fields[0]), nil
		}
		return fields, nil
	}
	if dir, err := os.Getwd(); err == nil {
		for {
			candidate := filepath.Join(dir, BundleName)
			if info, err := os.Stat(candidate); err == nil && !info.IsDir() {
				return bundleCommand(candidate), nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if path, err := exec.LookPath("kafkalite"); err == nil {
		return []string{path}, nil
	}
	return nil, fmt.Errorf("no kafkalite: set %s, put a %s (kafkalite bundle %s) beside the tests, "+
		"or install kafkalite on PATH", CommandEnv, BundleName, BundleName)
}

func bundleCommand(path string) []string { return []string{"python3", "-I", "-S", path} }

// Start starts a broker for t, with the controls on; t.Cleanup stops it. A failure to start
// fails the test with the broker's log.
func Start(t testing.TB, opts ...Option) *Broker {
	t.Helper()
	b, err := Launch(opts...)
	if err != nil {
		t.Fatalf("kafkalite: %v", err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Errorf("kafkalite: %v", err)
		}
	})
	return b
}

// Launch starts a broker that the caller stops with Close (for TestMain: one broker for a
// package, Reset before each test).
func Launch(opts ...Option) (*Broker, error) {
	cfg := config{timeout: 60 * time.Second}
	for _, opt := range opts {
		opt(&cfg)
	}
	command, err := Command()
	if err != nil {
		return nil, err
	}
	logFile, err := os.CreateTemp("", "kafkalite-*.log")
	if err != nil {
		return nil, err
	}
	args := append([]string{}, command[1:]...)
	args = append(args, "--host", "127.0.0.1", "--port", "0", "--controls", "0")
	args = append(args, cfg.args...)
	cmd := exec.Command(command[0], args...)
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("cannot run %v: %w", command, err)
	}
	b := &Broker{cmd: cmd, done: make(chan struct{}), LogPath: logFile.Name()}
	lines := make(chan string, 1)
	go func() {
		reader := bufio.NewReader(stdout)
		line, _ := reader.ReadString('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, reader) // the broker never blocks on a full pipe
	}()
	go func() {
		b.err = cmd.Wait()
		logFile.Close()
		close(b.done)
	}()
	select {
	case line := <-lines:
		if err := b.parseReady(strings.TrimSpace(line)); err != nil {
			b.stop()
			return nil, fmt.Errorf("%v\n%s", err, b.logTail())
		}
	case <-time.After(cfg.timeout):
		b.stop()
		return nil, fmt.Errorf("no ready line within %v from %v\n%s", cfg.timeout, command, b.logTail())
	}
	b.Controls = NewControls(b.ControlsURL)
	return b, nil
}

// parseReady reads `kafkalite ready bootstrap=H:P listeners=N://H:P,... controls=URL ...`.
func (b *Broker) parseReady(line string) error {
	if !strings.HasPrefix(line, "kafkalite ready ") {
		return fmt.Errorf("the broker did not start (first line %q)", line)
	}
	b.Listeners = map[string]string{}
	for _, token := range strings.Fields(line)[2:] {
		key, value, _ := strings.Cut(token, "=")
		switch key {
		case "bootstrap":
			b.Bootstrap = value
		case "listeners":
			for _, item := range strings.Split(value, ",") {
				if name, addr, ok := strings.Cut(item, "://"); ok {
					b.Listeners[name] = addr
				}
			}
		case "nodes":
			b.Nodes = map[int]string{}
			for _, item := range strings.Split(value, ",") {
				var id int
				if node, addr, ok := strings.Cut(item, "@"); ok {
					if _, err := fmt.Sscan(node, &id); err == nil {
						b.Nodes[id] = addr
					}
				}
			}
		case "controls":
			b.ControlsURL = value
		case "console":
			b.ConsoleURL = value
		case "schema_registry":
			b.RegistryURL = value
		case "ca":
			b.CA = value
		}
	}
	if b.Bootstrap == "" || b.ControlsURL == "" {
		return fmt.Errorf("ready line without bootstrap or controls: %q", line)
	}
	return nil
}

func (b *Broker) logTail() string {
	data, _ := os.ReadFile(b.LogPath)
	if len(data) > 4000 {
		data = data[len(data)-4000:]
	}
	return "broker log (" + b.LogPath + "):\n" + string(data)
}

// Close stops the broker (SIGTERM, then SIGKILL after 10 s) and removes its log. A broker that
// had exited before is an error naming its log.
func (b *Broker) Close() error {
	select {
	case <-b.done:
		if b.Bootstrap != "" {
			return fmt.Errorf("the broker exited before it was stopped (%v)\n%s", b.err, b.logTail())
		}
	default:
		b.stop()
	}
	return os.Remove(b.LogPath)
}

// stop ends the process: SIGTERM, then SIGKILL after 10 s; the log stays.
func (b *Broker) stop() {
	_ = b.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-b.done:
	case <-time.After(10 * time.Second):
		_ = b.cmd.Process.Kill()
		<-b.done
	}
}

// Reset puts the broker back to empty (topics, groups, offsets, transactions, ACLs, faults);
// connected clients stay connected.
func (b *Broker) Reset(t testing.TB) {
	t.Helper()
	if _, err := b.Controls.Reset(); err != nil {
		t.Fatalf("kafkalite reset: %v", err)
	}
}

// Snapshot saves the broker's whole state as name.
func (b *Broker) Snapshot(t testing.TB, name string) {
	t.Helper()
	if _, err := b.Controls.Snapshot(SnapshotArgs{Name: name}); err != nil {
		t.Fatalf("kafkalite snapshot %s: %v", name, err)
	}
}

// Restore resets the broker and puts back the state saved as name.
func (b *Broker) Restore(t testing.TB, name string) {
	t.Helper()
	if _, err := b.Controls.Restore(RestoreArgs{Name: name}); err != nil {
		t.Fatalf("kafkalite restore %s: %v", name, err)
	}
}

// AdvanceClock moves the broker's time forward; timers due by then (transaction and session
// timeouts, retention) fire at once.
func (b *Broker) AdvanceClock(t testing.TB, d time.Duration) {
	t.Helper()
	if _, err := b.Controls.AdvanceClock(AdvanceClockArgs{Ms: int(d.Milliseconds())}); err != nil {
		t.Fatalf("kafkalite advance-clock: %v", err)
	}
}

// Int, String and Bool give the pointers that optional control arguments take.
func Int(v int) *int          { return &v }
func String(v string) *string { return &v }
func Bool(v bool) *bool       { return &v }
