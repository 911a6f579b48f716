package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/admin"
	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/progress"
)

// The batch endpoint of the admin API, and what one request to it may hold.
const (
	importPath = "/admin/v1/import"
	// maxBatchDocuments is the most documents the endpoint takes in one request.
	maxBatchDocuments = admin.MaxBatchItems
	// maxBatchBytes is where a batch is cut whatever its count: far below the endpoint's 64 MiB,
	// so that the batches in flight hold little memory and a lost answer costs little to resend.
	maxBatchBytes = 8 << 20
)

const importSynopsis = `publisher import [flags] PATH...

Imports establishments through the admin API's batch endpoint. A PATH is an NDJSON file
(.ndjson or .jsonl, one import document per line), - for NDJSON on standard input, a directory
(its *.json files, by name, not recursive) or a .json file (one document, which may span lines).
Each accepted document is one JSON line on stdout, with its API key when one was issued (it is
shown once); each refused one is named on stderr as FILE:LINE with the reason. Running the same
import again appends nothing.`

// importConfig holds the flags of the import command besides those of every client.
type importConfig struct {
	batch    int
	parallel int
	progress progress.Options
}

func (c *importConfig) flags(fs *flag.FlagSet) {
	fs.IntVar(&c.batch, "batch", 200, fmt.Sprintf("documents per request (at most %d); a request is also cut before it reaches %d MiB", maxBatchDocuments, maxBatchBytes>>20))
	fs.IntVar(&c.parallel, "parallel", 4, "requests in flight at once")
	c.progress.Register(fs)
}

func (c importConfig) check() error {
	switch {
	case c.batch < 1 || c.batch > maxBatchDocuments:
		return fmt.Errorf("--batch %d: want 1 to %d documents", c.batch, maxBatchDocuments)
	case c.parallel < 1:
		return fmt.Errorf("--parallel %d: want at least 1", c.parallel)
	}
	return c.progress.Check()
}

// importFiles is the import command, reading - from the process's standard input.
func importFiles(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	return importCommand(ctx, args, os.Stdin, stdout, stderr, getenv)
}

// importCommand is the import command with its standard input given, for - to be testable.
func importCommand(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url, token, dataDir := clientFlags(fs)
	var cfg importConfig
	cfg.flags(fs)
	fs.Usage = envflag.Usage(fs, importSynopsis)
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := cfg.check(); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if fs.NArg() == 0 {
		return fmt.Errorf("import: no path given")
	}
	c, err := newClient(*url, *token, *dataDir)
	if err != nil {
		return err
	}
	return newImporter(c, cfg, stdin, stdout, stderr).run(ctx, fs.Args())
}

// importer streams the documents of its inputs through the batch endpoint.
//
// One goroutine reads the inputs and cuts batches, --parallel workers send them, and one
// collector reports them in input order. Besides the batch being filled, at most twice
// --parallel batches exist at once, so the memory held is bounded by their size whatever the
// input's; only the slugs already seen, to refuse one given twice, grow with it.
type importer struct {
	c      *client
	cfg    importConfig
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	runID    string        // random name of this run, part of every batch's key
	attempts int           // tries of one batch, the first included
	backoff  time.Duration // wait after the first failed try, about doubled after each next one
	maxWait  time.Duration // longest wait between two tries, a Retry-After included
	timeout  time.Duration // time limit of one request

	inputs []input
	stats  importStats
	msgs   io.Writer         // where messages go while the progress is shown
	shown  *progress.Display // the progress, in input bytes whose documents are reported
	cancel context.CancelCauseFunc
	outErr error // the first failure to write to stdout; results go to stderr from then on
}

func newImporter(c *client, cfg importConfig, stdin io.Reader, stdout, stderr io.Writer) *importer {
	// Requests are long and few: each has its own time limit rather than the client's 30 s, and
	// the workers keep their connections between requests.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = cfg.parallel
	cc := *c
	cc.http = &http.Client{Transport: t}
	var run [16]byte
	_, _ = crand.Read(run[:])
	return &importer{
		c: &cc, cfg: cfg, stdin: stdin, stdout: stdout, stderr: stderr, runID: hex.EncodeToString(run[:]),
		attempts: 6, backoff: time.Second, maxWait: time.Minute, timeout: 5 * time.Minute,
	}
}

