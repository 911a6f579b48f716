package domain_test

import (
	"bytes"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/opencarte/publisher/domain"
)

func TestCheckMenuFile(t *testing.T) {
	pngData, jpegData, pdfData := pngFile(t), jpegFile(t), pdfClassic(0)
	tooLarge := append([]byte("%PDF-1.4\n"), make([]byte, domain.MaxMenuFileBytes)...)
	cases := []struct {
		name    string
		data    []byte
		want    string
		wantErr error
	}{
		{"png", pngData, domain.TypePNG, nil},
		{"jpeg", jpegData, domain.TypeJPEG, nil},
		{"webp", webp1x1, domain.TypeWebP, nil},
		{"webp with its padding byte counted", append(bytes.Clone(webp1x1[:len(webp1x1)-1]), 0), domain.TypeWebP, nil},
		{"pdf", pdfData, domain.TypePDF, nil},
		{"pdf with trailing bytes after its end marker", append(bytes.Clone(pdfData), strings.Repeat(" ", 500)...), domain.TypePDF, nil},
		{"exactly the limit", pdfOfLength(domain.MaxMenuFileBytes), domain.TypePDF, nil},
		{"one byte over the limit", append(tooLarge[:domain.MaxMenuFileBytes-5], "%%EOF\n"...), "", domain.ErrFileTooLarge},
		{"empty", nil, "", domain.ErrMalformedFile},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "", domain.ErrUnsupportedFile},
		{"gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "", domain.ErrUnsupportedFile},
		{"elf executable", []byte("\x7fELF\x02\x01\x01\x00"), "", domain.ErrUnsupportedFile},
		{"html", []byte("<!doctype html><title>menu</title>"), "", domain.ErrUnsupportedFile},
		{"pdf header after some bytes", append([]byte("\xef\xbb\xbf\n"), pdfData...), "", domain.ErrUnsupportedFile},
		{"pdf header past its first 1024 bytes", append([]byte(strings.Repeat(" ", 1024)), pdfData...), "", domain.ErrUnsupportedFile},
		{"jpeg with bytes after its end", append(bytes.Clone(jpegData), 0, 0, 0), domain.TypeJPEG, nil},
		{"jpeg followed by a video with scan markers", append(bytes.Clone(jpegData), []byte("\x00\x00\x00\x18ftypmp42\xff\xda\x00\x10junk\xff\xff")...), domain.TypeJPEG, nil},
		{"jpeg cut in its scan", jpegData[:len(jpegData)-2], "", domain.ErrMalformedFile},
		{"jpeg cut after its header", jpegData[:len(jpegData)*2/3], "", domain.ErrMalformedFile},
		{"truncated pdf", pdfData[:40], "", domain.ErrMalformedFile},
		{"pdf whose end marker is far from its end", append(bytes.Clone(pdfData), strings.Repeat(" ", 2000)...), "", domain.ErrMalformedFile},
		{"truncated png", pngData[:len(pngData)-1], "", domain.ErrMalformedFile},
		{"png signature alone", pngData[:8], "", domain.ErrMalformedFile},
		{"jpeg marker alone", []byte{0xFF, 0xD8, 0xFF}, "", domain.ErrMalformedFile},
		{"truncated webp", webp1x1[:20], "", domain.ErrMalformedFile},
		{"webp longer than its header says", append(bytes.Clone(webp1x1), 0, 0, 0, 0), "", domain.ErrMalformedFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := domain.CheckMenuFile(c.data)
			if got != c.want || !errors.Is(err, c.wantErr) || (c.wantErr == nil) != (err == nil) {
				t.Errorf("CheckMenuFile = %q, %v; want %q, %v", got, err, c.want, c.wantErr)
			}
		})
	}
}

