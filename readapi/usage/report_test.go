package usage

import (
	"bytes"
	"testing"
	"time"
)

// testReport returns a report taken at at, of quota requests per hour, with the records of keys
// numbered from 1, key i having i requests, 2i 304s and 3i 429s.
func testReport(at time.Time, quota, keys int) []byte {
	b := AppendHeader(nil, Header{At: at, Quota: quota, Window: time.Hour})
	for i := 1; i <= keys; i++ {
		b = AppendRecord(b, testKey(i), uint32(i), uint32(2*i), uint32(3*i))
	}
	return b
}

func testKey(i int) Key {
	var k Key
	k[0], k[1], k[15] = byte(i>>8), byte(i), 0xAA
	return k
}

func TestReportRoundTrip(t *testing.T) {
	at := time.Date(2026, 3, 14, 9, 0, 0, 123, time.UTC)
	data := testReport(at, 120, 3)
	rep, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.At.Equal(at) || rep.Quota != 120 || rep.Window != time.Hour || rep.Len() != 3 {
		t.Errorf("header: got %v, quota %d, window %v, %d records", rep.At, rep.Quota, rep.Window, rep.Len())
	}
	i := 0
	for k, c := range rep.Records() {
		i++
		want := Counts{Requests: int64(i), NotModified: int64(2 * i), Limited: int64(3 * i)}
		if k != testKey(i) || c != want {
			t.Errorf("record %d: got %x %+v, want %x %+v", i, k, c, testKey(i), want)
		}
	}
	if i != 3 {
		t.Errorf("records read: %d, want 3", i)
	}
}

// TestDecodeRefuses: what is not a usage report of this version is refused, naming what is
// wrong, the quota reports of the read nodes among them.
func TestDecodeRefuses(t *testing.T) {
	valid := testReport(time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC), 120, 2)
	// A quota report (readapi's format): version 1, node id, period, final flag, one record.
	quotaReport := append([]byte{1}, make([]byte, 16+8+1+21)...)
	cases := map[string][]byte{
		"empty":           nil,
		"another version": append([]byte{2}, valid[1:]...),
		"short header":    valid[:headerSize-1],
		"cut record":      valid[:len(valid)-1],
		"zero window":     append(append(append([]byte{}, valid[:13]...), 0, 0, 0, 0), valid[17:]...),
		"zero time":       append(append([]byte{1}, make([]byte, 8)...), valid[9:]...),
		"negative time":   append(append([]byte{1}, 0x80, 0, 0, 0, 0, 0, 0, 1), valid[9:]...),
		"quota report":    quotaReport,
	}
	for name, data := range cases {
		if rep, err := Decode(data); err == nil {
			t.Errorf("%s: decoded as %+v", name, rep.Header)
		}
	}
}

// FuzzDecode: no input makes Decode or a Reader panic; what Decode accepts is encoded back to
// the same bytes; and a reader fed anything keeps its bound.
func FuzzDecode(f *testing.F) {
	at := time.Date(2026, 3, 14, 9, 0, 0, 0, time.UTC)
	f.Add(testReport(at, 120, 2))
	f.Add(testReport(at, 0, 0))
	f.Add([]byte{})
	f.Add([]byte{2, 0, 0})
	f.Add(append([]byte{1}, make([]byte, 16+8+1+21)...))
	clock := &fakeClock{t: at}
	r, err := newReader(Config{MaxKeys: 4, Logger: discardLogger(), Now: clock.Now})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r.add(data)
		if n := len(r.table.keys); n > 4 {
			t.Fatalf("reader holds %d keys, bound 4", n)
		}
		rep, err := Decode(data)
		if err != nil {
			return
		}
		again := AppendHeader(nil, rep.Header)
		for k, c := range rep.Records() {
			again = AppendRecord(again, k, uint32(c.Requests), uint32(c.NotModified), uint32(c.Limited))
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("decoded %x, encoded back as %x", data, again)
		}
	})
}
