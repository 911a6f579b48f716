package domain

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// checkPNG walks the chunks of a PNG image: IHDR first with sane fields, a PLTE before the image
// data of a paletted image, at least one IDAT, and IEND last with nothing after it. Every
// chunk's length must fit in the file and its CRC must match, as decoders check them (Go's for
// every chunk, libpng for the critical ones).
func checkPNG(data []byte) error {
	var (
		colourType, depth byte
		palette           bool
		idat              []byte // the image data's first bytes, its zlib header
		idatBytes         int64
	)
	for pos, first := len(pngSignature), true; ; first = false {
		if len(data)-pos < 12 {
			return malformed("png: no IEND chunk: truncated")
		}
		n := int64(binary.BigEndian.Uint32(data[pos:]))
		name := string(data[pos+4 : pos+8])
		if n > int64(len(data)-pos-12) {
			return malformed("png: chunk %q at byte %d says %d bytes, %d are left: truncated", name, pos, n, len(data)-pos-12)
		}
		body := data[pos+8 : pos+8+int(n)]
		end := pos + 12 + int(n)
		switch {
		case first && name != "IHDR":
			return malformed("png: its first chunk is %q, not the IHDR header", name)
		case !pngChunkName(name):
			return malformed("png: chunk %q at byte %d: not a chunk name", name, pos)
		case crc32.ChecksumIEEE(data[pos+4:end-4]) != binary.BigEndian.Uint32(data[end-4:]):
			return malformed("png: chunk %q at byte %d: its CRC does not match its bytes", name, pos)
		}
		switch name {
		case "IHDR":
			if !first {
				return malformed("png: a second IHDR header at byte %d", pos)
			}
			var err error
			if colourType, depth, err = checkIHDR(body); err != nil {
				return err
			}
		case "PLTE":
			if np := n / 3; n%3 != 0 || np == 0 || np > 256 || colourType == 3 && np > 1<<depth {
				return malformed("png: a palette of %d bytes, for %d-bit colours", n, depth)
			}
			palette = true
		case "tRNS":
			if colourType == 3 && !palette {
				return malformed("png: transparency (tRNS) before the palette")
			}
		case "IDAT":
			if colourType == 3 && !palette {
				return malformed("png: image data of a paletted image before its palette (PLTE)")
			}
			idatBytes += n
			if len(idat) < 2 {
				idat = append(idat, body[:min(len(body), 2-len(idat))]...)
			}
		case "IEND":
			switch {
			case idatBytes == 0:
				return malformed("png: no image data (IDAT)")
			case idatBytes < minZlib || !zlibHeader(idat):
				return malformed("png: its image data (%d bytes in IDAT) is not a zlib stream", idatBytes)
			case n != 0:
				return malformed("png: an IEND chunk of %d bytes, not 0", n)
			case end != len(data):
				return malformed("png: %d bytes after its IEND chunk, which ends a PNG", len(data)-end)
			}
			return nil
		}
		pos = end
	}
}

// minZlib is the fewest bytes a zlib stream takes: its header, a deflate block, its checksum.
const minZlib = 2 + 2 + 4

// zlibHeader reports whether h starts as the zlib stream of PNG image data starts: deflate
// compression with a window of at most 32 KiB, no preset dictionary, and the header's check
// (RFC 1950, 2.2).
func zlibHeader(h []byte) bool {
	return len(h) >= 2 && h[0]&0x0f == 8 && h[0]>>4 <= 7 && h[1]&0x20 == 0 && (uint16(h[0])<<8|uint16(h[1]))%31 == 0
}

// checkIHDR checks the fields of a PNG header and returns its colour type and bit depth.
func checkIHDR(body []byte) (colourType, depth byte, err error) {
	if len(body) != 13 {
		return 0, 0, malformed("png: an IHDR header of %d bytes, not 13", len(body))
	}
	width, height := binary.BigEndian.Uint32(body[0:]), binary.BigEndian.Uint32(body[4:])
	depth, colourType = body[8], body[9]
	// The bit depths each colour type allows (PNG 11.2.2).
	depths := map[byte][]byte{0: {1, 2, 4, 8, 16}, 2: {8, 16}, 3: {1, 2, 4, 8}, 4: {8, 16}, 6: {8, 16}}
	allowed, ok := depths[colourType]
	switch {
	case width > 1<<31-1 || height > 1<<31-1:
		return 0, 0, malformed("png: IHDR header gives %d×%d pixels, more than PNG allows", width, height)
	case !ok:
		return 0, 0, malformed("png: IHDR header gives colour type %d, not one of 0, 2, 3, 4 and 6", colourType)
	case !bytes.Contains(allowed, []byte{depth}):
		return 0, 0, malformed("png: IHDR header gives bit depth %d for colour type %d, not one of %v", depth, colourType, allowed)
	case body[10] != 0 || body[11] != 0 || body[12] > 1:
		return 0, 0, malformed("png: IHDR header gives compression %d, filter %d, interlace %d: unknown methods", body[10], body[11], body[12])
	}
	return colourType, depth, checkSize("png", int64(width), int64(height))
}

// pngChunkName reports whether name is four ASCII letters, the only bytes a chunk type has.
func pngChunkName(name string) bool {
	for _, c := range []byte(name) {
		if (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}
