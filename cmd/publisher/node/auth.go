package node

import (
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"

	"github.com/opencarte/publisher/cmd/publisher/secretfile"
)

// SeedFile is the file, in the data directory, holding the seed of the one user the embedded
// NATS server accepts. It is generated on the first start and read by serve, verify and the nats
// CLI (--nkey).
const SeedFile = "nats.nk"

// Auth is how a process proves itself to an external NATS, and checks the server: credentials
// come from files or the environment, never only from the URL (where they would show in process
// lists and shell histories).
type Auth struct {
	Creds        string // a JWT credentials file (decentralised authentication)
	NKey         string // a file holding an nkey user seed
	User         string
	PasswordFile string // the user's password, in a file; or PasswordEnv
	Password     string // from PasswordEnv
	CA           string // PEM certificates the server's is checked against (TLS)
	Cert, Key    string // the client certificate and key, when the server asks for one (mutual TLS)
}

// PasswordEnv holds the password of --nats-user when no file gives it.
const PasswordEnv = "PUBLISHER_NATS_PASSWORD"

// Register adds the flags of external NATS authentication to fs.
func (a *Auth) Register(fs *flag.FlagSet) {
	fs.StringVar(&a.Creds, "nats-creds", "", "external NATS: a credentials file (JWT and nkey seed)")
	fs.StringVar(&a.NKey, "nats-nkey", "", "NATS: a file holding an nkey user seed (for a serve's embedded server: its <data-dir>/"+SeedFile+")")
	fs.StringVar(&a.User, "nats-user", "", "external NATS: a user name, with its password in --nats-password-file or "+PasswordEnv)
	fs.StringVar(&a.PasswordFile, "nats-password-file", "", "external NATS: a file holding the password of --nats-user")
	fs.StringVar(&a.CA, "nats-ca", "", "external NATS: PEM file of the certificates that sign the servers' (turns TLS on)")
	fs.StringVar(&a.Cert, "nats-cert", "", "external NATS: PEM client certificate, for servers that verify clients (with --nats-key)")
	fs.StringVar(&a.Key, "nats-key", "", "external NATS: PEM private key of --nats-cert")
}

// Load reads what the flags point at and checks they go together.
func (a *Auth) Load(getenv func(string) string) error {
	given := 0
	for _, s := range []string{a.Creds, a.NKey, a.User} {
		if s != "" {
			given++
		}
	}
	if given > 1 {
		return errors.New("--nats-creds, --nats-nkey and --nats-user: give at most one")
	}
	if (a.Cert == "") != (a.Key == "") {
		return errors.New("--nats-cert and --nats-key go together")
	}
	a.Password = getenv(PasswordEnv)
	if a.PasswordFile != "" {
		if a.User == "" {
			return errors.New("--nats-password-file: needs --nats-user")
		}
		b, err := secretfile.Read(a.PasswordFile)
		if err != nil {
			return fmt.Errorf("--nats-password-file: %w", err)
		}
		a.Password = strings.TrimSpace(string(b))
	}
	if a.User != "" && a.Password == "" {
		return fmt.Errorf("--nats-user: no password (--nats-password-file or %s)", PasswordEnv)
	}
	for flagName, file := range map[string]string{"--nats-ca": a.CA, "--nats-cert": a.Cert} {
		if file == "" {
			continue
		}
		if _, err := os.Stat(file); err != nil {
			return fmt.Errorf("%s: %w", flagName, err)
		}
	}
	// The client library reads these itself; they are checked here, like every secret file.
	for flagName, file := range map[string]string{"--nats-creds": a.Creds, "--nats-nkey": a.NKey, "--nats-key": a.Key} {
		if file == "" {
			continue
		}
		if _, err := secretfile.Read(file); err != nil {
			return fmt.Errorf("%s: %w", flagName, err)
		}
	}
	return nil
}

// options are the client options that carry the credentials and the TLS settings.
func (a *Auth) options() ([]nats.Option, error) {
	var opts []nats.Option
	switch {
	case a.Creds != "":
		opts = append(opts, nats.UserCredentials(a.Creds))
	case a.NKey != "":
		o, err := nats.NkeyOptionFromSeed(a.NKey)
		if err != nil {
			return nil, fmt.Errorf("--nats-nkey: %w", err)
		}
		opts = append(opts, o)
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	}
	if a.CA != "" {
		opts = append(opts, nats.RootCAs(a.CA))
	}
	if a.Cert != "" {
		opts = append(opts, nats.ClientCert(a.Cert, a.Key))
	}
	return opts, nil
}

// embeddedUser returns the nkey user of the embedded server kept in dir, generating it (a file
// only its owner reads) on the first start.
func embeddedUser(dir string) (seedFile string, user nkeys.KeyPair, err error) {
	seedFile = filepath.Join(dir, SeedFile)
	if _, err := os.Stat(seedFile); errors.Is(err, fs.ErrNotExist) {
		kp, err := nkeys.CreateUser()
		if err != nil {
			return "", nil, err
		}
		seed, err := kp.Seed()
		if err != nil {
			return "", nil, err
		}
		if _, err := secretfile.CreateOnce(seedFile, append(seed, '\n')); err != nil {
			return "", nil, err
		}
	}
	return embeddedUserRead(seedFile)
}

func embeddedUserRead(seedFile string) (string, nkeys.KeyPair, error) {
	seed, err := secretfile.Read(seedFile)
	if err != nil {
		return "", nil, err
	}
	kp, err := nkeys.FromSeed([]byte(strings.TrimSpace(string(seed))))
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", seedFile, err)
	}
	return seedFile, kp, nil
}

// embeddedUsers is the embedded server's only user: the public key of kp.
func embeddedUsers(kp nkeys.KeyPair) ([]*server.NkeyUser, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return []*server.NkeyUser{{Nkey: pub}}, nil
}

// nkeyOption signs the server's challenge with kp.
func nkeyOption(kp nkeys.KeyPair) (nats.Option, error) {
	pub, err := kp.PublicKey()
	if err != nil {
		return nil, err
	}
	return nats.Nkey(pub, kp.Sign), nil
}
