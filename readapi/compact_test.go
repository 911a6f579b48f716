package readapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/opencarte/publisher/projections/dockey"
)

// TestCompactEntryHoldsTheBundleInOneArray checks that an entry serves exactly the bytes, tags
// and locations of its bundle, that all of them lie in the one array compact made, and that the
// entry keeps nothing of the decoded bundle.
func TestCompactEntryHoldsTheBundleInOneArray(t *testing.T) {
	t.Parallel()
	cases := map[string]func() dockey.Bundle{}
	for _, slug := range []string{alice, bob, dan, quinn} {
		cases[slug] = func() dockey.Bundle { return testBundle(slug, 7) }
	}
	// A draft without hours, a document without its coding, and one body larger than the
	// allocator's small objects next to small ones.
	cases["absent and uncoded"] = func() dockey.Bundle {
		b := testBundle(dan, 7)
		b.Hours = dockey.Document{}
		b.Establishment.Gzip = nil
		b.MenuDetails = nil
		b.Redirects = nil
		return b
	}
	cases["large body"] = func() dockey.Bundle {
		b := testBundle(dan, 7)
		b.Menus, b.MenuDetails, b.Redirects = dockey.Variants{}, nil, nil
		body := `{"text":"` + strings.Repeat("x", 36<<10) + `"}`
		b.Hours = dockey.Document{Body: []byte(body), ETag: `"large"`, Gzip: gzipOf(body)}
		return b
	}
	cases["equal documents"] = func() dockey.Bundle { return withEqualDocuments(testBundle(alice, 7)) }
	for name, bundle := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			want := bundle()
			b := bundle()
			e := mustEntry(t, b)

			// Every byte lies in one of two arrays, back to back, nothing skipped; equal pieces
			// share one copy.
			type run struct{ start, end uintptr }
			var runs []run
			eachBytes(e, func(p []byte) {
				start := uintptr(unsafe.Pointer(unsafe.SliceData(p)))
				runs = append(runs, run{start, start + uintptr(len(p))})
			})
			slices.SortFunc(runs, func(a, b run) int { return cmp.Compare(a.start, b.start) })
			runs = slices.Compact(runs) // equal pieces, an entity tag and its header value share their bytes
			arrays, held := 1, 0
			for i, r := range runs {
				held += int(r.end - r.start)
				if i > 0 && r.start != runs[i-1].end {
					arrays++
				}
			}
			if arrays > 2 || held > e.size {
				t.Errorf("%d bytes in %d arrays, want them in at most 2 arrays of %d bytes", held, arrays, e.size)
			}
			if e.size > allocated(held) {
				t.Errorf("%d bytes held for %d, more than one array of them would take (%d)", e.size, held, allocated(held))
			}

			// Overwrite every byte of the decoded bundle: the entry must not change.
			scribble(&b)
			checkDoc := func(name string, d *document, w dockey.Document) {
				t.Helper()
				if len(w.Body) == 0 {
					if d.body != nil || d.etagHeader != nil || d.gzip != nil {
						t.Errorf("%s: an absent document holds something", name)
					}
					return
				}
				if w.Gzip == nil {
					if d.gzip != nil || d.gzipETagHeader != nil || d.gzipLength != nil || !bytes.Equal(d.body, w.Body) || d.etagHeader[0] != w.ETag {
						t.Errorf("%s: a document without coding differs from the bundle's", name)
					}
					return
				}
				if !bytes.Equal(d.body, w.Body) || d.etag != w.ETag || d.etagHeader[0] != w.ETag ||
					d.length[0] != strconv.Itoa(len(w.Body)) {
					t.Errorf("%s: body, etag or length differ from the bundle's", name)
				}
				if !bytes.Equal(d.gzip, w.Gzip) || d.gzipETag != dockey.GzipETag(w.ETag) ||
					d.gzipETagHeader[0] != d.gzipETag || d.gzipLength[0] != strconv.Itoa(len(w.Gzip)) {
					t.Errorf("%s: gzip coding or its headers differ from the bundle's", name)
				}
			}
			checkVars := func(name string, v *variants, w dockey.Variants) {
				checkDoc(name+".all", &v.all, w.All)
				checkDoc(name+".fr", &v.fr, w.FR)
				checkDoc(name+".en", &v.en, w.EN)
			}
			checkDoc("establishment", &e.establishment, want.Establishment)
			checkDoc("hours", &e.hours, want.Hours)
			checkVars("menus", &e.menus, want.Menus)
			if len(e.menuDetails) != len(want.MenuDetails) {
				t.Fatalf("menu details: got %d, want %d", len(e.menuDetails), len(want.MenuDetails))
			}
			for menuType, w := range want.MenuDetails {
				v := e.menuDetails[menuType]
				if v == nil {
					t.Fatalf("menu details: %s missing", menuType)
				}
				checkVars("menu_details."+menuType, v, w)
			}
			if e.slug != want.Slug || e.revisionHeader[0] != "7" {
				t.Errorf("slug %q, revision header %q", e.slug, e.revisionHeader[0])
			}
			if want.MasterMenuURL == "" && e.masterMenu != nil || want.MasterMenuURL != "" && e.masterMenu[0] != want.MasterMenuURL {
				t.Errorf("master menu: got %v, want %q", e.masterMenu, want.MasterMenuURL)
			}
			for menuType, w := range want.Redirects {
				r, ok := e.redirects[menuType]
				if !ok || location(r.fr) != w.FR || location(r.en) != w.EN {
					t.Errorf("redirects %s: got %v, want %+v", menuType, r, w)
				}
			}
			if got, n := e.documentBytes(), bundleDocumentBytes(&want); got != n {
				t.Errorf("documentBytes: got %d, want %d", got, n)
			}
		})
	}
}

