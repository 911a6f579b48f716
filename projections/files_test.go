package projections

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

func TestWithFileURLs(t *testing.T) {
	d := domain.DigestOf([]byte("card"))
	card, page := string(d), "https://cdn.example.com/p1.jpg"
	e := &domain.Establishment{MasterMenuURL: &card, MenuTypes: []domain.MenuType{{Versions: []domain.MenuVersion{
		{Assets: []domain.Asset{{LanguageScope: domain.ScopeFR, URLs: []string{page, string(d)}}}},
	}}}}
	before := *e
	got := withFileURLs(e, "https://menus.example/")
	url := "https://menus.example/files/" + d.FileName()
	if *got.MasterMenuURL != url || !cmp.Equal(got.MenuTypes[0].Versions[0].Assets[0].URLs, []string{page, url}) {
		t.Errorf("resolved: card %s, pages %v", *got.MasterMenuURL, got.MenuTypes[0].Versions[0].Assets[0].URLs)
	}
	if *e.MasterMenuURL != card || e.MenuTypes[0].Versions[0].Assets[0].URLs[1] != card || !cmp.Equal(before, *e) {
		t.Error("withFileURLs changed the establishment it was given")
	}
	external := "https://cdn.example.com/carte.pdf"
	plain := &domain.Establishment{MasterMenuURL: &external}
	if withFileURLs(plain, "https://menus.example") != plain {
		t.Error("an establishment naming no file by digest was copied")
	}
}
