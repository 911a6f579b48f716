package main

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"mime/multipart"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/demo"
	"github.com/opencarte/publisher/domain"
)

// testWebP is a 1×1 lossless WebP image.
var testWebP = []byte{
	'R', 'I', 'F', 'F', 0x1a, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L', 0x0d, 0, 0, 0,
	0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0,
}

func testJPEG(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 16, 16))
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// largePDF returns a PDF of about n bytes, which the file store keeps in several chunks: a
// catalog with no pages, and a stream of n random bytes.
func largePDF(t *testing.T, n int) []byte {
	t.Helper()
	filler := make([]byte, n)
	if _, err := rand.Read(filler); err != nil {
		t.Fatal(err)
	}
	return demo.PDFOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [] /Count 0 >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", n, filler),
	)
}

// The files an attacker sends: an HTML page and a ZIP archive that PDF readers open too, a WebP
// header without an image, and a small PNG whose header says 65535×65535 pixels.
var (
	htmlWithPDF = slices.Concat([]byte("<!doctype html><script>alert(document.domain)</script><!--\n"), demo.PDF("html"), []byte("-->\n%%EOF\n"))
	webpHeader  = []byte{'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
)

func zipWithPDF(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, err := w.CreateHeader(&zip.FileHeader{Name: "menu.pdf", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	f.Write(demo.PDF("zip"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func hugePNG(t *testing.T) []byte {
	t.Helper()
	chunk := func(name string, data []byte) []byte {
		c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
		c = append(append(c, name...), data...)
		return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
	}
	var idat bytes.Buffer
	z := zlib.NewWriter(&idat)
	z.Write(make([]byte, 1<<16))
	z.Close()
	ihdr := []byte{0, 0, 0xff, 0xff, 0, 0, 0xff, 0xff, 8, 0, 0, 0, 0}
	return slices.Concat([]byte("\x89PNG\r\n\x1a\n"), chunk("IHDR", ihdr), chunk("IDAT", idat.Bytes()), chunk("IEND", nil))
}

// upload sends data to the admin API as the raw body of method path, with contentType.
func (m *Main) upload(t *testing.T, method, path, contentType string, data []byte) reply {
	t.Helper()
	return do(t, method, m.AdminURL+path, data, "Authorization", "Bearer "+testAdminToken, "Content-Type", contentType)
}

// storedFiles lists the names of the files in the object store.
func (m *Main) storedFiles(t *testing.T) []string {
	t.Helper()
	fis, err := m.Files.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, fi := range fis {
		names = append(names, fi.Name)
	}
	slices.Sort(names)
	return names
}

func fileName(data []byte) string { return domain.DigestOf(data).FileName() }

// importDemo imports the demo establishment and returns its API key.
func importDemo(t *testing.T, m *Main) string {
	t.Helper()
	demo, err := os.ReadFile("demo.json")
	if err != nil {
		t.Fatal(err)
	}
	r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", demo)
	if r.status != http.StatusCreated {
		t.Fatalf("import: got %d %s", r.status, r.body)
	}
	return keyOf(t, r)
}

func TestMenuFilesRoundTrip(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24")
	files := []struct {
		name, contentType string
		data              []byte
	}{
		{"png", "image/png", demo.PNG(color.RGBA{1, 2, 3, 255}, color.RGBA{4, 5, 6, 255})},
		{"jpeg", "image/jpeg", testJPEG(t)},
		{"webp", "image/webp", testWebP},
		{"pdf", "application/pdf", demo.PDF("round trip")},
		{"pdf of several chunks", "application/pdf", largePDF(t, 300<<10)},
	}
	for _, f := range files {
		t.Run(f.name, func(t *testing.T) {
			// The client's content type is not believed: the bytes decide.
			r := m.upload(t, http.MethodPost, "/admin/v1/files", "application/octet-stream", f.data)
			if r.status != http.StatusCreated {
				t.Fatalf("upload: got %d %s", r.status, r.body)
			}
			var got struct {
				Digest, ContentType, URL string
				Size                     int64
			}
			if err := json.Unmarshal(r.body, &struct {
				Digest      *string `json:"digest"`
				ContentType *string `json:"content_type"`
				URL         *string `json:"url"`
				Size        *int64  `json:"size"`
			}{&got.Digest, &got.ContentType, &got.URL, &got.Size}); err != nil {
				t.Fatal(err)
			}
			path := "/files/" + fileName(f.data)
			if got.Digest != string(domain.DigestOf(f.data)) || got.ContentType != f.contentType || got.Size != int64(len(f.data)) || got.URL != m.HTTPURL+path {
				t.Errorf("upload answered %s, want digest %s, %s, %d bytes, URL %s", r.body, domain.DigestOf(f.data), f.contentType, len(f.data), m.HTTPURL+path)
			}
			for range 2 { // from the object store, then from the cache
				g := m.read(t, http.MethodGet, path)
				if g.status != 200 || !bytes.Equal(g.body, f.data) || g.header.Get("Content-Type") != f.contentType {
					t.Fatalf("GET %s: got %d %q, %d bytes (equal: %t)", path, g.status, g.header.Get("Content-Type"), len(g.body), bytes.Equal(g.body, f.data))
				}
				if g.header.Get("ETag") != `"`+fileName(f.data)+`"` || g.header.Get("Cache-Control") != "public, max-age=31536000, immutable" {
					t.Errorf("GET %s: ETag %q, Cache-Control %q", path, g.header.Get("ETag"), g.header.Get("Cache-Control"))
				}
			}
			again := m.upload(t, http.MethodPost, "/admin/v1/files", "image/png", f.data)
			if again.status != http.StatusOK || !bytes.Contains(again.body, []byte(`"created":false`)) {
				t.Errorf("the same file again: got %d %s, want 200 and created false", again.status, again.body)
			}
		})
	}
	want := []string{}
	for _, f := range files {
		want = append(want, fileName(f.data))
	}
	slices.Sort(want)
	if got := m.storedFiles(t); !slices.Equal(got, want) {
		t.Errorf("stored files: got %v, want each file once: %v", got, want)
	}
}

func TestRefusedFilesAppendNothing(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24")
	importDemo(t, m)
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	pdf := demo.PDF("truncated")
	png := demo.PNG(color.RGBA{9, 9, 9, 255})
	tooLarge := largePDF(t, 11_000_000)
	cases := []struct {
		name   string
		data   []byte
		status int
		detail string
	}{
		{"renamed executable", self[:64<<10], http.StatusUnsupportedMediaType, "not a PNG, JPEG or WebP image nor a PDF"},
		{"11 MB", tooLarge, http.StatusRequestEntityTooLarge, "10 MB"},
		{"SVG", []byte(`<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>`), http.StatusUnsupportedMediaType, "not a PNG"},
		{"GIF", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), http.StatusUnsupportedMediaType, "not a PNG"},
		{"empty", nil, http.StatusUnprocessableEntity, "empty"},
		{"truncated PDF", pdf[:len(pdf)/2], http.StatusUnprocessableEntity, "%EOF"},
		{"truncated PNG", png[:len(png)-20], http.StatusUnprocessableEntity, "truncated"},
		{"PNG with a broken header", slices.Concat(png[:12], []byte("XXXX"), png[16:]), http.StatusUnprocessableEntity, "header"},
		{"HTML with a PDF inside", htmlWithPDF, http.StatusUnsupportedMediaType, "its %PDF- header is at byte 59, and a PDF starts with it"},
		{"ZIP with a PDF inside", zipWithPDF(t), http.StatusUnsupportedMediaType, "its %PDF- header is at byte 38"},
		{"WebP header without an image", webpHeader, http.StatusUnprocessableEntity, "webp: a VP8X header and no VP8 or VP8L chunk: no image data"},
		{"PNG of 65535×65535 pixels", hugePNG(t), http.StatusUnprocessableEntity, "png: 65535×65535 pixels, at most 16384 a side and 64000000 in all"},
		{"PDF whose startxref points at another object", slices.Concat(pdf[:bytes.LastIndex(pdf, []byte("startxref"))], []byte("startxref\n9\n%%EOF\n")), http.StatusUnprocessableEntity, "pdf: no cross-reference at the offset startxref gives (9), but an object of another type"},
	}
	before, err := m.Store.LastStreamSequence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	const card = "/admin/v1/establishments/chez-marcel/master-menu"
	const asset = "/admin/v1/establishments/chez-marcel/menu-types/vins/versions/2026/assets?language_scope=fr"
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Named and typed as a PDF: neither counts.
			body, ct := multipartBody(t, "menu.pdf", "application/pdf", c.data)
			for _, r := range []reply{
				m.upload(t, http.MethodPost, "/admin/v1/files", "application/pdf", c.data),
				m.upload(t, http.MethodPut, card, "application/pdf", c.data),
				m.upload(t, http.MethodPut, card, ct, body),
				m.upload(t, http.MethodPost, asset, ct, body),
			} {
				if r.status != c.status || !strings.Contains(string(r.body), c.detail) || !strings.Contains(string(r.body), "file") {
					t.Errorf("got %d %s, want %d naming the file and %q", r.status, r.body, c.status, c.detail)
				}
			}
		})
	}
	after, err := m.Store.LastStreamSequence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("log went from sequence %d to %d: a refused file appended something", before, after)
	}
	if got := m.storedFiles(t); len(got) != 0 {
		t.Errorf("stored files after refusals: %v, want none", got)
	}
}

func multipartBody(t *testing.T, filename, contentType string, pages ...[]byte) ([]byte, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	for _, p := range pages {
		h := make(map[string][]string)
		h["Content-Disposition"] = []string{fmt.Sprintf(`form-data; name="file"; filename=%q`, filename)}
		h["Content-Type"] = []string{contentType}
		part, err := w.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		part.Write(p)
	}
	w.Close()
	return b.Bytes(), w.FormDataContentType()
}

func TestUploadedFilesInDocumentsAndRedirects(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24")
	key := importDemo(t, m)
	ctx := context.Background()
	card := demo.PDF("carte")
	r := m.upload(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/master-menu?wait=true", "application/octet-stream", card)
	if r.status != 200 {
		t.Fatalf("PUT master-menu: got %d %s", r.status, r.body)
	}
	url := m.HTTPURL + "/files/" + fileName(card)
	if got := m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel"); got.status != 302 || got.header.Get("Location") != url {
		t.Errorf("/r/master_menu: got %d Location %q, want %s", got.status, got.header.Get("Location"), url)
	}
	// Two pages in one request, as the "en" file of la-carte's version.
	p1, p2 := demo.PNG(color.RGBA{1, 1, 1, 255}), demo.PNG(color.RGBA{2, 2, 2, 255})
	body, ct := multipartBody(t, "page.png", "image/png", p1, p2)
	r = m.upload(t, http.MethodPost, "/admin/v1/establishments/chez-marcel/menu-types/vins/versions/2026/assets?language_scope=en&wait=true", ct, body)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"events":1`)) {
		t.Fatalf("POST assets: got %d %s", r.status, r.body)
	}
	st, err := m.Commands.Get(ctx, "chez-marcel")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(st.Establishment.MenuTypes, func(mt domain.MenuTypeInput) bool { return mt.Slug == "vins" })
	assets := st.Establishment.MenuTypes[i].Versions[0].Assets
	// The log names the files by their digests; the documents by their URLs.
	if last := assets[len(assets)-1]; last.LanguageScope != "en" || !slices.Equal(last.URLs, []string{string(domain.DigestOf(p1)), string(domain.DigestOf(p2))}) {
		t.Errorf("added file: got %+v, want the two pages' digests in order", last)
	}
	doc := m.get(t, est+"/menus/vins", key)
	if want := fmt.Sprintf(`"urls":[%q,%q]`, m.HTTPURL+"/files/"+fileName(p1), m.HTTPURL+"/files/"+fileName(p2)); !strings.Contains(string(doc.body), want) {
		t.Errorf("menu document: got %s, want %s", doc.body, want)
	}
	// A digest in an imported document is a stored file's URL once imported; an unknown one is
	// refused, naming the field.
	in := st.Establishment
	in.MasterMenuURL = new(string(domain.DigestOf(p1)))
	b, _ := json.Marshal(in)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", b); r.status != 200 {
		t.Fatalf("import with a digest: got %d %s", r.status, r.body)
	}
	if got := m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel"); got.header.Get("Location") != m.HTTPURL+"/files/"+fileName(p1) {
		t.Errorf("/r/master_menu after an import by digest: Location %q", got.header.Get("Location"))
	}
	before, _ := m.Store.LastStreamSequence(ctx)
	in.MasterMenuURL = new(string(domain.DigestOf([]byte("never uploaded"))))
	b, _ = json.Marshal(in)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", b); r.status != 422 || !strings.Contains(string(r.body), "master_menu_url: no file sha256:") {
		t.Errorf("import with an unknown digest: got %d %s, want 422 naming master_menu_url", r.status, r.body)
	}
	in.MasterMenuURL = new(m.HTTPURL + "/files/" + domain.DigestOf([]byte("typo")).FileName())
	b, _ = json.Marshal(in)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", b); r.status != 422 {
		t.Errorf("import with the URL of a file this service does not hold: got %d %s, want 422", r.status, r.body)
	}
	if after, _ := m.Store.LastStreamSequence(ctx); after != before {
		t.Errorf("refused imports appended records: %d → %d", before, after)
	}
	// A file's URL with a fragment is kept as given; the same file by an escaped path is not a
	// URL the read API answers, and is refused.
	withPage := m.HTTPURL + "/files/" + fileName(p1) + "#page=2"
	in.MasterMenuURL = &withPage
	b, _ = json.Marshal(in)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", b); r.status != 200 {
		t.Fatalf("import with a fragment: got %d %s", r.status, r.body)
	}
	if got := m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel"); got.header.Get("Location") != withPage {
		t.Errorf("/r/master_menu after a URL with a fragment: Location %q, want %q", got.header.Get("Location"), withPage)
	}
	escaped := m.HTTPURL + "/files/%73" + strings.TrimPrefix(fileName(p1), "s")
	in.MasterMenuURL = &escaped
	b, _ = json.Marshal(in)
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel", b); r.status != 422 || !strings.Contains(string(r.body), "another path") {
		t.Errorf("import with an escaped file path: got %d %s, want 422", r.status, r.body)
	}
	// External URLs stay as they were.
	if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/master-menu", []byte(`{"url":"https://cdn.example.com/carte.pdf"}`)); r.status != 200 {
		t.Fatalf("PUT master-menu URL: got %d %s", r.status, r.body)
	}
	if got := m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel"); got.header.Get("Location") != "https://cdn.example.com/carte.pdf" {
		t.Errorf("/r/master_menu after an external URL: Location %q", got.header.Get("Location"))
	}
}

func TestFileRangesHeadAndNotModified(t *testing.T) {
	for _, cache := range []int64{0, -1} {
		t.Run(fmt.Sprintf("cache %d", cache), func(t *testing.T) {
			m := openMain(t, t.TempDir(), "2026-11-24", func(c *Config) { c.FileCacheBytes = cache })
			pdf := largePDF(t, 400<<10) // four chunks of the store and some
			if r := m.upload(t, http.MethodPost, "/admin/v1/files", "application/pdf", pdf); r.status != 201 {
				t.Fatalf("upload: %d %s", r.status, r.body)
			}
			path := "/files/" + fileName(pdf)
			etag := `"` + fileName(pdf) + `"`
			for _, rg := range [][2]int{{0, 9}, {130000, 270000}, {len(pdf) - 5, len(pdf) - 1}} {
				g := m.read(t, http.MethodGet, path, "Range", fmt.Sprintf("bytes=%d-%d", rg[0], rg[1]))
				if g.status != 206 || !bytes.Equal(g.body, pdf[rg[0]:rg[1]+1]) || g.header.Get("Content-Range") != fmt.Sprintf("bytes %d-%d/%d", rg[0], rg[1], len(pdf)) {
					t.Errorf("range %v: got %d, %d bytes, Content-Range %q", rg, g.status, len(g.body), g.header.Get("Content-Range"))
				}
			}
			// Several ranges are served from memory only: a streamed file answers the whole file,
			// as does a cached one asked for more than 16 ranges.
			g := m.read(t, http.MethodGet, path, "Range", "bytes=0-1,200000-200001")
			if g.status != 200 || !bytes.Equal(g.body, pdf) {
				t.Errorf("two ranges of a file not in memory: got %d, %d bytes; want the whole file", g.status, len(g.body))
			}
			if cache >= 0 {
				m.read(t, http.MethodGet, path) // a whole GET brings the file into memory
				g := m.read(t, http.MethodGet, path, "Range", "bytes=0-1,200000-200001")
				if g.status != 206 || !strings.HasPrefix(g.header.Get("Content-Type"), "multipart/byteranges") ||
					!bytes.Contains(g.body, pdf[0:2]) || !bytes.Contains(g.body, pdf[200000:200002]) {
					t.Errorf("two ranges of a file in memory: got %d %q", g.status, g.header.Get("Content-Type"))
				}
				many := "bytes=0-0" + strings.Repeat(",1-1", 16)
				if g := m.read(t, http.MethodGet, path, "Range", many); g.status != 200 || !bytes.Equal(g.body, pdf) {
					t.Errorf("17 ranges: got %d, %d bytes; want the whole file", g.status, len(g.body))
				}
			}
			if g := m.read(t, http.MethodGet, path, "Range", fmt.Sprintf("bytes=%d-", len(pdf)+10)); g.status != 416 {
				t.Errorf("range past the end: got %d, want 416", g.status)
			}
			h := m.read(t, http.MethodHead, path)
			if h.status != 200 || len(h.body) != 0 || h.header.Get("Content-Length") != fmt.Sprint(len(pdf)) || h.header.Get("ETag") != etag {
				t.Errorf("HEAD: got %d, %d bytes, Content-Length %q, ETag %q", h.status, len(h.body), h.header.Get("Content-Length"), h.header.Get("ETag"))
			}
			for _, inm := range []string{etag, `"other", ` + etag, "*"} {
				if g := m.read(t, http.MethodGet, path, "If-None-Match", inm); g.status != 304 || len(g.body) != 0 || g.header.Get("ETag") != etag {
					t.Errorf("If-None-Match %s: got %d, %d bytes", inm, g.status, len(g.body))
				}
			}
			if g := m.read(t, http.MethodGet, path, "If-None-Match", `"sha256-other"`); g.status != 200 || !bytes.Equal(g.body, pdf) {
				t.Errorf("If-None-Match of another file: got %d", g.status)
			}
		})
	}
}

func TestUnknownFilesCountAgainstTheRedirectQuota(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24", func(c *Config) { c.RedirectQuota = 3 })
	png := demo.PNG(color.RGBA{3, 3, 3, 255})
	if r := m.upload(t, http.MethodPost, "/admin/v1/files", "image/png", png); r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	unknown := "/files/" + fileName([]byte("unknown"))
	for i, path := range []string{unknown, "/files/not-a-digest", unknown} {
		if g := m.read(t, http.MethodGet, path); g.status != 404 || string(g.body) != `{"error":"Not found"}` {
			t.Errorf("unknown file %d: got %d %s", i, g.status, g.body)
		}
	}
	if g := m.read(t, http.MethodGet, unknown); g.status != 429 || g.header.Get("Retry-After") == "" {
		t.Errorf("fourth unknown file: got %d, want 429 with Retry-After", g.status)
	}
	// A stored file is not counted: pages of menus are fetched by every visitor's browser. Once
	// out of quota, a client is served the files in memory only, and asks the store nothing.
	if g := m.read(t, http.MethodGet, "/files/"+fileName(png)); g.status != 429 {
		t.Errorf("file not in memory, out of quota: got %d, want 429", g.status)
	}
	m2 := openMain(t, t.TempDir(), "2026-11-24", func(c *Config) { c.RedirectQuota = 2 })
	if r := m2.upload(t, http.MethodPost, "/admin/v1/files", "image/png", png); r.status != 201 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	for range 5 { // into memory with the first, then from memory
		if g := m2.read(t, http.MethodGet, "/files/"+fileName(png)); g.status != 200 {
			t.Fatalf("stored file: got %d", g.status)
		}
	}
	for range 2 {
		m2.read(t, http.MethodGet, unknown)
	}
	if g := m2.read(t, http.MethodGet, "/files/"+fileName(png)); g.status != 200 {
		t.Errorf("file in memory, out of quota: got %d, want 200", g.status)
	}
}

func TestCollectFilesKeepsWhatIsReferred(t *testing.T) {
	// The write side's clock runs ahead of the store's by as much as the test says: the files
	// age without waiting.
	var ahead, slow atomic.Int64 // slow: how far each reading of the clock moves it
	m := openMain(t, t.TempDir(), "2026-11-24", func(c *Config) {
		c.FileGrace = time.Hour
		c.Now = func() time.Time { return time.Now().Add(time.Duration(ahead.Add(slow.Load()))) }
	})
	importDemo(t, m)
	a, b, c, d := demo.PDF("a"), demo.PDF("b"), demo.PDF("c"), demo.PDF("d")
	orphan := demo.PDF("never referred to")
	upload := func(files ...[]byte) {
		t.Helper()
		for _, f := range files {
			if r := m.upload(t, http.MethodPost, "/admin/v1/files", "application/pdf", f); r.status != 201 {
				t.Fatalf("upload: %d %s", r.status, r.body)
			}
		}
	}
	upload(a, b, orphan)
	set := func(body string) {
		t.Helper()
		if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/master-menu", []byte(body)); r.status != 200 {
			t.Fatalf("PUT master-menu %s: %d %s", body, r.status, r.body)
		}
	}
	version := func(id, file string) {
		t.Helper()
		v := fmt.Sprintf(`{"id":%q,"reference_date":null,"assets":[{"language_scope":"fr_en","urls":[%q]}],"sections":[]}`, id, file)
		if r := m.admin(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/menu-types/vins/versions/"+id, []byte(v)); r.status != 200 {
			t.Fatalf("PUT version %s: %d %s", id, r.status, r.body)
		}
	}
	// A collection runs once every file is past the grace period.
	collect := func() []string {
		t.Helper()
		ahead.Add(int64(2 * time.Hour))
		r := m.admin(t, http.MethodPost, "/admin/v1/files/collect", nil)
		var rep struct {
			Removed []string `json:"removed"`
		}
		if r.status != 200 || json.Unmarshal(r.body, &rep) != nil {
			t.Fatalf("collect: %d %s", r.status, r.body)
		}
		slices.Sort(rep.Removed)
		return rep.Removed
	}
	set(fmt.Sprintf(`{"url":%q}`, domain.DigestOf(a)))
	version("2026", string(domain.DigestOf(b)))
	if got := collect(); !slices.Equal(got, []string{fileName(orphan)}) {
		t.Fatalf("first collection removed %v, want only the file never referred to", got)
	}
	// The unified card replaced: its old file goes.
	upload(c)
	set(fmt.Sprintf(`{"url":%q}`, domain.DigestOf(c)))
	if got := collect(); !slices.Equal(got, []string{fileName(a)}) {
		t.Errorf("after the card was replaced, removed %v, want the old card", got)
	}
	// A newer version does not free the older one's file: withdrawing the newer would serve the
	// older again. Withdrawing the older does.
	upload(d)
	version("2027", string(domain.DigestOf(d)))
	if got := collect(); len(got) != 0 {
		t.Errorf("with the older version still held, removed %v, want nothing", got)
	}
	if r := m.admin(t, http.MethodDelete, "/admin/v1/establishments/chez-marcel/menu-types/vins/versions/2026", nil); r.status != 200 {
		t.Fatalf("withdraw: %d %s", r.status, r.body)
	}
	if got := collect(); !slices.Equal(got, []string{fileName(b)}) {
		t.Errorf("after the older version was withdrawn, removed %v, want its file", got)
	}
	want := []string{fileName(c), fileName(d)}
	slices.Sort(want)
	if got := m.storedFiles(t); !slices.Equal(got, want) {
		t.Errorf("stored after the collections: %v, want the files still referred to: %v", got, want)
	}
	if g := m.read(t, http.MethodGet, "/files/"+fileName(d)); g.status != 200 {
		t.Errorf("a referred file after the collections: got %d", g.status)
	}
	// A collection whose reading of the establishments takes half the grace period or more
	// removes nothing: a file referred to meanwhile might not have been touched.
	late := demo.PDF("collected late")
	upload(late)
	slow.Store(int64(40 * time.Minute))
	ahead.Add(int64(2 * time.Hour))
	r := m.admin(t, http.MethodPost, "/admin/v1/files/collect", nil)
	slow.Store(0)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"removed":[]`)) || !bytes.Contains(r.body, []byte(`"late":true`)) {
		t.Errorf("slow collection: got %d %s, want nothing removed and late", r.status, r.body)
	}
}