// importStats counts documents as they are read and answered; the progress reads it meanwhile.
type importStats struct {
	read                                   atomic.Int64
	created, updated, unchanged, duplicate atomic.Int64
	refused                                atomic.Int64
	lost                                   atomic.Int64 // duplicates answered after a lost answer
	doneBytes                              atomic.Int64 // input bytes whose documents are reported
}

func (s *importStats) accepted() int64 {
	return s.created.Load() + s.updated.Load() + s.unchanged.Load() + s.duplicate.Load()
}

// handled is how many documents have an outcome, accepted or refused.
func (s *importStats) handled() int64 { return s.accepted() + s.refused.Load() }

// input is one document source of the command line, a directory being expanded to its files.
type input struct {
	name     string // as shown in messages and results
	path     string // "" for standard input
	document bool   // the whole file is one document; else NDJSON, one per line
	size     int64  // -1 when unknown
}

// location is where a document starts: an index in importer.inputs, and a line number.
type location struct{ input, line int }

func (im *importer) where(at location) string {
	in := im.inputs[at.input]
	if in.document {
		return in.name
	}
	return in.name + ":" + strconv.Itoa(at.line)
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

// lineAnswer is the batch endpoint's answer for one line.
type lineAnswer struct {
	Line   int    `json:"line"`
	Slug   string `json:"slug"`
	Status int    `json:"status"`
	Result *struct {
		Version   uint64 `json:"version"`
		Events    int    `json:"events"`
		Duplicate bool   `json:"duplicate"`
		Created   bool   `json:"created"`
	} `json:"result"`
	APIKey  string   `json:"api_key"`
	Error   string   `json:"error"`
	Details []string `json:"details"`
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
		line, size, long, err := readLine(br, buf, admin.MaxBodyBytes)
		buf = line
		if size == 0 && errors.Is(err, io.EOF) {
			return nil
		}
		at := location{src, n}
		switch {
		case long:
			if !bt.add(at, nil, fmt.Sprintf("line is larger than %d MiB", admin.MaxBodyBytes>>20), size) {
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
	data, err := io.ReadAll(io.LimitReader(f, admin.MaxBodyBytes+1))
	if err != nil {
		return fmt.Errorf("%s: %w", in.name, err)
	}
	n := max(in.size, int64(len(data)))
	at := location{src, 1}
	switch {
	case len(data) > admin.MaxBodyBytes:
		bt.add(at, nil, fmt.Sprintf("document is larger than %d MiB", admin.MaxBodyBytes>>20), n)
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

// errStopped leaves a batch unsent: the run stopped before its turn.
var errStopped = errors.New("not sent: the import stopped")

// run imports the documents of paths and reports them. Its error counts what went wrong; each
// document is reported on its own, on stdout or stderr.
func (im *importer) run(ctx context.Context, paths []string) error {
	inputs, warnings, err := listInputs(paths)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	im.inputs = inputs
	for _, w := range warnings {
		fmt.Fprintf(im.stderr, "import: %s\n", w)
	}
	total := int64(0)
	for _, in := range inputs {
		if in.size < 0 {
			total = -1
			break
		}
		total += in.size
	}

	start := time.Now()
	im.shown = im.startProgress(total, start)
	im.msgs = im.shown.Messages()
	stop, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	im.cancel = cancel
	// The requests in flight go on when the run is interrupted: their answers may hold API keys,
	// which the server shows once.
	msgs := im.msgs
	stopNotice := context.AfterFunc(ctx, func() {
		fmt.Fprintln(msgs, "import: interrupted; waiting for the requests in flight, whose answers may hold API keys")
	})

	window := 2 * im.cfg.parallel
	slots := make(chan struct{}, window)
	todo := make(chan *batch, window)
	done := make(chan *batch, window)
	var workers sync.WaitGroup
	for range im.cfg.parallel {
		workers.Go(func() {
			for b := range todo {
				if err := im.send(ctx, stop, b); err != nil {
					b.err = err
					if !errors.Is(err, errStopped) {
						cancel(err)
					}
				}
				done <- b
			}
		})
	}
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		im.collect(done, slots)
	}()

	bt := &batcher{
		size:  im.cfg.batch,
		seen:  map[string]location{},
		where: im.where,
		read:  &im.stats.read,
		cur:   &batch{},
		emit: func(b *batch) bool {
			if stop.Err() != nil {
				return false
			}
			select {
			case slots <- struct{}{}:
			case <-stop.Done():
				return false
			}
			todo <- b
			return true
		},
	}
	unreadable := 0
	for i, in := range inputs {
		if stop.Err() != nil {
			break
		}
		var err error
		switch {
		case in.path == "":
			err = readNDJSON(bt, i, im.stdin, in.name)
		case in.document:
			err = readDocument(bt, i, in)
		default:
			var f *os.File
			if f, err = os.Open(in.path); err == nil {
				err = readNDJSON(bt, i, f, in.name)
				f.Close()
			}
		}
		if err != nil {
			unreadable++
			fmt.Fprintf(im.msgs, "%v\n", err)
		}
	}
	bt.flush()
	close(todo)
	workers.Wait()
	close(done)
	<-collected
	stopNotice()

	var fatal error
	switch {
	case ctx.Err() != nil:
		fatal = errors.New("interrupted")
	case stop.Err() != nil:
		fatal = context.Cause(stop)
	}
	im.shown.Stop(fatal == nil)
	return im.summary(time.Since(start), fatal, unreadable)
}

// summary prints the counts on stderr and returns the command's error, if anything went wrong.
func (im *importer) summary(elapsed time.Duration, fatal error, unreadable int) error {
	s := &im.stats
	read, refused := s.read.Load(), s.refused.Load()
	missing := read - s.handled()
	var notes strings.Builder
	if missing > 0 {
		fmt.Fprintf(&notes, ", %d not imported", missing)
	}
	if n := s.lost.Load(); n > 0 {
		fmt.Fprintf(&notes, ", %d answered after a lost answer (see above)", n)
	}
	rate := 0.0
	if secs := elapsed.Seconds(); secs > 0 {
		rate = float64(s.handled()) / secs
	}
	fmt.Fprintf(im.stderr, "import: %d documents read: %d accepted (%d created, %d updated, %d unchanged, %d duplicate), %d refused%s; %s, %.1f documents/s\n",
		read, s.accepted(), s.created.Load(), s.updated.Load(), s.unchanged.Load(), s.duplicate.Load(), refused, notes.String(),
		elapsed.Round(time.Millisecond), rate)

	var problems []string
	if fatal != nil {
		problems = append(problems, fmt.Sprintf("%v; %d of %d documents not imported", fatal, missing, read))
	}
	if refused > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d documents refused", refused, read))
	}
	if unreadable > 0 {
		problems = append(problems, fmt.Sprintf("%d of %d inputs could not be read to their end", unreadable, len(im.inputs)))
	}
	if problems == nil {
		return nil
	}
	return errors.New("import: " + strings.Join(problems, "; "))
}

// batchKey is the Idempotency-Key of a batch in the run named run: the same for every try of the
// batch, so that a retry is applied once and answers with what the first try did. A later run
// has keys of its own: it imports what its documents say, even content that an earlier run
// replaced since, and content already in place appends nothing anyway.
func batchKey(run string, body []byte) string {
	sum := sha256.Sum256(append([]byte(run+"\x00"), body...))
	return "imp-" + hex.EncodeToString(sum[:])
}

// send posts a batch until every line has a final answer, and merges the answers into its
// items. A transport error, a 429, 502, 503 or 504, and a line answered 503 are tried again,
// after a backoff or the Retry-After given, up to im.attempts tries: the batch's key makes the
// lines applied by an earlier try answer as duplicates. Any other failure of the whole request
// is returned, and stops the run: it would recur for every batch. A try under way finishes
// even when ctx is done, since its answer may hold API keys; stop only prevents the next.
func (im *importer) send(ctx, stop context.Context, b *batch) error {
	if len(b.lines) == 0 {
		return nil
	}
	if stop.Err() != nil {
		return errStopped
	}
	header := http.Header{"Content-Type": {"application/x-ndjson"}, "Idempotency-Key": {batchKey(im.runID, b.body)}}
	defer func() { b.body = nil }() // the collector may keep the batch a while
	uncertain := false              // a try may have applied lines without their answer being read
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), im.timeout)
		resp, err := im.c.send(rctx, http.MethodPost, importPath, header, b.body)
		cancel()
		wait := time.Duration(-1)
		var failure error
		switch {
		case err != nil:
			failure, uncertain = fmt.Errorf("POST %s: %w", importPath, err), true
		case resp.status == http.StatusOK:
			var ans struct {
				Results []*lineAnswer `json:"results"`
			}
			if err := json.Unmarshal(resp.body, &ans); err != nil {
				failure, uncertain = fmt.Errorf("POST %s: unreadable answer: %w", importPath, err), true
				break
			}
			pending := b.merge(ans.Results, uncertain, attempt == im.attempts)
			if pending == 0 {
				return nil
			}
			failure = fmt.Errorf("POST %s: %d lines answered 503", importPath, pending)
		case resp.status == http.StatusTooManyRequests || resp.status == http.StatusBadGateway ||
			resp.status == http.StatusServiceUnavailable || resp.status == http.StatusGatewayTimeout:
			failure = fmt.Errorf("POST %s: %s", importPath, answerText(resp))
			uncertain = uncertain || resp.status != http.StatusTooManyRequests
			wait = retryAfter(resp.header)
		default:
			return fmt.Errorf("POST %s: %s", importPath, answerText(resp))
		}
		if attempt >= im.attempts {
			return fmt.Errorf("%w (gave up after %d tries)", failure, attempt)
		}
		if wait < 0 {
			d := im.backoff << (attempt - 1)
			wait = d/2 + rand.N(d+1)
		}
		t := time.NewTimer(min(wait, im.maxWait))
		select {
		case <-t.C:
		case <-stop.Done():
			t.Stop()
			return errStopped
		}
	}
}

