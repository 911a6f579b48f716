package projections

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/opencarte/publisher/domain"
)

func TestChangedResourcesOfAppearingMenu(t *testing.T) {
	e := establishment(t)
	before := Render(e, 1)
	e.MenuTypes = append(e.MenuTypes, menuType("nouveau", domain.SourceUploaded, domain.MenuVersion{ID: "v1"}))
	after := render(e, nil).Bundle(1)
	if diff := cmp.Diff([]string{"menus", "menus/nouveau", "jsonld"}, ChangedResources(&before, &after)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// A served establishment that goes back to draft withdraws its documents: its revision rises, yet
// it is announced as a transition to unserved, listing what it had; activated again, its
// documents come back as a change of content.
func TestDraftIsATransition(t *testing.T) {
	e := establishment(t)
	e.PublicAPIEnabled, e.APIKeyHash = true, domain.NewAPIKey([32]byte{1}).Hash()
	served := Render(e, 5)
	prev := Summarize(&served)
	if !prev.Served() {
		t.Fatal("an active establishment with its API enabled is not served")
	}
	e.Status = domain.StatusDraft
	u := Next(prev, render(e, nil), 9)
	if u.Transition != TransitionUnserved || u.Bundle.Revision != 9 || Served(&u.Bundle) {
		t.Errorf("to draft: transition %q at %d, served %v; want unserved at 9", u.Transition, u.Bundle.Revision, Served(&u.Bundle))
	}
	if diff := cmp.Diff(prev.Resources(), u.Resources); diff != "" || len(u.Resources) == 0 {
		t.Errorf("to draft: resources (-had +announced):\n%s", diff)
	}
	e.Status = domain.StatusActive
	back := Next(Summarize(&u.Bundle), render(e, nil), 12)
	if back.Transition != "" || back.Bundle.Revision != 12 || !Served(&back.Bundle) {
		t.Errorf("activated again: transition %q at %d; want a change of content at 12", back.Transition, back.Bundle.Revision)
	}
	if diff := cmp.Diff(prev.Resources(), back.Resources); diff != "" {
		t.Errorf("activated again: resources (-want +got):\n%s", diff)
	}
}
