package runner

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// sim projects records in memory the way the projector does, without a bucket: what it would
// write becomes the stored bundle.
type sim struct {
	tb      testing.TB
	m       *model
	seq     uint64
	written map[string]*dockey.Bundle // the last bundle written per slug
}

func newSim(tb testing.TB) *sim {
	return &sim{tb: tb, m: newModel(slog.New(slog.DiscardHandler)), written: map[string]*dockey.Bundle{}}
}

// record appends one record of events for slug and returns what the projector decides.
func (s *sim) record(slug string, evs ...domain.Event) projections.Update {
	s.tb.Helper()
	s.seq++
	return s.raw(events.Record{Sequence: s.seq, CommandID: "c", Establishment: slug, Events: fixture.Envelopes(s.tb, evs...)})
}

func (s *sim) raw(rec events.Record) projections.Update {
	s.tb.Helper()
	t := s.m.apply(rec)
	if t == nil {
		return projections.Update{}
	}
	u, ok := t.project(rec.Sequence, "")
	if ok && u.Write {
		t.stored = projections.Summarize(&u.Bundle)
		b := u.Bundle
		s.written[rec.Establishment] = &b
	}
	return u
}

func (s *sim) stored(slug string) *dockey.Bundle { return s.written[slug] }

// checkRevisions fails unless every document of b carries b's revision.
func checkRevisions(tb testing.TB, b *dockey.Bundle) {
	tb.Helper()
	docs := map[string]dockey.Document{
		"establishment": b.Establishment, "hours": b.Hours,
		"menus.all": b.Menus.All, "menus.fr": b.Menus.FR, "menus.en": b.Menus.EN,
	}
	for slug, v := range b.MenuDetails {
		docs["menu."+slug+".all"], docs["menu."+slug+".fr"], docs["menu."+slug+".en"] = v.All, v.FR, v.EN
	}
	for name, d := range docs {
		var doc struct {
			Revision int64 `json:"content_revision"`
		}
		if err := json.Unmarshal(d.Body, &doc); err != nil {
			tb.Fatalf("%s: %v", name, err)
		}
		if doc.Revision != b.Revision {
			tb.Errorf("%s: content_revision %d, want the bundle's %d", name, doc.Revision, b.Revision)
		}
	}
}

