package destination

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// Bucket holds the destinations, one key per destination id: its registration, its sealed
// credentials, its position in the changes feed and its counters.
const Bucket = "DESTINATIONS"

// MaxDestinations bounds the destinations a service keeps: each costs a goroutine and a broker
// connection in the process that publishes.
const MaxDestinations = 100

// Errors of the store.
var (
	ErrNotFound = errors.New("destination: no such destination")
	ErrTooMany  = fmt.Errorf("destination: at most %d destinations", MaxDestinations)
)

// record is a destination as the bucket holds it.
type record struct {
	ID      string    `json:"id"`
	Spec    Spec      `json:"spec"`
	Sealed  []byte    `json:"sealed"` // Secrets as JSON, sealed with the master keys
	Created time.Time `json:"created"`
	Paused  bool      `json:"paused,omitempty"`
	// Position is the changes feed's cursor after the last page published: "" for a first sync
	// to do (start "all", or after a gap), the end of the change signals at registration for
	// start "now".
	Position string `json:"position"`
	Counters
}

// Store keeps the destinations in Bucket. It is safe for concurrent use, also from several
// processes: every write is a compare-and-set on the key's revision.
type Store struct {
	kv      jetstream.KeyValue
	keys    *webhook.MasterKeys
	signals *events.Signals
	now     func() time.Time
}

// OpenStore creates Bucket, or updates it to this configuration; keys seal the credentials, and
// signals give the position of a destination that starts now.
func OpenStore(ctx context.Context, js jetstream.JetStream, keys *webhook.MasterKeys, signals *events.Signals, replicas int) (*Store, error) {
	if keys == nil {
		return nil, errors.New("destination: master keys are required to seal credentials")
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      Bucket,
		Description: "Broker destinations of the change events, with their positions.",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("destination: bucket %s: %w", Bucket, err)
	}
	return &Store{kv: kv, keys: keys, signals: signals, now: time.Now}, nil
}

var idForm = regexp.MustCompile(`^dst_[0-9a-f]{32}$`)

// newID returns a destination id: "dst_" and 32 hex digits.
func newID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "dst_" + hex.EncodeToString(b)
}

// Create validates and stores a new destination and returns its status.
func (s *Store) Create(ctx context.Context, spec Spec, sec Secrets) (Status, error) {
	if err := spec.Validate(sec); err != nil {
		return Status{}, err
	}
	if n, err := s.count(ctx); err != nil || n >= MaxDestinations {
		return Status{}, cmp.Or(err, ErrTooMany)
	}
	plain, err := json.Marshal(sec)
	if err != nil {
		return Status{}, err
	}
	rec := &record{ID: newID(), Spec: spec, Created: s.now().UTC()}
	if spec.Start == StartNow {
		last, err := s.signals.LastSequence(ctx)
		if err != nil {
			return Status{}, fmt.Errorf("destination: the change signals: %w", err)
		}
		rec.Position = events.Cursor{Signal: last}.String()
	}
	rec.Sealed = s.keys.Seal(plain, rec.ID)
	data, err := json.Marshal(rec)
	if err != nil {
		return Status{}, err
	}
	if _, err := s.kv.Create(ctx, rec.ID, data); err != nil {
		return Status{}, fmt.Errorf("destination: store %s: %w", rec.ID, err)
	}
	// Registrations at once may each have counted room for one more: counted again once stored,
	// one past the bound takes itself back.
	if n, err := s.count(ctx); err == nil && n > MaxDestinations {
		_ = s.kv.Purge(context.WithoutCancel(ctx), rec.ID)
		return Status{}, ErrTooMany
	}
	return s.withLag(ctx, rec.status())
}

// count returns how many destinations the bucket holds.
func (s *Store) count(ctx context.Context) (int, error) {
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return 0, fmt.Errorf("destination: list: %w", err)
	}
	n := 0
	for range keys.Keys() {
		n++
	}
	return n, nil
}

