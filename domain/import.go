package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

// ImportResult is what an import decided: the events to append and, when the import enabled the
// public API, the new key to show once.
type ImportResult struct {
	Events []Event
	APIKey APIKey
}

// Import validates the import document s and returns the events that bring the establishment to
// it. Only what differs produces events: importing the current content again returns none. key
// is used only when the import turns the public API on.
func (e *Establishment) Import(s EstablishmentInput, key APIKey) (ImportResult, error) {
	c, err := s.validate()
	if err != nil {
		return ImportResult{}, err
	}
	if c.slug != e.Slug {
		return ImportResult{}, &FieldError{Field: "slug", Reason: fmt.Sprintf("%q does not match the establishment %q", c.slug, e.Slug)}
	}
	if e.Status == StatusActive && c.status == StatusDraft && s.Status != "" {
		return ImportResult{}, &FieldError{Field: "status", Reason: "an active establishment cannot go back to draft"}
	}
	var res ImportResult
	add := func(ev Event) { res.Events = append(res.Events, ev) }
	if !e.Created {
		add(EstablishmentCreated{Slug: e.Slug, TimeZone: c.timeZone})
	} else if e.TimeZone != c.timeZone {
		add(TimeZoneChanged{TimeZone: c.timeZone})
	}
	if !e.Created || !sameJSON(e.Identity, c.identity) {
		add(IdentityChanged{Identity: c.identity})
	}
	curHours := e.Hours
	curHours.Ranges = nonNil(curHours.Ranges)
	if !sameJSON(curHours, c.hours) {
		add(HoursChanged{Hours: c.hours})
	}
	if !sameJSON(nonNil(e.SpecialHours), c.specialHours) {
		add(SpecialHoursChanged{SpecialHours: c.specialHours})
	}
	if !sameJSON(e.MasterMenuURL, c.masterMenu) {
		add(MasterMenuChanged{URL: c.masterMenu})
	}
	for _, ev := range e.diffMenuTypes(c.menuTypes) {
		add(ev)
	}
	if c.redirect != nil && *c.redirect != e.MenuRedirectEnabled {
		add(MenuRedirectChanged{Enabled: *c.redirect})
	}
	if c.apiEnabled != nil && *c.apiEnabled != e.PublicAPIEnabled {
		if *c.apiEnabled {
			if err := key.check(); err != nil {
				return ImportResult{}, err
			}
			add(PublicAPIEnabled{KeyHash: key.Hash()})
			res.APIKey = key
		} else {
			add(PublicAPIDisabled{})
		}
	}
	if c.status == StatusActive && e.Status != StatusActive {
		add(Activated{})
	}
	return res, nil
}

// diffMenuTypes returns the events that turn the current menu types into want.
func (e *Establishment) diffMenuTypes(want []MenuType) []Event {
	var evs []Event
	wanted := map[Slug]bool{}
	for _, w := range want {
		wanted[w.Slug] = true
	}
	for _, mt := range e.MenuTypes {
		if !wanted[mt.Slug] {
			evs = append(evs, MenuTypeRemoved{MenuType: mt.Slug})
		}
	}
	for _, w := range want {
		cur, exists := e.MenuType(w.Slug)
		if !exists || cur.MenuTypeAttrs != w.MenuTypeAttrs {
			evs = append(evs, MenuTypeDefined{MenuType: w.MenuTypeAttrs})
		}
		// Versions keep publication order, which decides the latest undated version: from the first
		// position where the order differs, withdraw what is there and publish the rest again.
		split := 0
		for split < len(cur.Versions) && split < len(w.Versions) && cur.Versions[split].ID == w.Versions[split].ID {
			split++
		}
		for _, v := range cur.Versions[split:] {
			evs = append(evs, MenuVersionWithdrawn{MenuType: w.Slug, Version: v.ID})
		}
		for i, v := range w.Versions {
			if i < split && sameJSON(cur.Versions[i], v) {
				continue
			}
			evs = append(evs, MenuVersionPublished{MenuType: w.Slug, Version: v})
		}
	}
	return evs
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// sameJSON compares two values by their encoding, which is what the log and the documents see.
// Values deeply equal encode alike, which answers the common case of an import that finds a part
// as it was without encoding either; only values that differ, perhaps in nothing their encoding
// shows (a nil list and an empty one), are encoded.
func sameJSON(a, b any) bool {
	if reflect.DeepEqual(a, b) {
		return true
	}
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
