package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// MaxMenuFileBytes is the largest menu file accepted: 10 MB.
const MaxMenuFileBytes = 10_000_000

// The largest image accepted, read from its header, so that a small file cannot make every
// client that shows it decode gigabytes: a PNG whose header says 65535×65535 pixels would be
// 17 GB decoded at 4 bytes a pixel.
const (
	// MaxImageSide is the most pixels an image may have on a side: the largest side of a lossy
	// WebP, and of the textures most graphics processors take.
	MaxImageSide = 16_384
	// MaxImagePixels is the most pixels an image may have in all, 256 MB decoded at 4 bytes a
	// pixel: it holds an A4 page scanned at 600 dpi (4961×7016, 35 million pixels) and a
	// photograph from a 61-megapixel camera (9504×6336).
	MaxImagePixels = 64_000_000
)

// The refusals of a menu file. Each names the limit or the check it failed.
var (
	// ErrFileTooLarge means the file is larger than MaxMenuFileBytes.
	ErrFileTooLarge = errors.New("larger than the limit of 10 MB (10000000 bytes)")
	// ErrUnsupportedFile means the file's content is none of the accepted types.
	ErrUnsupportedFile = errors.New("not a PNG, JPEG or WebP image nor a PDF document")
	// ErrMalformedFile means the content starts as an accepted type but is empty, truncated, does
	// not have that type's structure, or is an image too large to decode.
	ErrMalformedFile = errors.New("malformed")
)

// Content types of the accepted menu files.
const (
	TypePNG  = "image/png"
	TypeJPEG = "image/jpeg"
	TypeWebP = "image/webp"
	TypePDF  = "application/pdf"
)

// pdfSniffWindow is how far into a file readers look for a PDF header: a file with one there,
// but not at its start, is told it is not a PDF rather than that it is no known type.
const pdfSniffWindow = 1024

// CheckMenuFile decides the type of a menu file from its content (never from a name or a header)
// and checks that it is whole by walking its structure, without decoding pixels or pages: a PNG's
// chunks, a JPEG's segments, a WebP's RIFF chunks, a PDF's header and the cross-reference its
// trailer points at. An image must hold image data and be at most MaxImageSide pixels a side and
// MaxImagePixels in all. It returns the content type, or an error matching ErrFileTooLarge,
// ErrUnsupportedFile or ErrMalformedFile whose text names what is wrong.
func CheckMenuFile(data []byte) (string, error) {
	switch {
	case len(data) > MaxMenuFileBytes:
		return "", fmt.Errorf("%d bytes: %w", len(data), ErrFileTooLarge)
	case len(data) == 0:
		return "", malformed("empty file")
	}
	var (
		typ   string
		check func([]byte) error
	)
	switch {
	case bytes.HasPrefix(data, pngSignature):
		typ, check = TypePNG, checkPNG
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		typ, check = TypeJPEG, checkJPEG
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		typ, check = TypeWebP, checkWebP
	case bytes.HasPrefix(data, []byte(pdfMagic)):
		typ, check = TypePDF, checkPDF
	default:
		// A PDF starts with its header: bytes before it are how one file passes for a PDF and
		// for something else (HTML, a ZIP archive) at once.
		if i := bytes.Index(data[:min(len(data), pdfSniffWindow)], []byte(pdfMagic)); i > 0 {
			return "", fmt.Errorf("%w: its %s header is at byte %d, and a PDF starts with it", ErrUnsupportedFile, pdfMagic, i)
		}
		return "", fmt.Errorf("%w (its content decides its type, not its name)", ErrUnsupportedFile)
	}
	if err := check(data); err != nil {
		return "", err
	}
	return typ, nil
}

// fileError is a refusal of a file's structure: its text says what is wrong, in the words of
// its type ("png: no IDAT chunk"), and it matches ErrMalformedFile.
type fileError struct{ msg string }

func (e *fileError) Error() string { return e.msg }

func (e *fileError) Unwrap() error { return ErrMalformedFile }

func malformed(format string, args ...any) error {
	return &fileError{msg: fmt.Sprintf(format, args...)}
}