func TestChangingThePublicURLMovesTheFiles(t *testing.T) {
	dir := t.TempDir()
	at := func(base string) func(*Config) { return func(c *Config) { c.PublicURL = base } }
	m := openMain(t, dir, "2026-11-24", at("https://menus-a.example"))
	importDemo(t, m)
	card := demo.PDF("moving card")
	if r := m.upload(t, http.MethodPut, "/admin/v1/establishments/chez-marcel/master-menu?wait=true", "application/pdf", card); r.status != 200 {
		t.Fatalf("PUT master-menu: %d %s", r.status, r.body)
	}
	location := func(m *Main) string {
		return m.read(t, http.MethodGet, "/r/master_menu?establishment=chez-marcel").header.Get("Location")
	}
	if got, want := location(m), "https://menus-a.example/files/"+fileName(card); got != want {
		t.Fatalf("Location = %q, want %q", got, want)
	}
	m.Close()
	// The log names the file by its digest: under another base URL, the projector renders every
	// document again and the file moves with it.
	m = openMain(t, dir, "2026-11-24", at("https://menus-b.example/"))
	want := "https://menus-b.example/files/" + fileName(card)
	eventually(t, "the card under the new base URL", func() bool { return location(m) == want })
}

func TestUploadsUnderAnIdempotencyKeyAndToMissingTargets(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24")
	importDemo(t, m)
	card := demo.PDF("keyed")
	keyed := func(key string, data []byte) reply {
		return do(t, http.MethodPut, m.AdminURL+"/admin/v1/establishments/chez-marcel/master-menu", data,
			"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/pdf", "Idempotency-Key", key)
	}
	first := keyed("card-1", card)
	again := keyed("card-1", card)
	if first.status != 200 || again.status != 200 || !bytes.Contains(again.body, []byte(`"duplicate":true`)) {
		t.Errorf("the same upload twice under one key: %d %s, then %d %s; want the second a duplicate", first.status, first.body, again.status, again.body)
	}
	if other := keyed("card-1", demo.PDF("another card")); other.status != 422 {
		t.Errorf("another file under the same key: got %d %s, want 422", other.status, other.body)
	}
	// A slug that reads like an upload's path is an ordinary import, its key honoured.
	sample, _ := os.ReadFile("demo.json")
	doc := bytes.Replace(sample, []byte(`"slug": "chez-marcel"`), []byte(`"slug": "assets"`), 1)
	put := func() reply {
		return do(t, http.MethodPut, m.AdminURL+"/admin/v1/establishments/assets", doc,
			"Authorization", "Bearer "+testAdminToken, "Content-Type", "application/json", "Idempotency-Key", "assets-1")
	}
	if r1, r2 := put(), put(); r1.status != 201 || !bytes.Contains(r2.body, []byte(`"duplicate":true`)) {
		t.Errorf("import of establishment \"assets\" twice under one key: %d, then %d %s", r1.status, r2.status, r2.body)
	}
	// Files for an establishment, menu type or version that does not exist are not even read.
	stored := m.storedFiles(t)
	for _, path := range []string{
		"/admin/v1/establishments/nobody/master-menu",
		"/admin/v1/establishments/chez-marcel/menu-types/nothing/versions/2026/assets?language_scope=fr",
		"/admin/v1/establishments/chez-marcel/menu-types/vins/versions/1999/assets?language_scope=fr",
	} {
		method := http.MethodPost
		if strings.HasSuffix(path, "master-menu") {
			method = http.MethodPut
		}
		if r := m.upload(t, method, path, "application/pdf", demo.PDF(path)); r.status != 404 {
			t.Errorf("%s %s: got %d %s, want 404", method, path, r.status, r.body)
		}
	}
	if got := m.storedFiles(t); !slices.Equal(got, stored) {
		t.Errorf("stored files after uploads to missing targets: %v, want %v", got, stored)
	}
}