// TestMenuFilesOfRealProducers accepts what common tools write, each as its type, and refuses
// an animated WebP.
func TestMenuFilesOfRealProducers(t *testing.T) {
	cases := []struct {
		file, want string
	}{
		{"ghostscript.pdf", domain.TypePDF},
		{"qpdf-object-streams.pdf", domain.TypePDF},
		{"qpdf-linearized.pdf", domain.TypePDF},
		{"ghostscript.png", domain.TypePNG},
		{"cjpeg-baseline.jpg", domain.TypeJPEG},
		{"cjpeg-progressive.jpg", domain.TypeJPEG},
		{"cwebp-lossy.webp", domain.TypeWebP},
		{"cwebp-lossless.webp", domain.TypeWebP},
		{"cwebp-alpha.webp", domain.TypeWebP},
		{"img2webp-animated.webp", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			got, err := domain.CheckMenuFile(producedFile(t, c.file))
			if got != c.want || (c.want == "") != errors.Is(err, domain.ErrMalformedFile) {
				t.Errorf("CheckMenuFile = %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestMenuFileStructure accepts files whose structure is whole and refuses, naming what is wrong,
// those whose header is all they have, which are two types at once, or whose image is too large
// to decode.
func TestMenuFileStructure(t *testing.T) {
	pngData, jpegData, pdfData := pngFile(t), jpegFile(t), pdfClassic(0)
	withByte := func(data []byte, i int, b byte) []byte { data = bytes.Clone(data); data[i] = b; return data }
	sof := bytes.Index(jpegData, []byte{0xFF, 0xC0})
	sos := bytes.Index(jpegData, []byte{0xFF, 0xDA})
	startxref := bytes.LastIndex(pdfData, []byte("startxref"))
	withOffset := func(off int) []byte {
		return fmt.Appendf(bytes.Clone(pdfData[:startxref]), "startxref\n%d\n%%%%EOF\n", off)
	}
	cases := []struct {
		name    string
		data    []byte
		wantErr error  // nil: accepted
		detail  string // in the refusal's text
	}{
		{"pdf with a cross-reference stream", pdfXRefStream(), nil, ""},
		{"pdf updated incrementally", pdfUpdated(pdfData), nil, ""},
		{"pdf updated twice", pdfUpdated(pdfUpdated(pdfData)), nil, ""},
		{"pdf 2.0", append([]byte("%PDF-2.0"), pdfData[8:]...), nil, ""},
		{"html with a pdf inside", htmlPDFPolyglot(), domain.ErrUnsupportedFile, "%PDF- header is at byte 71"},
		{"zip with a pdf inside", zipPDFPolyglot(t), domain.ErrUnsupportedFile, "%PDF- header is at byte"},
		{"pdf of an unknown version", append([]byte("%PDF-1.9"), pdfData[8:]...), domain.ErrMalformedFile, `pdf: header "%PDF-1.9"`},
		{"pdf without startxref", bytes.Replace(pdfData, []byte("startxref"), []byte("startxrex"), 1), domain.ErrMalformedFile, "no startxref"},
		{"pdf whose startxref points past its end", withOffset(1 << 20), domain.ErrMalformedFile, "outside the"},
		{"pdf whose startxref points into the keyword", withOffset(startxref + 5), domain.ErrMalformedFile, "outside the"},
		{"pdf whose startxref points at no cross-reference", withOffset(9), domain.ErrMalformedFile, "pdf: no cross-reference at the offset startxref gives (9)"},
		{"pdf whose startxref points at another object", withOffset(bytes.Index(pdfData, []byte("1 0 obj"))), domain.ErrMalformedFile, "but an object of another type"},
		{"pdf with bytes after its end marker", append(bytes.Clone(pdfData), "<html>"...), domain.ErrMalformedFile, "no %%EOF"},
		{"png of 65535×65535 pixels", pngOfSize(t, 65535, 65535), domain.ErrMalformedFile, "png: 65535×65535 pixels, at most 16384 a side and 64000000 in all"},
		{"png of 16384×3906 pixels", pngOfSize(t, 16384, 3906), nil, ""},
		{"png of 16384×3907 pixels", pngOfSize(t, 16384, 3907), domain.ErrMalformedFile, "png: 16384×3907 pixels"},
		{"png of 16385×1 pixels", pngOfSize(t, 16385, 1), domain.ErrMalformedFile, "png: 16385×1 pixels"},
		{"png of 0×1 pixels", pngOfSize(t, 0, 1), domain.ErrMalformedFile, "without pixels"},
		{"png without image data", slices.Concat(pngData[:33], pngChunk("IEND", nil)), domain.ErrMalformedFile, "png: no image data"},
		{"png with an empty IDAT", slices.Concat(pngData[:33], pngChunk("IDAT", nil), pngChunk("IEND", nil)), domain.ErrMalformedFile, "png: no image data"},
		{"png whose IDAT is not zlib", slices.Concat(pngData[:33], pngChunk("IDAT", []byte("not a zlib stream")), pngChunk("IEND", nil)), domain.ErrMalformedFile, "is not a zlib stream"},
		{"png with bytes after its end", append(bytes.Clone(pngData), "trailing"...), domain.ErrMalformedFile, "8 bytes after its IEND"},
		{"png whose header's CRC is wrong", withByte(pngData, 29, pngData[29]^1), domain.ErrMalformedFile, "CRC does not match"},
		{"png of bit depth 3", slices.Concat(pngData[:8], pngChunk("IHDR", withByte(pngData[16:29], 8, 3)), pngData[33:]), domain.ErrMalformedFile, "bit depth 3"},
		{"png with a broken header", withByte(pngData, 12, 'X'), domain.ErrMalformedFile, "not the IHDR header"},
		{"png whose chunk says more than the file has", withByte(pngData, 33, 0x7f), domain.ErrMalformedFile, "truncated"},
		{"jpeg without a scan", slices.Concat(jpegData[:sos], []byte{0xFF, 0xD9}), domain.ErrMalformedFile, "no scan"},
		{"jpeg without a frame header", slices.Concat(jpegData[:sof], jpegData[sos:]), domain.ErrMalformedFile, "before any frame header"},
		{"jpeg of 12-bit samples", withByte(jpegData, sof+4, 12), domain.ErrMalformedFile, "12-bit samples"},
		{"lossless jpeg", withByte(jpegData, sof+1, 0xC3), domain.ErrMalformedFile, "SOF3"},
		{"jpeg of 65535×65535 pixels", withByte(withByte(withByte(withByte(jpegData, sof+5, 0xFF), sof+6, 0xFF), sof+7, 0xFF), sof+8, 0xFF), domain.ErrMalformedFile, "jpeg: 65535×65535 pixels"},
		{"webp header alone", webpHeaderOnly, domain.ErrMalformedFile, "webp: a VP8X header and no VP8 or VP8L chunk: no image data"},
		{"webp lossy frame header alone", webpVP8HeaderOnly, domain.ErrMalformedFile, "webp: a VP8 frame header and no image data"},
		{"webp lossless header alone", webpOf(webpChunk("VP8L", webp1x1[20:25])), domain.ErrMalformedFile, "webp: a VP8L header and no image data"},
		{"webp whose canvas holds an image", webpOf(vp8x(0, 1, 1), webp1x1[12:]), nil, ""},
		{"webp of 16777216×1 pixels", webpOf(vp8x(0, 1<<24, 1), webp1x1[12:]), domain.ErrMalformedFile, "webp: 16777216×1 pixels"},
		{"webp of 16384×16384 pixels", webpOf(vp8x(0, 16384, 16384), webp1x1[12:]), domain.ErrMalformedFile, "webp: 16384×16384 pixels"},
		{"webp animated", webpOf(vp8x(0x02, 1, 1), webpChunk("ANIM", make([]byte, 6))), domain.ErrMalformedFile, "webp: animated"},
		{"webp with two images", webpOf(webp1x1[12:], webp1x1[12:]), domain.ErrMalformedFile, "a second image chunk"},
		{"webp whose first chunk is not an image", webpOf(webpChunk("EXIF", []byte("x")), webp1x1[12:]), domain.ErrMalformedFile, `its first chunk is "EXIF"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ, err := domain.CheckMenuFile(c.data)
			if c.wantErr == nil && err != nil {
				t.Fatalf("CheckMenuFile = %v; want accepted", err)
			}
			if c.wantErr != nil && (!errors.Is(err, c.wantErr) || !strings.Contains(fmt.Sprint(err), c.detail)) {
				t.Errorf("CheckMenuFile = %q, %v; want %v naming %q", typ, err, c.wantErr, c.detail)
			}
		})
	}
}

// TestJPEGWithAnythingAfterItsEnd accepts whole JPEG images followed by random bytes, as motion
// photos append a video whose bytes may hold anything, scan markers included.
func TestJPEGWithAnythingAfterItsEnd(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 64, 48))
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range img.Pix {
		img.Pix[i] = uint8(rng.Uint32())
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, nil); err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		tail := make([]byte, 64<<10)
		for j := range tail {
			tail[j] = uint8(rng.Uint32())
		}
		if typ, err := domain.CheckMenuFile(append(bytes.Clone(b.Bytes()), tail...)); typ != domain.TypeJPEG || err != nil {
			t.Fatalf("tail %d: %q, %v", i, typ, err)
		}
	}
	for _, cut := range []int{b.Len() - 1, b.Len() - 2, b.Len() * 3 / 4, b.Len() / 2} {
		if _, err := domain.CheckMenuFile(b.Bytes()[:cut]); !errors.Is(err, domain.ErrMalformedFile) {
			t.Errorf("cut at %d of %d: %v, want ErrMalformedFile", cut, b.Len(), err)
		}
	}
}

func TestFileDigests(t *testing.T) {
	d := domain.DigestOf([]byte("abc"))
	if d != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("DigestOf(abc) = %s", d)
	}
	if got, err := domain.ParseFileDigest(string(d)); got != d || err != nil {
		t.Errorf("ParseFileDigest(%s) = %s, %v", d, got, err)
	}
	for _, bad := range []string{"", "sha256:", "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", "sha512:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", "sha256:zz7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad", string(d) + "0"} {
		if _, err := domain.ParseFileDigest(bad); err == nil {
			t.Errorf("ParseFileDigest(%q) accepted", bad)
		}
	}
	if got, err := domain.DigestOfFileName(d.FileName()); got != d || err != nil || d.FileName() != "sha256-ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("FileName %s back to %s, %v", d.FileName(), got, err)
	}
	for u, want := range map[string]bool{
		"https://menus.example.com/files/" + d.FileName():     true,
		"http://127.0.0.1:8080/files/" + d.FileName():         true,
		"https://cdn.example.com/files/" + d.FileName() + "x": false,
		"https://cdn.example.com/menu.pdf":                    false,
		"https://cdn.example.com/" + d.FileName():             false,
	} {
		if got, ok := domain.FileOfURL(u); ok != want || ok && got != d {
			t.Errorf("FileOfURL(%s) = %s, %t; want %t", u, got, ok, want)
		}
	}
}

func TestEstablishmentFiles(t *testing.T) {
	a, b := domain.DigestOf([]byte("a")), domain.DigestOf([]byte("b"))
	url := func(d domain.FileDigest) string { return "https://m.example.com/files/" + d.FileName() }
	card := url(a)
	e := &domain.Establishment{MasterMenuURL: &card, MenuTypes: []domain.MenuType{{Versions: []domain.MenuVersion{
		{Assets: []domain.Asset{{URLs: []string{url(b), "https://cdn.example.com/x.pdf", url(a)}}}},
	}}}}
	if got := e.Files(); len(got) != 2 || got[0] != a || got[1] != b {
		t.Errorf("Files() = %v, want %s and %s once each", got, a, b)
	}
}
