package events_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// consumerLimit is the per-stream consumer limit of the servers these tests run on: far fewer
// than the establishments and requests they make.
const consumerLimit = 5

// Reading one establishment, whatever the number of establishments and of concurrent readers,
// opens no consumer: every read succeeds on a server that allows only a handful per stream, and
// the stream has no consumer left afterwards.
func TestReadsOpenNoConsumer(t *testing.T) {
	t.Parallel()
	srv := natstest.StartLimited(t, consumerLimit)
	nc := natstest.Connect(t, srv)
	st := openStore(t, nc, events.Config{})
	const establishments, records = 60, 3
	last := map[string]uint64{}
	for r := range records {
		for e := range establishments {
			slug := fmt.Sprintf("est-%d", e)
			last[slug] = mustAppend(t, st, slug, last[slug], fmt.Sprintf("c-%d-%d", e, r), event("t", fmt.Sprintf(`{"r":%d}`, r)))
		}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 4*establishments)
	for e := range establishments {
		slug := fmt.Sprintf("est-%d", e)
		wg.Go(func() {
			recs, err := st.History(t.Context(), slug)
			if err == nil && len(recs) != records {
				err = fmt.Errorf("history of %s: got %d records, want %d", slug, len(recs), records)
			}
			errs <- err
		})
		wg.Go(func() {
			rec, ok, err := st.Last(t.Context(), slug)
			if err == nil && (!ok || rec.Sequence != last[slug]) {
				err = fmt.Errorf("last of %s: got %d (found %t), want %d", slug, rec.Sequence, ok, last[slug])
			}
			errs <- err
		})
		wg.Go(func() {
			// A replayed command with a stale expectation is recognised without a consumer.
			seq, err := st.Append(t.Context(), slug, 0, fmt.Sprintf("c-%d-1", e), []events.Envelope{event("t", `{"r":1}`)})
			if !errors.Is(err, events.ErrDuplicate) || seq == 0 {
				err = fmt.Errorf("replay of a stored command on %s: got sequence %d, error %v, want a duplicate", slug, seq, err)
			} else {
				err = nil
			}
			errs <- err
		})
		wg.Go(func() {
			// A stale expectation without a stored command is a conflict, found the same way.
			_, err := st.Append(t.Context(), slug, 1, fmt.Sprintf("new-%d", e), []events.Envelope{event("t", `{}`)})
			if errors.Is(err, events.ErrConflict) {
				err = nil
			} else {
				err = fmt.Errorf("stale append on %s: got %v, want a conflict", slug, err)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}

	stream := logStream(t, nc)
	info, err := stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Consumers != 0 {
		t.Errorf("consumers on %s after the reads: got %d, want 0", events.StreamName, info.State.Consumers)
	}
}

// A history longer than one batch of direct gets is read whole and in order, interleaved with
// other establishments' records.
func TestRangeAcrossBatches(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	const n = 600
	var mine, other uint64
	var want []string
	for i := range n {
		id := fmt.Sprintf("m-%d", i)
		mine = mustAppend(t, st, "long", mine, id, event("t", `{}`))
		want = append(want, id)
		if i%3 == 0 {
			other = mustAppend(t, st, "other", other, fmt.Sprintf("o-%d", i), event("t", `{}`))
		}
	}
	recs, err := st.History(t.Context(), "long")
	if err != nil {
		t.Fatalf("History: %v", err)
	}
	if got := commandIDs(recs); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("History: got %d records %v…, want %d in order", len(got), got[:min(5, len(got))], n)
	}
	for i := 1; i < len(recs); i++ {
		if recs[i].Sequence <= recs[i-1].Sequence {
			t.Fatalf("record %d has sequence %d after %d", i, recs[i].Sequence, recs[i-1].Sequence)
		}
	}

	// A range in the middle, bounded on both sides by sequences of the establishment.
	part, err := st.Range(t.Context(), "long", recs[100].Sequence, recs[400].Sequence)
	if err != nil {
		t.Fatalf("Range: %v", err)
	}
	if len(part) != 301 || part[0].CommandID != "m-100" || part[300].CommandID != "m-400" {
		t.Errorf("Range(%d, %d): got %d records from %s, want 301 from m-100 to m-400",
			recs[100].Sequence, recs[400].Sequence, len(part), part[0].CommandID)
	}

	// The records before one of them, from a sequence that is not the establishment's.
	before, err := st.Before(t.Context(), "long", recs[100].Sequence-1, recs[400].Sequence, nil)
	if err != nil {
		t.Fatalf("Before: %v", err)
	}
	if len(before) != 300 || before[0].CommandID != "m-100" || before[299].CommandID != "m-399" {
		t.Errorf("Before(%d, %d): got %d records, want 300 from m-100 to m-399",
			recs[100].Sequence-1, recs[400].Sequence, len(before))
	}
	if none, err := st.Before(t.Context(), "long", 1, recs[0].Sequence, nil); err != nil || len(none) != 0 {
		t.Errorf("Before the first record: got %d records, %v; want none", len(none), err)
	}
}

// A read that cannot reach the sequence it was asked for is an error, never a shorter history;
// one whose records pass a request's byte limit goes on in further requests.
func TestRangeIsWholeOrAnError(t *testing.T) {
	t.Parallel()
	st := newStore(t)
	big := strings.Repeat("x", 100<<10)
	var last uint64
	for i := range 20 {
		last = mustAppend(t, st, "big", last, fmt.Sprintf("b-%d", i), event("t", `{"text":"`+big+`"}`))
	}
	recs, err := st.History(t.Context(), "big")
	if err != nil || len(recs) != 20 {
		t.Fatalf("History of 2 MB of records: got %d records, %v, want 20", len(recs), err)
	}
	if recs, err := st.Range(t.Context(), "big", last+1, last+3); err == nil {
		t.Errorf("Range past the subject's last record: got %d records and no error, want an error", len(recs))
	}
}
