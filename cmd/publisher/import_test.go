package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/client"
	"github.com/opencarte/publisher/cmd/publisher/progress"
)

// adminEnv is the environment that points the CLI at m's admin API.
func adminEnv(m *Main) func(string) string {
	return func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": m.AdminURL, "PUBLISHER_ADMIN_TOKEN": testAdminToken}[k]
	}
}

// demoLine returns the demo document on one line with its slug replaced.
func demoLine(tb testing.TB, slug string) string {
	tb.Helper()
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		tb.Fatal(err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, demo); err != nil {
		tb.Fatal(err)
	}
	line := strings.Replace(buf.String(), `"slug":"chez-marcel"`, fmt.Sprintf(`"slug":%q`, slug), 1)
	if line == buf.String() {
		tb.Fatal("demo.json has no slug chez-marcel")
	}
	return line
}

func writeFile(tb testing.TB, path, content string) string {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	return path
}

// importRun runs the import command as the binary would, without standard input.
func importRun(tb testing.TB, env func(string) string, args ...string) (stdout, stderr string, err error) {
	tb.Helper()
	var out, errOut bytes.Buffer
	err = client.Import(context.Background(), args, strings.NewReader(""), &out, &errOut, env)
	return out.String(), errOut.String(), err
}

// results decodes the command's stdout, one result a line.
func results(tb testing.TB, stdout string) []client.Result {
	tb.Helper()
	var rs []client.Result
	for _, line := range strings.Split(strings.TrimSuffix(stdout, "\n"), "\n") {
		if line == "" {
			continue
		}
		var r client.Result
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			tb.Fatalf("stdout line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}

func (m *Main) lastSequence(tb testing.TB) uint64 {
	tb.Helper()
	seq, err := m.Store.LastStreamSequence(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return seq
}

func (m *Main) mustExist(tb testing.TB, slugs ...string) {
	tb.Helper()
	for _, slug := range slugs {
		if r := m.admin(tb, http.MethodGet, "/admin/v1/establishments/"+slug, nil); r.status != http.StatusOK {
			tb.Errorf("GET %s: got %d %s, want 200", slug, r.status, r.body)
		}
	}
}

// An NDJSON file's good lines are imported, each bad one is named with its line and reason, and
// the same import run again appends nothing and shows no key again.
func TestImportNDJSON(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	oversized := `{"slug": "huge", "name": "` + strings.Repeat("x", admin.MaxBodyBytes) + `"}`
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), strings.Join([]string{
		demoLine(t, "alpha"),
		`{"slug": "broken",`,
		`{"slug": "bad-values", "name": "", "business_type": "nightclub"}`,
		``,
		demoLine(t, "beta"),
		demoLine(t, "alpha"),
		oversized,
		demoLine(t, "gamma") + "\r", // a line end from another system
	}, "\n")) // and no end on the last line

	stdout, stderr, err := importRun(t, adminEnv(m), "--progress=none", shops)
	if err == nil || !strings.Contains(err.Error(), "4 of 7 documents refused") {
		t.Errorf("import: got %v, want 4 of 7 documents refused", err)
	}
	got := results(t, stdout)
	if len(got) != 3 {
		t.Fatalf("stdout: got %d results, want 3:\n%s", len(got), stdout)
	}
	for i, want := range []struct {
		line int
		slug string
	}{{1, "alpha"}, {5, "beta"}, {8, "gamma"}} {
		r := got[i]
		if r.File != shops || r.Line != want.line || r.Slug != want.slug || r.Status != "created" || r.Version == 0 || !strings.HasPrefix(r.APIKey, "pk_") {
			t.Errorf("result %d: got %+v, want %s line %d created with a key", i, r, want.slug, want.line)
		}
	}
	m.mustExist(t, "alpha", "beta", "gamma")
	for _, want := range []string{
		shops + `:2: slug "broken": 400 Bad request`,
		shops + `:3: slug "bad-values": 422 Unprocessable entity: `,
		shops + `:6: slug "alpha" is already given at ` + shops + ":1\n",
		shops + ":7: line is larger than 4 MiB\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not hold %q:\n%s", want, stderr)
		}
	}
	if line := lineWith(stderr, ":3: "); !strings.Contains(line, "name: required") || !strings.Contains(line, "business_type") {
		t.Errorf("refusal of line 3: got %q, want name and business_type named", line)
	}
	if !strings.Contains(stderr, "7 documents read: 3 accepted (3 created, 0 updated, 0 unchanged, 0 duplicate), 4 refused") {
		t.Errorf("summary: got\n%s", stderr)
	}

	before := m.lastSequence(t)
	stdout, _, err = importRun(t, adminEnv(m), "--progress=none", shops)
	if err == nil || !strings.Contains(err.Error(), "4 of 7 documents refused") {
		t.Errorf("second import: got %v, want the same 4 refusals", err)
	}
	if after := m.lastSequence(t); after != before {
		t.Errorf("second import: stream at %d, want %d: it appended", after, before)
	}
	again := results(t, stdout)
	if len(again) != 3 {
		t.Fatalf("second import: got %d results, want 3:\n%s", len(again), stdout)
	}
	for i, r := range again {
		if r.Status != "unchanged" || r.APIKey != "" || r.Version != got[i].Version {
			t.Errorf("second import, result %d: got %+v, want unchanged at version %d without a key", i, r, got[i].Version)
		}
	}
}

