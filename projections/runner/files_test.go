package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/opencarte/publisher/domain"
)

// TestFilesURLChangeRendersEveryFileAgain restarts a projector that keeps two establishments in
// memory under another base URL of the files: every bundle that names an uploaded file is
// stored again with the new URL, those let go of in the middle of the replay included, and
// verify agrees with the bucket.
func TestFilesURLChangeRendersEveryFileAgain(t *testing.T) {
	n := newNATSEnv(t)
	d := domain.DigestOf([]byte("card"))
	card := string(d)
	var last uint64
	const establishments = 40
	for i := range establishments {
		slug := fmt.Sprintf("fichier-%02d", i)
		n.append(t, slug, domain.EstablishmentCreated{TimeZone: "Europe/Paris"}, domain.Activated{})
		last = n.append(t, slug, domain.MasterMenuChanged{URL: &card})
	}
	state := n.freshState(t)
	first := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state, Workers: 1, CacheSize: 2, FilesURL: "https://a.example"})
	first.waitFor(t, last)
	if err := first.stop(t); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
	again := startProjectorWith(t, Config{Store: n.store, KV: n.kv, State: state, Workers: 1, CacheSize: 2, FilesURL: "https://b.example"})
	again.waitFor(t, last)
	want := []byte(`"master_menu_url":"https://b.example/files/` + d.FileName() + `"`)
	for i := range establishments {
		slug := fmt.Sprintf("fichier-%02d", i)
		b, _, _ := entry(t, n.kv, slug)
		if !bytes.Contains(b.Menus.All.Body, want) {
			t.Errorf("%s: menus %s, want %s", slug, b.Menus.All.Body, want)
		}
	}
	rep, err := Verify(testContext(t), VerifyConfig{Log: n.store, KV: n.kv, FilesURL: "https://b.example"})
	if err != nil || rep.Different != 0 || rep.Checked != establishments {
		t.Errorf("verify: %+v, %v", rep, err)
	}
}
