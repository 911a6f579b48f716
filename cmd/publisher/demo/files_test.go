package demo

import (
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"regexp"
	"strconv"
	"testing"
)

// The generated image decodes to the stripes it was given, 16 rows each.
func TestPNGDecodesToItsStripes(t *testing.T) {
	blue, cream := color.RGBA{0x1f, 0x3a, 0x5f, 0xff}, color.RGBA{0xf4, 0xec, 0xd8, 0xff}
	img, err := png.Decode(bytes.NewReader(PNG(blue, cream)))
	if err != nil {
		t.Fatal(err)
	}
	if got := img.Bounds().Size(); got.X != 240 || got.Y != 320 {
		t.Errorf("size: got %v, want 240x320", got)
	}
	for _, c := range []struct {
		y    int
		want color.RGBA
	}{{0, blue}, {15, blue}, {16, cream}, {32, blue}} {
		if got := color.RGBAModel.Convert(img.At(7, c.y)); got != c.want {
			t.Errorf("row %d: got %v, want %v", c.y, got, c.want)
		}
	}
}

// The generated document's cross-reference table gives each object's offset, and its text
// escapes what PDF strings reserve.
func TestPDFCrossReferencesItsObjects(t *testing.T) {
	doc := PDF("Chez Marcel", `a (b) \ c`)
	if !bytes.HasPrefix(doc, []byte("%PDF-1.7\n")) || !bytes.HasSuffix(doc, []byte("%%EOF\n")) {
		t.Fatalf("got %.40q…, want a PDF header and trailer", doc)
	}
	if !bytes.Contains(doc, []byte(`(a \(b\) \\ c) Tj`)) {
		t.Errorf("got %q, want the line escaped", doc)
	}
	offsets := regexp.MustCompile(`(?m)^(\d{10}) 00000 n $`).FindAllSubmatch(doc, -1)
	if len(offsets) != 5 {
		t.Fatalf("got %d objects in the table, want 5", len(offsets))
	}
	for i, o := range offsets {
		off, _ := strconv.Atoi(string(o[1]))
		if want := fmt.Sprintf("%d 0 obj\n", i+1); !bytes.HasPrefix(doc[off:], []byte(want)) {
			t.Errorf("object %d: offset %d reads %.12q, want %q", i+1, off, doc[off:], want)
		}
	}
}
