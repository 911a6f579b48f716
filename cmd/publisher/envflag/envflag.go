package envflag

import (
	"flag"
	"fmt"
	"strings"
)

// Name is the environment variable twin of a flag.
func Name(flagName string) string {
	return "PUBLISHER_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Parse applies every flag's environment twin, then the command line, which wins.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	var errs []string
	fs.VisitAll(func(f *flag.Flag) {
		if v := getenv(Name(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %v", Name(f.Name), err))
			}
		}
	})
	if len(errs) > 0 {
		return fmt.Errorf("invalid environment: %s", strings.Join(errs, "; "))
	}
	return fs.Parse(args)
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