// merge records the answers of one try and returns how many lines are to be tried again: those
// answered 503, unless final. A line answered already keeps its first answer, which is the one
// that may hold its API key.
func (b *batch) merge(results []*lineAnswer, uncertain, final bool) (again int) {
	for _, r := range results {
		if r.Line < 1 || r.Line > len(b.lines) {
			continue
		}
		it := &b.items[b.lines[r.Line-1]]
		if it.done {
			continue
		}
		it.answer = r
		if r.Status == http.StatusServiceUnavailable && !final {
			it.uncertain = true
			again++
			continue
		}
		it.done = true
		if r.Result != nil && r.Result.Duplicate && (uncertain || it.uncertain) {
			it.uncertain = true
		} else {
			it.uncertain = false
		}
	}
	return again
}

// answerText is the status and error of a failed request, from its {"error", "details"} body.
func answerText(resp *response) string {
	var body struct {
		Error   string   `json:"error"`
		Details []string `json:"details"`
	}
	if json.Unmarshal(resp.body, &body) == nil && body.Error != "" {
		text := resp.statusText
		if body.Error != http.StatusText(resp.status) {
			text += ": " + body.Error
		}
		if len(body.Details) > 0 {
			text += ": " + strings.Join(body.Details, "; ")
		}
		return text
	}
	text := strings.TrimSpace(string(resp.body))
	if len(text) > 200 {
		text = text[:200] + "…"
	}
	if text == "" {
		return resp.statusText
	}
	return resp.statusText + ": " + text
}

