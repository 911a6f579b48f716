package events_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

func openFiles(t *testing.T) (*events.Files, *events.Files) {
	t.Helper()
	srv := natstest.Start(t)
	open := func() *events.Files {
		js, err := jetstream.New(natstest.Connect(t, srv))
		if err != nil {
			t.Fatal(err)
		}
		f, err := events.OpenFiles(t.Context(), js, 1)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	return open(), open()
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFilesReadFromAnyOffset(t *testing.T) {
	files, _ := openFiles(t)
	ctx := t.Context()
	data := randomBytes(t, 5*128<<10+12345) // five whole chunks and a part
	fi, created, err := files.PutNew(ctx, "f", "application/pdf", data)
	if err != nil || !created || fi.Size != int64(len(data)) || fi.ContentType != "application/pdf" {
		t.Fatalf("PutNew = %+v, %t, %v", fi, created, err)
	}
	if _, created, err := files.PutNew(ctx, "f", "application/pdf", data); err != nil || created {
		t.Errorf("PutNew of a stored name: created %t, %v; want it left as it is", created, err)
	}
	read := func(skip int64) []byte {
		t.Helper()
		got, err := io.ReadAll(files.Reader(ctx, fi, skip))
		if err != nil {
			t.Fatalf("read from %d: %v", skip, err)
		}
		return got
	}
	// From the middle before the file was read whole (from its first chunk), then after (from
	// the chunk that holds the offset): the same bytes either way.
	for _, skip := range []int64{300000, 0, 300000, 128 << 10, 128<<10 - 1, int64(len(data)) - 1, int64(len(data))} {
		if got := read(skip); !bytes.Equal(got, data[skip:]) {
			t.Errorf("read from %d: %d bytes, want %d equal", skip, len(got), len(data)-int(skip))
		}
	}
}

func TestFilesRemovalLosesToATouch(t *testing.T) {
	files, other := openFiles(t)
	ctx := t.Context()
	if _, _, err := files.PutNew(ctx, "f", "image/png", []byte("png")); err != nil {
		t.Fatal(err)
	}
	seen, err := files.Stat(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	// Another process refers to the file and touches it: the removal decided on what was seen
	// before does not happen.
	if err := other.Touch(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	if removed, err := files.RemoveUnchanged(ctx, seen); removed || err != nil {
		t.Fatalf("removal after a touch: removed %t, %v; want kept", removed, err)
	}
	again, err := files.Stat(ctx, "f")
	if err != nil {
		t.Fatal(err)
	}
	if removed, err := files.RemoveUnchanged(ctx, again); !removed || err != nil {
		t.Fatalf("removal of an untouched file: removed %t, %v", removed, err)
	}
	// A touch after the removal does not bring the file back, and storing it again does.
	if err := other.Touch(ctx, "f"); !errors.Is(err, events.ErrFileNotFound) {
		t.Errorf("touch of a removed file: %v, want ErrFileNotFound", err)
	}
	if _, err := files.Stat(ctx, "f"); !errors.Is(err, events.ErrFileNotFound) {
		t.Errorf("stat of a removed file: %v, want ErrFileNotFound", err)
	}
	fi, created, err := files.PutNew(ctx, "f", "image/png", []byte("png"))
	if err != nil || !created {
		t.Fatalf("store again: created %t, %v", created, err)
	}
	if got, err := io.ReadAll(files.Reader(ctx, fi, 0)); err != nil || string(got) != "png" {
		t.Errorf("read after storing again: %q, %v", got, err)
	}
}

func TestFilesConcurrentTouchesAllSucceed(t *testing.T) {
	files, other := openFiles(t)
	ctx := t.Context()
	if _, _, err := files.PutNew(ctx, "f", "image/png", []byte("png")); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 16)
	for i := range 16 {
		go func() {
			f := files
			if i%2 == 1 {
				f = other
			}
			errs <- f.Touch(ctx, "f")
		}()
	}
	for range 16 {
		if err := <-errs; err != nil {
			t.Errorf("touch: %v", err)
		}
	}
}

func TestFilesOrphanedBytesAreRemovedWhenOld(t *testing.T) {
	srv := natstest.Start(t)
	nc := natstest.Connect(t, srv)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	files, err := events.OpenFiles(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	fi, _, err := files.PutNew(ctx, "kept", "image/png", []byte("png"))
	if err != nil {
		t.Fatal(err)
	}
	// Bytes of a store that never wrote its description.
	if _, err := js.Publish(ctx, "$O."+events.FilesBucketName+".C.orphan", []byte("lost")); err != nil {
		t.Fatal(err)
	}
	if n, err := files.RemoveOrphans(ctx, time.Now().Add(-time.Hour)); n != 0 || err != nil {
		t.Errorf("removal of orphans older than an hour: %d, %v; want none yet", n, err)
	}
	if n, err := files.RemoveOrphans(ctx, time.Now().Add(time.Hour)); n != 1 || err != nil {
		t.Errorf("removal of every orphan: %d, %v; want the one", n, err)
	}
	if got, err := io.ReadAll(files.Reader(ctx, fi, 0)); err != nil || string(got) != "png" {
		t.Errorf("a described file after the removal of orphans: %q, %v", got, err)
	}
}