func lineWith(text, part string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, part) {
			return l
		}
	}
	return ""
}

// A document with millions of bad elements is refused on one line of a few kilobytes, which names
// the first problems and counts the rest.
func TestImportReportsBoundedRefusals(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	numbers := func(slug string, n int) string {
		return strings.Replace(demoLine(t, slug), `"business_hours":[`, `"business_hours":[`+strings.Repeat("1,", n), 1)
	}
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), strings.Join([]string{
		demoLine(t, "alpha"), numbers("hostile", 1_900_000), numbers("sloppy", 150),
	}, "\n"))
	_, stderr, err := importRun(t, adminEnv(m), "--progress=none", shops)
	if err == nil || !strings.Contains(err.Error(), "2 of 3 documents refused") {
		t.Errorf("import: got %v, want 2 of 3 documents refused", err)
	}
	for _, want := range []struct{ prefix, suffix string }{
		{shops + `:2: slug "hostile": 400 Bad request: business_hours[0]: wrong type: got JSON number, want object; `, "; … and at least 9900 more"},
		{shops + `:3: slug "sloppy": 400 Bad request: business_hours[0]: wrong type: got JSON number, want object; `, "; … and 50 more"},
	} {
		line := lineWith(stderr, want.prefix)
		if !strings.HasPrefix(line, want.prefix) || !strings.HasSuffix(line, want.suffix) {
			t.Errorf("got refusal %.300q, want it to start with %q and end with %q", line, want.prefix, want.suffix)
		}
		if len(line) > 16<<10 {
			t.Errorf("got a refusal of %d bytes, want at most %d", len(line), 16<<10)
		}
	}
}

// A directory's *.json files are imported, each a document of several lines, and a refusal
// names its file.
func TestImportDirectory(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	dir := t.TempDir()
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "a.json"), strings.Replace(string(demo), `"chez-marcel"`, `"dir-a"`, 1))
	writeFile(t, filepath.Join(dir, "b.json"), "{\n  \"slug\": \"bad-dir\",\n  \"name\": \"\",\n  \"business_type\": \"nightclub\"\n}\n")
	writeFile(t, filepath.Join(dir, "c.json"), demoLine(t, "dir-c"))
	writeFile(t, filepath.Join(dir, "notes.txt"), "not a document")
	writeFile(t, filepath.Join(dir, ".draft.json"), "{")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "sub", "d.json"), demoLine(t, "dir-d"))

	stdout, stderr, err := importRun(t, adminEnv(m), "--progress=none", dir)
	if err == nil || !strings.Contains(err.Error(), "1 of 3 documents refused") {
		t.Errorf("import: got %v, want 1 of 3 documents refused", err)
	}
	got := results(t, stdout)
	if len(got) != 2 || got[0].File != filepath.Join(dir, "a.json") || got[0].Slug != "dir-a" ||
		got[1].File != filepath.Join(dir, "c.json") || got[1].Slug != "dir-c" {
		t.Errorf("stdout: got %+v, want dir-a from a.json then dir-c from c.json", got)
	}
	m.mustExist(t, "dir-a", "dir-c")
	if r := m.admin(t, http.MethodGet, "/admin/v1/establishments/dir-d", nil); r.status != http.StatusNotFound {
		t.Errorf("a file of a subdirectory: got %d, want it left out (404)", r.status)
	}
	want := filepath.Join(dir, "b.json") + `: slug "bad-dir": 422 Unprocessable entity: `
	if line := lineWith(stderr, "b.json"); !strings.HasPrefix(line, want) || !strings.Contains(line, "business_type") {
		t.Errorf("refusal of b.json: got %q, want it to start with %q and name business_type", line, want)
	}
	if strings.Contains(stderr, ".draft.json") || strings.Contains(stderr, "notes.txt") {
		t.Errorf("stderr names a file that is not imported:\n%s", stderr)
	}
}

