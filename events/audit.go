package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// The audit trail: who gave each accepted command, one short entry per command on its
// establishment's subject of AuditStreamName. It is a view, kept beside the log for reading newest
// first: the log's records carry the same facts in their headers. Each establishment keeps its
// last AuditConfig.Keep entries, so reading a page costs at most that many small messages.
const (
	// AuditStreamName is the stream of the audit trail.
	AuditStreamName = "AUDIT"
	// DefaultAuditKeep is how many entries an establishment keeps unless configured.
	DefaultAuditKeep = 1000
	// MaxAuditEntry bounds an entry's bytes.
	MaxAuditEntry = 4 << 10

	auditSubjectPrefix = "audit."
)

// AuditConfig configures the audit trail.
type AuditConfig struct {
	Replicas int // copies on a cluster; 0 is 1
	Keep     int // entries kept per establishment; 0 is DefaultAuditKeep
	// MemoryStorage keeps the trail in memory: for tests and demos.
	MemoryStorage bool
	// Failed, when set, is told of an entry Append sent that the stream did not store.
	Failed func(slug string, err error)
}

// Audit appends entries to the audit trail and reads them back, newest first. It is safe for
// concurrent use.
type Audit struct {
	js jetstream.JetStream
}

// Bounds of the entries sent and not yet stored: past auditPending of them, Append waits; one not
// acknowledged within auditAckWait is failed; Read waits at most auditReadWait for those sent
// before it (an import running in the same process sends them all the time).
const (
	auditPending  = 4096
	auditAckWait  = 10 * time.Second
	auditReadWait = time.Second
)

// AuditEntry is one stored entry: its position and its bytes, which this package does not read.
type AuditEntry struct {
	Sequence uint64
	Data     []byte
}

// OpenAudit creates the audit stream, or updates it to cfg, and returns its trail.
func OpenAudit(ctx context.Context, nc *nats.Conn, cfg AuditConfig) (*Audit, error) {
	if nc == nil {
		return nil, fmt.Errorf("open stream %s: nil connection", AuditStreamName)
	}
	if cfg.Keep < 0 || cfg.Replicas < 0 || cfg.Replicas > maxReplicas {
		return nil, fmt.Errorf("open stream %s: keep %d and replicas %d must be positive, replicas at most %d", AuditStreamName, cfg.Keep, cfg.Replicas, maxReplicas)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(auditPending), jetstream.WithPublishAsyncTimeout(auditAckWait),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, msg *nats.Msg, err error) {
			if cfg.Failed != nil {
				cfg.Failed(strings.TrimPrefix(msg.Subject, auditSubjectPrefix), err)
			}
		}))
	if err != nil {
		return nil, fmt.Errorf("open stream %s: %w", AuditStreamName, err)
	}
	sc := jetstream.StreamConfig{
		Name:              AuditStreamName,
		Description:       "Audit trail: who gave each accepted admin command, one subject per establishment.",
		Subjects:          []string{auditSubjectPrefix + "*"},
		Storage:           jetstream.FileStorage,
		Replicas:          max(cfg.Replicas, 1),
		MaxMsgsPerSubject: int64(cmp.Or(cfg.Keep, DefaultAuditKeep)),
		MaxMsgSize:        MaxAuditEntry,
		Discard:           jetstream.DiscardOld,
		Duplicates:        DefaultDuplicates,
		DenyDelete:        true,
		AllowDirect:       true,
	}
	if cfg.MemoryStorage {
		sc.Storage = jetstream.MemoryStorage
	}
	if _, err := js.CreateOrUpdateStream(ctx, sc); err != nil {
		return nil, fmt.Errorf("open stream %s: %w", AuditStreamName, err)
	}
	return &Audit{js: js}, nil
}

// Append sends entry to slug's trail, and returns without waiting for the stream to store it: an
// entry the stream then refuses is told to AuditConfig.Failed. Read waits for the entries this
// Audit sent. id names the command: an entry appended again under the same id within the
// stream's duplicates window is stored once.
func (a *Audit) Append(ctx context.Context, slug, id string, entry []byte) error {
	if err := checkSubjectToken(slug); err != nil {
		return fmt.Errorf("audit: %w: %w", ErrInvalidSlug, err)
	}
	if len(entry) > MaxAuditEntry {
		return fmt.Errorf("audit %s: entry of %d bytes, at most %d", slug, len(entry), MaxAuditEntry)
	}
	if _, err := a.js.PublishAsync(auditSubjectPrefix+slug, entry, jetstream.WithMsgID(id)); err != nil {
		return fmt.Errorf("audit %s: %w", slug, err)
	}
	return nil
}

// Read returns, newest first, at most limit entries of slug's trail stored before sequence before
// (0: the newest), and the sequence to pass as before for the next, older page: 0 when there are
// none. It reads the entries this Audit sent once the stream has stored them, waiting for them at
// most auditReadWait.
func (a *Audit) Read(ctx context.Context, slug string, before uint64, limit int) ([]AuditEntry, uint64, error) {
	if err := checkSubjectToken(slug); err != nil {
		return nil, 0, fmt.Errorf("audit: %w: %w", ErrInvalidSlug, err)
	}
	wait := time.NewTimer(auditReadWait)
	select {
	case <-a.js.PublishAsyncComplete():
	case <-wait.C:
	case <-ctx.Done():
		wait.Stop()
		return nil, 0, fmt.Errorf("audit %s: %w", slug, ctx.Err())
	}
	wait.Stop()
	if limit < 1 {
		return nil, 0, fmt.Errorf("audit %s: limit %d is not positive", slug, limit)
	}
	subject := auditSubjectPrefix + slug
	stream, err := a.js.Stream(ctx, AuditStreamName)
	if err != nil {
		return nil, 0, fmt.Errorf("audit %s: %w", slug, err)
	}
	msg, err := stream.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, fmt.Errorf("audit %s: %w", slug, err)
	}
	// The trail keeps a bounded number of entries per establishment: the page is the last limit
	// of those before before, read in order, with one more to know whether older ones remain.
	var page []AuditEntry
	err = walkStream(ctx, a.js, AuditStreamName, subject, jetstreamext.GetBatchSeq(1), false, msg.Sequence, func(m *jetstream.RawStreamMsg) (bool, error) {
		if before != 0 && m.Sequence >= before {
			return true, nil
		}
		if len(page) == limit+1 {
			page = append(page[:0], page[1:]...)
		}
		page = append(page, AuditEntry{Sequence: m.Sequence, Data: m.Data})
		return false, nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("audit %s: %w", slug, err)
	}
	var next uint64
	if len(page) > limit {
		page = page[1:]
		next = page[0].Sequence
	}
	slices.Reverse(page)
	return page, next, nil
}
