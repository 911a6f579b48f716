package client

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

const adminAbout = `SLUG is an establishment's slug, ID a webhook endpoint's id (see webhooks SLUG). The answer of
the admin API is printed on stdout. The exit status is 1 when the request failed: the admin API
refused it, or answered that the operation did not succeed (ping, collect-files).`

// uploadTimeout bounds a request sending files, as the admin API bounds its reading.
const uploadTimeout = 10 * time.Minute

// Admin is the admin command: one request to the admin API, whose answer it prints on stdout.
func Admin(ctx context.Context, args []string, stdout, _ io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	var api apiFlags
	api.register(fs)
	cmds := adminCommands()
	fs.Usage = func() { adminUsage(fs, cmds) }
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &envflag.UsageError{Command: "admin", Err: errors.New("no command given"), Usage: envflag.Text(fs)}
	}
	sub, err := findCommand(cmds, fs.Arg(0))
	if err != nil {
		return err
	}
	a := fs.Args()[1:]
	if err := sub.check(a); err != nil {
		return err
	}
	c, err := api.client("admin " + sub.name)
	if err != nil {
		return err
	}
	r, err := sub.request(a)
	if err != nil {
		return sub.fail(err)
	}
	contentType := cmp.Or(r.contentType, "application/json")
	if contentType != "application/json" {
		c.http.Timeout = uploadTimeout // files of 10 MB on a slow link
	}
	out, err := c.do(ctx, r.method, r.path, contentType, r.body)
	if errors.Is(err, syscall.ECONNREFUSED) {
		err = fmt.Errorf("no admin API at %s (is serve running? --admin-url says where it is): %w", c.base, err)
	}
	if err != nil {
		return sub.fail(err)
	}
	if _, err := stdout.Write(out); err != nil {
		return err
	}
	if sub.failed != nil {
		return sub.fail(sub.failed(out))
	}
	return nil
}

// fail is err as the subcommand's error: named after it, unless it is a usage error, which
// names its command already; nil stays nil.
func (s subcommand) fail(err error) error {
	var u *envflag.UsageError
	if err == nil || errors.As(err, &u) {
		return err
	}
	return fmt.Errorf("admin %s: %w", s.name, err)
}

// findCommand returns the subcommand of cmds called name, or a usage error naming the one name
// may be a typo of.
func findCommand(cmds []subcommand, name string) (subcommand, error) {
	names := make([]string, len(cmds))
	for i, s := range cmds {
		if s.name == name {
			return s, nil
		}
		names[i] = s.name
	}
	if s, ok := envflag.Suggest(name, names); ok {
		return subcommand{}, envflag.Usagef("admin", "unknown command %q (did you mean %q?)", name, s)
	}
	return subcommand{}, envflag.Usagef("admin", "unknown command %q; 'publisher admin --help' lists them", name)
}

// adminUsage prints the usage of the subcommand fs's first argument names, or of admin with
// every subcommand when it names none.
func adminUsage(fs *flag.FlagSet, cmds []subcommand) {
	for _, s := range cmds {
		if s.name == fs.Arg(0) {
			synopsis := strings.TrimSpace(fmt.Sprintf("publisher admin %s %s", s.name, s.args)) + " [flags]\n\n" +
				strings.ReplaceAll(s.about, "\n", " ") + "\n\n" + adminAbout
			envflag.Usage(fs, synopsis)()
			return
		}
	}
	var b strings.Builder
	b.WriteString("publisher admin <command> [args] [flags]\n\ncommands:\n")
	for _, s := range cmds {
		head := strings.TrimSpace(s.name + " " + s.args)
		const column = 36
		if len(head) >= column {
			fmt.Fprintf(&b, "  %s\n  %-*s", head, column, "")
		} else {
			fmt.Fprintf(&b, "  %-*s", column, head)
		}
		b.WriteString(strings.ReplaceAll(s.about, "\n", "\n  "+strings.Repeat(" ", column)) + "\n")
	}
	b.WriteString("\n" + adminAbout)
	envflag.Usage(fs, b.String())()
}

// pingRefused is the failure a ping's answer reports: its attempt, {"attempt": {"status_code",
// "error"}}, was not accepted by the receiver.
func pingRefused(answer []byte) error {
	var a struct {
		Attempt struct {
			StatusCode int    `json:"status_code"`
			Error      string `json:"error"`
		} `json:"attempt"`
	}
	if err := json.Unmarshal(answer, &a); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	if a.Attempt.StatusCode/100 == 2 {
		return nil
	}
	why := cmp.Or(a.Attempt.Error, fmt.Sprintf("http status %d", a.Attempt.StatusCode))
	return fmt.Errorf("the receiver did not accept the test delivery: %s", why)
}

// collectionStopped is the failure a collection's answer reports: it stopped removing files
// before the end ("late"), so that some are left for a later run.
func collectionStopped(answer []byte) error {
	var rep struct {
		Late bool `json:"late"`
	}
	if err := json.Unmarshal(answer, &rep); err != nil {
		return fmt.Errorf("unreadable answer: %w", err)
	}
	if rep.Late {
		return errors.New("the collection stopped before the end: reading the establishments took half the grace period or more; files it did not reach wait for the next collection")
	}
	return nil
}