// checkSize refuses an image whose header gives a size of no pixels or more than a menu page
// needs; typ names the format in the message.
func checkSize(typ string, width, height int64) error {
	switch {
	case width <= 0 || height <= 0:
		return malformed("%s: %d×%d pixels, an image without pixels", typ, width, height)
	case width > MaxImageSide || height > MaxImageSide || width*height > MaxImagePixels:
		return malformed("%s: %d×%d pixels, at most %d a side and %d in all", typ, width, height, MaxImageSide, MaxImagePixels)
	}
	return nil
}

// FileDigest names a stored file by its content: "sha256:" and the lowercase hexadecimal SHA-256
// of its bytes. The same bytes always have the same digest, so a file is stored once.
type FileDigest string

// DigestOf returns the digest of data.
func DigestOf(data []byte) FileDigest {
	sum := sha256.Sum256(data)
	return FileDigest("sha256:" + hex.EncodeToString(sum[:]))
}

const digestPrefix = "sha256:"

// ParseFileDigest checks that s is a digest as DigestOf writes it.
func ParseFileDigest(s string) (FileDigest, error) {
	hexPart, ok := strings.CutPrefix(s, digestPrefix)
	if !ok || len(hexPart) != sha256.Size*2 || strings.ToLower(hexPart) != hexPart {
		return "", fmt.Errorf("invalid file digest %q: want sha256: and 64 lowercase hexadecimal digits", s)
	}
	if _, err := hex.DecodeString(hexPart); err != nil {
		return "", fmt.Errorf("invalid file digest %q: want sha256: and 64 lowercase hexadecimal digits", s)
	}
	return FileDigest(s), nil
}

// FileName is the name of the file in stores and in its public path: "sha256-<hex>", a name
// without a colon, valid as a path segment and as an object name.
func (d FileDigest) FileName() string { return "sha256-" + strings.TrimPrefix(string(d), digestPrefix) }

// DigestOfFileName is the reverse of FileDigest.FileName.
func DigestOfFileName(name string) (FileDigest, error) {
	hexPart, ok := strings.CutPrefix(name, "sha256-")
	if !ok {
		return "", fmt.Errorf("invalid file name %q: want sha256-<64 hexadecimal digits>", name)
	}
	return ParseFileDigest(digestPrefix + hexPart)
}

// FilesPath is the path, under the read API's base URL, where stored files are served: a file's
// URL is the base URL, FilesPath and its FileName.
const FilesPath = "/files/"

// FileOfURL returns the digest of the stored file u points at, a URL whose path ends with
// FilesPath and a FileName, whatever its host, query or fragment: a reference to a stored file is
// recognised in any of the forms a client may give it.
func FileOfURL(u string) (FileDigest, bool) {
	parsed, err := url.Parse(u)
	if err != nil {
		return "", false
	}
	i := strings.LastIndex(parsed.Path, FilesPath)
	if i < 0 {
		return "", false
	}
	d, err := DigestOfFileName(parsed.Path[i+len(FilesPath):])
	return d, err == nil
}

// FileOfRef returns the digest of the stored file a file reference names: a digest itself, or
// a URL FileOfURL recognises.
func FileOfRef(ref string) (FileDigest, bool) {
	if d, err := ParseFileDigest(ref); err == nil {
		return d, true
	}
	return FileOfURL(ref)
}

// ValidateFileRef checks a reference to a menu file: an absolute http or https URL, or the digest
// of an uploaded file ("sha256:<hex>"), which the documents show as the file's URL on the read API.
func ValidateFileRef(s string) error {
	if strings.HasPrefix(s, digestPrefix) {
		_, err := ParseFileDigest(s)
		return err
	}
	return ValidateURL(s)
}

// Files returns the digests of the stored files e refers to, each once, by digest or by URL: its
// unified card and every page of every file of every version it holds, current or not.
func (e *Establishment) Files() []FileDigest {
	var out []FileDigest
	add := func(u string) {
		if d, ok := FileOfRef(u); ok && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	if e.MasterMenuURL != nil {
		add(*e.MasterMenuURL)
	}
	for _, mt := range e.MenuTypes {
		for _, v := range mt.Versions {
			for _, a := range v.Assets {
				for _, u := range a.URLs {
					add(u)
				}
			}
		}
	}
	return out
}
