package projections

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/fixture"
)

// The bound FitsIn checks first is never below the exact size, even for text gzip cannot
// compress.
func TestSizeBoundIsAnUpperBound(t *testing.T) {
	t.Parallel()
	demo := fixture.Load(t, "../cmd/publisher/demo.json", fixture.ReadToday(t, filepath.Join("testdata", "demo")))
	noisy := fixture.Load(t, "../cmd/publisher/demo.json", fixture.ReadToday(t, filepath.Join("testdata", "demo")))
	r := rand.New(rand.NewPCG(1, 2))
	for i := range noisy.MenuTypes {
		for j := range noisy.MenuTypes[i].Versions {
			for k := range noisy.MenuTypes[i].Versions[j].Sections {
				items := noisy.MenuTypes[i].Versions[j].Sections[k].Items
				for n := range items {
					runes := make([]rune, 4000)
					for c := range runes {
						runes[c] = rune(0x4e00 + r.IntN(20000)) // CJK: several bytes each, no repetition
					}
					items[n].Name = domain.Text{FR: string(runes), EN: string(runes[:2000])}
				}
			}
		}
	}
	for name, e := range map[string]*domain.Establishment{"demo": demo, "incompressible": noisy} {
		exact, err := EncodedSize(e, "")
		if err != nil {
			t.Fatal(err)
		}
		bound, err := sizeBound(Render(e, math.MaxInt64))
		if err != nil {
			t.Fatal(err)
		}
		if bound < exact {
			t.Errorf("%s: bound %d is below the exact size %d", name, bound, exact)
		}
		t.Logf("%s: exact %d, bound %d", name, exact, bound)
	}
}

