package projections

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/fixture"
)

// dayAhead returns the dated golden establishment, served, on 2026-11-19 with 2026-11-20 ahead
// (a new dish of the day) from the instant it returns.
func dayAhead(t *testing.T) (*domain.Establishment, int64) {
	t.Helper()
	e := fixture.Load(t, "testdata/dated/snapshot.json", fixture.Date(t, "2026-11-19"))
	e.PublicAPIEnabled, e.APIKeyHash = true, domain.NewAPIKey([32]byte{1}).Hash()
	starts := time.Date(2026, 11, 19, 23, 0, 0, 0, time.UTC)
	e.Ahead, e.AheadStarts = fixture.Date(t, "2026-11-20"), starts
	return e, starts.Unix()
}

// The day ahead takes a revision above the current one, keeps it while nothing changes, rises
// above a current one that rose past it, and becomes the current revision once its day is
// recorded with the same documents.
func TestDayAheadRevisions(t *testing.T) {
	e, starts := dayAhead(t)
	current := Render(e, 100)
	cur := Summarize(&current)
	next := AheadOf(e)
	if next.Today != e.Ahead || !next.Ahead.IsZero() {
		t.Fatalf("AheadOf: today %v ahead %v, want today %v and no day ahead", next.Today, next.Ahead, e.Ahead)
	}
	a := NextAhead(nil, cur, render(next, nil), starts)
	if a.None || !a.Write || a.Bundle.Revision != 101 || a.Bundle.Base != 100 || a.Bundle.Starts != starts {
		t.Fatalf("first day ahead: none %v write %v revision %d base %d starts %d; want written at 101 over 100 from %d",
			a.None, a.Write, a.Bundle.Revision, a.Bundle.Base, a.Bundle.Starts, starts)
	}
	ahead := Summarize(&a.Bundle)
	if again := NextAhead(ahead, cur, render(next, nil), starts); again.Write || again.None || again.Bundle.Revision != 101 {
		t.Errorf("same day ahead again: write %v none %v revision %d; want nothing to write at 101", again.Write, again.None, again.Bundle.Revision)
	}

	// A change of content rises above the day ahead, which rises above it in turn.
	e.Identity.Name = "Autre nom"
	u := NextOver(cur, ahead, render(e, nil), 101)
	if !u.Write || u.Bundle.Revision != 102 {
		t.Fatalf("change beside the day ahead: write %v at %d, want a rise to 102", u.Write, u.Bundle.Revision)
	}
	cur = Summarize(&u.Bundle)
	a = NextAhead(ahead, cur, render(AheadOf(e), nil), starts)
	if !a.Write || a.Bundle.Revision != 103 || a.Bundle.Base != 102 {
		t.Fatalf("day ahead after the change: write %v revision %d base %d, want written at 103 over 102", a.Write, a.Bundle.Revision, a.Bundle.Base)
	}
	ahead = Summarize(&a.Bundle)

	// The day recorded: the current bundle takes the day ahead's revision and bytes.
	day := *e
	day.Today, day.Ahead, day.AheadStarts = e.Ahead, domain.LocalDate{}, time.Time{}
	u = NextOver(cur, ahead, render(&day, nil), 500)
	if !u.Write || u.Bundle.Revision != 103 || len(u.Resources) == 0 {
		t.Fatalf("day started: write %v at %d announcing %v; want the day ahead's 103, announced", u.Write, u.Bundle.Revision, u.Resources)
	}
	promoted := a.Bundle
	promoted.Base, promoted.Starts = 0, 0
	if diff := ChangedResources(&promoted, &u.Bundle); len(diff) != 0 {
		t.Errorf("day started: documents differ from the day ahead's in %v", diff)
	}

	// Another change on the recorded day rises above everything so far.
	day.Identity.Name = "Encore un autre"
	if u := NextOver(Summarize(&u.Bundle), nil, render(&day, nil), 104); u.Bundle.Revision != 104 {
		t.Errorf("change after the day started: revision %d, want 104", u.Bundle.Revision)
	}
}

// No day ahead is kept for an establishment whose documents do not change with the date, nor for
// one that is not served.
func TestDayAheadNone(t *testing.T) {
	e, starts := dayAhead(t)
	e.SpecialHours, e.MenuTypes = nil, nil
	current := Render(e, 7)
	if a := NextAhead(nil, Summarize(&current), render(AheadOf(e), nil), starts); !a.None {
		t.Errorf("same documents on the next day: got a day ahead at %d, want none", a.Bundle.Revision)
	}
	e, starts = dayAhead(t)
	e.PublicAPIEnabled = false
	current = Render(e, 7)
	if a := NextAhead(nil, Summarize(&current), render(AheadOf(e), nil), starts); !a.None {
		t.Errorf("not served: got a day ahead at %d, want none", a.Bundle.Revision)
	}
	if a := NextAhead(nil, nil, render(AheadOf(e), nil), starts); !a.None {
		t.Errorf("no current bundle: got a day ahead at %d, want none", a.Bundle.Revision)
	}
}

// The start of a day ahead, nothing else changed, is decided from the day ahead's summary alone
// (Started) as NextSummaryOver decides it from the day's rendering: beside a current bundle at
// each of two revisions, with a day ahead kept at its own revision or one above.
func TestStartedDecidesAsTheDayRendered(t *testing.T) {
	e, starts := dayAhead(t)
	day := AheadOf(e)
	opts := cmp.AllowUnexported(BundleSummary{}, docSummary{})
	for _, revision := range []int64{100, 5000} {
		current := Render(e, revision)
		current.Sequence = 40
		cur := Summarize(&current)
		for _, prev := range []*BundleSummary{nil, Summarize(ptr(Render(day, revision+7)))} {
			ahead, write := NextAheadSummary(prev, cur, render(day, nil), starts, 41)
			if ahead == nil || !write && prev == nil {
				t.Fatalf("beside %d: no day ahead decided", revision)
			}
			want, write := NextSummaryOver(cur, ahead, render(day, nil), 6000, 42)
			if !write {
				t.Fatalf("beside %d: the day started writes nothing", revision)
			}
			if diff := cmp.Diff(want, ahead.Started(42), opts); diff != "" {
				t.Errorf("beside %d, day ahead at %d: (-NextSummaryOver +Started):\n%s", revision, ahead.Revision(), diff)
			}
		}
	}
}
