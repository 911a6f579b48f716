package sample

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/opencarte/publisher/domain"
)

func TestEstablishmentsAreValidVariedAndDeterministic(t *testing.T) {
	today := domain.LocalDate{Year: 2026, Month: 11, Day: 24}
	const n = 2000
	slugs := map[string]bool{}
	dependent, drafts, zones, bytesTotal := 0, 0, map[string]int{}, 0
	for i := range n {
		s := Establishment(7, i, today)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		bytesTotal += len(b)
		if _, err := domain.ParseInput(bytes.NewReader(b)); err != nil {
			t.Fatalf("establishment %d is not a valid import: %v\n%s", i, err, b)
		}
		again, _ := json.Marshal(Establishment(7, i, today))
		if !bytes.Equal(b, again) {
			t.Fatalf("establishment %d differs between two generations", i)
		}
		if slugs[s.Slug] {
			t.Fatalf("slug %q generated twice", s.Slug)
		}
		slugs[s.Slug] = true
		if DateDependent(s) {
			dependent++
		}
		if s.Status == "draft" {
			drafts++
		}
		zones[s.TimeZone]++
	}
	t.Logf("%d establishments: %d date-dependent, %d drafts, zones %v, %d bytes on average", n, dependent, drafts, zones, bytesTotal/n)
	if len(zones) != len(Zones) {
		t.Errorf("got %d time zones, want %d", len(zones), len(Zones))
	}
	if dependent < n/2 || dependent > n*9/10 {
		t.Errorf("got %d date-dependent establishments of %d, want about two thirds", dependent, n)
	}
	if drafts == 0 {
		t.Errorf("no draft establishment")
	}
}
