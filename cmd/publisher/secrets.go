package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/opencarte/publisher/cmd/publisher/app"
	"github.com/opencarte/publisher/cmd/publisher/secretfile"
	"github.com/opencarte/publisher/events"
	"github.com/opencarte/publisher/webhook"
)

// secretKeysEnv holds the master keys of webhook signing secrets, when no file does: one or more
// keys separated by commas or new lines, the first encrypting.
const secretKeysEnv = "PUBLISHER_SECRET_KEYS"

// defaultSecretKeyFile is where a serve keeps the master key it generates, beside its admin token.
const defaultSecretKeyFile = "secret-key"

// masterKeys returns the master keys that encrypt webhook signing secrets at rest: from the
// environment, from --secret-key-file, or from the data directory, where a key is generated on
// the first start. They never enter NATS: a dump of every stream and bucket holds no usable
// secret. Every process of a deployment must have the same keys.
func (m *Main) masterKeys() (*webhook.MasterKeys, error) {
	c := &m.Config
	if c.SecretKeys != "" {
		mk, err := webhook.ParseMasterKeys([]byte(strings.ReplaceAll(c.SecretKeys, ",", "\n")))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", secretKeysEnv, err)
		}
		return mk, nil
	}
	path, generate := c.SecretKeyFile, false
	if path == "" && c.DataDir == "" {
		return nil, fmt.Errorf("no master key for webhook signing secrets: give --secret-key-file or %s", secretKeysEnv)
	}
	if path == "" {
		path, generate = filepath.Join(c.DataDir, defaultSecretKeyFile), true
	}
	b, err := secretfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) && generate {
		if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("data dir: %w", err)
		}
		created, cerr := secretfile.CreateOnce(path, []byte(webhook.NewMasterKey()+"\n"))
		if cerr != nil {
			return nil, cerr
		}
		if created {
			m.Logger.Info("webhook signing secrets: generated their master key", "file", path)
		}
		b, err = secretfile.Read(path)
	}
	if err != nil && generate {
		return nil, fmt.Errorf("master key of webhook signing secrets: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("--secret-key-file: %w", err)
	}
	mk, err := webhook.ParseMasterKeys(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return mk, nil
}

// adminToken returns the configured token, the one in --admin-token-file, or the one kept in the
// data directory, creating it.
func (m *Main) adminToken() (string, error) {
	c := &m.Config
	if c.AdminToken != "" {
		return c.AdminToken, nil
	}
	if c.AdminTokenFile != "" {
		b, err := secretfile.Read(c.AdminTokenFile)
		if err != nil {
			return "", fmt.Errorf("--admin-token-file: %w", err)
		}
		token := strings.TrimSpace(string(b))
		if token == "" {
			return "", fmt.Errorf("--admin-token-file %s: empty", c.AdminTokenFile)
		}
		return token, nil
	}
	path := filepath.Join(c.DataDir, "admin-token")
	b, err := secretfile.Read(path)
	if err == nil && len(strings.TrimSpace(string(b))) >= 16 {
		return strings.TrimSpace(string(b)), nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("admin token: %w", err)
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return "", fmt.Errorf("data dir: %w", err)
	}
	token := app.NewID("adm")
	if err := os.WriteFile(path, []byte(token+"\n"), 0o600); err != nil {
		return "", fmt.Errorf("write admin token: %w", err)
	}
	return token, nil
}

// secretSweepEvery is how often the admin role sweeps the signing secrets.
const secretSweepEvery = time.Hour

// sweepSecrets sweeps the webhook signing secrets at start, then every secretSweepEvery: secrets
// under an older master key are encrypted again (an older key can go once a sweep logs
// remaining=0 and failed=0), rotated-out secrets past their grace are erased, and so are data keys no
// endpoint uses.
func (m *Main) sweepSecrets(ctx context.Context) error {
	for {
		rep, err := m.Webhooks.Registry().Sweep(ctx)
		if err != nil && ctx.Err() == nil {
			m.Logger.Warn("webhook signing secrets: sweep stopped", "err", err)
		} else if err == nil {
			level := slog.LevelDebug
			if rep.Sealed+rep.Reencrypted+rep.Pruned+rep.Erased+rep.Remaining+rep.Failed > 0 {
				level = slog.LevelInfo
			}
			m.Logger.Log(ctx, level, "webhook signing secrets swept", "endpoints", rep.Endpoints, "sealed", rep.Sealed,
				"reencrypted", rep.Reencrypted, "pruned", rep.Pruned, "erased", rep.Erased, "remaining", rep.Remaining, "failed", rep.Failed)
		}
		if events.Sleep(ctx, secretSweepEvery) != nil {
			return nil
		}
	}
}
