package envflag

import (
	"errors"
	"flag"
	"fmt"
	"strings"
)

// setting is one flag of a command line and the value it gives.
type setting struct{ name, value string }

// line is a command line sorted: its flags and its other arguments, each in order, and whether
// it asks for help.
type line struct {
	flags []setting
	args  []string
	help  bool
}

// boolFlag is a flag.Value set without a value, as the flag package's booleans are.
type boolFlag interface{ IsBoolFlag() bool }

// split sorts args into flags and other arguments. A flag is -name or --name, its value after =
// or, unless it is a boolean, in the next argument; - alone is an argument; -- ends the flags.
// The error is the first wrong flag; the scan goes on, so that a request for help after it is
// still seen.
func split(fs *flag.FlagSet, args []string) (line, error) {
	var l line
	var first error
	fail := func(err error) {
		if first == nil {
			first = err
		}
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			l.args = append(l.args, args[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			l.args = append(l.args, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := fs.Lookup(name)
		switch {
		case f == nil && (name == "h" || name == "help"):
			l.help = true
		case name == "" || name[0] == '-':
			fail(fmt.Errorf("bad flag syntax: %s", a))
		case f == nil:
			fail(unknownFlag(fs, name))
		case hasValue:
			l.flags = append(l.flags, setting{name, value})
		case isBool(f):
			l.flags = append(l.flags, setting{name, "true"})
		case i+1 < len(args):
			i++
			l.flags = append(l.flags, setting{name, args[i]})
		default:
			fail(fmt.Errorf("flag --%s needs a value", name))
		}
	}
	return l, first
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(boolFlag)
	return ok && b.IsBoolFlag()
}

// unknownFlag is the error of a flag fs does not define, with the one it may have meant.
func unknownFlag(fs *flag.FlagSet, name string) error {
	var known []string
	fs.VisitAll(func(f *flag.Flag) { known = append(known, f.Name) })
	if s, ok := Suggest(name, known); ok {
		return fmt.Errorf("unknown flag --%s (did you mean --%s?)", name, s)
	}
	return errors.New("unknown flag --" + name)
}