// Documents of several batches sent in parallel all arrive, and are reported in input order.
func TestImportManyBatches(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	var lines, slugs []string
	for i := range 5 {
		slugs = append(slugs, fmt.Sprintf("many-%d", i))
		lines = append(lines, demoLine(t, slugs[i]))
	}
	shops := writeFile(t, filepath.Join(t.TempDir(), "many.jsonl"), strings.Join(lines, "\n")+"\n")
	stdout, stderr, err := importRun(t, adminEnv(m), "--batch", "2", "--parallel", "3", "--progress", "none", shops)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	got := results(t, stdout)
	if len(got) != len(slugs) {
		t.Fatalf("stdout: got %d results, want %d:\n%s", len(got), len(slugs), stdout)
	}
	for i, r := range got {
		if r.Line != i+1 || r.Slug != slugs[i] || r.Status != "created" {
			t.Errorf("result %d: got %+v, want line %d %s created", i, r, i+1, slugs[i])
		}
	}
	m.mustExist(t, slugs...)
}

// proxy stands in front of the admin API: the test decides how the n-th batch request (from 1)
// is answered; every other request is passed on.
type proxy struct {
	t      *testing.T
	target string
	mu     sync.Mutex
	n      int
	keys   []string
	hook   func(n int, w http.ResponseWriter, body []byte, forward func() *http.Response)
}

func newProxy(t *testing.T, target string, hook func(n int, w http.ResponseWriter, body []byte, forward func() *http.Response)) (*proxy, string) {
	p := &proxy{t: t, target: target, hook: hook}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// idempotencyKeys returns the Idempotency-Key of each batch request so far.
func (p *proxy) idempotencyKeys() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.keys...)
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		p.t.Errorf("proxy: %v", err)
		return
	}
	forward := func() *http.Response {
		req, err := http.NewRequest(r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
		if err != nil {
			p.t.Errorf("proxy: %v", err)
			return nil
		}
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			p.t.Errorf("proxy: %v", err)
			return nil
		}
		return resp
	}
	if r.URL.Path != client.ImportPath {
		relay(w, forward())
		return
	}
	p.mu.Lock()
	p.n++
	n := p.n
	p.keys = append(p.keys, r.Header.Get("Idempotency-Key"))
	p.mu.Unlock()
	p.hook(n, w, body, forward)
}

func relay(w http.ResponseWriter, resp *http.Response) {
	if resp == nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}

// dropAnswer closes the connection without answering, as a network failure after the server
// applied the request would.
func dropAnswer(t *testing.T, w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	conn.Close()
}

