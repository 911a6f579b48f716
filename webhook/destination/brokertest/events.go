package brokertest

import (
	"time"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook/destination"
)

// Events returns an event of the establishment slug at each revision, read at the sequence of
// its revision, a second apart.
func Events(slug string, revs ...int64) []destination.Event {
	var evs []destination.Event
	for i, rev := range revs {
		evs = append(evs, destination.NewEvent("https://menus.example", events.Change{
			Establishment: slug, Revision: rev, Resources: []string{"hours"}, Served: true,
			Seq: uint64(rev), At: time.Date(2026, 11, 29, 9, 0, i, 0, time.UTC),
		}))
	}
	return evs
}

// Interleaved returns the events of revisions 1 to n of each slug, revision by revision: each
// slug's in order, the slugs' mixed.
func Interleaved(n int64, slugs ...string) []destination.Event {
	var evs []destination.Event
	for rev := int64(1); rev <= n; rev++ {
		for _, slug := range slugs {
			evs = append(evs, Events(slug, rev)...)
		}
	}
	return evs
}