// CreatedBound and StateBound hold for establishments built to make rendering copy the most:
// files listed in every variant, one tiny item per menu type and many types, long names, many
// exceptions.
func TestCreatedBoundHolds(t *testing.T) {
	t.Parallel()
	day := domain.LocalDate{Year: 2026, Month: 11, Day: 24}
	long := strings.Repeat("https://cdn.example.fr/", 80) + "x.jpg" // about 1.8 kB
	item := func(id int64) domain.ItemInput {
		n := "x"
		return domain.ItemInput{ID: &id, Name: &domain.TextInput{FR: &n}, ALaCarte: new(bool)}
	}
	cases := map[string]func(s *domain.EstablishmentInput){
		"demo":                       func(*domain.EstablishmentInput) {},
		"files everywhere":           func(s *domain.EstablishmentInput) { filesEverywhere(s, long) },
		"files by digest everywhere": func(s *domain.EstablishmentInput) { filesEverywhere(s, "sha256:"+strings.Repeat("ab", 32)) },
		"many small menus": func(s *domain.EstablishmentInput) {
			web := true
			s.MenuTypes = nil
			for i := range 50 {
				s.MenuTypes = append(s.MenuTypes, domain.MenuTypeInput{
					Slug: fmt.Sprintf("m%d", i), Name: "M", Kind: "menu", Source: "generated", WebDelivery: &web, Rotation: "none",
					Versions: []domain.VersionInput{{ID: "v", Sections: []domain.SectionInput{{Name: &domain.TextInput{FR: ptr("S")}, Items: []domain.ItemInput{item(1)}}}}},
				})
			}
		},
		"many tiny items with every diet and a price": func(s *domain.EstablishmentInput) {
			web := true
			price := "1.00"
			var items []domain.ItemInput
			for i := range 400 {
				it := item(int64(i + 1))
				it.GlutenFree, it.Vegetarian, it.Vegan, it.Price, it.ALaCarte = true, true, true, &price, ptr(true)
				items = append(items, it)
			}
			s.MenuTypes = []domain.MenuTypeInput{{
				Slug: "m", Name: "M", Kind: "card", Source: "generated", WebDelivery: &web, Rotation: "none",
				Versions: []domain.VersionInput{{ID: "v", Sections: []domain.SectionInput{{Name: &domain.TextInput{FR: ptr("S")}, Items: items}}}},
			}}
		},
		"text escaped everywhere": func(s *domain.EstablishmentInput) {
			// Every other character one the JSON-LD and the payload escape, the rest at random:
			// what gzip codes worst.
			rnd := rand.New(rand.NewPCG(1, 2))
			var b strings.Builder
			for range 1900 {
				b.WriteByte("<&>"[rnd.IntN(3)])
				b.WriteByte(byte('!' + rnd.IntN(90)))
			}
			escaped := b.String()
			s.Description = &escaped
			for i := range s.MenuTypes {
				for j := range s.MenuTypes[i].Versions {
					for k := range s.MenuTypes[i].Versions[j].Sections {
						for l := range s.MenuTypes[i].Versions[j].Sections[k].Items {
							s.MenuTypes[i].Versions[j].Sections[k].Items[l].Description = &domain.TextInput{FR: &escaped, EN: &escaped}
						}
					}
				}
			}
		},
		"many exceptions and ranges": func(s *domain.EstablishmentInput) {
			s.SpecialHours = nil
			for i := range 100 {
				d := day.AddDays(i).String()
				s.SpecialHours = append(s.SpecialHours, domain.SpecialHoursInput{StartDate: d, Closed: ptr(true)})
			}
			s.BusinessHoursSummary = nil
		},
	}
	for name, edit := range cases {
		s := fixture.ReadSnapshot(t, "../cmd/publisher/demo.json")
		edit(&s)
		e := domain.New(domain.Slug(s.Slug))
		res, err := e.Import(s, fixture.Key)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		evs := append(res.Events, domain.DayStarted{Date: day})
		payload := 0
		for _, env := range fixture.Envelopes(t, evs...) {
			payload += len(env.Payload)
		}
		for _, ev := range fixture.DecodeAll(t, fixture.Envelopes(t, evs...)) {
			e.Apply(ev)
		}
		// The read API's address as long as an operator may make it: the documents give files
		// named by digest their URLs under it.
		files := "https://" + strings.Repeat("files.", 40) + "example.fr"
		size, err := EncodedSize(e, files)
		if err != nil {
			t.Fatal(err)
		}
		if NamesFiles(e) {
			t.Logf("%s: names files by digest, which CreatedBound leaves out", name)
		} else if bound := CreatedBound(payload); size > bound {
			t.Errorf("%s: %d bytes of events render %d bytes, above the bound %d", name, payload, size, bound)
		} else {
			t.Logf("%s: %d bytes of events, %d stored, bound %d (ratio %.1f)", name, payload, size, bound, float64(size)/float64(payload))
		}
		state, err := domain.EncodeState(withFileURLs(e, files))
		if err != nil {
			t.Fatal(err)
		}
		bound, err := StateBound(e, files)
		if err != nil {
			t.Fatal(err)
		}
		if want := CreatedBound(len(state)); bound != want {
			t.Errorf("%s: StateBound %d, want %d: it encodes the state otherwise than the log", name, bound, want)
		}
		if size > bound {
			t.Errorf("%s: a state of %d bytes renders %d bytes, above the bound %d", name, len(state), size, bound)
		} else {
			t.Logf("%s: a state of %d bytes, %d stored, bound %d (ratio %.1f)", name, len(state), size, bound, float64(size)/float64(len(state)))
		}
	}
}

// filesEverywhere gives every version of s twenty files of three pages, each page at ref.
func filesEverywhere(s *domain.EstablishmentInput, ref string) {
	for i := range s.MenuTypes {
		for j := range s.MenuTypes[i].Versions {
			var assets []domain.AssetInput
			for range 20 {
				assets = append(assets, domain.AssetInput{LanguageScope: "fr_en", URLs: []string{ref, ref, ref}})
			}
			s.MenuTypes[i].Versions[j].Assets = assets
		}
	}
}
