package main

import (
	"context"
	"flag"
	"io"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
	"github.com/opencarte/publisher/cmd/publisher/generation"
	"github.com/opencarte/publisher/cmd/publisher/logging"
	"github.com/opencarte/publisher/cmd/publisher/progress"
	"github.com/opencarte/publisher/projections/runner"
)

// rebuildCommand renders the whole log, under the files URL the projector renders under, into
// the next generation of the documents bucket while the current one is served, verifies it,
// switches every process to it, announces what changed and removes the old generation. Run again
// after an interruption, it resumes.
func rebuildCommand(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("rebuild", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var store storeFlags
	store.register(fs, "NATS of the running service")
	workers := fs.Int("workers", 0, "establishments rendered at once (0: as many as the projector)")
	cache := fs.Int("cache", 0, "establishments held in memory while rendering (0: as many as the projector)")
	spillDir := fs.String("spill-dir", "", "directory of the temporary files of a replay in several passes, up to the size of the event log (empty: the system's temporary directory, which may be held in memory: give a directory on disk for a large log)")
	verifyWorkers := fs.Int("verify-workers", runner.DefaultVerifyWorkers, "establishments verified at once")
	handover := fs.Duration("handover-timeout", time.Minute, "how long the switch waits for the projector to hand over, and the old generation's removal for every read node to serve the new one")
	switchTimeout := fs.Duration("switch-timeout", 2*time.Minute, "how long projection may stay paused for the switch before it is called off")
	abandon := fs.Bool("abandon", false, "abandon the rebuild under way, removing the generation it built, instead of resuming it")
	var prog progress.Options
	prog.Register(fs)
	logLevel := fs.String("log-level", "warn", "level of the log written to stderr: debug, info, warn or error")
	fs.Usage = envflag.Usage(fs, "publisher rebuild [flags]")
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if err := prog.Check(); err != nil {
		return &envflag.UsageError{Command: "rebuild", Err: err}
	}
	switch {
	case *workers < 0 || *cache < 0 || *verifyWorkers <= 0:
		return envflag.Usagef("rebuild", "--workers and --cache: want 0 or more; --verify-workers: want 1 or more")
	case *handover <= 0 || *switchTimeout <= 0:
		return envflag.Usagef("rebuild", "--handover-timeout %s, --switch-timeout %s: want positive durations", *handover, *switchTimeout)
	}
	logger, err := logging.New(stderr, *logLevel)
	if err != nil {
		return err
	}
	nc, err := store.connect("publisher-rebuild", getenv)
	if err != nil {
		return err
	}
	defer nc.Close()
	cfg := generation.RebuildConfig{
		Conn: nc, Holder: processName(), Workers: *workers, Cache: *cache, SpillDir: *spillDir, VerifyWorkers: *verifyWorkers,
		Handover: *handover, SwitchTimeout: *switchTimeout, Out: stderr, Logger: logger, CheckFilesURL: store.checkFilesURL,
		Progress: func(verb string) (func(done, total int), func(ok bool)) {
			return progress.Establishments(stderr, prog, time.Now(), verb)
		},
	}
	if *abandon {
		return generation.Abandon(ctx, cfg)
	}
	return generation.Rebuild(ctx, cfg)
}
