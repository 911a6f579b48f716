package app

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// TestAuditNamesTheActorOfEachCommand gives commands under two actors, one without, and one
// twice under its command id, and wants the audit to list each accepted command once, newest
// first and paged, with its actor on one line, the log's record to name its actor in its headers,
// and a command on no establishment listed by the platform's audit alone.
func TestAuditNamesTheActorOfEachCommand(t *testing.T) {
	srv := natstest.Start(t)
	e := newEnv(t, srv)
	nc := natstest.Connect(t, srv)
	trail, err := events.OpenAudit(t.Context(), nc, events.AuditConfig{})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := e.commands(t, Config{Audit: trail})
	platform := WithActor(t.Context(), Actor{ID: "tok_platform", Name: "back office"})
	owner := WithActor(t.Context(), Actor{ID: "lnk_1", Name: "Marie\nDupont"})
	s := establishment(1)
	off := false
	s.Status, s.Settings = "draft", &domain.SettingsInput{MenuRedirectEnabled: &off}
	slug := domain.Slug(s.Slug)
	if _, err := c.Import(platform, Request{Slug: slug}, s); err != nil {
		t.Fatal(err)
	}
	for range 2 { // a retry under the same command id is one command
		if _, err := c.SetMenuRedirect(owner, Request{Slug: slug, CommandID: "cmd-redirect"}, true); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.SetMenuRedirect(context.Background(), Request{Slug: slug}, false); err != nil {
		t.Fatal(err) // no actor: not audited
	}
	res, err := c.Activate(owner, Request{Slug: slug})
	if err != nil {
		t.Fatal(err)
	}

	var got []string
	before := ""
	for {
		page, err := c.Audit(t.Context(), slug, before, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range page.Entries {
			got = append(got, fmt.Sprintf("%s %s %s %s", en.Actor.ID, en.Actor.Name, en.Action, en.Detail))
		}
		if before = page.Next; before == "" {
			break
		}
	}
	want := []string{
		"lnk_1 Marie Dupont establishment.activated ",
		"lnk_1 Marie Dupont menu_redirect.changed on",
		"tok_platform back office establishment.imported ",
	}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("audit:\n%q\nwant\n%q", got, want)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.Stream(t.Context(), events.StreamName)
	if err != nil {
		t.Fatal(err)
	}
	msg, err := stream.GetMsg(t.Context(), res.Version)
	if err != nil {
		t.Fatal(err)
	}
	if id, name := msg.Header.Get(ActorIDHeader), msg.Header.Get(ActorNameHeader); id != "lnk_1" || name != "Marie Dupont" {
		t.Fatalf("record %d names actor %q %q, want lnk_1 and the name on one line", res.Version, id, name)
	}
	// A command on no establishment is on the platform's trail, not the establishment's.
	c.Record(platform, "", "POST /admin/v1/tokens", "tok_1")
	if page, err := c.PlatformAudit(t.Context(), "", 0); err != nil || len(page.Entries) != 1 || page.Entries[0].Detail != "tok_1" || page.Entries[0].Actor.ID != "tok_platform" {
		t.Fatalf("platform audit: %+v, %v", page, err)
	}
	if page, err := c.Audit(t.Context(), slug, "", 0); err != nil || len(page.Entries) != len(want) {
		t.Fatalf("a platform command in an establishment's audit: %+v, %v", page, err)
	}
	// The record before it, the redirect set without an actor, names none.
	if msg, err = stream.GetMsg(t.Context(), res.Version-1); err != nil || msg.Header.Get(ActorIDHeader) != "" {
		t.Fatalf("a command without an actor: record headers %v, %v", msg.Header, err)
	}
}

// TestAuditRefusals wants a bad cursor, a bad limit and an unknown establishment refused with
// their kinds.
func TestAuditRefusals(t *testing.T) {
	e := newEnv(t, natstest.Start(t))
	c, _ := e.commands(t, Config{})
	s := establishment(2)
	mustImport(t, c, s)
	for _, tc := range []struct {
		slug   domain.Slug
		before string
		limit  int
		want   Kind
	}{
		{domain.Slug(s.Slug), "x", 0, KindMalformed},
		{domain.Slug(s.Slug), "0", 0, KindMalformed},
		{domain.Slug(s.Slug), "", MaxAuditPage + 1, KindInvalid},
		{"nobody", "", 0, KindNotFound},
	} {
		if _, err := c.Audit(t.Context(), tc.slug, tc.before, tc.limit); KindOf(err) != tc.want {
			t.Errorf("audit %s before %q limit %d: %v (%v), want %v", tc.slug, tc.before, tc.limit, err, KindOf(err), tc.want)
		}
	}
	if page, err := c.Audit(t.Context(), domain.Slug(s.Slug), "", 0); err != nil || len(page.Entries) != 0 {
		t.Fatalf("without a trail: %+v, %v", page, err)
	}
}

// BenchmarkCommandAudited measures a command alone and a command whose actor the audit records:
// what the audit costs each command.
func BenchmarkCommandAudited(b *testing.B) {
	srv := natstest.Start(b)
	e := newEnv(b, srv)
	trail, err := events.OpenAudit(b.Context(), natstest.Connect(b, srv), events.AuditConfig{})
	if err != nil {
		b.Fatal(err)
	}
	c, _ := e.commands(b, Config{Audit: trail})
	s := establishment(3)
	mustImport(b, c, s)
	for _, bc := range []struct {
		name string
		ctx  context.Context
	}{
		{"alone", b.Context()},
		{"audited", WithActor(b.Context(), Actor{ID: "tok_0123456789abcdef", Name: "back office"})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				if _, err := c.SetMenuRedirect(bc.ctx, Request{Slug: domain.Slug(s.Slug)}, i%2 == 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
