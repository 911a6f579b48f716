package envflag

import (
	"flag"
	"fmt"
	"strings"
)

// Help answers a command line that asks for help: Usage is the command's usage, which the binary
// prints on stdout before exiting with success. It matches flag.ErrHelp.
type Help struct {
	Usage string
}

func (h *Help) Error() string { return "help requested" }

func (h *Help) Unwrap() error { return flag.ErrHelp }

// UsageError is a command line that cannot run: an unknown command or flag, a value refused, a
// wrong count of arguments. The binary exits with its usage status rather than that of a failed
// operation.
type UsageError struct {
	// Command is the command refused, as typed after the binary's name ("serve", "admin get"),
	// empty for the binary itself.
	Command string
	Err     error
	// Usage, when set, is printed with the error; otherwise the error points to --help.
	Usage string
}

func (e *UsageError) Error() string {
	if e.Command == "" {
		return e.Err.Error()
	}
	return e.Command + ": " + e.Err.Error()
}

func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a *UsageError of command whose error is formatted as fmt.Errorf does.
func Usagef(command, format string, a ...any) error {
	return &UsageError{Command: command, Err: fmt.Errorf(format, a...)}
}

// Text is what fs.Usage prints (or the flag package's default usage when it is nil), whatever
// fs's output is.
func Text(fs *flag.FlagSet) string {
	var b strings.Builder
	out := fs.Output()
	fs.SetOutput(&b)
	defer fs.SetOutput(out)
	if fs.Usage != nil {
		fs.Usage()
	} else {
		fmt.Fprintf(&b, "usage of %s:\n", fs.Name())
		fs.PrintDefaults()
	}
	return b.String()
}

// Usage returns a usage function printing a flag set's defaults with each flag's environment
// twin, under synopsis.
func Usage(fs *flag.FlagSet, synopsis string) func() {
	return func() {
		out := fs.Output()
		fmt.Fprintf(out, "usage: %s\n\nflags (each also read from its environment variable):\n", synopsis)
		fs.VisitAll(func(f *flag.Flag) {
			def := ""
			if f.DefValue != "" {
				def = fmt.Sprintf(" (default %q)", f.DefValue)
			}
			fmt.Fprintf(out, "  --%s  [%s]%s\n      %s\n", f.Name, Name(f.Name), def, f.Usage)
		})
	}
}
