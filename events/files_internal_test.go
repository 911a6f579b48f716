package events

import (
	"crypto/rand"
	"io"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events/natstest"
)

// TestFilesLearnWhereTheChunksAre reads a file as an HTTP response does, exactly its size and not
// past it: that is enough for a later read from its middle to start at the right chunk.
func TestFilesLearnWhereTheChunksAre(t *testing.T) {
	js, err := jetstream.New(natstest.Connect(t, natstest.Start(t)))
	if err != nil {
		t.Fatal(err)
	}
	files, err := OpenFiles(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]byte, 3*128<<10+7)
	rand.Read(data)
	fi, _, err := files.PutNew(t.Context(), "f", "application/pdf", data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, files.Reader(t.Context(), fi, 0), fi.Size); err != nil {
		t.Fatal(err)
	}
	index, ok := files.chunks.Get(fi.nuid)
	if !ok || len(index) != 4 || index[3].offset != 3*128<<10 {
		t.Fatalf("chunk index after a whole read: %v, %t", index, ok)
	}
	r := files.Reader(t.Context(), fi, 300000).(*fileReader)
	if r.chunks != 2 || r.read != 2*128<<10 || r.from != index[2].seq {
		t.Errorf("a read from byte 300000 starts at chunk %d, byte %d, sequence %d; want chunk 2 at %d", r.chunks, r.read, r.from, index[2].seq)
	}
}
