package main

import (
	"bufio"
	"context"
	"fmt"
	"image/color"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/demo"
)

// TestMalformedMultipartBodiesAreRefused: an upload whose multipart framing is wrong (a part's
// header too large or malformed, a body that ends before its closing boundary, a line where a
// boundary belongs) is answered 400 naming the problem, at every upload route, and applies
// nothing; a file cut short is never stored.
func TestMalformedMultipartBodiesAreRefused(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24")
	importDemo(t, m)
	png := string(demo.PNG(color.RGBA{1, 2, 3, 255}))
	const ct = "multipart/form-data; boundary=B0UND"
	head := func(extra string) string {
		return "--B0UND\r\nContent-Disposition: form-data; name=\"file\"; filename=\"menu.png\"\r\n" + extra + "Content-Type: image/png\r\n\r\n"
	}
	part := head("") + png + "\r\n"
	// The start of a file that goes on can be a whole file of its own: a PDF followed by its update.
	firstRevision := string(demo.PDF("first"))
	cases := []struct {
		name, contentType, body string
		status                  int
		detail                  string
	}{
		{"a part with 20,000 header lines", ct, head(strings.Repeat("X-Filler: x\r\n", 20_000)) + png + "\r\n--B0UND--\r\n",
			http.StatusBadRequest, "body: a multipart part's header is too large"},
		{"a header line without a colon", ct, head("X-Filler x\r\n") + png + "\r\n--B0UND--\r\n",
			http.StatusBadRequest, "body: a multipart part's header is malformed"},
		{"no closing boundary", ct, part,
			http.StatusBadRequest, "body: the upload was cut off"},
		{"cut inside the file", ct, head("") + png[:len(png)/2],
			http.StatusBadRequest, "body: the upload was cut off"},
		{"cut where the file could have ended", ct, head("") + firstRevision,
			http.StatusBadRequest, "body: the upload was cut off"},
		{"cut after a part's header", ct, head(""),
			http.StatusBadRequest, "body: the upload was cut off"},
		{"no boundary at all", ct, "just text\r\n",
			http.StatusBadRequest, "body: the multipart body ends before its closing boundary"},
		{"a line where a boundary belongs", ct, part + "--B0UND--junk\r\n",
			http.StatusBadRequest, "body: the multipart body has a line that is neither a part nor a boundary"},
		{"an empty boundary", `multipart/form-data; boundary=""`, part + "--B0UND--\r\n",
			http.StatusBadRequest, "multipart/form-data without a boundary"},
	}
	before, err := m.Store.LastStreamSequence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	routes := []struct{ method, path string }{
		{http.MethodPost, "/admin/v1/files"},
		{http.MethodPut, "/admin/v1/establishments/chez-marcel/master-menu"},
		{http.MethodPost, "/admin/v1/establishments/chez-marcel/menu-types/vins/versions/2026/assets?language_scope=fr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, r := range routes {
				got := m.upload(t, r.method, r.path, c.contentType, []byte(c.body))
				if got.status != c.status || !strings.Contains(string(got.body), c.detail) {
					t.Errorf("%s %s: got %d %s, want %d naming %q", r.method, r.path, got.status, got.body, c.status, c.detail)
				}
			}
		})
	}
	if after, err := m.Store.LastStreamSequence(context.Background()); err != nil || after != before {
		t.Errorf("log went from sequence %d to %d (%v): a refused upload appended something", before, after, err)
	}
	// A whole part read before the framing failed may be stored, unreferenced until collected; a
	// file cut short never is.
	for _, name := range m.storedFiles(t) {
		if name != fileName([]byte(png)) {
			t.Errorf("stored after refusals: %s, want at most the whole file %s", name, fileName([]byte(png)))
		}
	}
	// The same part, closed, is taken.
	if got := m.upload(t, http.MethodPost, "/admin/v1/files", ct, []byte(part+"--B0UND--\r\n")); got.status/100 != 2 {
		t.Errorf("the part closed: got %d %s, want 2xx", got.status, got.body)
	}
}

// TestUploadCutShortIsRefused: a file sent as the whole body whose sender stops before the length
// it announced is refused as cut off, never stored or applied as the shorter file it could be.
func TestUploadCutShortIsRefused(t *testing.T) {
	m := openMain(t, t.TempDir(), "2026-11-24")
	importDemo(t, m)
	before, err := m.Store.LastStreamSequence(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	first, update := demo.PDF("first"), demo.PDF("second")
	addr, err := net.ResolveTCPAddr("tcp", strings.TrimPrefix(m.AdminURL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTCP("tcp", nil, addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "PUT /admin/v1/establishments/chez-marcel/master-menu HTTP/1.1\r\nHost: admin\r\nAuthorization: Bearer %s\r\n"+
		"Content-Type: application/pdf\r\nContent-Length: %d\r\n\r\n%s", testAdminToken, len(first)+len(update), first)
	if err := conn.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "body: the upload was cut off") {
		t.Errorf("got %d %s, want 400 naming the upload cut off", resp.StatusCode, body)
	}
	if after, err := m.Store.LastStreamSequence(context.Background()); err != nil || after != before {
		t.Errorf("log went from sequence %d to %d (%v): the cut upload was applied", before, after, err)
	}
	if got := m.storedFiles(t); slices.Contains(got, fileName(first)) {
		t.Errorf("stored files: %v, want not the first %d bytes of the upload", got, len(first))
	}
}