// retryAfter is the wait a Retry-After header asks for, in seconds or as a date; -1 without one.
func retryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return -1
	}
	if secs, err := strconv.Atoi(v); err == nil && secs >= 0 {
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return -1
}

// collect reports the batches in the order they were read, whatever the order they are answered
// in, freeing a slot of the window for each.
func (im *importer) collect(done <-chan *batch, slots <-chan struct{}) {
	waiting := map[int]*batch{}
	next := 0
	for b := range done {
		waiting[b.seq] = b
		for {
			b, ok := waiting[next]
			if !ok {
				break
			}
			delete(waiting, next)
			next++
			im.report(b)
			<-slots
		}
	}
}

// result is the line printed on stdout for an accepted document.
type result struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Slug    string `json:"slug"`
	Status  string `json:"status"` // created, updated, unchanged or duplicate
	Version uint64 `json:"version"`
	APIKey  string `json:"api_key,omitempty"`
}

// report prints the outcome of each document of a batch: accepted ones on stdout, refused ones
// on stderr.
func (im *importer) report(b *batch) {
	var out, msgs bytes.Buffer
	s := &im.stats
	for i := range b.items {
		it := &b.items[i]
		where := im.where(it.at)
		switch {
		case it.local != "":
			s.refused.Add(1)
			fmt.Fprintf(&msgs, "%s: %s\n", where, it.local)
		case !it.done && b.err != nil:
			// Not imported: the run stopped; the summary counts these.
		case !it.done || it.answer == nil:
			s.refused.Add(1)
			fmt.Fprintf(&msgs, "%s: the server gave no answer for this document\n", where)
		case it.answer.Status < 200 || it.answer.Status > 299 || it.answer.Result == nil:
			s.refused.Add(1)
			msgs.WriteString(refusal(where, it.slug, it.answer))
		default:
			a := it.answer
			r := result{File: im.inputs[it.at.input].name, Line: it.at.line, Slug: cmp.Or(a.Slug, it.slug), Version: a.Result.Version, APIKey: a.APIKey}
			switch {
			case a.Result.Duplicate:
				r.Status = "duplicate"
				s.duplicate.Add(1)
			case a.Result.Created || a.Status == http.StatusCreated:
				r.Status = "created"
				s.created.Add(1)
			case a.Result.Events == 0:
				r.Status = "unchanged"
				s.unchanged.Add(1)
			default:
				r.Status = "updated"
				s.updated.Add(1)
			}
			line, _ := json.Marshal(r)
			out.Write(append(line, '\n'))
			if it.uncertain {
				s.lost.Add(1)
				fmt.Fprintf(&msgs, "%s: slug %q: answered as a duplicate after a try whose answer was lost: if that try issued an API key, the key cannot be shown again; to issue a new one: publisher admin regenerate-key %s\n", where, r.Slug, r.Slug)
			}
		}
	}
	if out.Len() > 0 {
		if im.outErr == nil {
			if _, err := im.stdout.Write(out.Bytes()); err != nil {
				im.outErr = err
				im.cancel(fmt.Errorf("writing the results: %w", err))
			}
		}
		if im.outErr != nil {
			// The API keys of these results are shown nowhere else.
			fmt.Fprintf(&msgs, "import: could not write to stdout (%v); the results follow here\n%s", im.outErr, out.Bytes())
		}
	}
	if msgs.Len() > 0 {
		im.msgs.Write(msgs.Bytes())
	}
	im.shown.SetCurrent(s.doneBytes.Add(b.bytes))
}

