package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	yaml "github.com/oasdiff/yaml3"
)

// TestComposeIsSafeByDefault reads docker-compose.yml as a container engine does (anchors and
// merge keys resolved) and fails on what would open the service to whoever reaches the host: a
// NATS port published, a port other than the read API's published beyond the loopback (the admin
// API, Grafana; a host address from a variable counts as beyond), a credential written in the
// file instead of taken from the operator's .env, or a NATS server without client and route
// authentication.
func TestComposeIsSafeByDefault(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	services := parseCompose(t, raw)
	if len(services) < 10 {
		t.Fatalf("%d services, want the cluster's", len(services))
	}
	for _, s := range composeProblems(services) {
		t.Error(s)
	}
	// What the check exists to catch, it catches.
	for _, bad := range []string{
		"services:\n  nats:\n    image: nats:2.12-alpine\n    command: [\"-c\", \"/etc/nats/nats.conf\"]\n    ports: [\"4222:4222\"]\n",
		"services:\n  nats:\n    image: nats:2.12-alpine\n    command: [\"--jetstream\"]\n",
		"services:\n  p:\n    image: x\n    environment:\n      PUBLISHER_ADMIN_TOKEN: change-me-to-a-long-random-token\n",
		"services:\n  p:\n    image: x\n    environment:\n      PUBLISHER_ADMIN_TOKEN: ${PUBLISHER_ADMIN_TOKEN:-change-me}\n",
		"services:\n  p:\n    image: x\n    command: [\"serve\", \"--admin-token\", \"abcdefghijklmnopq\"]\n",
		"services:\n  p:\n    image: x\n    ports: [\"8081:8081\"]\n",
		"services:\n  p:\n    image: x\n    environment:\n      PUBLISHER_NATS_URL: nats://u:pw@nats:4222\n",
		"services:\n  p:\n    image: x\n    environment:\n      PUBLISHER_NATS_URL: nats://u:pw@nats:4222,nats://u:${P}@n2:4222\n",
		"services:\n  p:\n    image: x\n    environment:\n      - PUBLISHER_ADMIN_TOKEN=literal-token-0123456789\n",
		"services:\n  p:\n    image: x\n    ports: [\"4222/tcp\"]\n",
		"services:\n  p:\n    image: x\n    ports:\n      - target: 8081\n        published: 8081\n",
		"services:\n  p:\n    image: x\n    network_mode: host\n",
		"services:\n  p:\n    image: x\n    ports: [\"${ADMIN_HOST:-127.0.0.1}:${PUBLISHER_ADMIN_PORT:-8081}:8081\"]\n",
		"services:\n  p:\n    image: x\n    ports: [\"${PUBLISHER_ADMIN_PORT:-8081}:8081\"]\n",
		"services:\n  grafana:\n    image: x\n    ports: [\"${GRAFANA_PORT:-3000}:3000\"]\n",
		"services:\n  nats:\n    image: ${NATS_IMAGE:-nats:2.15-alpine}\n    command: [\"-c\", \"/etc/nats/nats.conf\"]\n    ports: [\"${P:-4222}:4222\"]\n",
	} {
		if len(composeProblems(parseCompose(t, []byte(bad)))) == 0 {
			t.Errorf("no problem found in\n%s", bad)
		}
	}
	conf, err := os.ReadFile("deploy/nats.conf")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`(?s)^authorization \{.*password: \$NATS_PASSWORD`,
		`(?s)cluster \{.*authorization \{\s*user: route\s*password: \$NATS_ROUTE_PASSWORD`,
	} {
		if !regexp.MustCompile(`(?m)` + want).Match(conf) {
			t.Errorf("nats.conf: no %s", want)
		}
	}
}

// secretNames are the settings whose value is a credential.
var secretName = regexp.MustCompile(`(?i)(TOKEN|PASSWORD|SECRET|KEYS?)$`)

// fromEnvFile is a value the engine takes from the environment or .env, refusing to start
// without it: ${NAME:?message}, or a URL carrying such a reference.
var fromEnvFile = regexp.MustCompile(`^\$\{[A-Z_]+:\?[^}]*\}$`)

type composeService struct {
	Image       string   `yaml:"image"`
	Command     []string `yaml:"command"`
	NetworkMode string   `yaml:"network_mode"`
	Environment any      `yaml:"environment"` // a mapping, or a list of NAME=value
	Ports       []any    `yaml:"ports"`       // "host:container[/proto]", or a mapping
}

func parseCompose(t *testing.T, raw []byte) map[string]composeService {
	t.Helper()
	var file struct {
		Services map[string]composeService `yaml:"services"`
	}
	// A host port from a variable is read as the engine reads it unset: its default, any port
	// being as safe as another. Any other variable stays a variable, $NAME: a host address or a
	// credential the operator may set to anything is not the loopback nor taken from .env.
	raw = withDefault.ReplaceAllFunc(raw, func(ref []byte) []byte {
		m := withDefault.FindSubmatch(ref)
		if strings.HasSuffix(string(m[1]), "_PORT") {
			return m[2]
		}
		return append([]byte("$"), m[1]...)
	})
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	return file.Services
}

