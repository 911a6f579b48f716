package app

import (
	"bytes"
	"context"
	"errors"
	"image"
	"image/png"
	"sync/atomic"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/events/natstest"
)

// countedFiles counts the lookups of a file store, and fails them once failAfter were made
// (0: never).
type countedFiles struct {
	fileStore
	stats     atomic.Int64
	failAfter int64
}

var errStoreDown = errors.New("store down")

func (f *countedFiles) Stat(ctx context.Context, name string) (events.FileInfo, error) {
	if n := f.stats.Add(1); f.failAfter > 0 && n > f.failAfter {
		return events.FileInfo{}, errStoreDown
	}
	return f.fileStore.Stat(ctx, name)
}

// TestFileReferencesAreLookedUpOnce: a document naming one stored file a thousand times looks it
// up once; one whose lookups fail stops at the first failure and says the store is unavailable.
func TestFileReferencesAreLookedUpOnce(t *testing.T) {
	srv := natstest.Start(t)
	e := newEnv(t, srv)
	js, err := jetstream.New(natstest.Connect(t, srv))
	if err != nil {
		t.Fatal(err)
	}
	store, err := events.OpenFiles(t.Context(), js, 1)
	if err != nil {
		t.Fatal(err)
	}
	files := &countedFiles{fileStore: store}
	c, _ := e.commands(t, Config{Files: files, PublicURL: "https://menus.example"})
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 4, 4))); err != nil {
		t.Fatal(err)
	}
	f, err := c.UploadFile(t.Context(), img.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	urls := make([]string, 1000)
	for i := range urls {
		urls[i] = string(f.Digest)
	}
	snap := establishment(0)
	snap.MenuTypes = []domain.MenuTypeInput{{Slug: "carte", Versions: []domain.VersionInput{{ID: "v1",
		Assets: []domain.AssetInput{{LanguageScope: "fr", URLs: urls}}}}}}
	files.stats.Store(0)
	if err := c.resolveFiles(t.Context(), &snap); err != nil {
		t.Fatalf("resolve: %v", err)
	}
	if got := files.stats.Load(); got != 1 {
		t.Errorf("lookups of one file named 1,000 times: got %d, want 1", got)
	}
	if got := snap.MenuTypes[0].Versions[0].Assets[0].URLs[999]; got != string(f.Digest) {
		t.Errorf("the last reference: got %q, want the digest", got)
	}

	for i := range urls {
		urls[i] = string(domain.DigestOf([]byte{byte(i), byte(i >> 8)})) // none stored
	}
	files.stats.Store(0)
	files.failAfter = 3
	err = c.resolveFiles(t.Context(), &snap)
	if !errors.Is(err, errStoreDown) || KindOf(err) != KindUnavailable {
		t.Errorf("lookups failing: got %v, want the store's failure, unavailable", err)
	}
	if got := files.stats.Load(); got != 4 {
		t.Errorf("lookups once they fail: got %d, want 4 (3, and the one that failed)", got)
	}
}