// get returns the destination id and the revision it was read at.
func (s *Store) get(ctx context.Context, id string) (*record, uint64, error) {
	if !idForm.MatchString(id) {
		return nil, 0, ErrNotFound
	}
	e, err := s.kv.Get(ctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, ErrNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("destination: read %s: %w", id, err)
	}
	var rec record
	if err := json.Unmarshal(e.Value(), &rec); err != nil {
		return nil, 0, fmt.Errorf("destination: record %s: %w", id, err)
	}
	return &rec, e.Revision(), nil
}

// update applies change to the destination id and stores it, reading it again when another
// write came first.
func (s *Store) update(ctx context.Context, id string, change func(*record) error) (*record, error) {
	for {
		rec, rev, err := s.get(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := change(rec); err != nil {
			return nil, err
		}
		data, err := json.Marshal(rec)
		if err != nil {
			return nil, err
		}
		_, err = s.kv.Update(ctx, id, data, rev)
		if errors.Is(err, jetstream.ErrKeyExists) {
			continue // written meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("destination: store %s: %w", id, err)
		}
		return rec, nil
	}
}

// Get returns the status of the destination id.
func (s *Store) Get(ctx context.Context, id string) (Status, error) {
	rec, _, err := s.get(ctx, id)
	if err != nil {
		return Status{}, err
	}
	return s.withLag(ctx, rec.status())
}

// List returns every destination's status, by creation time.
func (s *Store) List(ctx context.Context) ([]Status, error) {
	recs, err := s.records(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Status, 0, len(recs))
	for _, r := range recs {
		st, err := s.withLag(ctx, r.status())
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// records reads every destination, by creation time.
func (s *Store) records(ctx context.Context) ([]*record, error) {
	keys, err := s.kv.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("destination: list: %w", err)
	}
	var recs []*record
	for k := range keys.Keys() {
		rec, _, err := s.get(ctx, k)
		if errors.Is(err, ErrNotFound) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, err
		}
		recs = append(recs, rec)
	}
	slices.SortFunc(recs, func(a, b *record) int {
		return cmpTimeThenID(a.Created, b.Created, a.ID, b.ID)
	})
	return recs, nil
}

func cmpTimeThenID(a, b time.Time, x, y string) int {
	if c := a.Compare(b); c != 0 {
		return c
	}
	return strings.Compare(x, y)
}

// Delete removes the destination id, its credentials with it.
func (s *Store) Delete(ctx context.Context, id string) error {
	if _, _, err := s.get(ctx, id); err != nil {
		return err
	}
	if err := s.kv.Purge(ctx, id); err != nil {
		return fmt.Errorf("destination: remove %s: %w", id, err)
	}
	return nil
}

// SetPaused pauses the destination id, or resumes it, and returns its status.
func (s *Store) SetPaused(ctx context.Context, id string, paused bool) (Status, error) {
	rec, err := s.update(ctx, id, func(r *record) error {
		r.Paused = paused
		return nil
	})
	if err != nil {
		return Status{}, err
	}
	return s.withLag(ctx, rec.status())
}

// secrets opens the credentials of rec, sealing them again under the newest master key when an
// older one sealed them.
func (s *Store) secrets(ctx context.Context, rec *record) (Secrets, error) {
	plain, stale, err := s.keys.Open(rec.Sealed, rec.ID)
	if err != nil {
		return Secrets{}, fmt.Errorf("destination %s: credentials: %w", rec.ID, err)
	}
	var sec Secrets
	if err := json.Unmarshal(plain, &sec); err != nil {
		return Secrets{}, fmt.Errorf("destination %s: credentials: %w", rec.ID, err)
	}
	if stale {
		_, _ = s.update(ctx, rec.ID, func(r *record) error {
			r.Sealed = s.keys.Seal(plain, r.ID)
			return nil
		})
	}
	return sec, nil
}
