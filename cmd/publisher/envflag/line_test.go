package envflag

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// testFlags is a flag set with a string, an int and a boolean flag, and what they were set to.
type testFlags struct {
	fs    *flag.FlagSet
	token *string
	batch *int
	demo  *bool
}

func newTestFlags() testFlags {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return testFlags{
		fs:    fs,
		token: fs.String("admin-token", "", "token"),
		batch: fs.Int("batch", 1, "documents per request"),
		demo:  fs.Bool("demo", false, "load the sample"),
	}
}

func noEnv(string) string { return "" }

// Flags may come before, between and after the arguments; -- ends them.
func TestParseFlagsAnywhere(t *testing.T) {
	for _, c := range []struct {
		name  string
		args  []string
		token string
		batch int
		demo  bool
		rest  []string
	}{
		{"after the arguments", []string{"get", "chez-marcel", "--admin-token", "x"}, "x", 1, false, []string{"get", "chez-marcel"}},
		{"between them", []string{"get", "-admin-token=x", "chez-marcel", "--demo"}, "x", 1, true, []string{"get", "chez-marcel"}},
		{"before them", []string{"--batch", "3", "get"}, "", 3, false, []string{"get"}},
		{"a value starting with a hyphen", []string{"get", "--admin-token", "-x-"}, "-x-", 1, false, []string{"get"}},
		{"a boolean does not take the next argument", []string{"--demo", "false"}, "", 1, true, []string{"false"}},
		{"a boolean set false", []string{"--demo=false", "a"}, "", 1, false, []string{"a"}},
		{"- is an argument", []string{"-", "--batch=2"}, "", 2, false, []string{"-"}},
		{"-- ends the flags", []string{"get", "--", "--batch", "-h"}, "", 1, false, []string{"get", "--batch", "-h"}},
		{"the last value wins", []string{"--batch", "2", "x", "--batch", "4"}, "", 4, false, []string{"x"}},
		{"nothing", nil, "", 1, false, []string{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newTestFlags()
			if err := Parse(f.fs, c.args, noEnv); err != nil {
				t.Fatal(err)
			}
			if *f.token != c.token || *f.batch != c.batch || *f.demo != c.demo {
				t.Errorf("got token %q, batch %d, demo %t; want %q, %d, %t", *f.token, *f.batch, *f.demo, c.token, c.batch, c.demo)
			}
			if diff := cmp.Diff(c.rest, f.fs.Args()); diff != "" {
				t.Errorf("arguments (-want +got):\n%s", diff)
			}
		})
	}
}

// A command line that cannot run is a *UsageError naming the command and the flag at fault.
func TestParseRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"get", "--admin-tokn", "x"}, "admin: unknown flag --admin-tokn (did you mean --admin-token?)"},
		{[]string{"--verbose"}, "admin: unknown flag --verbose"},
		{[]string{"get", "--admin-token"}, "admin: flag --admin-token needs a value"},
		{[]string{"--batch", "many"}, `admin: invalid value "many" for --batch: parse error`},
		{[]string{"---batch=2"}, "admin: bad flag syntax: ---batch=2"},
		{[]string{"-=2"}, "admin: bad flag syntax: -=2"},
		{[]string{"--nope", "--batch"}, "admin: unknown flag --nope"},
	} {
		f := newTestFlags()
		err := Parse(f.fs, c.args, noEnv)
		var u *UsageError
		if !errors.As(err, &u) || err.Error() != c.want {
			t.Errorf("%q: got %v, want a usage error %q", c.args, err, c.want)
		}
	}
}

// -h, -help and --help anywhere answer the usage, with the arguments set; nothing else on the
// line is applied or refused.
func TestParseHelp(t *testing.T) {
	for _, c := range []struct {
		args, rest []string
	}{
		{[]string{"-h"}, []string{}},
		{[]string{"--help"}, []string{}},
		{[]string{"-help"}, []string{}},
		{[]string{"get", "x", "--help"}, []string{"get", "x"}},
		{[]string{"--admin-token", "x", "-h", "get"}, []string{"get"}},
		{[]string{"get", "--nope", "--help"}, []string{"get"}},
		{[]string{"--batch", "many", "-h"}, []string{}},
		{[]string{"get", "-h", "--admin-token"}, []string{"get"}},
	} {
		f := newTestFlags()
		var seen []string
		f.fs.Usage = func() {
			seen = f.fs.Args()
			io.WriteString(f.fs.Output(), "usage: publisher admin <command> [args]\n")
		}
		env := func(k string) string { return map[string]string{"PUBLISHER_BATCH": "many"}[k] }
		err := Parse(f.fs, c.args, env)
		var h *Help
		if !errors.As(err, &h) || !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: got %v, want help", c.args, err)
			continue
		}
		if h.Usage != "usage: publisher admin <command> [args]\n" {
			t.Errorf("%q: usage %q", c.args, h.Usage)
		}
		if *f.token != "" || *f.batch != 1 {
			t.Errorf("%q: token %q, batch %d applied, want nothing applied", c.args, *f.token, *f.batch)
		}
		if diff := cmp.Diff(c.rest, seen); diff != "" {
			t.Errorf("%q: arguments the usage saw (-want +got):\n%s", c.args, diff)
		}
	}
}

// A command defining -h itself gets it as its flag; the output of the flag set is left as it was.
func TestParseHelpFlagOfTheCommand(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	human := fs.Bool("h", false, "human-readable sizes")
	if err := Parse(fs, []string{"-h"}, noEnv); err != nil || !*human {
		t.Errorf("got %v, h %t; want -h set", err, *human)
	}
	if Text(fs) == "" || out.Len() != 0 || fs.Output() != &out {
		t.Errorf("Text wrote %q to the output, or did not restore it", out.String())
	}
}

func FuzzParse(f *testing.F) {
	for _, seed := range []string{"get x --admin-token y", "-- -h", "--batch=2 - a", "---x", "-=", "--demo=maybe", "-h"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		tf := newTestFlags()
		err := Parse(tf.fs, args, noEnv)
		var h *Help
		var u *UsageError
		switch {
		case err == nil:
			// The arguments left are the line's, in order.
			rest := tf.fs.Args()
			for _, a := range args {
				if len(rest) > 0 && a == rest[0] {
					rest = rest[1:]
				}
			}
			if len(rest) > 0 {
				t.Errorf("%q: arguments %q are not the line's in order", args, tf.fs.Args())
			}
		case errors.As(err, &h), errors.As(err, &u):
		default:
			t.Errorf("%q: got %v, want help or a usage error", args, err)
		}
	})
}
