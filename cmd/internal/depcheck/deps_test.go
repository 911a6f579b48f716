package depcheck_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/opencarte/publisher"

// TestDependencyDirection fails when a package imports one it must not: domain decides, events
// stores, projections renders (its runner stores what it renders), readapi serves bytes it did not make, webhook delivers signals;
// only cmd wires them together. Rules are on import path prefixes, relative to the module unless
// they name another host.
func TestDependencyDirection(t *testing.T) {
	rules := []rule{
		{"domain", []string{"events", "projections", "readapi", "webhook", "cmd", "github.com/nats-io", "net/http"}, nil},
		{"events", []string{"domain", "projections", "readapi", "webhook", "cmd"}, nil},
		// Rendering is pure: no NATS, and nothing of the runner that stores what it renders.
		{"projections", []string{"readapi", "webhook", "cmd", "github.com/nats-io", "projections/runner"}, nil},
		{"projections/runner", []string{"readapi", "webhook", "cmd"}, nil},
		// The changes feed reads the bundles and the signals; it knows no transport.
		{"projections/changes", []string{"readapi", "webhook", "cmd"}, nil},
		// The tests' establishments are built from the domain and the log's envelopes alone, so that
		// the tests inside projections may use them.
		{"projections/fixture", []string{"projections", "readapi", "webhook", "cmd"}, nil},
		{"projections/dockey", []string{"domain", "events", "readapi", "webhook", "cmd", "github.com/nats-io"}, nil},
		{"readapi", []string{"domain", "events", "webhook", "cmd", "projections"}, []string{"projections/dockey"}},
		{"webhook", []string{"domain", "projections", "readapi", "cmd"}, nil},
		// The broker destinations publish the changes feed's entries: they know the feed only
		// through a function their caller gives, and no transport of the service's own.
		{"webhook/destination", []string{"domain", "projections", "readapi", "cmd"}, nil},
		// Each broker's publisher knows the destination's events and its own client, nothing else.
		// The NATS publisher knows neither the other brokers' publishers nor the tests' servers.
		{"webhook/destination/natsdest", []string{"domain", "projections", "readapi", "cmd", "events/natstest",
			"webhook/destination/kafka", "webhook/destination/amqp", "webhook/destination/postgres", "webhook/destination/brokertest",
			"github.com/ThreeDotsLabs/watermill-kafka", "github.com/ThreeDotsLabs/watermill-amqp", "github.com/ThreeDotsLabs/watermill-sql"}, nil},
		// The Kafka publisher knows neither the other brokers' publishers nor the tests' brokers.
		{"webhook/destination/kafka", []string{"domain", "projections", "readapi", "cmd", "events/natstest",
			"webhook/destination/natsdest", "webhook/destination/amqp", "webhook/destination/postgres", "webhook/destination/brokertest",
			"github.com/twmb/franz-go", "github.com/ThreeDotsLabs/watermill-amqp", "github.com/ThreeDotsLabs/watermill-sql"}, nil},
		{"webhook/destination/amqp", []string{"domain", "projections", "readapi", "cmd"}, nil},
		{"webhook/destination/postgres", []string{"domain", "projections", "readapi", "cmd"}, nil},
		// The brokers of the tests and the benchmark.
		{"webhook/destination/brokertest", []string{"domain", "projections", "readapi", "cmd"}, nil},
		// The write side's application layer knows no transport and no role, nor the webhook
		// dispatcher, which it reaches through interfaces of its own, with results of its own.
		{"cmd/publisher/app", []string{"projections", "readapi", "webhook", "cmd"}, nil},
		{"cmd/publisher/clock", []string{"projections", "readapi", "webhook", "cmd"}, []string{"cmd/publisher/app"}},
		// The command line's client of the admin API talks HTTP: it knows neither the domain nor the
		// log, nor the admin API's package, whose limits it restates.
		{"cmd/publisher/client", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com/nats-io"}, []string{"cmd/publisher/addrfile", "cmd/publisher/envflag", "cmd/publisher/progress"}},
		// Flags with environment twins need nothing but the standard library.
		{"cmd/publisher/envflag", []string{"github.com", "golang.org"}, nil},
		// The progress display draws what a command gives it: it knows no store and no API.
		{"cmd/publisher/progress", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com/nats-io"}, nil},
		// The admin API is a transport: it reaches the webhook dispatcher through app only.
		{"cmd/publisher/admin", []string{"projections", "readapi", "webhook", "cmd"}, []string{"cmd/publisher/app", "cmd/publisher/tokens"}},
		// The scoped tokens are a store of credentials: they know the actor of app, no transport.
		{"cmd/publisher/tokens", []string{"projections", "readapi", "webhook", "cmd"}, []string{"cmd/publisher/app"}},
		// The API settings page is a transport beside the admin API: it gives app's commands,
		// reaches the webhook dispatcher through app only, and is given the API's use.
		{"cmd/publisher/settings", []string{"projections", "readapi", "webhook", "cmd"}, []string{"cmd/publisher/app"}},
		// The admin API's description, like the read API's, imports the standard library only.
		{"cmd/publisher/admin/openapi", []string{"github.com", "golang.org"}, nil},
		// The generations of the documents, their lease and rebuild: given what they need by the
		// process, never the read API, the webhooks, the admin API or package main.
		{"cmd/publisher/generation", []string{"readapi", "webhook", "cmd"}, nil},
		// The storage guard and the descriptor budget are given their readings: they know neither
		// NATS nor the service.
		{"cmd/publisher/capacity", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com/nats-io"}, nil},
		// The heap floor is the standard library's collector settings and nothing else.
		{"cmd/publisher/heapfloor", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com", "golang.org"}, nil},
		// The NATS this process talks to knows none of the roles that use it.
		{"cmd/publisher/node", []string{"domain", "projections", "readapi", "webhook", "cmd"}, []string{"cmd/publisher/addrfile", "cmd/publisher/capacity", "cmd/publisher/secretfile"}},
		// The address files of a running serve are read and written with the standard library alone.
		{"cmd/publisher/addrfile", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com", "golang.org"}, nil},
		// The secret files are read and written with the standard library alone.
		{"cmd/publisher/secretfile", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com", "golang.org"}, nil},
		// The supervision of the loops knows none of the loops it runs.
		{"cmd/publisher/supervise", []string{"domain", "projections", "readapi", "webhook", "cmd"}, nil},
		// The HTTP listeners serve what they are given within their share of the descriptors.
		{"cmd/publisher/listeners", []string{"domain", "events", "webhook", "cmd"}, []string{"cmd/publisher/capacity"}},
		// What the process tells about itself reads the roles through their readings' types: never
		// package main, the admin API or the generations (the clock's status brings app with it).
		{"cmd/publisher/telemetry", []string{"projections", "cmd"}, []string{"projections/dockey", "cmd/publisher/capacity", "cmd/publisher/clock", "cmd/publisher/app"}},
		// The demo goes through the application layer, as the admin API would, and keeps the key
		// it issued as a secret file.
		{"cmd/publisher/demo", []string{"projections", "readapi", "webhook", "cmd"}, []string{"cmd/publisher/app", "cmd/publisher/secretfile"}},
		// The logger is the standard library's, its lines bounded.
		{"cmd/publisher/logging", []string{"domain", "events", "projections", "readapi", "webhook", "cmd", "github.com", "golang.org"}, nil},
		// The webhook dispatcher as the application layer sees it: no other role.
		{"cmd/publisher/webhookapp", []string{"projections", "readapi", "cmd"}, []string{"cmd/publisher/app"}},
		// The one binary wires every role; it links neither the benchmark nor the tests' helpers.
		{"cmd/publisher", []string{"cmd/scalebench", "cmd/internal", "events/natstest", "projections/fixture", "readapi/openapi/openapitest"}, nil},
		// The benchmark runs the built binary and links none of its roles.
		{"cmd/scalebench", []string{"cmd/publisher", "readapi"}, nil},
		{"cmd/internal/sample", []string{"events", "projections", "readapi", "webhook", "cmd", "github.com/nats-io"}, nil},
		{"cmd/internal/depcheck", []string{"domain", "events", "projections", "readapi", "webhook", "cmd"}, nil},
		// The README's checks run the built binary and read the repository's files: they link none of it.
		{"cmd/internal/readmecheck", []string{"domain", "events", "projections", "readapi", "webhook", "cmd"}, nil},
		{"events/natstest", []string{"domain", "events", "projections", "readapi", "webhook", "cmd"}, nil},
		// The description imports the standard library only.
		{"readapi/openapi", []string{"github.com", "golang.org"}, nil},
		{"readapi/openapi/openapitest", []string{"domain", "events", "projections", "webhook", "cmd", "readapi"}, []string{"readapi/openapi"}},
		// Whether a client accepts gzip: the standard library alone.
		{"readapi/coding", []string{"github.com", "golang.org"}, nil},
		// The reference page: Swagger UI's embedded files and the gzip negotiation, nothing of the
		// read API it is mounted on, so that the admin listener serves one too.
		{"readapi/apidocs", []string{"domain", "events", "projections", "webhook", "cmd", "readapi", "github.com", "golang.org"}, []string{"readapi/coding", "github.com/swaggest/swgui/v5/static"}},
		// The read API's use per key, its report and the reader of the reports: nats.go and the
		// standard library, nothing of the read API, so that the admin role reads it alone.
		{"readapi/usage", []string{"domain", "events", "projections", "webhook", "cmd", "readapi"}, nil},
	}
	all := goList(t, module+"/...")
	// Every package has its rule: a new one must say what it may depend on.
	for _, pkg := range all {
		if !slices.ContainsFunc(rules, func(r rule) bool { return module+"/"+r.pkg == pkg }) {
			t.Errorf("%s has no rule", pkg)
		}
	}
	checked := 0
	for _, r := range rules {
		if !slices.Contains(all, module+"/"+r.pkg) {
			continue // the package does not exist (yet); nothing imports through it
		}
		checked++
		for _, dep := range goList(t, "-deps", module+"/"+r.pkg) {
			// A package may use its own subpackages, but for those its rule names.
			inside := strings.HasPrefix(dep, module+"/"+r.pkg+"/")
			if dep == module+"/"+r.pkg || inside && !matches(dep, under(r.pkg, r.forbidden)) {
				continue
			}
			if matches(dep, r.forbidden) && !matches(dep, r.allowed) {
				t.Errorf("%s depends on %s, which it must not", r.pkg, dep)
			}
		}
	}
	if checked < 4 {
		t.Errorf("checked %d packages, want at least domain, events, projections and readapi", checked)
	}
}

// rule says what a package must not depend on, directly or not: import path prefixes, with
// exceptions inside them.
type rule struct {
	pkg                string
	forbidden, allowed []string
}

// under returns the prefixes that name subpackages of pkg.
func under(pkg string, prefixes []string) []string {
	var out []string
	for _, p := range prefixes {
		if strings.HasPrefix(p, pkg+"/") {
			out = append(out, p)
		}
	}
	return out
}

func matches(dep string, prefixes []string) bool {
	for _, p := range prefixes {
		full := p
		if !strings.Contains(strings.SplitN(p, "/", 2)[0], ".") && p != "net/http" {
			full = module + "/" + p
		}
		if dep == full || strings.HasPrefix(dep, full+"/") {
			return true
		}
	}
	return false
}

func goList(t *testing.T, args ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list"}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, out)
	}
	return strings.Fields(string(out))
}
