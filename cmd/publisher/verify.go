package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/progress"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/runner"
)

// verify rebuilds every establishment's documents from the event log, under the files URL the
// projector renders under, and compares them with the live documents bucket, one establishment
// at a time per worker, showing its progress on stderr.
func verify(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var store storeFlags
	store.register(fs, "NATS to read from")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	workers := fs.Int("workers", runner.DefaultVerifyWorkers, "establishments checked at once")
	maxDiffs := fs.Int("max-differences", runner.DefaultMaxDifferences, "differences listed in the report (all are counted)")
	var prog progress.Options
	prog.Register(fs)
	fs.Usage = envflag.Usage(fs, "publisher verify [flags]")
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := prog.Check(); err != nil {
		return &envflag.UsageError{Command: "verify", Err: err}
	}
	if *maxDiffs <= 0 {
		return envflag.Usagef("verify", "--max-differences %d: want a positive number", *maxDiffs)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := store.connect("publisher-verify", getenv)
	if err != nil {
		return err
	}
	defer nc.Close()
	// verify reads: it binds to the log as it is, never reconfiguring it (its replicas, say).
	eventLog, err := events.Bind(ctx, nc)
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	// Checked against the records the projector has projected, under the files URL it renders
	// under: a change on its way is no difference.
	kv, cp, err := servedDocuments(ctx, js)
	if err != nil {
		return err
	}
	files, err := store.filesURL(cp.FilesURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "verify: %s, uploaded files under %s\n", kv.Bucket(), files)
	start := time.Now()
	show, stop := progress.Establishments(stderr, prog, start, "verified")
	rep, err := runner.Verify(ctx, runner.VerifyConfig{
		FilesURL: files,
		Log:      eventLog, KV: kv, Workers: *workers, MaxDifferences: *maxDiffs, Progress: show, UpTo: cp.Position,
	})
	stop(err == nil)
	if err != nil {
		return err
	}
	return printVerifyReport(stdout, stderr, rep, time.Since(start))
}

// printVerifyReport prints the summary of a verification on stderr, with its duration and rate,
// and its report on stdout; it fails when a document differs.
func printVerifyReport(stdout, stderr io.Writer, rep runner.Report, took time.Duration) error {
	fmt.Fprintf(stderr, "verify: %d establishments checked up to sequence %d in %s (%.0f/s), %d different\n",
		rep.Checked, rep.Position, took.Round(time.Millisecond), float64(rep.Checked)/max(took.Seconds(), 1e-9), rep.Different)
	if rep.UpTo > 0 && rep.UpTo < rep.Position {
		fmt.Fprintf(stderr, "verify: the projector's checkpoint is at sequence %d, %d records behind the log: later records were not required of the documents\n",
			rep.UpTo, rep.Position-rep.UpTo)
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(rep); err != nil {
		return err
	}
	if rep.Different > 0 {
		return fmt.Errorf("verify: %d establishments differ from the log (%d checked)", rep.Different, rep.Checked)
	}
	return nil
}

// servedDocuments binds to the documents bucket of the generation served, and returns it with
// the checkpoint of its projector: the zero Checkpoint when it has written none yet.
func servedDocuments(ctx context.Context, js jetstream.JetStream) (jetstream.KeyValue, runner.Checkpoint, error) {
	served := 1
	gens, err := js.KeyValue(ctx, generation.Bucket)
	switch {
	case err == nil:
		g, _, err := generation.Read(ctx, gens)
		if err != nil {
			return nil, runner.Checkpoint{}, err
		}
		served = g.Served()
	case !errors.Is(err, jetstream.ErrBucketNotFound):
		return nil, runner.Checkpoint{}, fmt.Errorf("generations bucket: %w", err)
	}
	docsName, stateName := runner.GenerationBuckets(served)
	docs, err := js.KeyValue(ctx, docsName)
	if err != nil {
		return nil, runner.Checkpoint{}, fmt.Errorf("documents bucket %s: %w", docsName, err)
	}
	state, err := js.KeyValue(ctx, stateName)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return docs, runner.Checkpoint{}, nil
	}
	if err != nil {
		return nil, runner.Checkpoint{}, fmt.Errorf("projector bucket %s: %w", stateName, err)
	}
	cp, _, err := runner.ReadCheckpoint(ctx, state)
	return docs, cp, err
}
