package domain

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"net/url"
	"slices"
	"strings"

	"golang.org/x/image/webp"
)

// MaxMenuFileBytes is the largest menu file accepted: 10 MB.
const MaxMenuFileBytes = 10_000_000

// The refusals of a menu file. Each names the limit or the check it failed.
var (
	// ErrFileTooLarge means the file is larger than MaxMenuFileBytes.
	ErrFileTooLarge = errors.New("larger than the limit of 10 MB (10000000 bytes)")
	// ErrUnsupportedFile means the file's content is none of the accepted types.
	ErrUnsupportedFile = errors.New("not a PNG, JPEG or WebP image nor a PDF document")
	// ErrMalformedFile means the content starts as an accepted type but is empty, truncated or
	// does not parse.
	ErrMalformedFile = errors.New("malformed")
)

// Content types of the accepted menu files.
const (
	TypePNG  = "image/png"
	TypeJPEG = "image/jpeg"
	TypeWebP = "image/webp"
	TypePDF  = "application/pdf"
)

// pdfEndWindow is how far from the end of a PDF its end-of-file marker may be: PDF 2.0 puts it
// last, and writers add at most a line ending or some padding after it.
const pdfEndWindow = 1024

// pdfHeaderWindow is how far from the start a PDF's header may be: readers accept some bytes
// before it.
const pdfHeaderWindow = 1024

var pngTrailer = []byte{0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xAE, 0x42, 0x60, 0x82}

// CheckMenuFile decides the type of a menu file from its content (never from a name or a header)
// and checks that it is whole: an image whose header parses (and, for PNG and WebP, whose length
// is the one its container states), a PDF from its header to its end-of-file marker. It returns
// the content type, or an error matching ErrFileTooLarge, ErrUnsupportedFile or ErrMalformedFile.
func CheckMenuFile(data []byte) (string, error) {
	switch {
	case len(data) > MaxMenuFileBytes:
		return "", fmt.Errorf("%d bytes: %w", len(data), ErrFileTooLarge)
	case len(data) == 0:
		return "", fmt.Errorf("%w: empty", ErrMalformedFile)
	}
	var (
		typ string
		err error
	)
	switch {
	case bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n")):
		typ, err = TypePNG, checkImage(data, png.DecodeConfig)
		if err == nil && !bytes.Contains(data, pngTrailer) {
			err = errors.New("no IEND chunk: truncated")
		}
	case bytes.HasPrefix(data, []byte{0xFF, 0xD8, 0xFF}):
		typ, err = TypeJPEG, checkImage(data, jpeg.DecodeConfig)
		if err == nil {
			err = jpegEnds(data)
		}
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		typ, err = TypeWebP, checkImage(data, webp.DecodeConfig)
		// The RIFF size counts what follows its first 8 bytes, padded to an even length.
		if want := int64(binary.LittleEndian.Uint32(data[4:8])) + 8; err == nil && want != int64(len(data)) && want+1 != int64(len(data)) {
			err = fmt.Errorf("its RIFF header says %d bytes, it has %d: truncated", want, len(data))
		}
	case bytes.Contains(data[:min(len(data), pdfHeaderWindow)], []byte("%PDF-")):
		typ = TypePDF
		if !bytes.Contains(data[max(0, len(data)-pdfEndWindow):], []byte("%%EOF")) {
			err = errors.New("no %EOF marker at its end: truncated")
		}
	default:
		return "", fmt.Errorf("%w (its content decides its type, not its name)", ErrUnsupportedFile)
	}
	if err != nil {
		return "", fmt.Errorf("%w %s: %v", ErrMalformedFile, typ, err)
	}
	return typ, nil
}

// jpegEnds walks the segments of a JPEG image from its start to its end-of-image marker, and fails
// if the data ends first: a truncated image. What follows the marker (the video of a motion
// photo, say) is not looked at.
func jpegEnds(data []byte) error {
	truncated := errors.New("no end-of-image marker: truncated")
	for i := 2; ; {
		if i >= len(data) {
			return truncated
		}
		if data[i] != 0xFF {
			return fmt.Errorf("no segment marker at byte %d", i)
		}
		for i < len(data) && data[i] == 0xFF {
			i++ // fill bytes
		}
		if i >= len(data) {
			return truncated
		}
		marker := data[i]
		i++
		switch {
		case marker == 0xD9:
			return nil
		case marker == 0x01 || marker >= 0xD0 && marker <= 0xD7:
			continue // markers without a segment
		}
		if i+2 > len(data) {
			return truncated
		}
		length := int(binary.BigEndian.Uint16(data[i:]))
		if length < 2 {
			return fmt.Errorf("segment of length %d at byte %d", length, i)
		}
		if i += length; i > len(data) {
			return truncated
		}
		if marker != 0xDA {
			continue
		}
		// The scan's coded data: every 0xFF in it is followed by 0x00 or a restart marker, so the
		// next other marker ends it.
		for {
			j := bytes.IndexByte(data[i:], 0xFF)
			if j < 0 || i+j+1 >= len(data) {
				return truncated
			}
			i += j
			if next := data[i+1]; next != 0x00 && (next < 0xD0 || next > 0xD7) {
				break
			}
			i += 2
		}
	}
}

func checkImage(data []byte, decode func(r io.Reader) (image.Config, error)) error {
	cfg, err := decode(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("its header does not parse: %v", err)
	}
	if cfg.Width <= 0 || cfg.Height <= 0 {
		return fmt.Errorf("its size is %dx%d", cfg.Width, cfg.Height)
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
