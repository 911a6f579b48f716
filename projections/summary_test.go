package projections

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/fixture"
)

// A summary decides as the bundle it describes would: the same changed resources between any
// two bundles, and every resource of a bundle when compared with nothing.
func TestSummaryDecidesAsTheBundle(t *testing.T) {
	t.Parallel()
	var bundles []dockey.Bundle
	for _, f := range fixtures(t) {
		e := f.e
		bundles = append(bundles, Render(e, 7))
		// Variations: another name, a day later, a menu type gone.
		other := *e
		other.Identity.Name += " bis"
		bundles = append(bundles, Render(&other, 7))
		later := *e
		later.Today = later.Today.AddDays(1)
		bundles = append(bundles, Render(&later, 7))
		fewer := *e
		fewer.MenuTypes = fewer.MenuTypes[1:]
		bundles = append(bundles, Render(&fewer, 7))
	}
	for i := range bundles {
		if diff := cmp.Diff(ChangedResources(nil, &bundles[i]), Summarize(&bundles[i]).Resources()); diff != "" {
			t.Errorf("bundle %d: resources (-bundle +summary):\n%s", i, diff)
		}
		for j := range bundles {
			want := ChangedResources(&bundles[i], &bundles[j])
			if got := changedSince(Summarize(&bundles[i]), &bundles[j]); !cmp.Equal(want, got) {
				t.Errorf("bundles %d and %d: changed resources %v from the summary, %v from the bundle", i, j, got, want)
			}
		}
	}
	if got := changedSince(nil, &bundles[0]); !cmp.Equal(got, ChangedResources(nil, &bundles[0])) {
		t.Errorf("against nothing: got %v", got)
	}

	// Two summaries are the same exactly when their bundles are, revision and access included,
	// and have the same fingerprint then only; a summary read from a stored bundle is the same as
	// the one made when storing it.
	for i := range bundles {
		for j := range bundles {
			want := len(ChangedResources(&bundles[i], &bundles[j])) == 0 && SameAccess(&bundles[i], &bundles[j])
			if got := Summarize(&bundles[i]).Same(Summarize(&bundles[j])); got != want {
				t.Errorf("bundles %d and %d: same %v, want %v", i, j, got, want)
			}
			if got := Summarize(&bundles[i]).Fingerprint() == Summarize(&bundles[j]).Fingerprint(); got != want {
				t.Errorf("bundles %d and %d: same fingerprint %v, want %v", i, j, got, want)
			}
		}
		b := bundles[i]
		Compress(&b)
		stored := storedSummaryOf(t, &b)
		if !stored.Same(Summarize(&b)) || stored.Fingerprint() != Summarize(&b).Fingerprint() {
			t.Errorf("bundle %d: the stored summary differs from the summary made when storing", i)
		}
		other := b
		other.Revision++
		access := b
		access.KeyHash = "other"
		redirect := b
		redirect.Redirects = map[string]dockey.Redirect{"master_menu": {FR: "https://example.com/carte.pdf"}}
		sequence := b
		sequence.Sequence++
		for what, o := range map[string]*dockey.Bundle{"revision": &other, "access": &access, "redirect": &redirect} {
			if Summarize(&b).Same(Summarize(o)) || Summarize(&b).Fingerprint() == Summarize(o).Fingerprint() {
				t.Errorf("bundle %d: the same as one of another %s", i, what)
			}
		}
		if Summarize(&b).Fingerprint() == Summarize(&sequence).Fingerprint() {
			t.Errorf("bundle %d: the fingerprint of one stored by another record is the same", i)
		}
		stored.docs[ResourceHours] = docSummary{etag: `W/"other"`}
		if stored.Fingerprint() != 0 {
			t.Errorf("bundle %d: a summary with a digest unknown has a fingerprint", i)
		}
	}
	var none *BundleSummary
	if none.Same(Summarize(&bundles[0])) || Summarize(&bundles[0]).Same(nil) {
		t.Errorf("a nil summary is the same as another")
	}
}

// A summary takes a small fraction of the memory of the bundle it describes.
func TestSummaryIsSmall(t *testing.T) {
	t.Parallel()
	e := fixture.Load(t, "../cmd/publisher/demo.json", domain.LocalDate{Year: 2026, Month: 11, Day: 22})
	b := Render(e, 7)
	Compress(&b)
	bundleBytes := 0
	EachDocument(&b, func(_ string, d *dockey.Document) { bundleBytes += len(d.Body) + len(d.Gzip) })
	s := Summarize(&b)
	summaryBytes := 0
	for name, d := range s.docs {
		summaryBytes += len(name) + len(d.etag) + 8 + 48 // key, tag, digest, map overhead
	}
	if summaryBytes*10 > bundleBytes {
		t.Errorf("summary of about %d bytes for a bundle of %d: want less than a tenth", summaryBytes, bundleBytes)
	}
}

