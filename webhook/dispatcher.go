package webhook

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
)

// StreamName is the JetStream stream of debounce windows: open ones (scheduled messages), the
// signals they gather, and closed ones waiting to be fanned out to endpoints. It is a work queue:
// a window is gone once handled.
const StreamName = "WEBHOOK"

// QueueStreamName is the JetStream stream of deliveries to attempt. It keeps one message per
// subject, and a delivery's subject is its endpoint's: queueing a newer delivery to an endpoint
// drops the older one, even while it waits for a retry, which is how a newer revision supersedes
// an older one.
const QueueStreamName = "WEBHOOK_QUEUE"

// DeliveriesBucket is the KV bucket of the delivery log, one key
// "<endpoint id>.<delivery id>" per delivery.
const DeliveriesBucket = "WEBHOOK_DELIVERIES"

// Subjects of the webhook stream.
const (
	subjWindow  = "webhook.window."  // + slug: the open window, a scheduled message
	subjPending = "webhook.pending." // + slug: the signals of the open window, one message each
	subjDue     = "webhook.due."     // + slug: a closed window, fired by the schedule
	subjTask    = "webhook.task."    // + slug.endpoint: the endpoint's latest delivery
	subjManual  = "webhook.manual."  // + slug.endpoint.delivery: a redelivery asked for by an operator
)

// Durable consumers. Every dispatcher process binds to the same three, so each message is
// worked on by one dispatcher at a time.
const (
	consumerSignals = "webhook" // on the SIGNALS stream
	consumerDue     = "webhook-due"
	consumerDeliver = "webhook-deliver"
)

const (
	// streamMaxAge drops what the streams still hold after a week: a dispatcher down for that
	// long loses its queue, not the content, which receivers re-read.
	streamMaxAge = 7 * 24 * time.Hour
	// streamDuplicates is how long a fan-out's message ids are remembered, so that a closed
	// window processed twice queues each delivery once.
	streamDuplicates = 10 * time.Minute
	// stepAckWait is the ack wait of the signal and window consumers, whose work is a few
	// NATS round trips.
	stepAckWait = 30 * time.Second
	// retryStep is the delay before a message whose handling failed on NATS is tried again.
	retryStep = time.Second
	// stepWorkers is the number of signals, and of closed windows, handled at a time.
	stepWorkers = 16
)

// Dispatcher turns change signals into signed deliveries: it debounces them per establishment,
// fans each closed window out to the establishment's endpoints, delivers with retries and keeps
// the delivery log. Several dispatchers may run against the same NATS: they share the work.
//
// Open prepares the JetStream resources and starts following the endpoints; Run does the
// delivery work. A process that only administers endpoints opens a Dispatcher without running
// it: the Registry, Ping, Redeliver, DeliveryLog and Stats work either way.
type Dispatcher struct {
	cfg      Config
	logger   *slog.Logger
	policy   addressPolicy
	resolver *net.Resolver
	client   *http.Client

	js         jetstream.JetStream
	stream     jetstream.Stream // windows
	queue      jetstream.Stream // deliveries
	endpoints  jetstream.KeyValue
	deliveries jetstream.KeyValue
	signals    jetstream.Consumer
	due        jetstream.Consumer
	deliver    jetstream.Consumer

	vault      *vault
	mirror     *mirror
	sigs       *events.Signals
	platform   platformWindow
	turns      turns // one attempt in flight per endpoint
	stopMirror context.CancelFunc
	running    atomic.Bool
}

// Reconnected tells the dispatcher that its connection came back after a disconnection: its
// mirror of the endpoints watches again at once, rather than when the client notices that the
// watch's consumer went with its server.
func (d *Dispatcher) Reconnected() { d.mirror.again() }

// Open creates or updates the SIGNALS and WEBHOOK streams, the endpoint and delivery buckets and
// the dispatcher's consumers, and starts mirroring the endpoints. The caller keeps ownership of
// nc and calls Close when done.
func Open(ctx context.Context, nc *nats.Conn, cfg Config) (*Dispatcher, error) {
	if nc == nil {
		return nil, errors.New("open webhook dispatcher: nil connection")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("open webhook dispatcher: %w", err)
	}
	cfg = cfg.withDefaults()
	d := &Dispatcher{
		cfg:      cfg,
		logger:   cfg.Logger,
		policy:   addressPolicy{allowAll: cfg.AllowPrivate, allowed: cfg.AllowedNetworks, hint: cfg.AllowHint},
		resolver: net.DefaultResolver,
	}
	d.client = newClient(cfg, d.policy)
	if err := d.open(ctx, nc); err != nil {
		return nil, fmt.Errorf("open webhook dispatcher: %w", err)
	}
	mctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	m, err := startMirror(mctx, d.endpoints, d.logger)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("open webhook dispatcher: watch %s: %w", EndpointsBucket, err)
	}
	d.mirror, d.stopMirror = m, cancel
	return d, nil
}

