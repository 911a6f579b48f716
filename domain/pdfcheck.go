package domain

import (
	"bytes"
	"regexp"
	"strconv"
)

// pdfMagic starts every PDF file.
const pdfMagic = "%PDF-"

var (
	// pdfHeader is the first line of a PDF: its version, 1.0 to 1.7 or 2.0, then white space.
	pdfHeader = regexp.MustCompile(`\A%PDF-(?:1\.[0-7]|2\.0)[\t\n\f\r ]`)
	// pdfTrailer ends a PDF: the offset of its last cross-reference section, and the end-of-file
	// marker, which only white space may follow.
	pdfTrailer = regexp.MustCompile(`startxref[\x00\t\n\f\r ]+([0-9]{1,10})[\x00\t\n\f\r ]+%%EOF[\x00\t\n\f\r ]*\z`)
	// pdfCrossReference is what the trailer's offset points at, after any white space: a
	// cross-reference table, or the header of an object, which must be a cross-reference stream.
	pdfCrossReference = regexp.MustCompile(`\A[\x00\t\n\f\r ]*(?:(xref)[\x00\t\n\f\r ]|[0-9]{1,10}[\x00\t\n\f\r ]+[0-9]{1,5}[\x00\t\n\f\r ]+obj[\x00\t\n\f\r <])`)
	// pdfXRefType is the entry of a cross-reference stream's dictionary that says what it is.
	pdfXRefType = regexp.MustCompile(`/Type[\x00\t\n\f\r ]*/XRef[^A-Za-z0-9]`)
)

// pdfXRefDictWindow is how far after its header a cross-reference stream's type is looked for:
// its dictionary holds a few short entries, and an index of its subsections at most.
const pdfXRefDictWindow = 4096

// pdfTrailerWindow is how much of a PDF's end is searched for its trailer: the keyword, an
// offset and the marker, with room for the white space writers put around them.
const pdfTrailerWindow = 1024

// checkPDF checks a PDF from header to trailer without reading its objects: the header at byte 0
// (readers tolerate bytes before it, but those bytes are what let one file be a PDF and an HTML
// page or a ZIP archive at once), and at its end the trailer's startxref, whose offset lands in
// the file on a cross-reference table, or on an object whose dictionary says it is a
// cross-reference stream. Only the last startxref counts, as for readers,
// so incrementally updated and linearized files pass.
func checkPDF(data []byte) error {
	if !pdfHeader.Match(data[:min(len(data), 10)]) {
		line, _, _ := bytes.Cut(data[:min(len(data), 16)], []byte("\n"))
		return malformed("pdf: header %q, not %%PDF-1.0 to %%PDF-1.7 or %%PDF-2.0 and a line end", line)
	}
	tailStart := max(0, len(data)-pdfTrailerWindow)
	tail := data[tailStart:]
	if !bytes.HasSuffix(bytes.TrimRight(tail, "\x00\t\n\f\r "), []byte("%%EOF")) {
		return malformed("pdf: no %%%%EOF marker at its end: truncated")
	}
	m := pdfTrailer.FindSubmatchIndex(tail)
	if m == nil {
		return malformed("pdf: no startxref and offset before its %%%%EOF marker")
	}
	offset, err := strconv.ParseInt(string(tail[m[2]:m[3]]), 10, 64)
	// The offset must also lie before the trailer, or it could point into the startxref keyword.
	if err != nil || offset >= int64(tailStart+m[0]) {
		return malformed("pdf: startxref gives offset %s, outside the %d bytes before it", tail[m[2]:m[3]], tailStart+m[0])
	}
	at := data[offset:]
	m = pdfCrossReference.FindSubmatchIndex(at[:min(len(at), 64)])
	if m == nil {
		return malformed("pdf: no cross-reference at the offset startxref gives (%d)", offset)
	}
	if m[2] < 0 {
		// An object: its dictionary, up to its stream, must say it is a cross-reference stream.
		dict, _, _ := bytes.Cut(at[m[1]:min(len(at), m[1]+pdfXRefDictWindow)], []byte("stream"))
		if !pdfXRefType.Match(dict) {
			return malformed("pdf: no cross-reference at the offset startxref gives (%d), but an object of another type", offset)
		}
	}
	return nil
}
