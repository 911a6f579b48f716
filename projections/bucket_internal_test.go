package projections

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/opencarte/publisher/domain"
)

// The bound FitsIn checks first is never below the exact size, even for text gzip cannot
// compress.
func TestSizeBoundIsAnUpperBound(t *testing.T) {
	t.Parallel()
	demo := fixture(t, "../cmd/publisher/demo.json", readToday(t, filepath.Join("testdata", "demo")))
	noisy := fixture(t, "../cmd/publisher/demo.json", readToday(t, filepath.Join("testdata", "demo")))
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
		exact, err := EncodedSize(e)
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