// open creates or updates the streams, buckets and consumers the dispatcher uses.
func (d *Dispatcher) open(ctx context.Context, nc *nats.Conn) error {
	var err error
	if d.js, err = jetstream.New(nc, jetstream.WithDefaultTimeout(requestTimeout)); err != nil {
		return err
	}
	signals, err := d.openStreams(ctx, nc)
	if err != nil {
		return err
	}
	if err := d.openBuckets(ctx); err != nil {
		return err
	}
	return d.openConsumers(ctx, signals)
}

// directGets says whether the WEBHOOK and WEBHOOK_QUEUE streams answer direct gets: only with
// one replica. With more, they are read from their leader alone, as direct gets are answered by
// any replica, one that has not yet applied the last writes included, and the dispatcher decides
// on what it reads just after writing it: a window closing must see the signal appended by a
// handler that found the window open, or that signal would wait, unannounced, for the
// establishment's next change; a delivery queued must see the one it supersedes, or that one's
// resources would be lost to its receiver. A read from the leader costs more (88 µs against
// 36 µs on two cores, a server in process), so a single node keeps direct gets.
func directGets(replicas int) bool { return replicas <= 1 }

// openStreams creates or updates the SIGNALS, WEBHOOK and WEBHOOK_QUEUE streams; it returns
// SIGNALS.
func (d *Dispatcher) openStreams(ctx context.Context, nc *nats.Conn) (signals jetstream.Stream, err error) {
	if d.sigs, err = events.OpenSignals(ctx, nc, d.cfg.Replicas); err != nil {
		return nil, err
	}
	signals, err = d.js.Stream(ctx, events.SignalStreamName)
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", events.SignalStreamName, err)
	}
	d.stream, err = d.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              StreamName,
		Description:       "Webhook dispatch: debounce windows, closed windows and queued deliveries.",
		Subjects:          []string{subjWindow + "*", subjPending + "*", subjDue + "*"},
		Retention:         jetstream.WorkQueuePolicy,
		Discard:           jetstream.DiscardOld,
		MaxAge:            streamMaxAge,
		Storage:           jetstream.FileStorage,
		Replicas:          d.cfg.Replicas,
		AllowMsgSchedules: true,
		AllowRollup:       true,
		AllowDirect:       directGets(d.cfg.Replicas),
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", StreamName, err)
	}
	d.queue, err = d.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:              QueueStreamName,
		Description:       "Webhook deliveries: the latest per endpoint, and redeliveries.",
		Subjects:          []string{subjTask + "*.*", subjManual + "*.*.*"},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		MaxMsgsPerSubject: 1,
		MaxAge:            streamMaxAge,
		Storage:           jetstream.FileStorage,
		Replicas:          d.cfg.Replicas,
		Duplicates:        streamDuplicates,
		AllowDirect:       directGets(d.cfg.Replicas),
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", QueueStreamName, err)
	}
	return signals, nil
}

// openBuckets creates or updates the endpoint and delivery buckets, and opens the vault of
// signing secrets.
func (d *Dispatcher) openBuckets(ctx context.Context) error {
	var err error
	d.endpoints, err = d.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      EndpointsBucket,
		Description: "Webhook endpoints and their signing secrets.",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    d.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("bucket %s: %w", EndpointsBucket, err)
	}
	if d.vault, err = openVault(ctx, d.js, d.cfg.MasterKeys, d.cfg.Replicas); err != nil {
		return err
	}
	d.deliveries, err = d.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      DeliveriesBucket,
		Description: "Webhook delivery log.",
		History:     1,
		TTL:         d.cfg.LogRetention,
		Storage:     jetstream.FileStorage,
		Replicas:    d.cfg.Replicas,
	})
	if err != nil {
		return fmt.Errorf("bucket %s: %w", DeliveriesBucket, err)
	}
	return nil
}

// openConsumers creates or updates the dispatcher's durable consumers: of signals, on the
// signals stream, of closed windows and of deliveries.
func (d *Dispatcher) openConsumers(ctx context.Context, signals jetstream.Stream) error {
	var err error
	d.signals, err = signals.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       consumerSignals,
		Description:   "Webhook dispatchers: change signals to debounce.",
		FilterSubject: events.SignalSubjects,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       stepAckWait,
		MaxDeliver:    -1,
		MaxAckPending: 4 * stepWorkers * 16,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", consumerSignals, err)
	}
	d.due, err = d.stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       consumerDue,
		Description:   "Webhook dispatchers: closed windows to fan out.",
		FilterSubject: subjDue + "*",
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       stepAckWait,
		MaxDeliver:    -1,
		MaxAckPending: 4 * stepWorkers * 16,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", consumerDue, err)
	}
	d.deliver, err = d.queue.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:        consumerDeliver,
		Description:    "Webhook dispatchers: deliveries to attempt.",
		FilterSubjects: []string{subjTask + "*.*", subjManual + "*.*.*"},
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        d.attemptAckWait(),
		MaxDeliver:     -1,
		// Deliveries waiting for a retry count as pending acks: no limit, so a receiver that is
		// down never holds up deliveries to the others. Concurrency is bounded by the pull size.
		MaxAckPending: -1,
	})
	if err != nil {
		return fmt.Errorf("consumer %s: %w", consumerDeliver, err)
	}
	return nil
}