// testImporter is an importer of paths through the admin API at url, retrying at once.
func testImporter(t *testing.T, url string, stdout, stderr io.Writer) *client.Importer {
	t.Helper()
	c, err := client.New(url, testAdminToken, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := client.ImportConfig{Batch: 200, Parallel: 2, Progress: progress.Options{Mode: "none", Every: time.Second}, Backoff: time.Millisecond}
	return client.NewImporter(c, cfg, strings.NewReader(""), stdout, stderr)
}

// A batch is tried again after a 503 (honouring its Retry-After) and after a lost answer, under
// the same key: it is applied once, and the lines it applied unseen are named, their keys being
// lost.
func TestImportRetriesUnderTheSameKey(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	p, url := newProxy(t, m.AdminURL, func(n int, w http.ResponseWriter, _ []byte, forward func() *http.Response) {
		switch n {
		case 1:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":"Service unavailable","details":["event log: not available right now"]}`)
		case 2:
			if resp := forward(); resp != nil {
				resp.Body.Close()
			}
			dropAnswer(t, w)
		default:
			relay(w, forward())
		}
	})
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), demoLine(t, "retry-a")+"\n"+demoLine(t, "retry-b")+"\n")
	before := m.lastSequence(t)
	var out, errOut bytes.Buffer
	if err := testImporter(t, url, &out, &errOut).Run(context.Background(), []string{shops}); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	got := results(t, out.String())
	if len(got) != 2 {
		t.Fatalf("stdout: got %d results, want 2:\n%s", len(got), out.String())
	}
	for _, r := range got {
		if r.Status != "duplicate" || r.APIKey != "" {
			t.Errorf("result: got %+v, want a duplicate: the second try applied it", r)
		}
		if line := lineWith(errOut.String(), fmt.Sprintf("slug %q", r.Slug)); !strings.Contains(line, "publisher admin regenerate-key "+r.Slug) {
			t.Errorf("stderr: got %q, want the lost key of %s named", line, r.Slug)
		}
	}
	m.mustExist(t, "retry-a", "retry-b")
	if after := m.lastSequence(t); after != before+2 {
		t.Errorf("stream: got %d records appended, want 2 (one import each)", after-before)
	}
	if keys := p.idempotencyKeys(); len(keys) != 3 || keys[0] == "" || keys[1] != keys[0] || keys[2] != keys[0] {
		t.Errorf("Idempotency-Key of the tries: got %q, want the same 3 times", keys)
	}
}

// Lines answered 503 in a batch are tried again with it; the lines it already imported keep
// their first answer.
func TestImportRetriesLinesAnswered503(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	p, url := newProxy(t, m.AdminURL, func(n int, w http.ResponseWriter, body []byte, forward func() *http.Response) {
		if n > 1 {
			relay(w, forward())
			return
		}
		var rs []string
		for i := range bytes.Count(body, []byte("\n")) {
			rs = append(rs, fmt.Sprintf(`{"line":%d,"status":503,"error":"Service unavailable","details":["event log: not available right now"]}`, i+1))
		}
		fmt.Fprintf(w, `{"results":[%s],"accepted":0,"refused":%d}`, strings.Join(rs, ","), len(rs))
	})
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), demoLine(t, "busy-a")+"\n"+demoLine(t, "busy-b")+"\n")
	var out, errOut bytes.Buffer
	if err := testImporter(t, url, &out, &errOut).Run(context.Background(), []string{shops}); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	got := results(t, out.String())
	for _, r := range got {
		if r.Status != "created" || !strings.HasPrefix(r.APIKey, "pk_") {
			t.Errorf("result: got %+v, want created with its key", r)
		}
	}
	if len(got) != 2 || strings.Contains(errOut.String(), "regenerate-key") {
		t.Errorf("got %d results and stderr %q, want 2 and no lost answer", len(got), errOut.String())
	}
	if keys := p.idempotencyKeys(); len(keys) != 2 || keys[1] != keys[0] {
		t.Errorf("Idempotency-Key of the tries: got %q, want the same twice", keys)
	}
}

// A failure of the whole request that would recur for every batch stops the import at once,
// rather than naming every document.
func TestImportStopsOnAWrongToken(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	var lines []string
	for i := range 20 {
		lines = append(lines, demoLine(t, fmt.Sprintf("denied-%d", i)))
	}
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), strings.Join(lines, "\n"))
	var out, errOut bytes.Buffer
	env := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": m.AdminURL, "PUBLISHER_ADMIN_TOKEN": "wrong", "PUBLISHER_BATCH": "2", "PUBLISHER_PARALLEL": "1"}[k]
	}
	err := client.Import(context.Background(), []string{"--progress=none", shops}, nil, &out, &errOut, env)
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "not imported") {
		t.Errorf("import: got %v, want a 401 and documents not imported", err)
	}
	if out.Len() > 0 || strings.Count(errOut.String(), "\n") != 1 || !strings.Contains(errOut.String(), "0 accepted") {
		t.Errorf("output: got stdout %q stderr %q, want only the summary", out.String(), errOut.String())
	}
}

