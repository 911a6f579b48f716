//go:build brokers

package brokertest

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// PostgreSQLPassword is the password of the superuser "postgres" of a PostgreSQL this package
// starts; connections over TCP must give it.
const PostgreSQLPassword = "pg-test-secret"

// PostgreSQLOptions configure a PostgreSQL: with TLSCert and TLSKey (PEM files), it accepts
// connections over TLS only.
type PostgreSQLOptions struct {
	TLSCert, TLSKey string
}

// PostgreSQL is a private server of Debian's postgresql package: its data in a directory of its
// own, on a loopback port that stays the same across Stop and Start. As root, it runs as the
// user postgres (the server refuses to run as root).
type PostgreSQL struct {
	dir  string // owned by the server's user: data, socket and log
	bin  string // the directory of initdb, pg_ctl and postgres
	port int
	asPG bool // run the commands as the user postgres
	tls  bool

	mu      sync.Mutex
	running bool
}

// StartPostgreSQL initialises and starts a server for the test, stopped and removed when the
// test ends. Without the package's binaries the test fails, saying which package to install.
func StartPostgreSQL(tb testing.TB, opts PostgreSQLOptions) *PostgreSQL {
	tb.Helper()
	p, err := NewPostgreSQL(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Close)
	if err := p.Start(); err != nil {
		tb.Fatal(err)
	}
	return p
}

// NewPostgreSQL initialises a server's data in a new directory, on a free port, without
// starting it.
func NewPostgreSQL(opts PostgreSQLOptions) (*PostgreSQL, error) {
	bin, err := postgresBin()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "postgresql-")
	if err != nil {
		return nil, err
	}
	p := &PostgreSQL{dir: dir, bin: bin, asPG: os.Geteuid() == 0}
	err = p.init()
	if err == nil && opts.TLSCert != "" {
		err = p.configureTLS(opts.TLSCert, opts.TLSKey)
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	return p, nil
}

// postgresBin returns the binaries' directory of the newest PostgreSQL installed.
func postgresBin() (string, error) {
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(found) == 0 {
		return "", fmt.Errorf("PostgreSQL's binaries are missing (no /usr/lib/postgresql/*/bin/initdb): apt-get install postgresql")
	}
	slices.SortFunc(found, func(a, b string) int { return version(a) - version(b) })
	return filepath.Dir(found[len(found)-1]), nil
}

// version is the major version in a path /usr/lib/postgresql/<version>/bin/initdb.
func version(path string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(filepath.Dir(path))))
	return v
}

// init hands the directory to the server's user, picks a port and runs initdb: password
// authentication over TCP, trust over the socket in the directory (for pg_ctl).
func (p *PostgreSQL) init() error {
	if err := p.own(p.dir); err != nil {
		return err
	}
	ports, err := freePorts(1)
	if err != nil {
		return err
	}
	p.port = ports[0]
	pwfile := filepath.Join(p.dir, "pwfile")
	if err := p.run("sh", "-c", "umask 077 && echo "+PostgreSQLPassword+" > "+pwfile); err != nil {
		return err
	}
	return p.run(filepath.Join(p.bin, "initdb"), "-D", p.data(), "-U", "postgres", "--pwfile", pwfile,
		"--auth-host", "scram-sha-256", "--auth-local", "trust", "-E", "UTF8", "--no-sync", "--no-instructions")
}

func (p *PostgreSQL) data() string { return filepath.Join(p.dir, "data") }

// own gives path to the server's user, when the server runs as postgres.
func (p *PostgreSQL) own(path string) error {
	if !p.asPG {
		return nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("no user postgres to run the server as (apt-get install postgresql creates it): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return os.Chown(path, uid, gid)
}

// configureTLS copies the certificate and its key into the data, turns TLS on, and makes every
// TCP connection use it (hostssl in pg_hba.conf).
func (p *PostgreSQL) configureTLS(cert, key string) error {
	for _, f := range []struct{ from, to string }{{cert, "server.crt"}, {key, "server.key"}} {
		b, err := os.ReadFile(f.from)
		if err != nil {
			return err
		}
		to := filepath.Join(p.data(), f.to)
		if err := os.WriteFile(to, b, 0o600); err != nil {
			return err
		}
		if err := p.own(to); err != nil {
			return err
		}
	}
	conf, err := os.OpenFile(filepath.Join(p.data(), "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = conf.WriteString("ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n")
	if cerr := conf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	hbaPath := filepath.Join(p.data(), "pg_hba.conf")
	hba, err := os.ReadFile(hbaPath)
	if err != nil {
		return err
	}
	hba = []byte(strings.ReplaceAll("\n"+string(hba), "\nhost ", "\nhostssl "))
	if err := os.WriteFile(hbaPath, hba, 0o600); err != nil {
		return err
	}
	p.tls = true
	return nil
}

// run runs a command as the server's user, its output in the error when it fails.
func (p *PostgreSQL) run(name string, args ...string) error {
	if p.asPG {
		args = append([]string{"-u", "postgres", "--", name}, args...)
		name = "runuser"
	}
	cmd := exec.Command(name, args...)
	cmd.Dir = p.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// DSN returns the connection string of the database postgres as the superuser, over TCP with
// the password; TLS required without verification when the server has it, else none.
func (p *PostgreSQL) DSN() string { return p.DSNWithPassword(PostgreSQLPassword) }

// DSNWithPassword is DSN with another password.
func (p *PostgreSQL) DSNWithPassword(password string) string {
	u := url.URL{
		Scheme: "postgres", User: url.UserPassword("postgres", password),
		Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), Path: "/postgres", RawQuery: "sslmode=disable",
	}
	if p.tls {
		u.RawQuery = "sslmode=require"
	}
	return u.String()
}

// Port returns the server's port.
func (p *PostgreSQL) Port() int { return p.port }

// Start starts the server, with its data, on its port, and returns once it accepts connections.
func (p *PostgreSQL) Start() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running {
		return nil
	}
	opts := fmt.Sprintf("-p %d -c listen_addresses=127.0.0.1 -c unix_socket_directories=%s -c fsync=off", p.port, p.dir)
	err := p.run(filepath.Join(p.bin, "pg_ctl"), "-D", p.data(), "-l", filepath.Join(p.dir, "log"), "-o", opts, "-w", "start")
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(p.dir, "log"))
		return fmt.Errorf("%w\nserver log:\n%s", err, log)
	}
	p.running = true
	return nil
}

// Stop stops the server, keeping its data: the connections open are closed.
func (p *PostgreSQL) Stop() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.running {
		return nil
	}
	if err := p.run(filepath.Join(p.bin, "pg_ctl"), "-D", p.data(), "-m", "fast", "-w", "stop"); err != nil {
		return err
	}
	p.running = false
	return nil
}

// Close stops the server and removes its directory.
func (p *PostgreSQL) Close() {
	p.Stop()
	os.RemoveAll(p.dir)
}
