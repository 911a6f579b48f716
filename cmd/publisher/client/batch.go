package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sync/atomic"
)

// batch is a run of consecutive documents of the input, sent in one request.
type batch struct {
	seq   int
	items []item
	body  []byte // the documents sent, one per line
	lines []int  // the index in items of each line of body
	bytes int64  // input bytes read for the batch, blank and refused lines included
	err   error  // why documents were left without an answer: the run stopped
}

// item is one document of a batch and its outcome.
type item struct {
	at        location
	slug      string      // as found before sending, "" if none was
	local     string      // why it was refused before sending, if it was
	answer    *lineAnswer // the latest answer of the server
	done      bool        // answer is final
	uncertain bool        // a try may have applied it without its answer being read
}

// batcher cuts the documents read into batches.
type batcher struct {
	size    int
	seen    map[string]location // slug → the document that first gave it
	where   func(location) string
	read    *atomic.Int64
	emit    func(*batch) bool // false when the run stopped
	cur     *batch
	seq     int
	stopped bool
}

// add appends one document to the batch being filled: doc is its line, or local says why it is
// refused without being sent; n is the input bytes it took. It returns false once the run
// stopped.
func (bt *batcher) add(at location, doc []byte, local string, n int64) bool {
	if bt.stopped {
		return false
	}
	bt.read.Add(1)
	var slug string
	if local == "" {
		if slug = slugOf(doc); slug != "" {
			if first, ok := bt.seen[slug]; ok {
				local = fmt.Sprintf("slug %q is already given at %s", slug, bt.where(first))
			} else {
				bt.seen[slug] = at
			}
		}
	}
	if local == "" && len(bt.cur.lines) > 0 && len(bt.cur.body)+len(doc)+1 > maxBatchBytes && !bt.flush() {
		return false
	}
	b := bt.cur
	b.items = append(b.items, item{at: at, slug: slug, local: local})
	if local == "" {
		b.lines = append(b.lines, len(b.items)-1)
		b.body = append(append(b.body, doc...), '\n')
	}
	b.bytes += n
	if len(b.items) >= bt.size {
		return bt.flush()
	}
	return true
}

// skip accounts for input bytes that hold no document, such as a blank line.
func (bt *batcher) skip(n int64) { bt.cur.bytes += n }

// flush hands the batch being filled to the workers.
func (bt *batcher) flush() bool {
	if bt.stopped {
		return false
	}
	b := bt.cur
	bt.cur = &batch{}
	if len(b.items) == 0 && b.bytes == 0 {
		return true
	}
	b.seq = bt.seq
	bt.seq++
	// The collector reports batches by their sequence: after one that was not handed over, none
	// may be.
	bt.stopped = !bt.emit(b)
	return !bt.stopped
}

// slugOf returns the slug of an import document, reading only as far as it: a complete decoding
// is the server's, which names what is wrong with a document. It returns "" when it finds none.
func slugOf(doc []byte) string {
	dec := json.NewDecoder(bytes.NewReader(doc))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		if key == "slug" {
			v, _ := dec.Token()
			s, _ := v.(string)
			return s
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return ""
		}
	}
	return ""
}
