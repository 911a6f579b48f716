package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	_ "time/tzdata" // establishments' time zones must resolve on machines without a zoneinfo database

	"github.com/opencarte/publisher/cmd/publisher/client"
	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// The exit statuses of the binary, as gh and kubectl give them.
const (
	exitOK     = 0 // the operation succeeded, or help was asked for
	exitFailed = 1 // the operation failed, wholly or in part
	exitUsage  = 2 // the command line cannot run
)

const usage = `usage: publisher <command> [args] [flags]

commands:
  serve     run the service (embedded NATS unless --nats-url is given); --demo loads a sample
  import    import establishments (NDJSON files, JSON files, directories, stdin) in batches
            through the admin API; prints each API key issued
  admin     drive the admin API: get, list, activate, enable-api, ping, ... ('publisher admin
            --help' lists them all)
  changes   print the changes of every establishment: a full sync, then each change;
            --follow waits for more
  verify    replay the event log in memory and compare it with the live documents, byte for byte
  rebuild   render the log into a new generation of the documents while the current one is
            served, verify it, switch every process to it at once and announce what changed;
            run again after an interruption, it resumes
  version   print the version, the VCS revision and the Go version this binary was built from

Run 'publisher <command> --help' for a command's flags. Flags may come anywhere after the
command, and -- ends them. Every flag has an environment twin, PUBLISHER_ and its name in
upper case (--data-dir: PUBLISHER_DATA_DIR); the command line wins.

Exit status: 0 when the operation succeeded (or on --help); 1 when it failed, even in part (a
request refused, a document not imported, a webhook ping the receiver refused, a document that
differs from the log); 2 when the command line cannot run (an unknown command or flag, a
wrong value or count of arguments).
`

// command runs one command of the binary with the arguments after its name.
type command func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error

// commands are the binary's commands by name.
func commands() map[string]command {
	return map[string]command{
		"serve": serve,
		"import": func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
			return client.Import(ctx, args, os.Stdin, stdout, stderr, getenv)
		},
		"admin":   client.Admin,
		"changes": client.Changes,
		"verify":  verify,
		"rebuild": rebuildCommand,
		"version": versionCommand,
	}
}

// cli runs the command of args, prints its error, and returns the process's exit status.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	err := run(ctx, args, stdout, stderr, getenv)
	var help *envflag.Help
	var usageErr *envflag.UsageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &help):
		fmt.Fprint(stdout, help.Usage)
		return exitOK
	case errors.As(err, &usageErr):
		fmt.Fprintln(stderr, "publisher:", err)
		if usageErr.Usage != "" {
			fmt.Fprint(stderr, "\n"+usageErr.Usage)
		} else {
			fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", commandLine(usageErr.Command))
		}
		return exitUsage
	default:
		fmt.Fprintln(stderr, "publisher:", err)
		return exitFailed
	}
}

// commandLine is how a command is typed, the binary's name first.
func commandLine(cmd string) string {
	if cmd == "" {
		return "publisher"
	}
	return "publisher " + cmd
}

// run runs the command of args: its error is what the command says went wrong, an *envflag.Help
// when help was asked for, or an *envflag.UsageError when the command line cannot run.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return &envflag.UsageError{Err: errors.New("no command given"), Usage: usage}
	}
	name, rest := args[0], args[1:]
	switch name {
	case "help", "-h", "-help", "--help":
		if len(rest) == 0 || rest[0] == "help" || strings.HasPrefix(rest[0], "-") {
			return &envflag.Help{Usage: usage}
		}
		// help COMMAND is COMMAND --help, with any further words as its arguments.
		return run(ctx, append([]string{rest[0], "--help"}, rest[1:]...), stdout, stderr, getenv)
	case "-version", "--version":
		return versionCommand(ctx, rest, stdout, stderr, getenv)
	}
	all := commands()
	cmd, ok := all[name]
	if ok {
		return cmd(ctx, rest, stdout, stderr, getenv)
	}
	if len(name) > 1 && name[0] == '-' {
		return envflag.Usagef("", "flag %s before the command: flags come after it, as in publisher <command> [args] [flags]", name)
	}
	if s, ok := envflag.Suggest(name, slices.Sorted(maps.Keys(all))); ok {
		return envflag.Usagef("", "unknown command %q (did you mean %q?)", name, s)
	}
	return envflag.Usagef("", "unknown command %q", name)
}
