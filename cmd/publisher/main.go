package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // establishments' time zones must resolve on machines without a zoneinfo database

	"github.com/opencarte/publisher/cmd/publisher/client"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "publisher:", err)
		}
		os.Exit(2)
	}
}

const usage = `usage: publisher <command> [flags]

commands:
  serve     run the service (embedded NATS unless --nats-url is given); --demo loads a sample
  import    import establishments (NDJSON files, JSON files, directories, stdin) in batches
            through the admin API; prints each API key issued
  admin     drive the admin API: get, list, activate, enable-api, disable-api, regenerate-key,
            set-redirect, publish-version, withdraw-version, add-webhook, remove-webhook, status
  verify    replay the event log in memory and compare it with the live documents, byte for byte
  rebuild   render the log into a new generation of the documents while the current one is
            served, verify it, switch every process to it at once and announce what changed;
            run again after an interruption, it resumes

Run 'publisher <command> -h' for the flags of a command; every flag has an environment twin.
`

func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	switch args[0] {
	case "serve":
		return serve(ctx, args[1:], stdout, stderr, getenv)
	case "import":
		return client.Import(ctx, args[1:], os.Stdin, stdout, stderr, getenv)
	case "admin":
		return client.Admin(ctx, args[1:], stdout, stderr, getenv)
	case "verify":
		return verify(ctx, args[1:], stdout, stderr, getenv)
	case "rebuild":
		return rebuildCommand(ctx, args[1:], stdout, stderr, getenv)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}