// withEqualDocuments makes the French menus and the English lunch menu of b the same documents
// as their "all" variants, as they are for an establishment with no English text, say. They are
// copies: equal bytes in arrays of their own, as a decoder gives them.
func withEqualDocuments(b dockey.Bundle) dockey.Bundle {
	same := func(d dockey.Document) dockey.Document {
		return dockey.Document{Body: bytes.Clone(d.Body), ETag: strings.Clone(d.ETag), Gzip: bytes.Clone(d.Gzip)}
	}
	b.Menus.FR = same(b.Menus.All)
	lunch := b.MenuDetails["lunch"]
	lunch.EN = same(lunch.All)
	b.MenuDetails["lunch"] = lunch
	return b
}

// TestCompactHoldsEqualDocumentsOnce checks that documents equal to others of their bundle share
// the bytes of the first instead of a copy of their own.
func TestCompactHoldsEqualDocumentsOnce(t *testing.T) {
	t.Parallel()
	e := mustEntry(t, withEqualDocuments(testBundle(alice, 7)))
	shared := func(name string, a, b *document) {
		t.Helper()
		if unsafe.SliceData(a.body) != unsafe.SliceData(b.body) || unsafe.SliceData(a.gzip) != unsafe.SliceData(b.gzip) ||
			unsafe.StringData(a.etag) != unsafe.StringData(b.etag) || unsafe.StringData(a.gzipLength[0]) != unsafe.StringData(b.gzipLength[0]) {
			t.Errorf("%s: equal documents hold copies of their own", name)
		}
	}
	shared("menus fr", &e.menus.all, &e.menus.fr)
	shared("lunch en", &e.menuDetails["lunch"].all, &e.menuDetails["lunch"].en)
	if unsafe.SliceData(e.menus.all.body) == unsafe.SliceData(e.menus.en.body) {
		t.Error("menus en: a different document shares the bytes of another")
	}
	// Every distinct run of bytes is held once: header values equal across documents (lengths,
	// entity tags) as well.
	held, distinct := 0, 0
	runs, contents := map[[2]uintptr]bool{}, map[string]bool{}
	eachBytes(e, func(p []byte) {
		if run := [2]uintptr{uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(len(p))}; !runs[run] {
			runs[run] = true
			held += len(p)
		}
		if !contents[string(p)] {
			contents[string(p)] = true
			distinct += len(p)
		}
	})
	if held != distinct {
		t.Errorf("%d bytes held for %d distinct bytes", held, distinct)
	}
	if e.size > allocated(distinct) {
		t.Errorf("size %d, more than one array of the %d distinct bytes takes (%d)", e.size, distinct, allocated(distinct))
	}
}