// Plain progress lines go to stderr while the import runs, never to stdout.
func TestImportPlainProgress(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	release := make(chan struct{})
	var once sync.Once
	_, url := newProxy(t, m.AdminURL, func(_ int, w http.ResponseWriter, _ []byte, forward func() *http.Response) {
		<-release
		relay(w, forward())
	})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before the proxy closes
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), demoLine(t, "slow-a")+"\n"+demoLine(t, "slow-b")+"\n")
	env := func(k string) string {
		return map[string]string{"PUBLISHER_ADMIN_URL": url, "PUBLISHER_ADMIN_TOKEN": testAdminToken}[k]
	}
	var out bytes.Buffer
	errOut := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"import", "--progress=plain", "--progress-every=10ms", shops}, &out, errOut, env)
	}()
	eventually(t, "a progress line", func() bool {
		return strings.Contains(errOut.String(), "imported 0 documents (0/s), refused 0, 0% of input\n")
	})
	once.Do(func() { close(release) })
	if err := <-done; err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	if got := results(t, out.String()); len(got) != 2 {
		t.Errorf("stdout: got %q, want the 2 results only", out.String())
	}
	if !strings.Contains(errOut.String(), "2 documents read: 2 accepted") {
		t.Errorf("stderr: got %q, want the summary", errOut.String())
	}
}

// With --progress=none, stderr holds the summary and nothing else when all goes well; - reads
// NDJSON from standard input.
func TestImportStdin(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	in := strings.NewReader(demoLine(t, "stdin-a") + "\n\n" + demoLine(t, "stdin-b") + "\n")
	var out, errOut bytes.Buffer
	if err := client.Import(context.Background(), []string{"--progress=none", "-"}, in, &out, &errOut, adminEnv(m)); err != nil {
		t.Fatalf("import: %v\n%s", err, errOut.String())
	}
	got := results(t, out.String())
	if len(got) != 2 || got[0].File != "stdin" || got[0].Line != 1 || got[1].Line != 3 {
		t.Errorf("stdout: got %+v, want stdin lines 1 and 3", got)
	}
	if lines := strings.Split(strings.TrimSpace(errOut.String()), "\n"); len(lines) != 1 || !strings.HasPrefix(lines[0], "import: 2 documents read: 2 accepted (2 created") {
		t.Errorf("stderr: got %q, want the summary only", errOut.String())
	}
	m.mustExist(t, "stdin-a", "stdin-b")
}

// A bar asked for is drawn on stderr, with the messages above it; stdout holds the results only.
func TestImportBar(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-22")
	shops := writeFile(t, filepath.Join(t.TempDir(), "shops.ndjson"), demoLine(t, "bar-a")+"\n"+`{"slug": "bar-bad"}`+"\n")
	stdout, stderr, err := importRun(t, adminEnv(m), "--progress=bar", shops)
	if err == nil || !strings.Contains(err.Error(), "1 of 2 documents refused") {
		t.Errorf("import: got %v, want 1 refused", err)
	}
	if got := results(t, stdout); len(got) != 1 || got[0].Slug != "bar-a" {
		t.Errorf("stdout: got %q, want the one result", stdout)
	}
	for _, want := range []string{"2 documents", `shops.ndjson:2: slug "bar-bad": 422`, "import: 2 documents read"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not hold %q:\n%q", want, stderr)
		}
	}
}

// The import cuts its batches within the limits the batch endpoint states.
func TestImportLimitsAreTheAdminAPIs(t *testing.T) {
	if client.MaxBatchDocuments != admin.MaxBatchItems || client.MaxDocumentBytes != admin.MaxBodyBytes {
		t.Errorf("import: %d documents of %d bytes a batch; the admin API takes %d of %d",
			client.MaxBatchDocuments, client.MaxDocumentBytes, admin.MaxBatchItems, admin.MaxBodyBytes)
	}
}
