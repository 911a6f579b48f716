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

// Parse sets fs's flags from their environment twins, then from args, which win, and leaves the
// other arguments, in order, to fs.Args. Flags may come anywhere among args; -- ends them.
//
// A request for help anywhere on the line returns a *Help holding what fs.Usage prints, fs.Args
// set first so that the usage may depend on them (a subcommand's); nothing else is applied. A flag
// fs does not define, a value it refuses or a flag without its value returns a *UsageError naming
// it, as does a refused value of the environment, named by its variable.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	l, err := split(fs, args)
	if l.help {
		// Cannot fail: everything after -- is an argument.
		_ = fs.Parse(append([]string{"--"}, l.args...))
		return &Help{Usage: Text(fs)}
	}
	if err != nil {
		return &UsageError{Command: fs.Name(), Err: err}
	}
	if err := applyEnvironment(fs, getenv); err != nil {
		return &UsageError{Command: fs.Name(), Err: err}
	}
	for _, s := range l.flags {
		if err := fs.Set(s.name, s.value); err != nil {
			return &UsageError{Command: fs.Name(), Err: fmt.Errorf("invalid value %q for --%s: %w", s.value, s.name, err)}
		}
	}
	return fs.Parse(append([]string{"--"}, l.args...))
}

// applyEnvironment sets each flag of fs whose twin getenv gives; it names every twin refused.
func applyEnvironment(fs *flag.FlagSet, getenv func(string) string) error {
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
	return nil
}
