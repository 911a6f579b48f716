package domain_test

import (
	"bytes"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/opencarte/publisher/domain"
)

// webp1x1 is a 1×1 lossless WebP image.
var webp1x1 = []byte{
	'R', 'I', 'F', 'F', 0x1a, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', 'L', 0x0d, 0, 0, 0,
	0x2f, 0, 0, 0, 0x10, 0x07, 0x10, 0x11, 0x11, 0x88, 0x88, 0xfe, 0x07, 0,
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

const pdfFile = "%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n"

func TestCheckMenuFile(t *testing.T) {
	pngData, jpegData := pngFile(t), jpegFile(t)
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
		{"pdf", []byte(pdfFile), domain.TypePDF, nil},
		{"pdf with trailing bytes after its end marker", []byte(pdfFile + strings.Repeat(" ", 500)), domain.TypePDF, nil},
		{"exactly the limit", append([]byte("%PDF-1.4\n"), append(make([]byte, domain.MaxMenuFileBytes-9-6), "%%EOF\n"...)...), domain.TypePDF, nil},
		{"one byte over the limit", append(tooLarge[:domain.MaxMenuFileBytes-5], "%%EOF\n"...), "", domain.ErrFileTooLarge},
		{"empty", nil, "", domain.ErrMalformedFile},
		{"svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg"/>`), "", domain.ErrUnsupportedFile},
		{"gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "", domain.ErrUnsupportedFile},
		{"elf executable", []byte("\x7fELF\x02\x01\x01\x00"), "", domain.ErrUnsupportedFile},
		{"html", []byte("<!doctype html><title>menu</title>"), "", domain.ErrUnsupportedFile},
		{"pdf header after some bytes", []byte("\xef\xbb\xbf\n" + pdfFile), domain.TypePDF, nil},
		{"pdf header past its first 1024 bytes", []byte(strings.Repeat(" ", 1024) + pdfFile), "", domain.ErrUnsupportedFile},
		{"png with bytes after its end", append(bytes.Clone(pngData), "trailing"...), domain.TypePNG, nil},
		{"jpeg with bytes after its end", append(bytes.Clone(jpegData), 0, 0, 0), domain.TypeJPEG, nil},
		{"jpeg followed by a video with scan markers", append(bytes.Clone(jpegData), []byte("\x00\x00\x00\x18ftypmp42\xff\xda\x00\x10junk\xff\xff")...), domain.TypeJPEG, nil},
		{"jpeg cut in its scan", jpegData[:len(jpegData)-2], "", domain.ErrMalformedFile},
		{"jpeg cut after its header", jpegData[:len(jpegData)*2/3], "", domain.ErrMalformedFile},
		{"truncated pdf", []byte(pdfFile[:40]), "", domain.ErrMalformedFile},
		{"pdf whose end marker is far from its end", []byte(pdfFile + strings.Repeat(" ", 2000)), "", domain.ErrMalformedFile},
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

func FuzzCheckMenuFile(f *testing.F) {
	f.Add(pngFile(f))
	f.Add(jpegFile(f))
	f.Add(webp1x1)
	f.Add([]byte(pdfFile))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, err := domain.CheckMenuFile(data)
		switch {
		case err == nil && typ == "":
			t.Fatal("accepted without a type")
		case err != nil && typ != "":
			t.Fatalf("refused with a type %q: %v", typ, err)
		case err != nil && !errors.Is(err, domain.ErrFileTooLarge) && !errors.Is(err, domain.ErrUnsupportedFile) && !errors.Is(err, domain.ErrMalformedFile):
			t.Fatalf("refusal of no known kind: %v", err)
		}
	})
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