// The summary of a stored bundle, read without its documents, is the summary of the bundle; a tag
// of another form makes its document count as changed.
func TestSummaryOfStoredBundle(t *testing.T) {
	t.Parallel()
	for _, f := range fixtures(t) {
		name := f.name
		b := Render(f.e, 42)
		Compress(&b)
		got := storedSummaryOf(t, &b)
		if diff := cmp.Diff(Summarize(&b), got, cmp.AllowUnexported(BundleSummary{}, docSummary{})); diff != "" {
			t.Errorf("%s: summary of the stored bundle (-want +got):\n%s", name, diff)
		}
		b.Hours.ETag = `W/"other"`
		got = storedSummaryOf(t, &b)
		if changed := changedSince(got, &b); !cmp.Equal(changed, []string{ResourceHours}) {
			t.Errorf("%s: a tag of another form: changed %v, want [hours]", name, changed)
		}
	}
}

// The fingerprint of a summary changes with each thing same compares, and with the sequence: one
// field at a time.
func TestFingerprintFollowsEachField(t *testing.T) {
	t.Parallel()
	b := Render(fixture.Load(t, "../cmd/publisher/demo.json", fixture.Date(t, "2026-11-22")), 7)
	b.Redirects = map[string]dockey.Redirect{"la-carte": {FR: "https://cdn.example.fr/carte.pdf", EN: "https://cdn.example.fr/menu.pdf"}}
	base := Summarize(&b)
	for name, change := range map[string]func(s *BundleSummary){
		"revision":              func(s *BundleSummary) { s.revision++ },
		"sequence":              func(s *BundleSummary) { s.sequence++ },
		"slug":                  func(s *BundleSummary) { s.access.Slug += "-bis" },
		"status":                func(s *BundleSummary) { s.access.Status = dockey.StatusDraft },
		"public_api_enabled":    func(s *BundleSummary) { s.access.APIEnabled = !s.access.APIEnabled },
		"key_hash":              func(s *BundleSummary) { s.access.KeyHash += "0" },
		"menu_redirect_enabled": func(s *BundleSummary) { s.access.MenuRedirectEnabled = !s.access.MenuRedirectEnabled },
		"master_menu_url":       func(s *BundleSummary) { s.access.MasterMenuURL += "?v=2" },
		"redirect fr": func(s *BundleSummary) {
			s.access.Redirects = map[string]dockey.Redirect{"la-carte": {FR: "https://cdn.example.fr/x.pdf", EN: "https://cdn.example.fr/menu.pdf"}}
		},
		"redirect en": func(s *BundleSummary) {
			s.access.Redirects = map[string]dockey.Redirect{"la-carte": {FR: "https://cdn.example.fr/carte.pdf"}}
		},
		"redirect menu type": func(s *BundleSummary) {
			s.access.Redirects = map[string]dockey.Redirect{"autre": b.Redirects["la-carte"]}
		},
		"document digest": func(s *BundleSummary) {
			d := s.docs[ResourceHours]
			d.digest++
			s.docs[ResourceHours] = d
		},
		"document tag": func(s *BundleSummary) {
			d := s.docs[ResourceHours]
			d.etag = `"0000000000000000"`
			s.docs[ResourceHours] = d
		},
		"document gone": func(s *BundleSummary) { delete(s.docs, ResourceHours) },
	} {
		changed := Summarize(&b)
		changed.access.Redirects = maps.Clone(b.Redirects)
		change(changed)
		if changed.Fingerprint() == base.Fingerprint() {
			t.Errorf("%s changed: same fingerprint", name)
		}
		if name != "sequence" && changed.Same(base) {
			t.Errorf("%s changed: same summary", name)
		}
	}
	empty, none := Summarize(&b), Summarize(&b)
	empty.access.Redirects, none.access.Redirects = map[string]dockey.Redirect{}, nil
	if !empty.Same(none) || empty.Fingerprint() != none.Fingerprint() {
		t.Errorf("no redirects, as an empty map and as nil: want the same summary and fingerprint")
	}
}