// refusal is the line naming a refused document and why.
func refusal(where, slug string, a *lineAnswer) string {
	var sb strings.Builder
	sb.WriteString(where + ": ")
	if s := cmp.Or(a.Slug, slug); s != "" {
		fmt.Fprintf(&sb, "slug %q: ", s)
	}
	fmt.Fprintf(&sb, "%d %s", a.Status, cmp.Or(a.Error, http.StatusText(a.Status)))
	if len(a.Details) > 0 {
		sb.WriteString(": " + strings.Join(a.Details, "; "))
	}
	sb.WriteString("\n")
	return sb.String()
}

// startProgress shows the progress on stderr as --progress says: a bar whose length is the
// input's bytes, so its time left holds for documents of any size, labelled with the documents
// handled and their rate, or a plain line every --progress-every. total is the input's bytes, -1
// when unknown.
func (im *importer) startProgress(total int64, start time.Time) *progress.Display {
	s := &im.stats
	return progress.Start(im.stderr, im.cfg.progress, start, progress.View{
		Label: func() string {
			text := fmt.Sprintf("%d documents", s.handled())
			if n := s.refused.Load(); n > 0 {
				text += fmt.Sprintf(", %d refused", n)
			}
			return text
		},
		Count: s.handled,
		Line:  func() string { return im.progressLine(total, start) },
		Total: total,
	})
}

// progressLine is a plain progress line, for logs.
func (im *importer) progressLine(total int64, start time.Time) string {
	s := &im.stats
	line := fmt.Sprintf("imported %d documents (%.0f/s), refused %d", s.accepted(), progress.Rate(s.handled(), start), s.refused.Load())
	if total > 0 {
		line += fmt.Sprintf(", %d%% of input", s.doneBytes.Load()*100/total)
	}
	return line
}