func TestRevisionFollowsVisibleChanges(t *testing.T) {
	s := newSim(t)
	snap := fixture.ReadSnapshot(t, "../../cmd/publisher/demo.json")
	const slug = "chez-marcel"
	imported := fixture.ImportEvents(t, domain.New(slug), snap)
	agg := func() *domain.Establishment { return s.m.byslug[slug].agg }

	steps := []struct {
		name          string
		events        func() []domain.Event
		wantWrite     bool
		wantRevision  int64
		wantResources []string
	}{
		{
			name:          "import creates every document at the record's sequence",
			events:        func() []domain.Event { return imported },
			wantWrite:     true,
			wantRevision:  1,
			wantResources: []string{"establishment", "hours", "menus", "menus/la-carte", "menus/vins", "jsonld"},
		},
		{
			name:          "the first day makes the daily menu current",
			events:        func() []domain.Event { return []domain.Event{domain.DayStarted{Date: fixture.Date(t, "2026-11-22")}} },
			wantWrite:     true,
			wantRevision:  2,
			wantResources: []string{"hours", "menus", "menus/menu-du-jour", "jsonld"},
		},
		{
			name: "a webhook registration changes nothing public",
			events: func() []domain.Event {
				return []domain.Event{domain.WebhookRegistered{Endpoint: domain.WebhookEndpoint{ID: "w1", URL: "https://hooks.example.fr/x"}}}
			},
			wantRevision: 2,
		},
		{
			name: "a new version of a menu type without web delivery changes nothing public",
			events: func() []domain.Event {
				return []domain.Event{domain.MenuVersionPublished{MenuType: "traiteur", Version: domain.MenuVersion{
					ID: "v2", Assets: []domain.Asset{{LanguageScope: "fr", URLs: []string{"https://cdn.example.fr/traiteur-v2.pdf"}}},
					Sections: []domain.Section{},
				}}}
			},
			wantRevision: 2,
		},
		{
			name: "a regenerated key rewrites the bundle at the same revision",
			events: func() []domain.Event {
				return []domain.Event{domain.APIKeyRegenerated{KeyHash: domain.NewAPIKey([32]byte{9}).Hash()}}
			},
			wantWrite:    true,
			wantRevision: 2,
		},
		{
			name:         "the redirect setting rewrites the bundle at the same revision",
			events:       func() []domain.Event { return []domain.Event{domain.MenuRedirectChanged{Enabled: false}} },
			wantWrite:    true,
			wantRevision: 2,
		},
		{
			name:          "the next day changes the daily menu",
			events:        func() []domain.Event { return []domain.Event{domain.DayStarted{Date: fixture.Date(t, "2026-11-23")}} },
			wantWrite:     true,
			wantRevision:  7,
			wantResources: []string{"menus", "menus/menu-du-jour", "jsonld"},
		},
		{
			name: "an identity change touches the establishment only",
			events: func() []domain.Event {
				id := agg().Identity
				id.Name = "Chez Marcel et Fils"
				return []domain.Event{domain.IdentityChanged{Identity: id}}
			},
			wantWrite:     true,
			wantRevision:  8,
			wantResources: []string{"establishment", "jsonld"},
		},
		{
			name:         "a day without a new version and with the same exceptions changes nothing",
			events:       func() []domain.Event { return []domain.Event{domain.DayStarted{Date: fixture.Date(t, "2026-11-24")}} },
			wantRevision: 8,
		},
		{
			name:          "disabling the api is an access change, announced as a transition",
			events:        func() []domain.Event { return []domain.Event{domain.PublicAPIDisabled{}} },
			wantWrite:     true,
			wantRevision:  8,
			wantResources: []string{"establishment", "hours", "menus", "menus/la-carte", "menus/menu-du-jour", "menus/vins", "jsonld"},
		},
		{
			name:          "removing a menu type removes its detail",
			events:        func() []domain.Event { return []domain.Event{domain.MenuTypeRemoved{MenuType: "vins"}} },
			wantWrite:     true,
			wantRevision:  11,
			wantResources: []string{"menus", "menus/vins", "jsonld"},
		},
		{
			name:          "a passing exception leaves the hours",
			events:        func() []domain.Event { return []domain.Event{domain.DayStarted{Date: fixture.Date(t, "2026-12-25")}} },
			wantWrite:     true,
			wantRevision:  12,
			wantResources: []string{"hours", "jsonld"},
		},
		{
			name: "removing a webhook and the same day again change nothing",
			events: func() []domain.Event {
				return []domain.Event{domain.WebhookRemoved{ID: "w1"}, domain.DayStarted{Date: fixture.Date(t, "2026-12-25")}}
			},
			wantRevision: 12,
		},
	}
	for _, step := range steps {
		before := s.stored(slug)
		u := s.record(slug, step.events()...)
		got := s.stored(slug)
		if u.Write != step.wantWrite {
			t.Errorf("%s: write %v, want %v", step.name, u.Write, step.wantWrite)
		}
		if got.Revision != step.wantRevision {
			t.Errorf("%s: revision %d, want %d", step.name, got.Revision, step.wantRevision)
		}
		if diff := cmp.Diff(step.wantResources, u.Resources); diff != "" {
			t.Errorf("%s: resources (-want +got):\n%s", step.name, diff)
		}
		if before != nil && got.Revision < before.Revision {
			t.Errorf("%s: revision went back from %d to %d", step.name, before.Revision, got.Revision)
		}
		checkRevisions(t, got)
	}
	if got := s.stored(slug); got.APIEnabled || got.KeyHash != "" || got.MenuRedirectEnabled {
		t.Errorf("access fields not followed: api %v key %q redirect %v", got.APIEnabled, got.KeyHash, got.MenuRedirectEnabled)
	}
}

