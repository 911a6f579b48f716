package brokertest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Kafka is a one-broker Kafka cluster in process, its data in a directory so that it survives
// Stop and Start, on a port that stays the same.
type Kafka struct {
	dir        string
	port       int
	partitions int32
	topics     []string
	mu         sync.Mutex
	auth       KafkaAuth
	c          *kfake.Cluster
}

// KafkaAuth is what the clients of a cluster must present: a SASL user when Mechanism is set
// ("PLAIN", "SCRAM-SHA-256" or "SCRAM-SHA-512"), and TLS with the listener's configuration when
// TLS is set.
type KafkaAuth struct {
	Mechanism, User, Password string
	TLS                       *tls.Config
}

// NewKafka starts a cluster storing in dir, with the topics created, each of partitions
// partitions (other topics are created when first produced to).
func NewKafka(dir string, partitions int32, topics ...string) (*Kafka, error) {
	k := &Kafka{dir: dir, partitions: partitions, topics: topics}
	if err := k.Start(); err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(k.c.ListenAddrs()[0])
	k.port, _ = strconv.Atoi(port)
	return k, nil
}

// StartKafka is NewKafka in a test's directory, closed when the test ends.
func StartKafka(tb testing.TB, partitions int32, topics ...string) *Kafka {
	tb.Helper()
	k, err := NewKafka(tb.TempDir(), partitions, topics...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(k.Stop)
	return k
}

// Brokers returns the address of the broker, as a destination registers it.
func (k *Kafka) Brokers() []string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return []string{net.JoinHostPort("127.0.0.1", strconv.Itoa(k.port))}
}

// Start starts the cluster again after Stop, with its data, on its port.
func (k *Kafka) Start() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.DataDir(k.dir), kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(int(k.partitions)), kfake.SeedTopics(k.partitions, k.topics...)}
	if k.port != 0 {
		opts = append(opts, kfake.Ports(k.port))
	}
	if k.auth.Mechanism != "" {
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser(k.auth.Mechanism, k.auth.User, k.auth.Password))
	}
	if k.auth.TLS != nil {
		opts = append(opts, kfake.TLS(k.auth.TLS))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("kfake: %w", err)
	}
	k.c = c
	return nil
}

// Stop stops the cluster, keeping its data.
func (k *Kafka) Stop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.c != nil {
		k.c.Close()
		k.c = nil
	}
}

// Require restarts the cluster, with its data on its port, requiring auth of its clients from
// then on: its SASL user replaces those saved (kfake would load saved SCRAM users over it).
func (k *Kafka) Require(auth KafkaAuth) error {
	k.Stop()
	k.mu.Lock()
	k.auth = auth
	k.mu.Unlock()
	if err := os.Remove(filepath.Join(k.dir, "sasl.json")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return k.Start()
}

// HoldProduce leaves the produce requests the cluster receives unanswered until release is
// called, then answers them: a broker that takes a publication and does not acknowledge it. A
// stopped cluster has nothing to hold.
func (k *Kafka) HoldProduce() (release func()) {
	k.mu.Lock()
	c := k.c
	k.mu.Unlock()
	if c == nil {
		return func() {}
	}
	held := make(chan struct{})
	c.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		select {
		case <-held:
			c.DropControl()
		default:
			c.SleepControl(func() { <-held })
		}
		return nil, nil, false // answered as usual, once awake
	})
	var once sync.Once
	return func() { once.Do(func() { close(held) }) }
}

// Record is a record a consumer read.
type Record struct {
	Key, Value []byte
	Headers    map[string]string
	Partition  int32
	Offset     int64
}

// Follower reads a topic from its start in the background, reconnecting when the broker comes
// back, and keeps every record it read.
type Follower struct {
	mu      sync.Mutex
	records []Record
	client  *kgo.Client
	done    chan struct{}
}

// Follow starts a follower of topic on the brokers, with the client's options opts besides
// (its SASL or TLS, say).
func Follow(brokers []string, topic string, opts ...kgo.Opt) (*Follower, error) {
	opts = append([]kgo.Opt{kgo.SeedBrokers(brokers...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, opts...)
	client, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	f := &Follower{client: client, done: make(chan struct{})}
	go f.run()
	return f, nil
}

func (f *Follower) run() {
	defer close(f.done)
	for {
		fetches := f.client.PollFetches(context.Background())
		if fetches.IsClientClosed() {
			return
		}
		fetches.EachRecord(func(r *kgo.Record) {
			rec := Record{Key: r.Key, Value: r.Value, Partition: r.Partition, Offset: r.Offset, Headers: map[string]string{}}
			for _, h := range r.Headers {
				rec.Headers[h.Key] = string(h.Value)
			}
			f.mu.Lock()
			f.records = append(f.records, rec)
			f.mu.Unlock()
		})
	}
}

// Records returns the records read so far, in the order read: per partition, by offset.
func (f *Follower) Records() []Record {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Record(nil), f.records...)
}

// Each calls fn with each record read since the last call, then forgets them: for a reader
// that keeps only what it counts.
func (f *Follower) Each(fn func(Record)) {
	f.mu.Lock()
	recs := f.records
	f.records = nil
	f.mu.Unlock()
	for _, r := range recs {
		fn(r)
	}
}

// Close stops the follower.
func (f *Follower) Close() {
	f.client.Close()
	<-f.done
}
