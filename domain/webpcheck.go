package domain

import "encoding/binary"

// checkWebP walks the chunks of a WebP image's RIFF container, whose size must be the file's
// (give or take the padding byte of an odd last chunk), and checks that it holds one image: a
// VP8 (lossy) or VP8L (lossless) chunk with data after its header, alone or after a VP8X
// header whose canvas is within bounds too. An animated WebP is refused: a menu page is a still
// image, and many viewers show only the first frame of one.
func checkWebP(data []byte) error {
	end := int64(binary.LittleEndian.Uint32(data[4:8])) + 8
	if end != int64(len(data)) && end+1 != int64(len(data)) {
		return malformed("webp: its RIFF header says %d bytes, it has %d: truncated or followed by other data", end, len(data))
	}
	var image, extended string
	for pos, first := 12, true; int64(pos) < end; first = false {
		if end-int64(pos) < 8 {
			return malformed("webp: a chunk header cut at byte %d: truncated", pos)
		}
		name := string(data[pos : pos+4])
		n := int64(binary.LittleEndian.Uint32(data[pos+4:]))
		if n > end-int64(pos)-8 {
			return malformed("webp: chunk %q at byte %d says %d bytes, %d are left: truncated", name, pos, n, end-int64(pos)-8)
		}
		body := data[pos+8 : pos+8+int(n)]
		switch name {
		case "VP8 ", "VP8L":
			if image != "" {
				return malformed("webp: a second image chunk %q at byte %d", name, pos)
			}
			if err := checkWebPImage(name, body); err != nil {
				return err
			}
			image = name
		case "VP8X":
			if !first {
				return malformed("webp: a VP8X header at byte %d, after other chunks", pos)
			}
			if err := checkVP8X(body); err != nil {
				return err
			}
			extended = name
		case "ANIM", "ANMF":
			return malformed("webp: animated: a menu page is a still image")
		default:
			if first {
				return malformed("webp: its first chunk is %q, not VP8, VP8L or VP8X", name)
			}
		}
		pos += 8 + int(n) + int(n&1) // a chunk of odd length is followed by a padding byte
	}
	if image == "" {
		if extended != "" {
			return malformed("webp: a VP8X header and no VP8 or VP8L chunk: no image data")
		}
		return malformed("webp: no image data")
	}
	return nil
}

// checkVP8X checks an extended WebP header: a still image's flags and its canvas size.
func checkVP8X(body []byte) error {
	if len(body) < 10 {
		return malformed("webp: a VP8X header of %d bytes, not 10", len(body))
	}
	const animation = 0x02
	if body[0]&animation != 0 {
		return malformed("webp: animated: a menu page is a still image")
	}
	width := int64(body[4]) | int64(body[5])<<8 | int64(body[6])<<16
	height := int64(body[7]) | int64(body[8])<<8 | int64(body[9])<<16
	return checkSize("webp", width+1, height+1)
}

// checkWebPImage checks the header of a VP8 or VP8L bitstream, its size, and that image data
// follows it: a VP8 key frame whose first partition fits in the chunk with coded data after it,
// or a VP8L header followed by data.
func checkWebPImage(name string, body []byte) error {
	if name == "VP8L" {
		if len(body) < 5 || body[0] != 0x2f {
			return malformed("webp: a VP8L chunk of %d bytes without its header", len(body))
		}
		bits := binary.LittleEndian.Uint32(body[1:5])
		if bits>>29 != 0 {
			return malformed("webp: VP8L version %d, not 0", bits>>29)
		}
		if err := checkSize("webp", int64(bits&0x3fff)+1, int64(bits>>14&0x3fff)+1); err != nil {
			return err
		}
		if len(body) == 5 {
			return malformed("webp: a VP8L header and no image data")
		}
		return nil
	}
	if len(body) < 10 || body[3] != 0x9d || body[4] != 0x01 || body[5] != 0x2a {
		return malformed("webp: a VP8 chunk of %d bytes without its frame header", len(body))
	}
	tag := uint32(body[0]) | uint32(body[1])<<8 | uint32(body[2])<<16
	if tag&1 != 0 {
		return malformed("webp: a VP8 frame that is not a key frame")
	}
	width, height := binary.LittleEndian.Uint16(body[6:])&0x3fff, binary.LittleEndian.Uint16(body[8:])&0x3fff
	if err := checkSize("webp", int64(width), int64(height)); err != nil {
		return err
	}
	if first := int(tag >> 5); first == 0 || 10+first >= len(body) {
		return malformed("webp: a VP8 frame header and no image data")
	}
	return nil
}
