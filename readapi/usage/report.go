package usage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math"
	"time"
)

// Subject is the NATS subject of the read nodes' usage reports.
const Subject = "publisher.usage"

// A report is a header, then one record per key:
//
//	version  1 byte   reportVersion
//	at       8 bytes  Unix time in ns at which the counts were taken, big-endian
//	quota    4 bytes  the key quota of the sender, requests per window
//	window   4 bytes  its window in seconds
//	records  RecordSize bytes each: the key (KeySize bytes), then the requests counted against
//	         its quota, the 304s and the 429s, 4 bytes each, big-endian
const (
	reportVersion = 1
	headerSize    = 1 + 8 + 4 + 4
	// RecordSize is the size of one key's record.
	RecordSize = KeySize + 3*4
	// MaxRecords is the most records one report holds, about 460 KB: more keys take several.
	MaxRecords = 16 << 10
)

// KeySize is the size of a Key.
const KeySize = 16

// Key names an API key as the per-key quota does: the first 16 bytes of its SHA-256.
type Key [KeySize]byte

// Counts is what one key did in some time: requests counted against its quota, 304s and 429s.
type Counts struct {
	Requests, NotModified, Limited int64
}

// Header is what a report says of its sender.
type Header struct {
	At     time.Time     // when the counts were taken, on the sender's clock
	Quota  int           // the sender's key quota
	Window time.Duration // the window of that quota
}

// AppendHeader appends the header of a report to b. A quota or window that does not fit is
// written as the largest that does.
func AppendHeader(b []byte, h Header) []byte {
	b = append(b, reportVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(h.At.UnixNano()))
	b = binary.BigEndian.AppendUint32(b, uint32(min(max(int64(h.Quota), 0), math.MaxUint32)))
	return binary.BigEndian.AppendUint32(b, uint32(min(max(h.Window/time.Second, 0), math.MaxUint32)))
}

// AppendRecord appends the record of key k to b: its requests, 304s and 429s.
func AppendRecord(b []byte, k Key, requests, notModified, limited uint32) []byte {
	b = append(b, k[:]...)
	b = binary.BigEndian.AppendUint32(b, requests)
	b = binary.BigEndian.AppendUint32(b, notModified)
	return binary.BigEndian.AppendUint32(b, limited)
}

// Report is a decoded report: its header, and its records read in place.
type Report struct {
	Header
	records []byte
}

// Decode reads a report, or says what is wrong with it. The records are read from data, which
// must not change while the report is used.
func Decode(data []byte) (Report, error) {
	switch {
	case len(data) == 0:
		return Report{}, errors.New("usage report: empty")
	case data[0] != reportVersion:
		return Report{}, fmt.Errorf("usage report: unknown version %d", data[0])
	case len(data) < headerSize:
		return Report{}, fmt.Errorf("usage report: %d bytes, shorter than a header", len(data))
	case (len(data)-headerSize)%RecordSize != 0:
		return Report{}, fmt.Errorf("usage report: records of %d bytes, not a whole number of records", len(data)-headerSize)
	case (len(data)-headerSize)/RecordSize > MaxRecords:
		return Report{}, fmt.Errorf("usage report: more than %d records", MaxRecords)
	}
	at := binary.BigEndian.Uint64(data[1:9])
	if at == 0 || at > math.MaxInt64 {
		return Report{}, errors.New("usage report: at is not a time")
	}
	window := binary.BigEndian.Uint32(data[13:17])
	if window == 0 {
		return Report{}, errors.New("usage report: window is zero")
	}
	return Report{
		Header: Header{
			At:     time.Unix(0, int64(at)),
			Quota:  int(binary.BigEndian.Uint32(data[9:13])),
			Window: time.Duration(window) * time.Second,
		},
		records: data[headerSize:],
	}, nil
}

// Len is the number of records.
func (r Report) Len() int { return len(r.records) / RecordSize }

// Records yields each record: the key and its counts.
func (r Report) Records() iter.Seq2[Key, Counts] {
	return func(yield func(Key, Counts) bool) {
		for b := r.records; len(b) >= RecordSize; b = b[RecordSize:] {
			var k Key
			copy(k[:], b)
			c := Counts{
				Requests:    int64(binary.BigEndian.Uint32(b[KeySize:])),
				NotModified: int64(binary.BigEndian.Uint32(b[KeySize+4:])),
				Limited:     int64(binary.BigEndian.Uint32(b[KeySize+8:])),
			}
			if !yield(k, c) {
				return
			}
		}
	}
}
