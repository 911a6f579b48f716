package readmecheck_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// invocation is one command line of the publisher binary the README shows: its command and the
// words after it.
type invocation struct {
	command string
	args    []string
	line    string
}

// invocations finds the command lines of the binary in code blocks and inline code: those that
// call it (publisher, ./publisher, go run ./cmd/publisher), and inline ones that start with a
// command so called elsewhere (admin rotate-secret SLUG ID 24h).
func (r readme) invocations() []invocation {
	var calls, bare []invocation
	for _, line := range append(slices.Clone(r.code), r.spans()...) {
		words := strings.Fields(line)
		if i := binaryAt(words); i >= 0 {
			if inv, ok := newInvocation(words[i+1:], line); ok {
				calls = append(calls, inv)
			}
		} else if inv, ok := newInvocation(words, line); ok && len(words) > 1 {
			bare = append(bare, inv)
		}
	}
	for _, inv := range bare {
		if slices.ContainsFunc(calls, func(c invocation) bool { return c.command == inv.command }) {
			calls = append(calls, inv)
		}
	}
	return calls
}

// binaryAt is the index of the word that calls the binary, or -1.
func binaryAt(words []string) int {
	for i, w := range words {
		switch {
		case i > 0 && words[i-1] == "-o": // the name a build gives the binary
		case w == "publisher" || w == "./publisher":
			return i
		case w == "./cmd/publisher" && i >= 2 && words[i-2] == "go" && words[i-1] == "run":
			return i
		}
	}
	return -1
}

// newInvocation takes a command and its arguments up to a comment or the end of the command.
func newInvocation(words []string, line string) (invocation, bool) {
	end := slices.IndexFunc(words, func(w string) bool {
		return strings.HasPrefix(w, "#") || w == ";" || w == "&&" || w == "|" || strings.HasSuffix(w, ")")
	})
	if end >= 0 {
		words = words[:end]
	}
	if len(words) == 0 || !commandWord.MatchString(words[0]) {
		return invocation{}, false // nothing, a flag, or a placeholder such as <command>
	}
	return invocation{command: words[0], args: words[1:], line: line}, true
}

var commandWord = regexp.MustCompile(`^[a-z][a-z-]*$`)

var flagWord = regexp.MustCompile(`^--?([a-z][a-z0-9-]*)(=.*)?$`)

// flagName is the name of the flag a word gives, if it gives one.
func flagName(w string) (string, bool) {
	m := flagWord.FindStringSubmatch(w)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// subcommand is the first argument of admin that is neither a flag nor a flag's value: every
// flag of admin takes a value.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		if _, ok := flagName(args[i]); !ok {
			return args[i]
		}
		if !strings.Contains(args[i], "=") {
			i++
		}
	}
	return ""
}

// TestCommandsExist fails on a command line of the README whose command, admin command or flag
// the binary does not have, and on an inline --flag that neither a command nor the binary itself
// takes, so that the README's examples keep working when a flag is renamed or removed.
func TestCommandsExist(t *testing.T) {
	r := load(t)
	b := binary{path: build(t), helps: map[string]string{}}
	all := map[string]bool{}
	for _, inv := range r.invocations() {
		out, ok := b.help(t, inv.command)
		if !ok {
			t.Errorf("%q: publisher has no command %s:\n%s", inv.line, inv.command, out)
			continue
		}
		flags := flagsOf(out)
		for f := range flags {
			all[f] = true
		}
		for _, w := range inv.args {
			if name, ok := flagName(w); ok && !flags[name] {
				t.Errorf("%q: publisher %s has no flag --%s", inv.line, inv.command, name)
			}
		}
		if sub := subcommand(inv.args); inv.command == "admin" && commandWord.MatchString(sub) && !listsCommand(out, sub) {
			t.Errorf("%q: publisher admin has no command %s", inv.line, sub)
		}
	}
	for _, s := range r.spans() {
		m := longFlag.FindStringSubmatch(strings.Fields(s)[0])
		if m != nil && !all[m[1]] && !b.runs(t, "--"+m[1]) {
			t.Errorf("`%s`: neither publisher nor a command of it has a flag --%s", s, m[1])
		}
	}
}

// longFlag is a flag as the README writes the binary's: other tools' single-dash flags
// (-buildvcs=false) are theirs.
var longFlag = regexp.MustCompile(`^--([a-z][a-z0-9-]*)(=.*)?$`)

var helpFlag = regexp.MustCompile(`(?m)^\s{1,4}--?([a-z][a-z0-9-]*)`)

// flagsOf reads the flags a command's help lists; -h and --help are every command's.
func flagsOf(help string) map[string]bool {
	flags := map[string]bool{"h": true, "help": true}
	for _, m := range helpFlag.FindAllStringSubmatch(help, -1) {
		flags[m[1]] = true
	}
	return flags
}

func listsCommand(help, name string) bool {
	return regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `(\s|$)`).MatchString(help)
}

// binary is the built publisher, with the help of each command it was asked for.
type binary struct {
	path  string
	helps map[string]string // of the commands that have one
}

// help is the help of command, and whether it has one: the help of a command exits 0, an
// unknown command 2.
func (b binary) help(t *testing.T, command string) (string, bool) {
	t.Helper()
	if out, ok := b.helps[command]; ok {
		return out, true
	}
	out, err := b.run(t, command, "-h")
	if err != nil {
		return out, false
	}
	b.helps[command] = out
	return out, true
}

// runs says whether the binary succeeds with args alone, as it does with a flag of its own such
// as --version.
func (b binary) runs(t *testing.T, args ...string) bool {
	_, err := b.run(t, args...)
	return err == nil
}

func (b binary) run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, b.path, args...).CombinedOutput()
	return string(out), err
}

func build(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "publisher")
	cmd := exec.CommandContext(t.Context(), "go", "build", "-o", bin, "./cmd/publisher")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/publisher: %v\n%s", err, out)
	}
	return bin
}
