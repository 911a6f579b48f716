package envflag

import (
	"bytes"
	"flag"
	"strings"
	"testing"
)

// The command line wins over the environment; a value the environment gets wrong is named by its
// variable.
func TestParse(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	dir := fs.String("data-dir", "./data", "")
	n := fs.Int("batch-size", 1, "")
	env := map[string]string{"PUBLISHER_DATA_DIR": "/srv", "PUBLISHER_BATCH_SIZE": "7"}
	if err := Parse(fs, []string{"--batch-size", "9"}, func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if *dir != "/srv" || *n != 9 {
		t.Errorf("got data-dir %q, batch-size %d; want /srv from the environment, 9 from the command line", *dir, *n)
	}
	fs = flag.NewFlagSet("x", flag.ContinueOnError)
	fs.Int("batch-size", 1, "")
	err := Parse(fs, nil, func(k string) string { return map[string]string{"PUBLISHER_BATCH_SIZE": "many"}[k] })
	if err == nil || !strings.Contains(err.Error(), "PUBLISHER_BATCH_SIZE") {
		t.Errorf("got %v, want an error naming PUBLISHER_BATCH_SIZE", err)
	}
}

func TestUsageNamesTheTwins(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	fs.String("admin-url", "http://127.0.0.1:8081", "base URL")
	Usage(fs, "publisher x [flags]")()
	want := "usage: publisher x [flags]\n\nflags (each also read from its environment variable):\n" +
		"  --admin-url  [PUBLISHER_ADMIN_URL] (default \"http://127.0.0.1:8081\")\n      base URL\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}
