// Command scalebench measures the publisher at its users' size on this machine: it generates N
// realistic, varied establishments from a seed, measures the raw JetStream ceilings for messages
// of their size, runs a fresh service (one process with every role on embedded NATS, built from
// this tree), imports them with `publisher import`, and reports each step's figure and its ratio
// to the ceiling it is bound by:
//
//   - import rate (establishments acknowledged per second, end to end) against appends with
//     per-subject optimistic concurrency;
//   - projection lag after the last acknowledgement, and projection throughput against replay;
//   - peak memory of the service, and of an admin-only process serving 5,000 concurrent reads;
//   - data size on disk;
//   - restart-to-ready, and a restart across a day change: time until every date-dependent
//     establishment has started its new local day, and until its documents are served;
//   - webhooks: endpoints on a tenth of the establishments, all of them moved by the day change,
//     on an HTTPS receiver on loopback, and how many deliveries each receives after it, and when;
//   - the documents the mirror holds, and the memory of a process running the api role alone;
//   - `publisher verify` duration and outcome;
//   - publisher rebuild while the service serves: its rendering rate against the replay's, the
//     pause of projection at the switch, and the webhooks it sends (none: the documents are the
//     same);
//   - a replay of the whole log by the projector alone, twice (the store first out of the page
//     cache, then in it), against rendering and compressing every establishment without it.
//
// Usage (from the repository root):
//
//	go run ./cmd/scalebench -n 100000
//
// It needs several gigabytes of memory and disk at 100,000 establishments, and about as many
// minutes; -n 5000 gives a quick look. Nothing it starts outlives it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/webhook"
)

type options struct {
	n          int
	seed       uint64
	today      domain.LocalDate
	dir        string
	keep       bool
	adminReads int
	rawN       int
}

func main() {
	var o options
	var today string
	flag.IntVar(&o.n, "n", 100_000, "establishments to generate and import")
	flag.Uint64Var(&o.seed, "seed", 1, "seed of the generated establishments")
	flag.StringVar(&today, "today", "2026-11-24", "local date of the first run (the day change moves to the next)")
	flag.StringVar(&o.dir, "dir", "", "working directory (default: a new temporary one)")
	flag.BoolVar(&o.keep, "keep", false, "keep the working directory")
	flag.IntVar(&o.adminReads, "admin-reads", 5000, "concurrent admin reads of the read check")
	flag.IntVar(&o.rawN, "raw", 20_000, "messages of each raw JetStream measure")
	flag.Parse()
	d, err := domain.ParseLocalDate(today)
	if err != nil {
		fatal(err)
	}
	o.today = d
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fatal(err)
	}
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "scalebench:", err)
	os.Exit(1)
}

// report collects the figures, printed as they come and summed up at the end.
type report struct {
	lines []string
}

func (r *report) add(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	r.lines = append(r.lines, line)
	fmt.Println(line)
}

