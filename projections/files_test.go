package projections

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/fixture"
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

// BenchmarkWithFileURLs measures what the projector adds to a rendering for uploaded files: a
// look through an establishment that names none (the demo), and a copy of one whose every file
// is uploaded.
func BenchmarkWithFileURLs(b *testing.B) {
	e := fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22"))
	b.Run("none", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = withFileURLs(e, "https://menus.example")
		}
	})
	uploaded := *e
	d := string(domain.DigestOf([]byte("file")))
	uploaded.MasterMenuURL = &d
	uploaded.MenuTypes = nil
	for _, mt := range e.MenuTypes {
		mt.Versions = slices.Clone(mt.Versions)
		for j := range mt.Versions {
			v := &mt.Versions[j]
			assets := make([]domain.Asset, len(v.Assets))
			for k, a := range v.Assets {
				assets[k] = domain.Asset{LanguageScope: a.LanguageScope, URLs: make([]string, len(a.URLs))}
				for n := range a.URLs {
					assets[k].URLs[n] = d
				}
			}
			v.Assets = assets
		}
		uploaded.MenuTypes = append(uploaded.MenuTypes, mt)
	}
	b.Run("all uploaded", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = withFileURLs(&uploaded, "https://menus.example")
		}
	})
}