// environment returns a service's variables, whichever form they are written in.
func (s composeService) environment() map[string]string {
	out := map[string]string{}
	switch env := s.Environment.(type) {
	case map[string]any:
		for k, v := range env {
			out[k] = fmt.Sprint(v)
		}
	case []any:
		for _, kv := range env {
			k, v, _ := strings.Cut(fmt.Sprint(kv), "=")
			out[k] = v
		}
	}
	return out
}

// ports returns a service's published ports as host address (empty: every interface) and
// container port.
func (s composeService) ports() [][2]string {
	var out [][2]string
	for _, p := range s.Ports {
		switch p := p.(type) {
		case map[string]any:
			out = append(out, [2]string{fmt.Sprint(p["host_ip"]), fmt.Sprint(p["target"])})
		default:
			text, _, _ := strings.Cut(fmt.Sprint(p), "/")
			parts := strings.Split(text, ":")
			host := ""
			if len(parts) == 3 {
				host = parts[0]
			}
			out = append(out, [2]string{host, parts[len(parts)-1]})
		}
	}
	return out
}

// withDefault is a variable with a default, ${NAME:-default}, its name and default captured.
var withDefault = regexp.MustCompile(`\$\{([A-Z_]+):-([^}]*)\}`)

// urlCredential finds a user and password written in a URL.
var urlCredential = regexp.MustCompile(`://[^/@\s]*:([^/@\s]*)@`)

func composeProblems(services map[string]composeService) []string {
	var out []string
	for name, s := range services {
		isNATS := strings.Contains(strings.ToLower(s.Image), "nats")
		if s.NetworkMode == "host" {
			out = append(out, fmt.Sprintf("%s shares the host's network: every port it opens is public", name))
		}
		for _, p := range s.ports() {
			host, container := p[0], p[1]
			switch {
			case isNATS || container == "4222" || container == "6222" || container == "8222":
				out = append(out, fmt.Sprintf("%s publishes NATS port %s on the host", name, container))
			case container == "8081" && host != "127.0.0.1":
				out = append(out, fmt.Sprintf("%s publishes the admin API beyond the loopback (%q)", name, host))
			case container != "8080" && host != "127.0.0.1":
				out = append(out, fmt.Sprintf("%s publishes port %s beyond the loopback (%q): only the read API's may be", name, container, host))
			}
		}
		for k, value := range s.environment() {
			if secretName.MatchString(k) && !fromEnvFile.MatchString(value) {
				out = append(out, fmt.Sprintf("%s: %s is written in the file (%q), not taken from .env", name, k, value))
			}
			for _, m := range urlCredential.FindAllStringSubmatch(value, -1) {
				if !fromEnvReference.MatchString(m[1]) {
					out = append(out, fmt.Sprintf("%s: %s holds a literal credential in a URL", name, k))
				}
			}
		}
		for i, arg := range s.Command {
			flag := strings.TrimLeft(strings.SplitN(arg, "=", 2)[0], "-")
			if strings.HasPrefix(arg, "-") && secretName.MatchString(flag) && !strings.HasSuffix(flag, "file") {
				out = append(out, fmt.Sprintf("%s: a credential on the command line (%s, argument %d)", name, arg, i))
			}
		}
		if isNATS && !slices.Contains(s.Command, "-c") {
			out = append(out, fmt.Sprintf("%s: runs without the configuration that requires authentication", name))
		}
	}
	return out
}

// fromEnvReference is a password in a URL taken from the environment: ${NAME}.
var fromEnvReference = regexp.MustCompile(`^\$\{[A-Z_]+(:\?[^}]*)?\}$`)

// TestComposeWorksWithAMirrorOrNoRegistry reads docker-compose.yml as written: every image is
// named by a variable with a default, so that a registry mirror or images built with no registry
// (cmd/publisher/deploy/build-images.sh) take their place; every port published on the host is a
// variable too; and the NATS image's default is the server version the tests run, go.mod's.
func TestComposeWorksWithAMirrorOrNoRegistry(t *testing.T) {
	raw, err := os.ReadFile("../../docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Services map[string]composeService `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &file); err != nil {
		t.Fatal(err)
	}
	imageVar := regexp.MustCompile(`^\$\{([A-Z]+)_IMAGE:-([^}]+)\}$`)
	var natsImage string
	for name, s := range file.Services {
		m := imageVar.FindStringSubmatch(s.Image)
		if m == nil {
			t.Errorf("%s: image %q, want ${NAME_IMAGE:-default}", name, s.Image)
			continue
		}
		if m[1] == "NATS" {
			natsImage = m[2]
		}
		for _, p := range s.Ports {
			if published := fmt.Sprint(p); !regexp.MustCompile(`(^|:)\$\{[A-Z_]+_PORT:-\d+\}:\d+$`).MatchString(published) {
				t.Errorf("%s: port %q, want its host port from a ${NAME_PORT:-default} variable", name, published)
			}
		}
	}
	gomod, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	server := regexp.MustCompile(`github\.com/nats-io/nats-server/v2 v(\d+\.\d+)\.`).FindSubmatch(gomod)
	if server == nil {
		t.Fatal("go.mod requires no nats-server")
	}
	if want := "nats:" + string(server[1]) + "-"; !strings.HasPrefix(natsImage, want) {
		t.Errorf("NATS image %q, want %s... : the server version go.mod requires, which the tests run", natsImage, want)
	}
}
