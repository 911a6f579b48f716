package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/domain"
)

// showAgain leaves a store that holds establishments as it is: they are the user's, edits of the
// sample establishment included. It prints the requests that show the sample establishment again
// when the key the demo kept still opens it, and otherwise how to get a key.
func showAgain(ctx context.Context, cfg Config, establishments int, hasSample bool, out io.Writer) error {
	if !hasSample {
		fmt.Fprintf(out, "\nThe store holds %d establishments, none of them the demo's %q: the demo loads it only into an empty store.\n",
			establishments, Slug)
		printAdmin(out, cfg, "publisher admin list")
		return nil
	}
	st, err := cfg.Commands.Get(ctx, Slug)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nDemo establishment %q is served as the store holds it (local date %s): the demo loads it only into an empty store, and keeps your changes.\n",
		Slug, st.Today)
	key, err := savedKey(cfg.KeyFile)
	if err != nil {
		return err
	}
	holds := false
	if key != "" {
		if holds, err = cfg.Commands.HoldsKey(ctx, Slug, key); err != nil {
			return err
		}
	}
	if !holds {
		fmt.Fprintf(out, "The key kept in %s no longer opens its API (regenerated or turned off since, or the file is gone): a new one comes with\n  publisher admin regenerate-key %s\n",
			cfg.KeyFile, Slug)
		printAdmin(out, cfg, "publisher admin get "+Slug)
		return nil
	}
	fmt.Fprintf(out, "API key: %s\n(issued by the first start of the demo, kept in %s)\n\n", key, cfg.KeyFile)
	card := ""
	if u := st.Establishment.MasterMenuURL; u != nil {
		// The log holds an uploaded file by its digest, an external one by its URL.
		if d, err := domain.ParseFileDigest(*u); err == nil {
			card = cfg.Commands.FileURL(d)
		} else {
			card = *u
		}
	}
	printRequests(out, cfg, key, card)
	return nil
}

// saveKey keeps key in path, readable by its owner alone, in place of any key kept there before.
func saveKey(path string, key domain.APIKey) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("keep the demo's key: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("keep the demo's key: %w", err)
	}
	if _, err := secretfile.CreateOnce(path, []byte(string(key)+"\n")); err != nil {
		return fmt.Errorf("keep the demo's key: %w", err)
	}
	return nil
}

// savedKey is the key saveKey kept in path; empty when there is none.
func savedKey(path string) (domain.APIKey, error) {
	b, err := secretfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("the demo's key: %w", err)
	}
	return domain.APIKey(strings.TrimSpace(string(b))), nil
}
