package projections

import (
	"testing"

	"github.com/opencarte/publisher/domain"
)

func TestVerifyComparesTheBucketWithTheLog(t *testing.T) {
	n := newNATSEnv(t)
	seq := n.importFixture(t, "../cmd/publisher/demo.json", "2026-11-22")
	r := startProjector(t, n.store, n.kv, nil)
	r.waitFor(t, seq)
	seq = n.append(t, "chez-marcel", domain.MenuRedirectChanged{Enabled: false})
	r.waitFor(t, seq)

	cfg := VerifyConfig{Log: n.store, KV: n.kv}
	rep, err := Verify(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Checked != 1 || len(rep.Differences) != 0 || rep.Position != seq {
		t.Fatalf("live bucket: got %+v, want 1 checked, no difference, position %d", rep, seq)
	}

	// A bundle altered behind the projector's back is reported, by slug.
	_ = r.stop(t) // Run returns the cancellation
	b, _, _ := entry(t, n.kv, "chez-marcel")
	b.Hours.Body = []byte(`{"content_revision":1}`)
	value, err := EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.kv.Put(testContext(t), "est.chez-marcel", value); err != nil {
		t.Fatal(err)
	}
	rep, err = Verify(testContext(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 1 || rep.Differences[0].Slug != "chez-marcel" {
		t.Errorf("altered bundle: got %+v, want one difference on chez-marcel", rep.Differences)
	}
}
