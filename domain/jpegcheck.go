package domain

import (
	"bytes"
	"encoding/binary"
	"slices"
)

// checkJPEG walks the segments of a JPEG image from its start-of-image marker: one frame header
// (SOF) of a baseline, extended or progressive 8-bit image, the kinds every viewer shows; then
// scans (SOS), each with coded data; then the end-of-image marker (EOI). What follows the EOI
// marker is not looked at: cameras and phones append data there (the other images of a
// multi-picture file, the video of a motion photo), and the file is served as an image, never
// sniffed.
func checkJPEG(data []byte) error {
	var frame bool
	scans := 0
	for i := 2; ; {
		if i >= len(data) {
			return malformed("jpeg: no end-of-image marker: truncated")
		}
		if data[i] != 0xFF {
			return malformed("jpeg: no segment marker at byte %d", i)
		}
		for i < len(data) && data[i] == 0xFF {
			i++ // fill bytes
		}
		if i >= len(data) {
			return malformed("jpeg: no end-of-image marker: truncated")
		}
		marker, at := data[i], i-1
		i++
		switch {
		case marker == 0xD9:
			if scans == 0 {
				return malformed("jpeg: no scan (SOS) before its end: no image data")
			}
			return nil
		case marker == 0xD8:
			return malformed("jpeg: a second start-of-image marker at byte %d", at)
		case marker == 0x01 || marker >= 0xD0 && marker <= 0xD7:
			continue // markers without a segment
		}
		if len(data)-i < 2 {
			return malformed("jpeg: no end-of-image marker: truncated")
		}
		length := int(binary.BigEndian.Uint16(data[i:]))
		if length < 2 {
			return malformed("jpeg: a segment of length %d at byte %d", length, at)
		}
		if length > len(data)-i {
			return malformed("jpeg: segment at byte %d says %d bytes, %d are left: truncated", at, length, len(data)-i)
		}
		segment := data[i+2 : i+length]
		i += length
		switch {
		case marker == 0xC0 || marker == 0xC1 || marker == 0xC2:
			if frame {
				return malformed("jpeg: a second frame header (SOF) at byte %d", at)
			}
			if err := checkJPEGFrame(segment); err != nil {
				return err
			}
			frame = true
		case marker >= 0xC3 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC:
			return malformed("jpeg: a frame of type SOF%d (lossless, hierarchical or arithmetic-coded), which few viewers show", marker-0xC0)
		case marker == 0xDA:
			if !frame {
				return malformed("jpeg: a scan (SOS) at byte %d before any frame header (SOF)", at)
			}
			if n := len(segment); n < 6 || n != 4+2*int(segment[0]) || segment[0] == 0 || segment[0] > 4 {
				return malformed("jpeg: a scan header (SOS) of %d bytes at byte %d", n+2, at)
			}
			end, err := jpegScanEnd(data, i)
			if err != nil {
				return err
			}
			if end == i {
				return malformed("jpeg: a scan (SOS) at byte %d without coded data", at)
			}
			scans++
			i = end
		}
	}
}

// checkJPEGFrame checks the body of a frame header: 8-bit samples, 1, 3 or 4 components, and a
// size within the bounds of a menu image.
func checkJPEGFrame(segment []byte) error {
	if len(segment) < 6 {
		return malformed("jpeg: a frame header (SOF) of %d bytes", len(segment)+2)
	}
	precision, components := segment[0], segment[5]
	height, width := binary.BigEndian.Uint16(segment[1:]), binary.BigEndian.Uint16(segment[3:])
	switch {
	case precision != 8:
		return malformed("jpeg: %d-bit samples, not 8", precision)
	case !slices.Contains([]byte{1, 3, 4}, components):
		return malformed("jpeg: %d colour components, not 1, 3 or 4", components)
	case len(segment) != 6+3*int(components):
		return malformed("jpeg: a frame header (SOF) of %d bytes for %d components", len(segment)+2, components)
	}
	// A height of 0 would be given later, by a DNL marker, which viewers do not read.
	return checkSize("jpeg", int64(width), int64(height))
}

// jpegScanEnd returns where the coded data of a scan starting at i ends: at the next marker
// other than a restart marker, since every 0xFF byte of coded data is followed by 0x00.
func jpegScanEnd(data []byte, i int) (int, error) {
	for {
		j := bytes.IndexByte(data[i:], 0xFF)
		if j < 0 || i+j+1 >= len(data) {
			return 0, malformed("jpeg: no end-of-image marker: truncated")
		}
		i += j
		if next := data[i+1]; next != 0x00 && (next < 0xD0 || next > 0xD7) {
			return i, nil
		}
		i += 2
	}
}
