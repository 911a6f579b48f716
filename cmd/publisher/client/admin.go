package client

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/envflag"
)

const adminUsage = `usage: publisher admin [flags] <command> [args]

  list                                  establishments in the log
  get SLUG                              current content, webhooks, local date, version
  activate SLUG                         draft → active
  enable-api SLUG                       turn the public API on; prints the key once
  disable-api SLUG
  regenerate-key SLUG                   prints the new key once; the old one stops working
  set-redirect SLUG on|off              menu_redirect_enabled
  publish-version SLUG TYPE FILE        publish a menu version (JSON file, id from the file)
  withdraw-version SLUG TYPE VERSION
  upload FILE                           store a menu file (PNG, JPEG, WebP or PDF, at most 10 MB);
                                        prints its digest and URL, to use in imported documents
  set-master-menu SLUG FILE|URL|none    the unified card: a file to upload, a URL or digest, or none
  add-asset SLUG TYPE VERSION SCOPE FILE...
                                        upload files as the pages, in order, of one new file of a
                                        menu version; SCOPE is fr, en or fr_en
  collect-files                         remove stored files nothing refers to, past their grace period
  add-webhook SLUG URL                  prints the signing secret once
  remove-webhook SLUG ID
  webhooks SLUG                         endpoints with their delivery state (never a secret)
  deliveries SLUG ID                    delivery log of an endpoint: attempts, status, latency, error
  ping SLUG ID                          send a test delivery now
  redeliver DELIVERY                    send a delivery again
  rotate-secret SLUG ID [GRACE]         new signing secret, printed once; the old one signs for GRACE (24h)
  enable-webhook SLUG ID                re-enable an endpoint disabled by a 410 Gone
  status
`

// uploadTimeout bounds a request sending files, as the admin API bounds its reading.
const uploadTimeout = 10 * time.Minute

// Admin is the admin command: one request to the admin API, whose answer it prints on stdout.
func Admin(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("admin", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var api apiFlags
	api.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, adminUsage)
		envflag.Usage(fs, "publisher admin [flags] <command> [args]")()
	}
	if err := envflag.Parse(fs, args, getenv); err != nil {
		return err
	}
	a := fs.Args()
	if len(a) == 0 {
		fs.Usage()
		return fmt.Errorf("admin: no command given")
	}
	c, err := api.client()
	if err != nil {
		return err
	}
	sub, ok := subcommands[a[0]]
	if !ok {
		fs.Usage()
		return fmt.Errorf("admin: unknown command %q", a[0])
	}
	if err := sub.args(a[0], len(a)-1); err != nil {
		fs.Usage()
		return err
	}
	r, err := sub.request(a[1:])
	if err != nil {
		return err
	}
	contentType := cmp.Or(r.contentType, "application/json")
	if contentType != "application/json" {
		c.http.Timeout = uploadTimeout // files of 10 MB on a slow link
	}
	out, err := c.do(ctx, r.method, r.path, contentType, r.body)
	if err != nil {
		return err
	}
	_, err = stdout.Write(out)
	return err
}
