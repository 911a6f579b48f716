package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// input is one document source of the command line, a directory being expanded to its files.
type input struct {
	name     string // as shown in messages and results
	path     string // "" for standard input
	document bool   // the whole file is one document; else NDJSON, one per line
	size     int64  // -1 when unknown
}

// location is where a document starts: an index in Importer.inputs, and a line number.
type location struct{ input, line int }

// where names a location in messages: FILE:LINE, or FILE for a file of one document.
func (im *Importer) where(at location) string {
	in := im.inputs[at.input]
	if in.document {
		return in.name
	}
	return in.name + ":" + strconv.Itoa(at.line)
}

// totalSize is the bytes of the inputs, -1 when one's is unknown.
func totalSize(inputs []input) int64 {
	total := int64(0)
	for _, in := range inputs {
		if in.size < 0 {
			return -1
		}
		total += in.size
	}
	return total
}

// listInputs expands the command line's paths. A path that cannot be imported stops the command
// before anything is sent: a typo should not leave an import half done.
func listInputs(paths []string) (inputs []input, warnings []string, err error) {
	for _, p := range paths {
		if p == "-" {
			inputs = append(inputs, input{name: "stdin", size: -1})
			continue
		}
		fi, err := os.Stat(p)
		if err != nil {
			return nil, nil, err
		}
		if fi.IsDir() {
			found, err := listDirectory(p)
			if err != nil {
				return nil, nil, err
			}
			if len(found) == 0 {
				warnings = append(warnings, p+": no *.json file")
			}
			inputs = append(inputs, found...)
			continue
		}
		in := input{name: p, path: p, size: -1}
		if fi.Mode().IsRegular() {
			in.size = fi.Size()
		}
		switch strings.ToLower(filepath.Ext(p)) {
		case ".ndjson", ".jsonl":
		case ".json":
			in.document = true
		default:
			return nil, nil, fmt.Errorf("%s: want a .ndjson, .jsonl or .json file, a directory, or - for standard input", p)
		}
		inputs = append(inputs, in)
	}
	return inputs, warnings, nil
}

// listDirectory returns the *.json files of dir, sorted by name. Hidden files are left out, as
// the shell's *.json would.
func listDirectory(dir string) ([]input, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []input
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") || !strings.EqualFold(filepath.Ext(e.Name()), ".json") {
			continue
		}
		p := filepath.Join(dir, e.Name())
		fi, err := os.Stat(p) // through a symbolic link
		if err != nil {
			return nil, err
		}
		if fi.Mode().IsRegular() {
			out = append(out, input{name: p, path: p, document: true, size: fi.Size()})
		}
	}
	return out, nil
}

// readLine reads one line into buf[:0] and returns it without its end, with n the bytes it
// consumed. A line longer than limit is consumed to its end without being kept: long is then
// true. buf never holds more than limit bytes and a chunk of r's buffer.
func readLine(r *bufio.Reader, buf []byte, limit int) (line []byte, n int64, long bool, err error) {
	line = buf[:0]
	for {
		chunk, err := r.ReadSlice('\n')
		n += int64(len(chunk))
		if !long {
			if len(line)+len(bytes.TrimSuffix(chunk, []byte("\n"))) > limit {
				long, line = true, line[:0]
			} else {
				line = append(line, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), n, long, err
	}
}

// readNDJSON adds the documents of an NDJSON input, one per line, blank lines skipped but
// counted. It stops early, without an error, once the run stopped.
func readNDJSON(bt *batcher, src int, r io.Reader, name string) error {
	br := bufio.NewReaderSize(r, 64<<10)
	var buf []byte
	for n := 1; ; n++ {
		line, size, long, err := readLine(br, buf, MaxDocumentBytes)
		buf = line
		if size == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		at := location{src, n}
		switch {
		case long:
			if !bt.add(at, nil, fmt.Sprintf("line is larger than %d MiB", MaxDocumentBytes>>20), size) {
				return nil
			}
		case len(bytes.TrimSpace(line)) == 0:
			bt.skip(size)
		default:
			if !bt.add(at, bytes.TrimSuffix(line, []byte("\r")), "", size) {
				return nil
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, n, err)
		}
	}
}

// readDocument adds a file holding one document, which may span lines: it is sent on one line,
// compacted, or as it is with its line ends turned to spaces when it is not JSON.
func readDocument(bt *batcher, src int, in input) error {
	f, err := os.Open(in.path)
	if err != nil {
		return err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxDocumentBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", in.name, err)
	}
	n := max(in.size, int64(len(data)))
	at := location{src, 1}
	switch {
	case len(data) > MaxDocumentBytes:
		bt.add(at, nil, fmt.Sprintf("document is larger than %d MiB", MaxDocumentBytes>>20), n)
	case len(bytes.TrimSpace(data)) == 0:
		bt.add(at, nil, "document is empty", n)
	default:
		var one bytes.Buffer
		if json.Compact(&one, data) != nil {
			one.Reset()
			one.Write(bytes.Map(func(r rune) rune {
				if r == '\n' || r == '\r' {
					return ' '
				}
				return r
			}, data))
		}
		bt.add(at, one.Bytes(), "", n)
	}
	return nil
}

// readInputs adds the documents of every input to bt, until the run stops, and hands over the
// last batch. It names each input that could not be read to its end, and returns their count.
func (im *Importer) readInputs(stop context.Context, bt *batcher) (unreadable int) {
	for i, in := range im.inputs {
		if stop.Err() != nil {
			break
		}
		if err := im.readInput(bt, i, in); err != nil {
			unreadable++
			fmt.Fprintf(im.msgs, "%v\n", err)
		}
	}
	bt.flush()
	return unreadable
}

// readInput adds the documents of the input at index src.
func (im *Importer) readInput(bt *batcher, src int, in input) error {
	switch {
	case in.path == "":
		return readNDJSON(bt, src, im.stdin, in.name)
	case in.document:
		return readDocument(bt, src, in)
	}
	f, err := os.Open(in.path)
	if err != nil {
		return err
	}
	defer f.Close()
	return readNDJSON(bt, src, f, in.name)
}