// storedSummaryOf returns the summary of b as the projector reads it back from the bucket.
func storedSummaryOf(tb testing.TB, b *dockey.Bundle) *BundleSummary {
	tb.Helper()
	value, err := dockey.EncodeBundle(b)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := SummarizeStored(value)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// NextSummaryOver, which the replay decides with, decides as NextOver does and returns the
// summary of the bundle NextOver returns: from no bundle, from each bundle of the fixtures and
// their variations (another name, a day later, a menu type gone, not public, other access fields,
// a tag of another form with and without its digest known), to each, beside no day ahead and
// beside days ahead above and below them; NextAheadSummary likewise against NextAhead.
func TestNextSummaryDecidesAsNext(t *testing.T) {
	t.Parallel()
	var renderings []Rendering
	for _, f := range fixtures(t) {
		e := f.e
		other := *e
		other.Identity.Name += " bis"
		later := *e
		later.Today = later.Today.AddDays(1)
		fewer := *e
		fewer.MenuTypes = fewer.MenuTypes[1:]
		draft := *e
		draft.Status = domain.StatusDraft
		for _, v := range []*domain.Establishment{e, &other, &later, &fewer, &draft} {
			renderings = append(renderings, render(v, nil))
		}
	}
	prevs := []*BundleSummary{nil}
	for _, c := range renderings {
		b := c.Bundle(1000)
		b.Sequence = 990
		prevs = append(prevs, Summarize(&b))
		Compress(&b)
		b.Hours.ETag = `W/"other"`
		prevs = append(prevs, storedSummaryOf(t, &b))
		key := b
		key.KeyHash = "another"
		prevs = append(prevs, Summarize(&key))
		tag := c.Bundle(1000) // the same bodies, one tagged another way
		tag.Hours.ETag = `W/"other"`
		prevs = append(prevs, Summarize(&tag))
	}
	// Days ahead: the next day of the first fixture above and below the revision of the prevs.
	aheads := []*BundleSummary{nil}
	for _, revision := range []int64{1200, 900} {
		b := renderings[2].Bundle(revision)
		b.Base, b.Starts = 1000, 1795042800
		aheads = append(aheads, Summarize(&b))
	}
	opts := cmp.AllowUnexported(BundleSummary{}, docSummary{})
	for i, prev := range prevs {
		for j, c := range renderings {
			for k, ahead := range aheads {
				for _, floor := range []int64{5, 1000, 1500} {
					u := NextOver(prev, ahead, c, floor)
					u.Bundle.Sequence = 1234
					got, write := NextSummaryOver(prev, ahead, c, floor, 1234)
					if write != u.Write {
						t.Errorf("from %d to %d beside %d, floor %d: write %v, next says %v", i, j, k, floor, write, u.Write)
					}
					if !write {
						continue
					}
					if diff := cmp.Diff(Summarize(&u.Bundle), got, opts); diff != "" {
						t.Errorf("from %d to %d beside %d, floor %d: summary (-next +nextSummary):\n%s", i, j, k, floor, diff)
					}
				}
				a := NextAhead(ahead, prev, c, 1795042800)
				a.Bundle.Sequence = 1234
				got, write := NextAheadSummary(ahead, prev, c, 1795042800, 1234)
				if a.None != (got == nil) || write != (a.Write || a.None && ahead != nil) {
					t.Errorf("day ahead %d of %d over %d: summary %v write %v, NextAhead says none %v write %v", j, k, i, got != nil, write, a.None, a.Write)
				}
				if got != nil && write {
					if diff := cmp.Diff(Summarize(&a.Bundle), got, opts); diff != "" {
						t.Errorf("day ahead %d of %d over %d: summary (-NextAhead +NextAheadSummary):\n%s", j, k, i, diff)
					}
				}
			}
		}
	}
}

// BenchmarkReplayDecisionDemo measures what the replay does for each record once the aggregate
// is updated: render, then decide against the summary of the previous bundle.
func BenchmarkReplayDecisionDemo(b *testing.B) {
	e := fixture.Load(b, "../cmd/publisher/demo.json", fixture.Date(b, "2026-11-22"))
	prev := render(e, nil).summaryAt(7, 7)
	b.ReportAllocs()
	for b.Loop() {
		if _, write := NextSummaryOver(prev, nil, render(e, nil), 9, 9); write {
			b.Fatal("the same documents written again")
		}
	}
}

// TestScratchRenderingsAreTheSame checks that a rendering whose documents are encoded into a
// reused Scratch, as a replay's are, stamps the bytes and summarizes as one encoded without,
// and that its summary keeps nothing of the scratch: one scratch for every fixture and its
// variations in turn, reset between them as a replay resets it, and grown from empty.
func TestScratchRenderingsAreTheSame(t *testing.T) {
	t.Parallel()
	var scratch Scratch
	for _, f := range fixtures(t) {
		later := *f.e
		later.Today = later.Today.AddDays(1)
		draft := *f.e
		draft.Status = domain.StatusDraft
		for _, e := range []*domain.Establishment{f.e, &later, &draft, f.e} {
			scratch.Reset()
			got := render(e, &scratch)
			want := render(e, nil)
			if diff := cmp.Diff(want.summaryAt(7, 9), got.summaryAt(7, 9), cmp.AllowUnexported(BundleSummary{}, docSummary{})); diff != "" {
				t.Fatalf("%s: summary from the scratch (-without +with):\n%s", f.name, diff)
			}
			if diff := cmp.Diff(want.Bundle(7), got.Bundle(7)); diff != "" {
				t.Fatalf("%s: bundle from the scratch (-without +with):\n%s", f.name, diff)
			}
			// The summary a replay keeps holds nothing of the scratch: overwriting every byte
			// of it, as the next renderings do, leaves the summary as it was.
			kept := got.summaryAt(7, 9)
			b := scratch.buf.Bytes()
			for i := range b {
				b[i] = 'x'
			}
			if diff := cmp.Diff(want.summaryAt(7, 9), kept, cmp.AllowUnexported(BundleSummary{}, docSummary{})); diff != "" {
				t.Fatalf("%s: the summary changed with the scratch (-before +after):\n%s", f.name, diff)
			}
		}
	}
	if scratch.buf.Cap() == 0 {
		t.Fatal("nothing was encoded into the scratch")
	}
}
