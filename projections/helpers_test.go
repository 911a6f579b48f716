package projections

import (
	"path/filepath"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/fixture"
)

// namedFixture is one of the establishments of the test fixtures, as of its fixture's day.
type namedFixture struct {
	name string
	e    *domain.Establishment
}

// fixtures returns the demo establishment and those of testdata/dated and testdata/uploaded-only,
// each on the day its fixture names.
func fixtures(tb testing.TB) []namedFixture {
	tb.Helper()
	var out []namedFixture
	for _, name := range []string{"demo", "dated", "uploaded-only"} {
		dir := filepath.Join("testdata", name)
		snapshot := filepath.Join(dir, "snapshot.json")
		if name == "demo" {
			snapshot = "../cmd/publisher/demo.json"
		}
		out = append(out, namedFixture{name: name, e: fixture.Load(tb, snapshot, fixture.ReadToday(tb, dir))})
	}
	return out
}
