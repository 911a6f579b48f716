package admin

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
)

func TestFieldDetails(t *testing.T) {
	t.Parallel()
	fieldErrs := func(n int) []error {
		var errs []error
		for i := range n {
			errs = append(errs, &domain.FieldError{Field: fmt.Sprintf("f[%d]", i), Reason: "bad"})
		}
		return errs
	}
	list := func(n int) error {
		var fe domain.FieldErrorList
		for _, err := range fieldErrs(n) {
			fe.Add(err)
		}
		return fe.Err()
	}
	long := &domain.FieldError{Field: "x", Reason: strings.Repeat("é", maxDetailBytes)}
	tests := []struct {
		name      string
		err       error
		wantCount int    // details
		wantLast  string // the last detail
	}{
		{"no error", nil, 0, ""},
		{"not a field error", errors.New("store down"), 0, ""},
		{"one", fmt.Errorf("import: %w", list(1)), 1, "f[0]: bad"},
		{"as many as named", list(domain.MaxFieldErrors), domain.MaxFieldErrors, "f[99]: bad"},
		{"one more", list(domain.MaxFieldErrors + 1), domain.MaxFieldErrors + 1, "… and 1 more"},
		{"counted", list(1_500), domain.MaxFieldErrors + 1, "… and 1400 more"},
		{"counted past the bound", list(50_000), domain.MaxFieldErrors + 1, "… and at least 49900 more"},
		{"joined without a list", errors.Join(fieldErrs(250)...), domain.MaxFieldErrors + 1, "… and 150 more"},
		{"joined and counted", errors.Join(append(fieldErrs(150), &domain.MoreFieldErrors{Count: 20})...), domain.MaxFieldErrors + 1, "… and 70 more"},
		{"too long", long, 1, "x: " + strings.Repeat("é", (maxDetailBytes-len("x: …"))/2) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := fieldDetails(tc.err)
			if len(got) != tc.wantCount {
				t.Fatalf("got %d details, want %d: %q", len(got), tc.wantCount, got)
			}
			if len(got) == 0 {
				return
			}
			if last := got[len(got)-1]; last != tc.wantLast {
				t.Errorf("got last detail %q, want %q", last, tc.wantLast)
			}
			for _, d := range got {
				if len(d) > maxDetailBytes || !utf8.ValidString(d) {
					t.Errorf("got detail of %d bytes (valid UTF-8: %v), want at most %d", len(d), utf8.ValidString(d), maxDetailBytes)
				}
			}
		})
	}
}

// hoursOfNumbers is the demo document with business_hours an array of n numbers, where objects
// belong: 2 bytes an element, so 1.9 million of them fit in a body.
func hoursOfNumbers(tb testing.TB, n int) []byte {
	tb.Helper()
	doc := mutate(tb, demoBody(tb), func(m map[string]any) { m["business_hours"] = []any{} })
	return bytes.Replace(doc, []byte(`"business_hours":[]`), []byte(`"business_hours":[`+strings.Repeat("1,", n-1)+`1]`), 1)
}

// badItems is the demo document with one menu type of 100,000 items (2 versions of 100 sections
// of 500), each well formed but without id or name and with an invalid price: three errors an
// item, found by validation.
func badItems(tb testing.TB) []byte {
	tb.Helper()
	section := `{"name":{"fr":"s"},"items":[` + strings.Repeat(`{"a_la_carte":true,"price":"1"},`, 499) + `{"a_la_carte":true,"price":"1"}]}`
	sections := strings.Repeat(section+",", 99) + section
	menu := `[{"slug":"la-carte","name":"La carte","kind":"card","source":"generated","web_delivery":true,"rotation":"none","versions":[` +
		`{"id":"v1","sections":[` + sections + `]},{"id":"v2","sections":[` + sections + `]}]}]`
	doc := mutate(tb, demoBody(tb), func(m map[string]any) { m["menu_types"] = []any{} })
	return bytes.Replace(doc, []byte(`"menu_types":[]`), []byte(`"menu_types":`+menu), 1)
}

// unknownDigests is the demo document whose first menu file has n references that are not
// digests, refused before validation.
func unknownDigests(tb testing.TB, n int) []byte {
	tb.Helper()
	return mutate(tb, demoBody(tb), func(m map[string]any) {
		urls := make([]any, n)
		for i := range urls {
			urls[i] = "sha256:x"
		}
		at(m, "menu_types", 0, "versions", 0, "assets", 0)["urls"] = urls
	})
}

// maxErrorAnswer bounds the body of an error answer, whatever the request.
const maxErrorAnswer = 64 << 10

