package demo

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"strings"
)

// PDF returns a one-page PDF document that prints lines, for the demo's unified card.
func PDF(lines ...string) []byte {
	var text strings.Builder
	text.WriteString("BT /F1 18 Tf 72 760 Td 24 TL\n")
	for _, l := range lines {
		l = strings.NewReplacer(`\`, `\\`, "(", `\(`, ")", `\)`).Replace(l)
		fmt.Fprintf(&text, "(%s) Tj T*\n", l)
	}
	text.WriteString("ET")
	return PDFOf(
		"<< /Type /Catalog /Pages 2 0 R >>",
		"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
		"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
		fmt.Sprintf("<< /Length %d >>\nstream\n%s\nendstream", text.Len(), text.String()),
		"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
	)
}

// PDFOf returns a PDF document of the objects given, numbered from 1, the first its catalog, with
// its cross-reference table and trailer.
func PDFOf(objects ...string) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.7\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n%s\nendobj\n", i+1, o)
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// PNG returns a small striped PNG image in the colours given, for the demo's menu pages.
func PNG(stripes ...color.RGBA) []byte {
	img := image.NewRGBA(image.Rect(0, 0, 240, 320))
	for y := range 320 {
		for x := range 240 {
			img.SetRGBA(x, y, stripes[(y/16)%len(stripes)])
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		panic(err) // encoding an in-memory image into memory cannot fail
	}
	return b.Bytes()
}