func TestRevisionNeverGoesBack(t *testing.T) {
	e := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	c := projections.RenderWith(e, "", nil)
	stored := c.Bundle(100) // stored by an earlier projector, ahead of the log

	t.Run("same content at a higher stored revision is kept", func(t *testing.T) {
		u := projections.Next(projections.Summarize(&stored), c, 7)
		if u.Write || u.Bundle.Revision != 100 || len(u.Resources) != 0 {
			t.Errorf("got write %v revision %d resources %v, want no write at 100", u.Write, u.Bundle.Revision, u.Resources)
		}
	})
	t.Run("changed content above a higher stored revision", func(t *testing.T) {
		changed := *e
		changed.Identity.Name = "Autre nom"
		u := projections.Next(projections.Summarize(&stored), projections.RenderWith(&changed, "", nil), 7)
		if !u.Write || u.Bundle.Revision != 101 {
			t.Errorf("got write %v revision %d, want a write at 101", u.Write, u.Bundle.Revision)
		}
		checkRevisions(t, &u.Bundle)
	})
	t.Run("changed content below the sequence", func(t *testing.T) {
		changed := *e
		changed.Identity.Name = "Autre nom"
		u := projections.Next(projections.Summarize(&stored), projections.RenderWith(&changed, "", nil), 250)
		if !u.Write || u.Bundle.Revision != 250 {
			t.Errorf("got write %v revision %d, want a write at 250", u.Write, u.Bundle.Revision)
		}
	})
	t.Run("a different entity tag is rewritten at the same revision", func(t *testing.T) {
		old := stored
		old.Hours.ETag = `W/"old"`
		u := projections.Next(projections.Summarize(&old), c, 300)
		if !u.Write || u.Bundle.Revision != 100 || len(u.Resources) != 0 {
			t.Errorf("got write %v revision %d resources %v, want a write at 100", u.Write, u.Bundle.Revision, u.Resources)
		}
	})
	t.Run("nothing stored", func(t *testing.T) {
		u := projections.Next(nil, c, 9)
		if !u.Write || u.Bundle.Revision != 9 || len(u.Resources) != 7 {
			t.Errorf("got write %v revision %d resources %v, want every resource at 9", u.Write, u.Bundle.Revision, u.Resources)
		}
	})
}

