package progress

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// Options are a command's --progress and --progress-every flags.
type Options struct {
	Mode  string        // auto, bar, plain or none
	Every time.Duration // interval of the plain lines
}

// Register adds the flags to fs.
func (o *Options) Register(fs *flag.FlagSet) {
	fs.StringVar(&o.Mode, "progress", "auto", "progress on stderr: bar, plain (a line every --progress-every), none, or auto (a bar on a terminal, plain lines otherwise)")
	fs.DurationVar(&o.Every, "progress-every", 5*time.Second, "interval of the plain progress lines")
}

// Check says what is wrong with the flags' values, if anything is.
func (o Options) Check() error {
	switch {
	case o.Mode != "auto" && o.Mode != "bar" && o.Mode != "plain" && o.Mode != "none":
		return fmt.Errorf("--progress %q: want auto, bar, plain or none", o.Mode)
	case o.Every <= 0:
		return fmt.Errorf("--progress-every %s: want a positive duration", o.Every)
	}
	return nil
}

// mode returns the display the Mode asks for on w: auto is a bar on a terminal and plain lines
// otherwise.
func (o Options) mode(w io.Writer) string {
	if o.Mode != "auto" {
		return o.Mode
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		return "bar"
	}
	return "plain"
}