// attemptAckWait leaves one attempt, bounded by Timeout, and its bookkeeping ample time before
// JetStream would hand the delivery to another dispatcher.
func (d *Dispatcher) attemptAckWait() time.Duration { return d.cfg.Timeout + 30*time.Second }

func newClient(cfg Config, policy addressPolicy) *http.Client {
	dialer := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second, Control: policy.control}
	transport := &http.Transport{
		Proxy:                  nil, // a proxy would hide the receiver's address from the policy
		DialContext:            dialer.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:    cfg.Timeout,
		ResponseHeaderTimeout:  cfg.Timeout,
		MaxIdleConns:           4 * cfg.Concurrency,
		MaxIdleConnsPerHost:    cfg.Concurrency,
		IdleConnTimeout:        90 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
		DisableCompression:     true,
		ForceAttemptHTTP2:      true,
	}
	return &http.Client{
		Transport: transport,
		Timeout:   cfg.Timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse // a redirect is an answer, and not a 2xx
		},
	}
}

// Registry returns the endpoint registry.
func (d *Dispatcher) Registry() *Registry { return &Registry{d: d} }

// Close stops following the endpoints and closes idle connections to receivers. It does not
// close the NATS connection. Call it after Run has returned.
func (d *Dispatcher) Close() {
	d.stopMirror()
	<-d.mirror.done
	d.client.CloseIdleConnections()
}

// Run debounces signals and delivers until ctx ends, then finishes the attempts in flight and
// returns nil. It returns early with an error when a consumer goes away. Only one Run per
// Dispatcher at a time; run more dispatchers, in this process or others, to share the load.
func (d *Dispatcher) Run(ctx context.Context) error {
	if !d.running.CompareAndSwap(false, true) {
		return errors.New("run webhook dispatcher: already running")
	}
	defer d.running.Store(false)
	if err := d.mirror.wait(ctx); err != nil {
		return nil // ctx ended before the endpoints were read
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	var wg sync.WaitGroup
	loop := func(name string, c jetstream.Consumer, workers int, handle func(context.Context, jetstream.Msg)) {
		wg.Go(func() {
			if err := d.consume(ctx, name, c, workers, handle); err != nil {
				errc <- err
			}
		})
	}
	loop(consumerSignals, d.signals, stepWorkers, d.handleSignal)
	loop(consumerDue, d.due, stepWorkers, d.handleDue)
	loop(consumerDeliver, d.deliver, d.cfg.Concurrency, d.handleTask)

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		d.logger.Error("webhook dispatcher stopping", "err", err)
	}
	cancel()
	wg.Wait()
	return err
}

// consume hands the consumer's messages to workers until ctx ends. Handlers get a context that
// outlives ctx, so that an attempt in flight at shutdown is finished and recorded.
func (d *Dispatcher) consume(ctx context.Context, name string, c jetstream.Consumer, workers int, handle func(context.Context, jetstream.Msg)) error {
	it, err := c.Messages(jetstream.PullMaxMessages(workers))
	if err != nil {
		return fmt.Errorf("consume %s: %w", name, err)
	}
	defer it.Stop()
	jobs := make(chan jetstream.Msg)
	var wg sync.WaitGroup
	work := context.WithoutCancel(ctx)
	for range workers {
		wg.Go(func() {
			for msg := range jobs {
				handle(work, msg)
			}
		})
	}
	defer func() {
		close(jobs)
		wg.Wait()
	}()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		switch {
		case ctx.Err() != nil:
			if msg != nil {
				_ = msg.Nak()
			}
			return nil
		case errors.Is(err, jetstream.ErrMsgIteratorClosed):
			return fmt.Errorf("consume %s: %w", name, err)
		case err != nil:
			d.logger.Warn("webhook consumer", "consumer", name, "err", err)
			continue
		}
		select {
		case jobs <- msg:
		case <-ctx.Done():
			_ = msg.Nak()
			return nil
		}
	}
}

// nakLater asks for msg again after retryStep, logging why.
func (d *Dispatcher) nakLater(msg jetstream.Msg, what string, err error) {
	d.logger.Warn("webhook: "+what+", will retry", "subject", msg.Subject(), "err", err)
	if nerr := msg.NakWithDelay(retryStep); nerr != nil {
		d.logger.Warn("webhook: nak", "subject", msg.Subject(), "err", nerr)
	}
}

// term drops msg for good, logging why.
func (d *Dispatcher) term(msg jetstream.Msg, why string, err error) {
	d.logger.Error("webhook: "+why+", dropped", "subject", msg.Subject(), "err", err)
	if terr := msg.TermWithReason(why); terr != nil {
		d.logger.Warn("webhook: term", "subject", msg.Subject(), "err", terr)
	}
}
