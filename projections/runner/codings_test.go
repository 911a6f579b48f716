package runner

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// A bundle stored for a change takes the codings of the bundle it replaces for the documents
// whose bytes moved with the revision only: their compressed bytes are the stored ones, which
// here another compressor made, and they decode to the new bodies. So it is when a projector
// starting over an earlier bucket reconciles it with the log, and when one following the log
// loads an establishment it let go of.
func TestProjectorTakesTheStoredCodings(t *testing.T) {
	const demo = "chez-marcel"
	t.Run("reconciled", func(t *testing.T) {
		n := newNATSEnv(t)
		seq := n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
		stored, rests := putRecoded(t, n, demo)
		p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: &recorder{}})
		p.waitFor(t, seq)
		checkCodingsTaken(t, n, demo, stored, rests)
	})
	t.Run("followed", func(t *testing.T) {
		n := newNATSEnv(t)
		n.importFixture(t, "../../cmd/publisher/demo.json", "2026-11-22")
		seq := n.importFixture(t, "../testdata/uploaded-only/snapshot.json", "2026-03-10")
		p := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: n.freshState(t), Notifier: &recorder{}, CacheSize: 1})
		p.waitFor(t, seq)
		stored, rests := putRecoded(t, n, demo)
		p.waitFor(t, n.append(t, demo, domain.MasterMenuChanged{URL: ptr("https://cdn.example.fr/carte.pdf")}))
		checkCodingsTaken(t, n, demo, stored, rests)
	})
}

// putRecoded stores, behind the projector's back, the demo at revision 1000 under another name,
// its codings of the form the projector writes but compressed by the standard library at its
// best compression, and returns it with the compressed rest of each document's coding by name.
func putRecoded(t *testing.T, n *natsEnv, slug string) (*dockey.Bundle, map[string][]byte) {
	t.Helper()
	other := fixture.Load(t, "../../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22"))
	other.Identity.Name = "Rendu autrement"
	stored := projections.Render(other, 1000)
	rests := map[string][]byte{}
	projections.EachDocument(&stored, func(name string, d *dockey.Document) {
		d.Gzip, rests[name] = codingOf(t, d.Body, []byte("1000"))
	})
	value, err := dockey.EncodeBundle(&stored)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.kv.Put(testContext(t), dockey.Key(slug), value); err != nil {
		t.Fatal(err)
	}
	return &stored, rests
}

// checkCodingsTaken checks the bundle stored for slug after putRecoded: at revision 1001, every
// coding decoding to its body, and holding the stored compressed rest exactly when the body is
// the stored one but for the revision.
func checkCodingsTaken(t *testing.T, n *natsEnv, slug string, stored *dockey.Bundle, rests map[string][]byte) {
	t.Helper()
	b, _, _ := entry(t, n.kv, slug)
	if b.Revision != 1001 {
		t.Fatalf("revision %d, want 1001", b.Revision)
	}
	bodies := map[string][]byte{}
	projections.EachDocument(stored, func(name string, d *dockey.Document) { bodies[name] = d.Body })
	taken := 0
	projections.EachDocument(&b, func(name string, d *dockey.Document) {
		if plain := fixture.Gunzip(t, d.Gzip); !bytes.Equal(plain, d.Body) {
			t.Errorf("%s: coding decodes to %.60q, want the body", name, plain)
		}
		same := bytes.Equal(bytes.Replace(d.Body, []byte("1001"), []byte("1000"), 1), bodies[name])
		if bytes.Contains(d.Gzip, rests[name]) != same {
			t.Errorf("%s: stored coding taken %t, want %t: the body is the stored one but for its revision: %t", name, !same, same, same)
		}
		if same {
			taken++
		}
	})
	if taken == 0 {
		t.Error("no document is the stored one but for its revision")
	}
}

// codingOf returns a gzip coding of body of the form the projector writes, its beginning up to
// revision stored and the rest compressed by compress/flate on its own, and that compressed rest.
// A body without revision is compressed whole.
func codingOf(t *testing.T, body, revision []byte) (coding, rest []byte) {
	t.Helper()
	head := 0
	if i := bytes.Index(body, revision); i > 0 && bytes.HasPrefix(body, []byte(`{"`)) && bytes.Contains(body[:i], []byte(`"content_revision":`)) {
		head = i + len(revision)
	}
	var buf bytes.Buffer
	zw, err := flate.NewWriter(&buf, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(body[head:]); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	rest = buf.Bytes()
	coding = []byte("\x1f\x8b\x08\x00\x00\x00\x00\x00\x04\xff")
	if head > 0 {
		coding = append(coding, 0, byte(head), byte(head>>8), ^byte(head), ^byte(head>>8))
		coding = append(coding, body[:head]...)
	}
	coding = append(coding, rest...)
	coding = binary.LittleEndian.AppendUint32(coding, crc32.ChecksumIEEE(body))
	return binary.LittleEndian.AppendUint32(coding, uint32(len(body))), rest
}
