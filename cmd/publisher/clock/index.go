package clock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/app"
)

// IndexBucket is the KV bucket of the calendar index: one key per establishment.
const IndexBucket = "CALENDAR"

// completeKey marks an index that holds every establishment of the log; slugs never start with
// an underscore.
const completeKey = "_complete"

// maxPutAttempts bounds the retries of an index write that lost a race with another writer.
const maxPutAttempts = 5

// Entry is what the index holds of one establishment: its calendar as of one record of the log.
type Entry struct {
	Calendar app.Calendar
	Sequence uint64 // the record the calendar is as of
}

func (e Entry) value() []byte {
	return []byte(strconv.FormatUint(e.Sequence, 10) + " " + e.Calendar.String())
}

func parseEntry(b []byte) (Entry, error) {
	seq, cal, ok := strings.Cut(string(b), " ")
	if !ok {
		return Entry{}, fmt.Errorf("index entry %q: no sequence", b)
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("index entry %q: %w", b, err)
	}
	c, err := app.ParseCalendar(cal)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Calendar: c, Sequence: n}, nil
}

// Index is the calendar index: for every establishment, the calendar after its latest record
// known to the clock. It is derived from the log (each record's calendar header) and can be
// deleted: the clock then rebuilds it from every establishment's state.
type Index struct {
	js jetstream.JetStream
	kv jetstream.KeyValue
}

// OpenIndex creates the index bucket, or updates it to this configuration.
func OpenIndex(ctx context.Context, nc *nats.Conn, replicas int) (*Index, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", IndexBucket, err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      IndexBucket,
		Description: "Calendar index of the clock: time zone, date dependence and recorded day per establishment.",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    max(replicas, 1),
	})
	if err != nil {
		return nil, fmt.Errorf("open bucket %s: %w", IndexBucket, err)
	}
	return &Index{js: js, kv: kv}, nil
}

// Put stores e for slug unless the index already holds an entry as of a later record: writers in
// any order, in any number of processes, leave the latest. An establishment that is not date
// dependent and has no entry gets none: the clock never has to wake it.
func (x *Index) Put(ctx context.Context, slug string, e Entry) error {
	for range maxPutAttempts {
		cur, err := x.kv.Get(ctx, slug)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound) && !e.Calendar.Dependent:
			return nil
		case errors.Is(err, jetstream.ErrKeyNotFound):
			_, err = x.kv.Create(ctx, slug, e.value())
			if errors.Is(err, jetstream.ErrKeyExists) {
				continue
			}
		case err != nil:
		default:
			if old, perr := parseEntry(cur.Value()); perr == nil && old.Sequence >= e.Sequence {
				return nil
			}
			_, err = x.kv.Update(ctx, slug, e.value(), cur.Revision())
			if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
				continue
			}
		}
		if err != nil {
			return fmt.Errorf("index %s: %w", slug, err)
		}
		return nil
	}
	return fmt.Errorf("index %s: kept losing races with other writers", slug)
}

// Scan calls fn with every entry of the index, until fn fails. Entries that cannot be read are
// passed over; they are replaced by the next record of their establishment.
func (x *Index) Scan(ctx context.Context, fn func(slug string, e Entry) error) error {
	w, err := x.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("scan %s: %w", IndexBucket, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case kve, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("scan %s: watcher closed", IndexBucket)
			}
			if kve == nil {
				return nil // every entry has been seen
			}
			if strings.HasPrefix(kve.Key(), "_") {
				continue
			}
			e, err := parseEntry(kve.Value())
			if err != nil {
				continue
			}
			if err := fn(kve.Key(), e); err != nil {
				return err
			}
		}
	}
}

// Complete reports whether the index holds every establishment: it was rebuilt from their
// states once, and kept since by the log's headers.
func (x *Index) Complete(ctx context.Context) (bool, error) {
	_, err := x.kv.Get(ctx, completeKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("index %s: %w", completeKey, err)
	}
	return true, nil
}

// setComplete marks the index complete, or not.
func (x *Index) setComplete(ctx context.Context, complete bool) error {
	var err error
	if complete {
		_, err = x.kv.Put(ctx, completeKey, []byte("1"))
	} else if err = x.kv.Delete(ctx, completeKey); errors.Is(err, jetstream.ErrKeyNotFound) {
		err = nil
	}
	if err != nil {
		return fmt.Errorf("index %s: %w", completeKey, err)
	}
	return nil
}

// reset empties the index, its completeness mark included.
func (x *Index) reset(ctx context.Context) error {
	st, err := x.js.Stream(ctx, "KV_"+IndexBucket)
	if err == nil {
		err = st.Purge(ctx)
	}
	if err != nil {
		return fmt.Errorf("empty %s: %w", IndexBucket, err)
	}
	return nil
}
