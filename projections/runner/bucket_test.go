package runner

import (
	"errors"
	"slices"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// A bucket reached through a JetStream domain or another API prefix stores its bundles as Put
// does, without a fingerprint, and a replay reads their fingerprints from the bundles themselves.
func TestBundlesThroughADomainOrPrefixStoreNoPrints(t *testing.T) {
	n := newNATSEnv(t)
	ctx := testContext(t)
	b := projections.Render(fixture.Load(t, "../testdata/uploaded-only/snapshot.json", fixture.Date(t, "2026-03-10")), 7)
	value, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	s, err := projections.SummarizeStored(value)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := n.js.Stream(ctx, "KV_"+n.kv.Bucket())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		open func(*nats.Conn) (jetstream.JetStream, error)
	}{
		{"domain", func(nc *nats.Conn) (jetstream.JetStream, error) { return jetstream.NewWithDomain(nc, "elsewhere") }},
		{"api prefix", func(nc *nats.Conn) (jetstream.JetStream, error) {
			return jetstream.NewWithAPIPrefix(nc, "$JS.elsewhere.API")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, err := tc.open(n.js.Conn())
			if err != nil {
				t.Fatal(err)
			}
			kv := NewBundles(js, n.kv.KeyValue)
			if _, err := kv.putPrinted(ctx, dockey.Key(b.Slug), value, 42); err != nil {
				t.Fatal(err)
			}
			msg, err := stream.GetLastMsgForSubject(ctx, "$KV."+kv.Bucket()+"."+dockey.Key(b.Slug))
			if err != nil {
				t.Fatal(err)
			}
			if got := msg.Header.Get(printHeader); got != "" {
				t.Errorf("stored with header %s %q, want none", printHeader, got)
			}
			if _, _, err := headerPrints(ctx, kv, []string{b.Slug}, &reconciled{}); !errors.Is(err, errNoPrints) {
				t.Errorf("headers read: %v, want errNoPrints", err)
			}
			got, seqs, err := storedPrints(ctx, kv, []string{b.Slug}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if want := []uint64{s.Fingerprint()}; !slices.Equal(got, want) {
				t.Errorf("fingerprints read from the bundles: %x, want %x", got, want)
			}
			if want := []uint64{msg.Sequence}; !slices.Equal(seqs, want) {
				t.Errorf("sequences of the writes read from the bundles: %d, want %d", seqs, want)
			}
		})
	}
}
