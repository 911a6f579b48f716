package runner

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// testNow is the projectors' clock in tests, an hour after fixture.EventTime: the changes of
// the test logs are recent, whatever the day the tests run.
func testNow() time.Time { return fixture.EventTime.Add(time.Hour) }

func ptr[T any](v T) *T { return &v }

// renderedDraft returns the bundle of e, a draft, with every document rendered at revision, as
// a renderer that rendered drafts stored it: no document depends on the status.
func renderedDraft(e *domain.Establishment, revision int64) dockey.Bundle {
	active := *e
	active.Status = domain.StatusActive
	b := projections.RenderWith(&active, "", nil).Bundle(revision)
	b.Status = dockey.StatusDraft
	return b
}

// putBundle compresses b and stores it in kv under key, behind the projector's back, as another
// renderer or generation would have.
func putBundle(t *testing.T, kv jetstream.KeyValue, key string, b dockey.Bundle) {
	t.Helper()
	projections.Compress(&b)
	value, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(testContext(t), key, value); err != nil {
		t.Fatal(err)
	}
}

// storedSummaryOf returns the summary of b as the projector reads it back from the bucket.
func storedSummaryOf(tb testing.TB, b *dockey.Bundle) *projections.BundleSummary {
	tb.Helper()
	value, err := dockey.EncodeBundle(b)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := projections.SummarizeStored(value)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// apply applies the events of rec to its establishment and returns it, or nil when the record
// names no valid establishment. An event that cannot be decoded is logged and skipped; the other
// events of the record still apply, since the log is the truth.
func (m *model) apply(rec events.Record) *tracked {
	t := m.track(rec)
	if t != nil {
		t.apply(m.logger, rec)
	}
	return t
}