// eachBytes calls fn with every byte slice and string of e that compact moves.
func eachBytes(e *served, fn func([]byte)) {
	str := func(s string) {
		if s != "" {
			fn(unsafe.Slice(unsafe.StringData(s), len(s)))
		}
	}
	strs := func(ss []string) {
		for _, s := range ss {
			str(s)
		}
	}
	str(e.slug)
	strs(e.revisionHeader)
	strs(e.masterMenu)
	for menuType, r := range e.redirects {
		str(menuType)
		strs(r.fr)
		strs(r.en)
	}
	for menuType := range e.menuDetails {
		str(menuType)
	}
	eachDocument(e, func(d *document) {
		if d.body == nil {
			return
		}
		fn(d.body)
		if d.gzip != nil {
			fn(d.gzip)
		}
		str(d.etag)
		strs(d.etagHeader)
		strs(d.length)
		str(d.gzipETag)
		strs(d.gzipETagHeader)
		strs(d.gzipLength)
	})
}

// scribble overwrites every body and coding of b.
func scribble(b *dockey.Bundle) {
	b.EachDocument(func(d *dockey.Document) {
		for i := range d.Body {
			d.Body[i] = 'x'
		}
		for i := range d.Gzip {
			d.Gzip[i] = 'x'
		}
	})
}

func bundleDocumentBytes(b *dockey.Bundle) int {
	n := 0
	b.EachDocument(func(d *dockey.Document) { n += len(d.Body) + len(d.Gzip) })
	return n
}

func location(l []string) string {
	if l == nil {
		return ""
	}
	return l[0]
}

func TestArraySizesFollowTheAllocator(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 7, 8, 9, 100, 1000, 4097, 20000, 32767, 32768, 32769, 40000, 40960, 100000, 1 << 20} {
		got := cap(append([]byte(nil), make([]byte, n)...)) // append grows to the size given
		if a := allocated(n); a != got {
			t.Errorf("allocated(%d) = %d, want %d", n, a, got)
		}
		below := unroundedBelow(n)
		if below > n || allocated(below) != below {
			t.Errorf("unroundedBelow(%d) = %d: want a size at most %d that is not rounded", n, below, n)
		}
	}
}

// TestDecodedEntryKeepsNothingOfItsValue checks that an entry decoded from a stored value, whose
// strings, bodies and gzip codings the decoder does not copy, keeps no byte of the value or of the
// decoder's buffer: both are overwritten, and the buffer reused, while the entry stays as
// newServed makes it from the bundle.
func TestDecodedEntryKeepsNothingOfItsValue(t *testing.T) {
	t.Parallel()
	// One buffer large enough for every coding and tag, so that the regions checked below are
	// all the decoder wrote: a buffer outgrown mid-bundle would leave pieces in the one before.
	d := decoder{scratch: make([]byte, 0, 256<<10)}
	for _, slug := range []string{alice, bob, dan, quinn} {
		b := testBundle(slug, 7)
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(b); err != nil {
			t.Fatal(err)
		}
		value := buf.Bytes()
		within := func(p, region []byte) bool {
			at, start := uintptr(unsafe.Pointer(unsafe.SliceData(p))), uintptr(unsafe.Pointer(unsafe.SliceData(region)))
			return at < start+uintptr(len(region)) && at+uintptr(len(p)) > start
		}
		var walked dockey.Bundle
		if _, err := dockey.DecodeShared(value, &walked, nil); err != nil || !within(walked.Establishment.Body, value) {
			t.Fatalf("%s: the value is not decoded without copies (%v): the test checks nothing", slug, err)
		}
		e, err := d.decode(slug, value)
		if err != nil {
			t.Fatalf("%s: %v", slug, err)
		}
		regions := [][]byte{value, d.scratch[:cap(d.scratch)]}
		eachBytes(e, func(p []byte) {
			for _, r := range regions {
				if within(p, r) {
					t.Errorf("%s: the entry holds %.40q of the value or the decoder's buffer", slug, p)
				}
			}
		})
		for _, r := range regions {
			for i := range r {
				r[i] = 'x'
			}
		}
		if want := mustEntry(t, b); !reflect.DeepEqual(e, want) {
			t.Errorf("%s: the entry changed with its value", slug)
		}
	}
}