func run(ctx context.Context, o options) error {
	if o.dir == "" {
		dir, err := os.MkdirTemp("", "scalebench-")
		if err != nil {
			return err
		}
		o.dir = dir
	}
	if !o.keep {
		defer os.RemoveAll(o.dir)
	}
	var r report
	r.add("scalebench: %d establishments, seed %d, first day %s, in %s", o.n, o.seed, o.today, o.dir)
	r.add("machine: %d CPUs, %s", cpus(), memTotal())

	bin := filepath.Join(o.dir, "publisher")
	step("building the publisher")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/publisher").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/publisher (run from the repository root): %v\n%s", err, out)
	}

	step("generating establishments")
	file := filepath.Join(o.dir, "establishments.ndjson")
	gen, err := generate(o, file)
	if err != nil {
		return err
	}
	r.add("generated: %d establishments, %s, %d bytes on average (%d to %d), %d date-dependent, %d drafts, %d with the API disabled, zones %v",
		o.n, bytesText(gen.bytes), gen.bytes/int64(o.n), gen.minSize, gen.maxSize, gen.dependent, gen.drafts, gen.apiOff, gen.zones)

	step("measuring raw JetStream")
	raw, err := measureRaw(ctx, filepath.Join(o.dir, "raw"), min(o.rawN, o.n), int(gen.bytes/int64(o.n)))
	if err != nil {
		return err
	}
	r.add("raw JetStream, %d messages of %d bytes, file storage, in process:", raw.n, raw.size)
	r.add("  append, one subject each, expected last sequence, 16 at a time: %8.0f msg/s", raw.cas)
	r.add("  append, asynchronous:                                           %8.0f msg/s", raw.async)
	r.add("  replay, ordered consumer:                                       %8.0f msg/s", raw.replay)

	hooks, err := newReceiver(o.dir)
	if err != nil {
		return err
	}
	defer hooks.close()
	svc := &service{bin: bin, dir: filepath.Join(o.dir, "data"), token: "scalebench-admin-token-0123456789", memLimit: memLimit(), caFile: hooks.caFile}
	r.add("service: GOMEMLIMIT=%s (60%% of the machine's memory)", svc.memLimit)
	if err := svc.ports(); err != nil {
		return err
	}
	defer svc.stop()

	step("starting the service")
	start := time.Now()
	if err := svc.start(ctx, o.today, "first"); err != nil {
		return err
	}
	r.add("service: ready in %s (empty)", time.Since(start).Round(time.Millisecond))

	step("importing")
	imp, err := svc.importFile(ctx, file)
	if err != nil {
		return err
	}
	rate := float64(o.n) / imp.took.Seconds()
	r.add("import: %d establishments in %s: %.0f/s (%.2f of raw appends); %s", o.n, imp.took.Round(time.Millisecond), rate, rate/raw.cas, imp.summary)

	caught, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	lag := caught.Sub(imp.end)
	projRate := float64(o.n) / caught.Sub(imp.start).Seconds()
	r.add("projection: caught up %s after the last acknowledgement; %.0f establishments/s from the first import (%.3f of raw replay)",
		lag.Round(time.Millisecond), projRate, projRate/raw.replay)
	rss := svc.peakRSS()
	r.add("memory: service peak RSS %s after the import (%s per establishment)", bytesText(rss), bytesText(rss/int64(o.n)))
	r.add("data: %s on disk (%s per establishment)", bytesText(dirSize(svc.dir)), bytesText(dirSize(svc.dir)/int64(o.n)))
	h, err := svc.held(ctx)
	if err != nil {
		return err
	}
	r.add("documents: the mirror holds %d establishments, whose bundles carry %s of documents (identity and gzip, %s each), held in %s (%.2f× them: equal documents of a bundle shared); the process's Go heap %s live, %s mapped by the Go runtime",
		h.establishments, bytesText(h.documentBytes), bytesText(h.documentBytes/max(h.establishments, 1)), bytesText(h.heldBytes),
		float64(h.heldBytes)/float64(h.documentBytes), bytesText(h.heapLive), bytesText(h.goTotal))

	step("api role alone")
	api, err := svc.apiOnly(ctx, h.documentBytes*6/5+200<<20)
	if err != nil {
		return err
	}
	target := h.documentBytes*13/10 + 100<<20
	r.add("api role alone, on the service's NATS, GOMEMLIMIT=%s (1.2× the documents + 200 MiB): ready in %s; RSS %s 10 s after ready (%.2f× the documents), peak %s (%.2f×), against 1.3× + 100 MiB = %s; Go heap live at its last collection %s",
		api.memLimit, api.ready.Round(time.Millisecond), bytesText(api.rss), float64(api.rss)/float64(h.documentBytes),
		bytesText(api.peak), float64(api.peak)/float64(h.documentBytes), bytesText(target), bytesText(api.heapLive))
	// Again with the limit the README advises from what the mirror holds.
	api, err = svc.apiOnly(ctx, h.heldBytes*7/5+200<<20)
	if err != nil {
		return err
	}
	r.add("api role alone, GOMEMLIMIT=%s (1.4× the mirror's held bytes + 200 MiB): ready in %s; RSS %s 10 s after ready (%.2f× the documents), peak %s (%.2f×); Go heap live at its last collection %s",
		api.memLimit, api.ready.Round(time.Millisecond), bytesText(api.rss), float64(api.rss)/float64(h.documentBytes),
		bytesText(api.peak), float64(api.peak)/float64(h.documentBytes), bytesText(api.heapLive))

	step("admin role alone: concurrent reads")
	reads, err := svc.adminReads(ctx, gen.slugs, o.adminReads)
	if err != nil {
		return err
	}
	r.add("admin reads: %d concurrent GET /admin/v1/establishments/{slug} on an admin-only process, over 256 connections: %v in %s (p50 %s, p99 %s); its peak RSS %s",
		o.adminReads, reads.statuses, reads.took.Round(time.Millisecond), reads.p50, reads.p99, bytesText(reads.rss))

	step("restart, same day")
	svc.stop()
	start = time.Now()
	if err := svc.start(ctx, o.today, "restart"); err != nil {
		return err
	}
	ready := time.Since(start)
	if _, err := svc.waitProjected(ctx, 30*time.Minute); err != nil {
		return err
	}
	r.add("restart: ready (mirror caught up, every role running) in %s; projector caught up in %s", ready.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	step("registering webhooks")
	next := o.today.AddDays(1)
	hooked, err := movedByTheDay(file, o.today, next, o.n/10)
	if err != nil {
		return err
	}
	start = time.Now()
	if err := svc.registerHooks(ctx, hooks, hooked); err != nil {
		return err
	}
	r.add("webhooks: %d endpoints registered, one on each of %d establishments whose documents the day change moves, in %s", len(hooked), len(hooked), time.Since(start).Round(time.Millisecond))

	step("restart across a day change")
	svc.stop()
	hooks.reset() // only the deliveries the day change causes are counted
	start = time.Now()
	if err := svc.start(ctx, next, "next-day"); err != nil {
		return err
	}
	day, err := svc.waitDay(ctx, start, 10*time.Minute)
	if err != nil {
		return err
	}
	projected, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	served := projected.Sub(start)
	const window = webhook.DefaultWindow // the service's --webhook-window
	due := projected.Add(window + 10*time.Second)
	hc := hooks.waitHooks(ctx, hooked, due, window+10*time.Second)
	webhooks, _ := svc.status(ctx)
	r.add("webhooks after the day change: %d endpoints received exactly one delivery, %d none, %d more than one (%d deliveries in all, %d unsigned); first %s after the restart, last %s after it, %s after the day change was projected; every endpoint once within the window (%s, opened when the dispatcher took the change in) + 10 s of the projection: %t; dispatcher %v",
		hc.once, hc.none, hc.more, hc.total, hc.unsigned, sinceText(hc.first, start), sinceText(hc.last, start),
		sinceText(hc.last, projected), window, hc.once == len(hooked) && !hc.last.After(due), webhooks["webhooks"])
	behind, err := svc.checkDay(ctx, gen.dependentSlugs, next)
	if err != nil {
		return err
	}
	r.add("day change check: %d of %d date-dependent establishments read back through the admin API on %s (%d not)", len(gen.dependentSlugs)-behind, len(gen.dependentSlugs), next, behind)
	r.add("day change: restart on %s: every date-dependent establishment's day started %s after the restart (%d days started by the clock's passes for %d date-dependent establishments; last pass: %s); documents served %s after it; the process stayed up: %t",
		next, day.took.Round(time.Millisecond), day.started, gen.dependent, day.pass, served.Round(time.Millisecond), svc.alive())

	step("verify")
	start = time.Now()
	ver, verr := svc.verify(ctx)
	took := time.Since(start)
	r.add("verify: exit %s in %s (%.0f establishments/s, %.3f of raw replay); %s", ver.exit, took.Round(time.Millisecond),
		float64(o.n)/took.Seconds(), float64(o.n)/took.Seconds()/raw.replay, ver.summary)
	rss = svc.peakRSS()
	r.add("memory: service peak RSS %s over the whole run", bytesText(rss))
	svc.stop()

	step("replay of the whole log, projector alone")
	renderRate, rendered, err := renderOnly(file, next) // as the replay finds them: on the next day
	if err != nil {
		return err
	}
	// Twice: the first replay reads a store the service's gigabytes pushed out of the page cache
	// (as after a restart of a busy machine), the second the store as the first left it, so that
	// it is bound by the work the replay does, as rendering alone is.
	var replayRate float64
	for _, when := range []string{"just after the service stopped", "again at once"} {
		rp, err := svc.replayAll(ctx)
		if err != nil {
			return err
		}
		replayRate = float64(o.n) / rp.took.Seconds()
		r.add("replay, %s: the projector alone replayed the whole log and reconciled it with the bucket in %s from its start (NATS having recovered its store): %.0f establishments/s, %.2f of render-and-compress alone (%.0f/s over %d establishments, one per CPU at once, by the wall clock); the process's peak RSS, embedded NATS included, %s",
			when, rp.took.Round(time.Millisecond), replayRate, replayRate/renderRate, renderRate, rendered, bytesText(rp.peak))
	}

	step("rebuild while serving")
	if err := svc.start(ctx, next, "rebuild"); err != nil {
		return err
	}
	// The projector alone rendered under another files URL: the service's projector renders
	// again first, and a rebuild starts from its checkpoint.
	if _, err := svc.waitProjected(ctx, 30*time.Minute); err != nil {
		return err
	}
	hooks.reset()
	rb, err := svc.rebuild(ctx)
	if err != nil {
		return err
	}
	quiet := hooks.waitHooks(ctx, hooked, time.Now().Add(window+10*time.Second), window+10*time.Second)
	rebuildRate := float64(rb.rendered) / max(rb.rendering.Seconds(), 1e-9)
	r.add("rebuild while serving: %d establishments rendered into the next generation in %s: %.0f/s, %.2f of the projector's second replay alone above; verified in %s; switched with projection paused %s; %d establishments announced and %d webhook deliveries (the documents unchanged: none expected); %s in all; peak RSS of the rebuild %s, of the service since its restart (holding both generations while the rebuild ran) %s",
		rb.rendered, rb.rendering.Round(time.Millisecond), rebuildRate, rebuildRate/replayRate, rb.verification.Round(time.Millisecond),
		rb.paused, rb.announced, quiet.total, rb.took.Round(time.Millisecond), bytesText(rb.peak), bytesText(readHWM(svc.cmd.Process.Pid)))
	svc.stop()
	r.add("log: longest line of the service %d bytes", svc.longestLogLine())

	fmt.Println()
	fmt.Println("summary")
	for _, l := range r.lines {
		fmt.Println("  " + l)
	}
	return verr
}

func step(s string) { fmt.Fprintf(os.Stderr, "--- %s (%s)\n", s, time.Now().Format(time.TimeOnly)) }
