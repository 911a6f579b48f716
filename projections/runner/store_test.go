package runner

import (
	"testing"

	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/fixture"
)

func BenchmarkAllJSONDemo(b *testing.B) {
	bundle := projections.Render(fixture.Load(b, "../../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22")), 42)
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := allJSON(&bundle); !ok {
			b.Fatal("the demo's documents are not JSON")
		}
	}
}
