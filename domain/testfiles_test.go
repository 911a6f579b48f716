package domain_test

import (
	"archive/zip"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Menu files built for the tests: minimal but whole files of each type, and the files an
// attacker sends.

// webp1x1 is a 1×1 lossless WebP image.
var webp1x1 = []byte{
	'R', 'I', 'F', 'F', 0x1a, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L', 0x0d, 0, 0, 0,
	0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0,
}

// webpHeaderOnly is 30 bytes: a RIFF container holding an extended WebP header (VP8X) for a
// 1×1 canvas, and no image.
var webpHeaderOnly = []byte{
	'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'X', 10, 0, 0, 0,
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
}

// webpVP8HeaderOnly is 30 bytes: a RIFF container holding a lossy key frame's header for 16×16
// pixels, and none of its data.
var webpVP8HeaderOnly = []byte{
	'R', 'I', 'F', 'F', 22, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' ', 10, 0, 0, 0,
	0x50, 0x01, 0x00, 0x9d, 0x01, 0x2a, 16, 0, 16, 0,
}

// webpChunk returns a RIFF chunk: its name, length, data and the padding byte of an odd length.
func webpChunk(name string, data []byte) []byte {
	c := binary.LittleEndian.AppendUint32([]byte(name), uint32(len(data)))
	c = append(c, data...)
	if len(data)%2 == 1 {
		c = append(c, 0)
	}
	return c
}

// vp8x returns an extended WebP header chunk for a width×height canvas.
func vp8x(flags byte, width, height uint32) []byte {
	w, h := width-1, height-1
	return webpChunk("VP8X", []byte{flags, 0, 0, 0, byte(w), byte(w >> 8), byte(w >> 16), byte(h), byte(h >> 8), byte(h >> 16)})
}

// webpOf returns a WebP file of chunks.
func webpOf(chunks ...[]byte) []byte {
	body := bytes.Join(append([][]byte{[]byte("WEBP")}, chunks...), nil)
	return append(binary.LittleEndian.AppendUint32([]byte("RIFF"), uint32(len(body))), body...)
}

func encoded(t testing.TB, encode func(*bytes.Buffer, image.Image) error) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := encode(&b, image.NewGray(image.Rect(0, 0, 3, 2))); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func pngFile(t testing.TB) []byte {
	return encoded(t, func(b *bytes.Buffer, i image.Image) error { return png.Encode(b, i) })
}

func jpegFile(t testing.TB) []byte {
	return encoded(t, func(b *bytes.Buffer, i image.Image) error { return jpeg.Encode(b, i, nil) })
}

// pngChunk returns a PNG chunk: its length, name, data and CRC.
func pngChunk(name string, data []byte) []byte {
	c := binary.BigEndian.AppendUint32(nil, uint32(len(data)))
	c = append(append(c, name...), data...)
	return binary.BigEndian.AppendUint32(c, crc32.ChecksumIEEE(c[4:]))
}

// pngOfSize returns a small PNG whose header says width×height 8-bit grey pixels, with one IDAT
// chunk of a few compressed rows: what it takes for the header's size to be believed.
func pngOfSize(t testing.TB, width, height uint32) []byte {
	t.Helper()
	ihdr := binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint32(nil, width), height)
	ihdr = append(ihdr, 8, 0, 0, 0, 0)
	var idat bytes.Buffer
	z := zlib.NewWriter(&idat)
	if _, err := z.Write(make([]byte, 4096)); err != nil {
		t.Fatal(err)
	}
	z.Close()
	return bytes.Join([][]byte{[]byte("\x89PNG\r\n\x1a\n"), pngChunk("IHDR", ihdr), pngChunk("IDAT", idat.Bytes()), pngChunk("IEND", nil)}, nil)
}

// pdfObjects writes numbered objects from 1 after prefix and returns the bytes and their offsets.
func pdfObjects(prefix string, first int, objects ...string) ([]byte, []int) {
	b := bytes.NewBufferString(prefix)
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(b, "%d 0 obj\n%s\nendobj\n", first+i, o)
	}
	return b.Bytes(), offsets
}

