package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/node"
	"github.com/opencarte/publisher/cmd/publisher/progress"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/projections/dockey"
	"github.com/opencarte/publisher/projections/runner"
)

// verify rebuilds every establishment's documents from the event log and compares them with the
// live documents bucket, one establishment at a time per worker, showing its progress on stderr.
func verify(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var conn node.Client
	conn.Register(fs, "NATS to read from")
	timeout := fs.Duration("timeout", 30*time.Minute, "give up after this long")
	workers := fs.Int("workers", runner.DefaultVerifyWorkers, "establishments checked at once")
	maxDiffs := fs.Int("max-differences", runner.DefaultMaxDifferences, "differences listed in the report (all are counted)")
	var prog progress.Options
	prog.Register(fs)
	publicURL := fs.String("public-url", "", "base URL the projector gives uploaded files under, as serve's --public-url (default from --http)")
	httpAddr := fs.String("http", "127.0.0.1:8080", "the read API's listen address, when serve runs without --public-url")
	fs.Usage = envflag.Usage(fs, "publisher verify [flags]")
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := prog.Check(); err != nil {
		return err
	}
	if *maxDiffs <= 0 {
		return fmt.Errorf("--max-differences %d: want a positive number", *maxDiffs)
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	nc, err := conn.Connect("publisher-verify", getenv)
	if err != nil {
		return err
	}
	defer nc.Close()
	// verify reads: it binds to the log as it is, never reconfiguring it (its replicas, say).
	store, err := events.Bind(ctx, nc)
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	docs, err := servedDocuments(ctx, js)
	if err != nil {
		return err
	}
	kv, err := js.KeyValue(ctx, docs)
	if err != nil {
		return fmt.Errorf("documents bucket: %w", err)
	}
	// Checked against the records the projector has projected: a change on its way is no
	// difference.
	var upTo uint64
	_, stateName := runner.GenerationBuckets(dockey.GenerationOf(docs))
	if state, err := js.KeyValue(ctx, stateName); err == nil {
		if cp, ok, err := runner.ReadCheckpoint(ctx, state); err == nil && ok {
			upTo = cp.Position
		}
	}
	start := time.Now()
	show, stop := progress.Establishments(stderr, prog, start, "verified")
	files := strings.TrimRight(*publicURL, "/")
	if files == "" {
		files = localURL(*httpAddr)
	}
	rep, err := runner.Verify(ctx, runner.VerifyConfig{
		FilesURL: files,
		Log:      store, KV: kv, Workers: *workers, MaxDifferences: *maxDiffs, Progress: show, UpTo: upTo,
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

// servedDocuments returns the name of the generation of the documents bucket served.
func servedDocuments(ctx context.Context, js jetstream.JetStream) (string, error) {
	gens, err := js.KeyValue(ctx, generation.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return dockey.Bucket, nil
	}
	if err != nil {
		return "", fmt.Errorf("generations bucket: %w", err)
	}
	g, _, err := generation.Read(ctx, gens)
	if err != nil {
		return "", err
	}
	docs, _ := runner.GenerationBuckets(g.Served())
	return docs, nil
}