func TestUndecodableEventsAreSkipped(t *testing.T) {
	s := newSim(t)
	s.record("x", domain.EstablishmentCreated{Slug: "x", TimeZone: "Europe/Paris"}, domain.Activated{})
	good := fixture.Envelopes(t, domain.IdentityChanged{Identity: domain.Identity{Name: "Bon nom", BusinessType: "cafe"}})[0]
	u := s.raw(events.Record{Sequence: 2, CommandID: "c2", Establishment: "x", Events: []events.Envelope{
		{Type: "something.unknown", SchemaVersion: 1, Payload: json.RawMessage(`{}`)},
		{Type: domain.TypeMenuVersionPublished, SchemaVersion: 1, Payload: json.RawMessage(`{"menu_type":42}`)},
		{Type: domain.TypeIdentityChanged, SchemaVersion: 99, Payload: good.Payload},
		good,
	}})
	if !u.Write || u.Bundle.Revision != 2 {
		t.Fatalf("got write %v revision %d, want a write at 2", u.Write, u.Bundle.Revision)
	}
	var doc struct {
		Name         string `json:"name"`
		BusinessType string `json:"business_type"`
	}
	if err := json.Unmarshal(u.Bundle.Establishment.Body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Name != "Bon nom" || doc.BusinessType != "cafe" {
		t.Errorf("got %+v, want the valid event applied", doc)
	}
	if u := s.raw(events.Record{Sequence: 3, CommandID: "c3", Establishment: "Not A Slug", Events: []events.Envelope{good}}); u.Write {
		t.Errorf("a record of an invalid slug was projected")
	}
	if u := s.record("y", domain.IdentityChanged{Identity: domain.Identity{Name: "Y"}}); u.Write {
		t.Errorf("an establishment without creation was projected")
	}
}

// Nothing of an establishment in draft is public: editing it stores no document, raises no
// revision and announces nothing; its activation publishes every document at once, with one
// revision, and a replay of the same records stores the same.
func TestDraftEditsAreNotPublished(t *testing.T) {
	s := newSim(t)
	name := func(n string) domain.Event {
		return domain.IdentityChanged{Identity: domain.Identity{Name: n, BusinessType: "cafe"}}
	}
	created := s.record("x", domain.EstablishmentCreated{Slug: "x", TimeZone: "Europe/Paris"}, name("Brouillon"))
	if !created.Write || created.Bundle.Revision != 1 || len(created.Resources) != 0 || len(created.Bundle.Establishment.Body) != 0 {
		t.Errorf("created in draft: got write %v revision %d resources %v body %q, want a write at 1 of no document and nothing announced",
			created.Write, created.Bundle.Revision, created.Resources, created.Bundle.Establishment.Body)
	}
	for i, ev := range []domain.Event{name("Autre nom"), domain.HoursChanged{Hours: domain.Hours{Ranges: []domain.OpeningRange{fixture.Range(t, "lundi", "12:00", "lundi", "14:00")}}}} {
		if u := s.record("x", ev); u.Write || len(u.Resources) != 0 {
			t.Errorf("edit %d of a draft: got write %v revision %d resources %v, want nothing stored nor announced", i, u.Write, u.Bundle.Revision, u.Resources)
		}
	}
	active := s.record("x", domain.Activated{})
	if want := []string{projections.ResourceEstablishment, projections.ResourceHours, projections.ResourceMenus, projections.ResourceJSONLD}; !active.Write || active.Bundle.Revision != 4 || !slices.Equal(active.Resources, want) {
		t.Errorf("activation: got write %v revision %d resources %v, want a write at 4 announcing %v", active.Write, active.Bundle.Revision, active.Resources, want)
	}
	checkRevisions(t, &active.Bundle)
	if !bytes.Contains(active.Bundle.Establishment.Body, []byte(`"name":"Autre nom"`)) || !bytes.Contains(active.Bundle.Hours.Body, []byte(`"open_time":"12:00"`)) {
		t.Errorf("activation: the documents miss the draft's edits: %s %s", active.Bundle.Establishment.Body, active.Bundle.Hours.Body)
	}

	// The stored form of a draft reads back as what was stored, so that a replay over it finds
	// nothing to do.
	b := created.Bundle
	if stored := storedSummaryOf(t, &b); !stored.Same(projections.Summarize(&b)) || stored.Fingerprint() != projections.Summarize(&b).Fingerprint() {
		t.Errorf("the stored summary of a draft differs from the summary made when storing it")
	}
}

// An establishment that stops or starts being served without a new revision is announced as a
// transition, listing every resource; a change of content while it is not served is announced as
// any change, marked unserved, and one that also starts or stops serving it lists every resource;
// a new key or redirect setting announces nothing.
func TestServedTransitions(t *testing.T) {
	s := newSim(t)
	rename := func(name string) domain.Event {
		return domain.IdentityChanged{Identity: domain.Identity{Name: name, BusinessType: "restaurant"}}
	}
	snap := fixture.ReadSnapshot(t, "../../cmd/publisher/demo.json")
	const slug = "chez-marcel"
	all := []string{"establishment", "hours", "menus", "menus/la-carte", "menus/vins", "jsonld"}
	steps := []struct {
		name           string
		events         []domain.Event
		wantTransition string
		wantResources  []string
		wantServed     bool
	}{
		{"import", fixture.ImportEvents(t, domain.New(slug), snap), "", all, true},
		{"api disabled", []domain.Event{domain.PublicAPIDisabled{}}, projections.TransitionUnserved, all, false},
		{"identity while unserved", []domain.Event{domain.IdentityChanged{Identity: domain.Identity{Name: "Chez Marcel et Fils", BusinessType: "restaurant"}}}, "", []string{"establishment", "jsonld"}, false},
		{"api enabled", []domain.Event{domain.PublicAPIEnabled{KeyHash: domain.NewAPIKey([32]byte{7}).Hash()}}, projections.TransitionServed, all, true},
		{"new key", []domain.Event{domain.APIKeyRegenerated{KeyHash: domain.NewAPIKey([32]byte{8}).Hash()}}, "", nil, true},
		{"redirect setting", []domain.Event{domain.MenuRedirectChanged{Enabled: false}}, "", nil, true},
		{"api disabled with a new name", []domain.Event{domain.PublicAPIDisabled{}, rename("Chez Marcel")}, "", all, false},
		{"api enabled with a new name", []domain.Event{domain.PublicAPIEnabled{KeyHash: domain.NewAPIKey([32]byte{9}).Hash()}, rename("Chez Marcel et Fille")}, "", all, true},
	}
	for _, step := range steps {
		u := s.record(slug, step.events...)
		if u.Transition != step.wantTransition {
			t.Errorf("%s: transition %q, want %q", step.name, u.Transition, step.wantTransition)
		}
		if diff := cmp.Diff(step.wantResources, u.Resources); diff != "" {
			t.Errorf("%s: resources (-want +got):\n%s", step.name, diff)
		}
		if got := projections.Served(s.stored(slug)); got != step.wantServed {
			t.Errorf("%s: served %v, want %v", step.name, got, step.wantServed)
		}
	}
}
