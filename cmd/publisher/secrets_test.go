package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/webhook"
)

// TestSigningSecretsAreNotStoredInClear: no stream or bucket, nor any file of the NATS store,
// holds a webhook signing secret in a usable form; removing an endpoint erases the data key its
// secret was sealed with from the store's files, so no copy of the record left on disk can be
// read again even with the master key.
func TestSigningSecretsAreNotStoredInClear(t *testing.T) {
	dir := t.TempDir()
	m := openMain(t, dir, "2026-11-22", func(c *Config) { c.WebhookAllowPrivate = true })
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	if info, err := os.Stat(filepath.Join(dir, defaultSecretKeyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("master key file: %v, %v", info, err)
	}

	var secrets []string
	register := func() string {
		r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks", []byte(`{"url": "https://127.0.0.1:9/hook"}`))
		if r.status != 201 {
			t.Fatalf("register: %d %s", r.status, r.body)
		}
		ep := r.json(t)["endpoint"].(map[string]any)
		secrets = append(secrets, ep["secret"].(string))
		return ep["id"].(string)
	}
	removed, kept := register(), register()
	r := m.admin(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/webhooks/"+kept+"/rotate-secret", []byte(`{"grace": "1h"}`))
	if r.status != 200 {
		t.Fatalf("rotate: %d %s", r.status, r.body)
	}
	secrets = append(secrets, r.json(t)["secret"].(string))

	// The forms a secret could be found in: as given, its base64 key, the key's bytes.
	var forms [][]byte
	for _, s := range secrets {
		enc := strings.TrimPrefix(s, webhook.SecretPrefix)
		key, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatal(err)
		}
		forms = append(forms, []byte(s), []byte(enc), key)
	}
	dump := dumpStreams(t, m)
	for i, f := range forms {
		if bytes.Contains(dump, f) {
			t.Errorf("secret %d (form %d) is in a stream", i/3, i%3)
		}
	}
	if !bytes.Contains(dump, []byte(`"sealed"`)) {
		t.Fatal("the dump holds no sealed secret: it does not read the endpoints bucket")
	}

	// The data key of the removed endpoint's secret, as stored.
	js := m.jetStream(t)
	keys, err := js.Stream(t.Context(), webhook.SecretKeysStream)
	if err != nil {
		t.Fatal(err)
	}
	var wrapped []byte
	info, err := keys.Info(t.Context(), jetstream.WithSubjectFilter("webhook_keys.chez-marcel."+removed+".>"))
	if err != nil {
		t.Fatal(err)
	}
	for subject := range info.State.Subjects {
		msg, err := keys.GetLastMsgForSubject(t.Context(), subject)
		if err != nil {
			t.Fatal(err)
		}
		wrapped = msg.Data
	}
	if len(wrapped) == 0 {
		t.Fatal("no data key for the endpoint")
	}
	eventually(t, "the data key written to disk", func() bool { return bytes.Contains(storeFiles(t, dir), wrapped) })

	if r := m.admin(t, http.MethodDelete, "/admin/v1/establishments/chez-marcel/webhooks/"+removed, nil); r.status != 204 && r.status != 200 {
		t.Fatalf("remove: %d %s", r.status, r.body)
	}
	eventually(t, "the data key erased from the store's files", func() bool { return !bytes.Contains(storeFiles(t, dir), wrapped) })
	// The endpoint kept still signs: its secrets open.
	if r := m.admin(t, http.MethodGet, "/admin/v1/establishments/chez-marcel/webhooks", nil); !bytes.Contains(r.body, []byte(kept)) || bytes.Contains(r.body, []byte(removed)) {
		t.Errorf("endpoints after the removal: %s", r.body)
	}
}

// dumpStreams returns every message of every stream, as an operator's dump would hold them.
func dumpStreams(t *testing.T, m *Main) []byte {
	t.Helper()
	js := m.jetStream(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		info := s.CachedInfo()
		for seq := info.State.FirstSeq; seq > 0 && seq <= info.State.LastSeq; seq++ {
			msg, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted
			}
			out.Write(msg.Data)
		}
	}
	if err := names.Err(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// storeFiles returns the bytes of every file of the embedded server's store.
func storeFiles(t *testing.T, dir string) []byte {
	t.Helper()
	var out bytes.Buffer
	err := filepath.WalkDir(filepath.Join(dir, "nats"), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil // removed meanwhile
		}
		out.Write(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
