package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// batchBody joins documents into an NDJSON body.
func batchBody(lines ...string) []byte { return []byte(strings.Join(lines, "\n") + "\n") }

func (f *fixture) batch(tb testing.TB, body []byte, hdr ...string) (int, batchAnswer, string) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+importPath, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/x-ndjson")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var a batchAnswer
	_ = json.Unmarshal(raw, &a)
	return resp.StatusCode, a, string(raw)
}

// compact returns the demo document on one line with its slug replaced.
func compactDemo(tb testing.TB, slug string) string {
	tb.Helper()
	var buf bytes.Buffer
	if err := json.Compact(&buf, demoBody(tb)); err != nil {
		tb.Fatal(err)
	}
	return strings.Replace(buf.String(), `"slug":"chez-marcel"`, fmt.Sprintf(`"slug":%q`, slug), 1)
}

// A batch imports its good lines and answers each bad one with its line number and what a PUT of
// it alone would have answered; sent again under the same key, it appends nothing.
func TestBatchImport(t *testing.T) {
	f := newFixture(t)
	body := batchBody(
		compactDemo(t, "alpha"),
		`{"slug": "broken",`,
		``,
		compactDemo(t, "beta"),
		`{"slug": "bad-values", "name": "", "business_type": "nightclub"}`,
		compactDemo(t, "alpha"),
		`{"slug": "Not A Slug", "name": "x"}`,
		`"just a string"`,
	)
	status, a, raw := f.batch(t, body, "Idempotency-Key", "batch-1")
	if status != 200 {
		t.Fatalf("batch: got %d %s, want 200", status, raw)
	}
	want := []struct {
		line   int
		status int
		field  string
	}{
		{1, 201, ""}, {2, 400, "body"}, {4, 201, ""}, {5, 422, "business_type"},
		{6, 422, "slug"}, {7, 422, "slug"}, {8, 400, "body"},
	}
	if len(a.Results) != len(want) {
		t.Fatalf("batch: got %d results, want %d: %s", len(a.Results), len(want), raw)
	}
	for i, w := range want {
		got := a.Results[i]
		if got.Line != w.line || got.Status != w.status {
			t.Errorf("result %d: got line %d status %d, want line %d status %d (%+v)", i, got.Line, got.Status, w.line, w.status, got)
		}
		if w.field != "" && !strings.Contains(strings.Join(got.Details, " "), w.field) {
			t.Errorf("line %d: details %q do not name %s", w.line, got.Details, w.field)
		}
		if w.status == 201 && (got.APIKey == "" || got.Result == nil || got.Result.Events == 0) {
			t.Errorf("line %d: got %+v, want a result with events and a key shown once", w.line, got)
		}
	}
	if !strings.Contains(strings.Join(a.Results[4].Details, " "), "line 1") {
		t.Errorf("duplicate slug: details %q do not name the first line", a.Results[4].Details)
	}
	if a.Accepted != 2 || a.Refused != 5 {
		t.Errorf("counts: got %d accepted, %d refused, want 2 and 5", a.Accepted, a.Refused)
	}
	before := f.records(t, "alpha") + f.records(t, "beta")

	// The same batch again: nothing is appended, no key is shown again.
	status, a, raw = f.batch(t, body, "Idempotency-Key", "batch-1")
	if status != 200 || a.Accepted != 2 {
		t.Fatalf("batch again: got %d %s", status, raw)
	}
	for _, r := range a.Results[:1] {
		if r.APIKey != "" || !r.Result.Duplicate {
			t.Errorf("batch again, line %d: got %+v, want a duplicate without a key", r.Line, r)
		}
	}
	// And without the key: the same content changes nothing either.
	if _, a, _ = f.batch(t, body); a.Results[0].Result == nil || a.Results[0].Result.Events != 0 || a.Results[0].APIKey != "" {
		t.Errorf("batch without key: got %+v, want no events and no key", a.Results[0])
	}
	if after := f.records(t, "alpha") + f.records(t, "beta"); after != before {
		t.Errorf("records after the batch was sent again: got %d, want %d", after, before)
	}
}

func TestBatchLimits(t *testing.T) {
	f := newFixture(t)
	long := `{"slug": "long", "name": "` + strings.Repeat("x", MaxBodyBytes) + `"}`
	status, a, raw := f.batch(t, batchBody(long, compactDemo(t, "after-long")))
	if status != 200 || len(a.Results) != 2 || a.Results[0].Status != 413 || a.Results[1].Status != 201 {
		t.Errorf("oversized line: got %d %.300s, want 413 for it and 201 for the next", status, raw)
	}
	lines := make([]string, MaxBatchItems+1)
	for i := range lines {
		lines[i] = `{}`
	}
	lines[0] = compactDemo(t, "first-of-many")
	status, a, raw = f.batch(t, batchBody(lines...))
	if status != 413 || a.Error == "" || len(a.Results) != MaxBatchItems || a.Results[0].Status != 201 || a.Results[0].APIKey == "" {
		t.Errorf("%d documents: got %d %.200s, want 413 with the results of the first %d, keys included", len(lines), status, raw, MaxBatchItems)
	}
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+importPath, strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "text/csv")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 415 {
		t.Errorf("text/csv: got %v %v, want 415", resp.StatusCode, err)
	}
}
