package client

import (
	"cmp"
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/progress"
)

// The batch endpoint of the admin API, and what one request to it may hold. The admin API states
// the same limits (its MaxBatchItems and MaxBodyBytes); package main's tests hold them equal.
const (
	// ImportPath is the batch endpoint.
	ImportPath = "/admin/v1/import"
	// MaxBatchDocuments is the most documents the endpoint takes in one request.
	MaxBatchDocuments = 1000
	// MaxDocumentBytes is the most bytes of one document, a line of a request.
	MaxDocumentBytes = 4 << 20
	// maxBatchBytes is where a batch is cut whatever its count: far below the endpoint's 64 MiB,
	// so that the batches in flight hold little memory and a lost answer costs little to resend.
	maxBatchBytes = 8 << 20
)

// How a batch is tried again.
const (
	attempts       = 6               // tries of one batch, the first included
	defaultBackoff = time.Second     // wait after the first failed try, about doubled after each next one
	maxWait        = time.Minute     // longest wait between two tries, a Retry-After included
	requestTimeout = 5 * time.Minute // time limit of one request
)

const importSynopsis = `publisher import PATH... [flags]

Imports establishments through the admin API's batch endpoint. A PATH is an NDJSON file
(.ndjson or .jsonl, one import document per line), - for NDJSON on standard input, a directory
(its *.json files, by name, not recursive) or a .json file (one document, which may span lines).
Each accepted document is one JSON line on stdout, with its API key when one was issued (it is
shown once); each refused one is named on stderr as FILE:LINE with the reason. Running the same
import again appends nothing.`

// ImportConfig is what the import command's flags set besides where the admin API is.
type ImportConfig struct {
	Batch    int // documents per request
	Parallel int // requests in flight at once
	Progress progress.Options
	// Backoff is the wait after the first failed try of a batch, about doubled after each next
	// one, unless the server says how long to wait; 0 for a second.
	Backoff time.Duration
}

func (c *ImportConfig) register(fs *flag.FlagSet) {
	fs.IntVar(&c.Batch, "batch", 200, fmt.Sprintf("documents per request (at most %d); a request is also cut before it reaches %d MiB", MaxBatchDocuments, maxBatchBytes>>20))
	fs.IntVar(&c.Parallel, "parallel", 4, "requests in flight at once")
	c.Progress.Register(fs)
}

func (c ImportConfig) check() error {
	switch {
	case c.Batch < 1 || c.Batch > MaxBatchDocuments:
		return fmt.Errorf("--batch %d: want 1 to %d documents", c.Batch, MaxBatchDocuments)
	case c.Parallel < 1:
		return fmt.Errorf("--parallel %d: want at least 1", c.Parallel)
	}
	return c.Progress.Check()
}

// Import is the import command, with the standard input that - reads.
func Import(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var api apiFlags
	api.register(fs)
	var cfg ImportConfig
	cfg.register(fs)
	fs.Usage = envflag.Usage(fs, importSynopsis)
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := cfg.check(); err != nil {
		return &envflag.UsageError{Command: "import", Err: err}
	}
	if fs.NArg() == 0 {
		return envflag.Usagef("import", "no path given: want one or more files, directories, or - for standard input")
	}
	c, err := api.client("import")
	if err != nil {
		return err
	}
	return NewImporter(c, cfg, stdin, stdout, stderr).Run(ctx, fs.Args())
}

// Importer streams the documents of its inputs through the batch endpoint.
//
// One goroutine reads the inputs and cuts batches, ImportConfig.Parallel workers send them, and
// one collector reports them in input order (see pipeline). The memory held is bounded by the
// batches' size whatever the input's; only the slugs already seen, to refuse one given twice,
// grow with it.
type Importer struct {
	c      *Client
	cfg    ImportConfig
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	runID  string // random name of this run, part of every batch's key

	inputs []input
	stats  importStats
	shown  *progress.Display // the progress, in input bytes whose documents are reported
	msgs   io.Writer         // where messages go while the progress is shown
	cancel context.CancelCauseFunc
	outErr error // the first failure to write to stdout; results go to stderr from then on
}

// NewImporter returns an importer through c whose results go to stdout and messages to stderr;
// the path - names stdin.
func NewImporter(c *Client, cfg ImportConfig, stdin io.Reader, stdout, stderr io.Writer) *Importer {
	// Requests are long and few: each has its own time limit rather than the client's 30 s, and
	// the workers keep their connections between requests.
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = cfg.Parallel
	cc := *c
	cc.http = &http.Client{Transport: t}
	cfg.Backoff = cmp.Or(cfg.Backoff, defaultBackoff)
	var run [16]byte
	_, _ = crand.Read(run[:])
	return &Importer{c: &cc, cfg: cfg, stdin: stdin, stdout: stdout, stderr: stderr, runID: hex.EncodeToString(run[:])}
}

// errStopped leaves a batch unsent: the run stopped before its turn.
var errStopped = errors.New("not sent: the import stopped")

// Run imports the documents of paths and reports them. Its error counts what went wrong; each
// document is reported on its own, on stdout or stderr.
func (im *Importer) Run(ctx context.Context, paths []string) error {
	inputs, warnings, err := listInputs(paths)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	im.inputs = inputs
	for _, w := range warnings {
		fmt.Fprintf(im.stderr, "import: %s\n", w)
	}

	start := time.Now()
	im.shown = im.startProgress(totalSize(inputs), start)
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

	p := im.startPipeline(ctx, stop)
	bt := &batcher{size: im.cfg.Batch, seen: map[string]location{}, where: im.where, read: &im.stats.read, cur: &batch{}, emit: p.emit}
	unreadable := im.readInputs(stop, bt)
	p.close()
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
