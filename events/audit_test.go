package events_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// TestAuditPagesNewestFirst appends entries to two establishments' trails and wants each read
// back newest first in pages, without the other's, and an entry appended twice under one id
// stored once.
func TestAuditPagesNewestFirst(t *testing.T) {
	ctx := context.Background()
	nc := natstest.Connect(t, natstest.Start(t))
	a, err := events.OpenAudit(ctx, nc, events.AuditConfig{Keep: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 7 {
		for _, slug := range []string{"alpha", "beta"} {
			if err := a.Append(ctx, slug, slug+strconv.Itoa(i), []byte(fmt.Sprintf("%s %d", slug, i))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := a.Append(ctx, "alpha", "alpha6", []byte("alpha 6 again")); err != nil {
		t.Fatal(err)
	}
	// Keep 5: entries 2 to 6 remain, read as 6 5, 4 3, 2.
	var got []string
	var pages int
	for before := uint64(0); ; pages++ {
		page, next, err := a.Read(ctx, "alpha", before, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range page {
			got = append(got, string(e.Data))
		}
		if next == 0 {
			break
		}
		before = next
	}
	want := []string{"alpha 6", "alpha 5", "alpha 4", "alpha 3", "alpha 2"}
	if fmt.Sprint(got) != fmt.Sprint(want) || pages != 2 {
		t.Fatalf("read %q in %d pages after the first, want %q in 2", got, pages, want)
	}
	if page, next, err := a.Read(ctx, "gamma", 0, 10); err != nil || len(page) != 0 || next != 0 {
		t.Fatalf("an establishment without entries: %v, %d, %v", page, next, err)
	}
	if _, _, err := a.Read(ctx, "a.b", 0, 10); err == nil {
		t.Fatal("a slug that is not one subject token was read")
	}
	if err := a.Append(ctx, "alpha", "big", make([]byte, events.MaxAuditEntry+1)); err == nil {
		t.Fatal("an entry over MaxAuditEntry was stored")
	}
}