var pdfPage = []string{
	"<< /Type /Catalog /Pages 2 0 R >>",
	"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
	"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 200 100] >>",
}

// pdfClassic returns a one-page PDF with a cross-reference table, and a comment of n bytes after
// its header to make it as large as a test needs.
func pdfClassic(n int) []byte {
	body, offsets := pdfObjects("%PDF-1.4\n%"+strings.Repeat("x", n)+"\n", 1, pdfPage...)
	b := bytes.NewBuffer(body)
	xref := b.Len()
	fmt.Fprintf(b, "xref\n0 %d\n0000000000 65535 f \n", len(offsets)+1)
	for _, off := range offsets {
		fmt.Fprintf(b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(offsets)+1, xref)
	return b.Bytes()
}

// pdfOfLength returns a one-page PDF of exactly n bytes.
func pdfOfLength(n int) []byte {
	pad := n - len(pdfClassic(0))
	for len(pdfClassic(pad)) != n { // the offsets' digits grow with the padding
		pad += n - len(pdfClassic(pad))
	}
	return pdfClassic(pad)
}

// pdfXRefStream returns a one-page PDF 1.5 whose cross-reference is a stream, as writers that
// compress their objects make it.
func pdfXRefStream() []byte {
	body, offsets := pdfObjects("%PDF-1.5\n%\xe2\xe3\xcf\xd3\n", 1, pdfPage...)
	xref := len(body)
	offsets = append(offsets, xref)
	var entries []byte
	entries = append(entries, 0, 0, 0, 0xff) // object 0: free
	for _, off := range offsets {
		entries = append(append(entries, 1), byte(off>>16), byte(off>>8), byte(off))
	}
	dict := fmt.Sprintf("<< /Type /XRef /Size %d /W [1 3 0] /Root 1 0 R /Length %d >>", len(offsets)+1, len(entries))
	b := bytes.NewBuffer(body)
	fmt.Fprintf(b, "%d 0 obj\n%s\nstream\n%s\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n", len(offsets), dict, entries, xref)
	return b.Bytes()
}

// pdfUpdated returns base with an incremental update that replaces its page: a new object, a
// cross-reference section for it and a trailer pointing back at the previous one.
func pdfUpdated(base []byte) []byte {
	prev := bytes.LastIndex(base, []byte("startxref\n"))
	var prevOffset int
	fmt.Sscanf(string(base[prev+len("startxref\n"):]), "%d", &prevOffset)
	body, offsets := pdfObjects(string(base), 3, "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 300 100] >>")
	b := bytes.NewBuffer(body)
	xref := b.Len()
	fmt.Fprintf(b, "xref\n3 1\n%010d 00000 n \ntrailer\n<< /Size 4 /Root 1 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\r\n", offsets[0], prevOffset, xref)
	return b.Bytes()
}

// htmlPDFPolyglot returns an HTML page that readers also open as a PDF: they look for the
// header in the first kilobyte and take the offsets from there.
func htmlPDFPolyglot() []byte {
	return []byte("<!doctype html><html><body><script>alert(document.domain)</script><!--\n" + string(pdfClassic(0)) + "-->\n%%EOF\n")
}

// zipPDFPolyglot returns a ZIP archive whose first entry, stored uncompressed, is a PDF: its
// header falls in the archive's first kilobyte and its end marker in the archive's last.
func zipPDFPolyglot(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	w := zip.NewWriter(&b)
	f, err := w.CreateHeader(&zip.FileHeader{Name: "menu.pdf", Method: zip.Store})
	if err != nil {
		t.Fatal(err)
	}
	f.Write(pdfClassic(0))
	if err := w.SetComment("\n%%EOF\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// producedFile reads a file a real producer wrote, from testdata/menufiles: ghostscript's
// ps2pdf and PNG device, qpdf's object streams and linearization, libjpeg-turbo's cjpeg,
// libwebp's cwebp and img2webp.
func producedFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "menufiles", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}