// TestAnEntryKeepsABinaryValue checks that an entry decoded from a value in the binary form
// serves every body and coding from the value itself, equal documents from one place, and counts
// the value in its size; one of the JSON form of earlier versions keeps nothing of its value.
func TestAnEntryKeepsABinaryValue(t *testing.T) { // not parallel: it counts allocations
	b := withEqualDocuments(testBundle(alice, 7))
	value, err := dockey.EncodeBundle(&b)
	if err != nil {
		t.Fatal(err)
	}
	e, err := decodeServed(alice, value)
	if err != nil {
		t.Fatal(err)
	}
	inValue := func(p []byte) bool { return inside(p, value) }
	eachDocument(e, func(d *document) {
		if !inValue(d.body) || d.gzip != nil && !inValue(d.gzip) {
			t.Errorf("document %s is not served from the value", d.etag)
		}
	})
	if e.menus.all.body == nil || unsafe.SliceData(e.menus.all.body) != unsafe.SliceData(e.menus.fr.body) {
		t.Errorf("equal documents are not served from one place")
	}
	if e.size < len(value) || e.size > allocated(len(value))+4096 {
		t.Errorf("size %d for a value of %d bytes", e.size, len(value))
	}
	// The headers built beside the value are those of an entry that keeps nothing.
	var got, want []string
	for _, entry := range []*served{e, mustEntry(t, b)} {
		var headers []string
		headers = append(headers, entry.slug, entry.revisionHeader[0], entry.masterMenu[0], entry.redirects["lunch"].en[0])
		docs := []*document{&entry.establishment, &entry.hours, &entry.menus.all, &entry.menus.fr, &entry.menus.en, &entry.jsonld.fr, &entry.jsonld.en}
		for _, menuType := range slices.Sorted(maps.Keys(entry.menuDetails)) {
			v := entry.menuDetails[menuType]
			docs = append(docs, &v.all, &v.fr, &v.en)
		}
		for _, d := range docs {
			headers = append(headers, d.etag, d.etagHeader[0], d.length[0], d.gzipETag, d.gzipETagHeader[0], d.gzipLength[0])
		}
		got, want = want, headers
	}
	if !slices.Equal(got, want) {
		t.Errorf("headers of an entry keeping its value:\n%q\nwant\n%q", got, want)
	}
	// Its header values are built in arrays of their own, not allocated one by one.
	var d decoder
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := d.decode(alice, value); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= float64(len(want)/2) {
		t.Errorf("%.0f allocations to decode an entry of %d header values", allocs, len(want)/2)
	}

	legacy, err := json.Marshal(b)
	if err != nil {
		t.Fatal(err)
	}
	value = legacy
	if e, err = decodeServed(alice, legacy); err != nil {
		t.Fatal(err)
	}
	eachBytes(e, func(p []byte) {
		if inValue(p) {
			t.Errorf("an entry of the JSON form keeps %q of its value", p[:min(len(p), 40)])
		}
	})
}

// BenchmarkDecodeEntry decodes a stored bundle into an entry, as a read node does for every
// bundle it loads: in the binary form, kept as it is, and in the JSON form of earlier versions.
func BenchmarkDecodeEntry(b *testing.B) {
	bundle := withEqualDocuments(testBundle(alice, 7))
	binaryValue, err := dockey.EncodeBundle(&bundle)
	if err != nil {
		b.Fatal(err)
	}
	jsonValue, err := json.Marshal(bundle)
	if err != nil {
		b.Fatal(err)
	}
	for _, form := range []struct {
		name  string
		value []byte
	}{{"binary", binaryValue}, {"json", jsonValue}} {
		b.Run(form.name, func(b *testing.B) {
			var d decoder
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(alice, form.value); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
