package domain_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/image/webp"

	"github.com/opencarte/publisher/domain"
)

// FuzzCheckMenuFile checks that no content makes the check panic, that every refusal is of a
// known kind, and that what it accepts has the structure of its type, asked of other parsers
// where there are: the standard library's and x/image's header decoders.
func FuzzCheckMenuFile(f *testing.F) {
	f.Add(pngFile(f))
	f.Add(jpegFile(f))
	f.Add(webp1x1)
	f.Add(pdfClassic(0))
	f.Add(pdfXRefStream())
	f.Add(pdfUpdated(pdfClassic(0)))
	f.Add(htmlPDFPolyglot())
	f.Add(zipPDFPolyglot(f))
	f.Add(webpHeaderOnly)
	f.Add(webpVP8HeaderOnly)
	f.Add(pngOfSize(f, 65535, 65535))
	f.Add([]byte{})
	produced, err := filepath.Glob(filepath.Join("testdata", "menufiles", "*"))
	if err != nil || len(produced) == 0 {
		f.Fatalf("files of real producers: %v, %v", produced, err)
	}
	for _, name := range produced {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		typ, err := domain.CheckMenuFile(data)
		switch {
		case err == nil && typ == "":
			t.Fatal("accepted without a type")
		case err != nil && typ != "":
			t.Fatalf("refused with a type %q: %v", typ, err)
		case err != nil && !errors.Is(err, domain.ErrFileTooLarge) && !errors.Is(err, domain.ErrUnsupportedFile) && !errors.Is(err, domain.ErrMalformedFile):
			t.Fatalf("refusal of no known kind: %v", err)
		case err == nil:
			if why := notWhole(typ, data); why != "" {
				t.Fatalf("accepted as %s: %s", typ, why)
			}
		}
	})
}

var (
	pdfHead = regexp.MustCompile(`\A%PDF-(1\.[0-7]|2\.0)\s`)
	pdfTail = regexp.MustCompile(`startxref[\x00\s]+\d+[\x00\s]+%%EOF[\x00\s]*\z`)
)

// notWhole says what an accepted file of type typ lacks, or "" when it has the structure its type
// asks for.
func notWhole(typ string, data []byte) string {
	var (
		cfg image.Config
		err error
	)
	switch typ {
	case domain.TypePNG:
		if !bytes.HasSuffix(data, []byte("\x00\x00\x00\x00IEND\xae\x42\x60\x82")) || !bytes.Contains(data, []byte("IDAT")) {
			return "no IDAT, or not ended by IEND"
		}
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	case domain.TypeJPEG:
		if !bytes.Contains(data, []byte{0xFF, 0xDA}) || !bytes.Contains(data, []byte{0xFF, 0xD9}) {
			return "no scan or end-of-image marker"
		}
		// Go's decoder also checks the tables before the frame header, which the check does not.
		if cfg, err = jpeg.DecodeConfig(bytes.NewReader(data)); err != nil {
			return ""
		}
	case domain.TypeWebP:
		if size := int(binary.LittleEndian.Uint32(data[4:8])) + 8; size != len(data) && size+1 != len(data) {
			return "a RIFF size that is not the file's"
		}
		if !bytes.Contains(data, []byte("VP8 ")) && !bytes.Contains(data, []byte("VP8L")) {
			return "no image chunk"
		}
		cfg, err = webp.DecodeConfig(bytes.NewReader(data))
	case domain.TypePDF:
		if !pdfHead.Match(data) || !pdfTail.Match(data[max(0, len(data)-1024):]) {
			return "no header at its start or no trailer at its end"
		}
		return ""
	}
	switch {
	case err != nil:
		return "its header does not decode: " + err.Error()
	case cfg.Width < 1 || cfg.Height < 1 || cfg.Width > domain.MaxImageSide || cfg.Height > domain.MaxImageSide || cfg.Width*cfg.Height > domain.MaxImagePixels:
		return "an image of no pixels or too many"
	}
	return ""
}