// An error answer names at most MaxFieldErrors problems and counts the others, however many the
// body holds.
func TestErrorAnswersAreBounded(t *testing.T) {
	f := newFixture(t)
	if r := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demoBody(t)); r.status != http.StatusCreated {
		t.Fatalf("import demo: got %d %s, want 201", r.status, r.raw)
	}
	before := f.records(t, "chez-marcel")
	tests := []struct {
		name      string
		body      []byte
		status    int
		wantFirst string
		wantLast  string
	}{
		{"1.9 million numbers for ranges", hoursOfNumbers(t, 1_900_000), 400,
			"business_hours[0]: wrong type: got JSON number, want object", "… and at least 9900 more"},
		{"150 numbers for ranges", hoursOfNumbers(t, 150), 400,
			"business_hours[0]: wrong type: got JSON number, want object", "… and 50 more"},
		// Validation stops after the item that fills the list, with its three errors.
		{"100,000 bad items", badItems(t), 422,
			"menu_types[0].versions[0].sections[0].items[0].id: required", "… and at least 9902 more"},
		{"300 references that are not digests", unknownDigests(t, 300), 422,
			"menu_types[0].versions[0].assets[0].urls[0]: invalid file digest", "… and 200 more"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.body) > MaxBodyBytes {
				t.Fatalf("body of %d bytes, want at most %d", len(tc.body), MaxBodyBytes)
			}
			r := f.call(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", tc.body)
			if r.status != tc.status {
				t.Fatalf("got status %d, want %d: %.500s", r.status, tc.status, r.raw)
			}
			if len(r.raw) > maxErrorAnswer {
				t.Errorf("got an answer of %d bytes, want at most %d", len(r.raw), maxErrorAnswer)
			}
			details, _ := r.body["details"].([]any)
			if len(details) != domain.MaxFieldErrors+1 {
				t.Fatalf("got %d details, want %d: %.500s", len(details), domain.MaxFieldErrors+1, r.raw)
			}
			if first, _ := details[0].(string); !strings.HasPrefix(first, tc.wantFirst) {
				t.Errorf("got first detail %q, want %q", first, tc.wantFirst)
			}
			if last := details[len(details)-1]; last != tc.wantLast {
				t.Errorf("got last detail %q, want %q", last, tc.wantLast)
			}
		})
	}
	if got := f.records(t, "chez-marcel"); got != before {
		t.Errorf("got %d records after the refusals, want %d", got, before)
	}
}

// A batch line gets the same bounded details as a PUT of it alone.
func TestBatchErrorAnswersAreBounded(t *testing.T) {
	f := newFixture(t)
	status, a, raw := f.batch(t, batchBody(
		strings.Replace(string(hoursOfNumbers(t, 1_900_000)), `"chez-marcel"`, `"alpha"`, 1),
		strings.Replace(string(badItems(t)), `"chez-marcel"`, `"beta"`, 1),
		compactDemo(t, "gamma"),
	))
	if status != http.StatusOK {
		t.Fatalf("batch: got %d %.500s, want 200", status, raw)
	}
	if len(raw) > 3*maxErrorAnswer {
		t.Errorf("got an answer of %d bytes, want at most %d", len(raw), 3*maxErrorAnswer)
	}
	want := []struct {
		status int
		last   string
	}{{400, "… and at least 9900 more"}, {422, "… and at least 9902 more"}, {201, ""}}
	if len(a.Results) != len(want) {
		t.Fatalf("got %d results, want %d: %.500s", len(a.Results), len(want), raw)
	}
	for i, w := range want {
		got := a.Results[i]
		if got.Status != w.status {
			t.Errorf("line %d: got status %d, want %d", got.Line, got.Status, w.status)
			continue
		}
		if w.last == "" {
			continue
		}
		if len(got.Details) != domain.MaxFieldErrors+1 {
			t.Errorf("line %d: got %d details, want %d", got.Line, len(got.Details), domain.MaxFieldErrors+1)
		} else if diff := cmp.Diff(w.last, got.Details[len(got.Details)-1]); diff != "" {
			t.Errorf("line %d: last detail mismatch (-want +got):\n%s", got.Line, diff)
		}
	}
}

// BenchmarkBoundedRefusal measures one refusal of a hostile body by the handler, from its bytes
// to its answer: go test -run X -bench BoundedRefusal -benchmem ./cmd/publisher/admin
func BenchmarkBoundedRefusal(b *testing.B) {
	for _, bc := range []struct {
		name, method, path, contentType string
		body                            []byte
		status                          int
	}{
		{"numbers for ranges", http.MethodPut, "/admin/v1/establishments/chez-marcel", "application/json", hoursOfNumbers(b, 1_900_000), 400},
		{"bad items", http.MethodPut, "/admin/v1/establishments/chez-marcel", "application/json", badItems(b), 422},
		{"batch of numbers for ranges", http.MethodPost, importPath, "application/x-ndjson", append(hoursOfNumbers(b, 1_900_000), '\n'), 200},
		{"batch of bad items", http.MethodPost, importPath, "application/x-ndjson", append(badItems(b), '\n'), 200},
	} {
		b.Run(bc.name, func(b *testing.B) {
			f := newFixture(b)
			if r := f.call(b, http.MethodPut, "/admin/v1/establishments/chez-marcel", demoBody(b)); r.status != http.StatusCreated {
				b.Fatalf("import demo: got %d %s, want 201", r.status, r.raw)
			}
			h := f.srv.Config.Handler
			b.ReportAllocs()
			for b.Loop() {
				req := httptest.NewRequest(bc.method, bc.path, bytes.NewReader(bc.body))
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", bc.contentType)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != bc.status {
					b.Fatalf("got %d %.300s, want %d", rec.Code, rec.Body, bc.status)
				}
				b.ReportMetric(float64(rec.Body.Len()), "answer-bytes")
			}
		})
	}
}
