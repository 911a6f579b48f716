package client

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

// Batches are cut at --batch documents and before 8 MiB, and their key follows their content.
func TestBatchesAreCut(t *testing.T) {
	var batches []*batch
	var read atomic.Int64
	bt := &batcher{size: 5, seen: map[string]location{}, read: &read, cur: &batch{},
		where: func(l location) string { return fmt.Sprint(l.line) },
		emit:  func(b *batch) bool { batches = append(batches, b); return true }}
	big := `{"slug":"%s","name":"` + strings.Repeat("x", 3<<20) + `"}`
	var in strings.Builder
	for i := range 4 {
		fmt.Fprintf(&in, `{"slug":"s%d"}`+"\n", i)
	}
	for i := range 4 {
		fmt.Fprintf(&in, big+"\n", fmt.Sprint("big", i))
	}
	if err := readNDJSON(bt, 0, bufio.NewReader(strings.NewReader(in.String())), "x.ndjson"); err != nil {
		t.Fatal(err)
	}
	bt.flush()
	var sizes []int
	for i, b := range batches {
		sizes = append(sizes, len(b.lines))
		if b.seq != i || len(b.body) > maxBatchBytes {
			t.Errorf("batch %d: seq %d, %d bytes", i, b.seq, len(b.body))
		}
	}
	// 5 documents; then big1 and big2 (big3 would pass 8 MiB); then big3.
	if fmt.Sprint(sizes) != "[5 2 1]" {
		t.Errorf("batch sizes: got %v, want [5 2 1]", sizes)
	}
	if batchKey("r1", batches[0].body) == batchKey("r1", batches[1].body) || batchKey("r1", batches[0].body) != batchKey("r1", bytes.Clone(batches[0].body)) {
		t.Errorf("batch keys do not follow content")
	}
	if batchKey("r1", batches[0].body) == batchKey("r2", batches[0].body) {
		t.Errorf("two runs share a batch key")
	}
}

func TestSlugOf(t *testing.T) {
	for doc, want := range map[string]string{
		`{"slug":"a","name":"x"}`:                         "a",
		`{"name":{"fr":"x","slug":"no"},"slug":"b"}`:      "b",
		`{"menu_types":[{"slug":"la-carte"}],"slug":"c"}`: "c",
		`{"slug":"d\u002de"}`:                             "d-e",
		`{"slug":"e",`:                                    "e",
		`{"name":"x"}`:                                    "",
		`{"slug":12}`:                                     "",
		`{"Slug":"f"}`:                                    "",
		`["slug","g"]`:                                    "",
		`not json`:                                        "",
		`{"name":"unterminated, "slug":"h"}`:              "",
		`{"location":{"latitude":1.5},"slug":"i","x":[1,2]}`: "i",
	} {
		if got := slugOf([]byte(doc)); got != want {
			t.Errorf("slugOf(%s) = %q, want %q", doc, got, want)
		}
	}
}
