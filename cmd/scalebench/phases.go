package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/webhook"
	"github.com/opencarte/publisher/webhook/destination/brokertest"
)

// window is the service's --webhook-window: the wait before a change's webhooks are sent.
const window = webhook.DefaultWindow

// bench is one run of the benchmark: what each phase found that a later one needs.
type bench struct {
	o options
	r report

	bin        string    // the publisher built
	file       string    // the establishments generated, one JSON document a line
	gen        generated // what they are
	raw        rawRates
	hooks      *receiver
	svc        *service
	held       held             // what the service's mirror held after the import
	next       domain.LocalDate // the day after o.today, which the service restarts on
	hooked     []string         // the establishments with a webhook endpoint
	verr       error            // verify's outcome, returned after the summary
	platform   *follower        // what the platform webhook endpoint received
	feed       *follower        // what the changes feed's follower read
	polls      atomic.Int64     // the follower's long polls answered
	failed     atomic.Int64     // the follower's requests that failed
	stopFollow context.CancelFunc
	restarted  time.Time // when the service was restarted on the next day
	projected  time.Time // when the day change was projected
	imported   time.Time // when the import was projected
	replayRate float64   // the projector's second replay alone, establishments per second
	kafka      *brokertest.Kafka
	dest       *destination // the Kafka destination of every change from the start
}

// close stops what the run started that is still running.
func (b *bench) close() {
	if b.stopFollow != nil {
		b.stopFollow()
	}
	if b.svc != nil {
		b.svc.stop()
	}
	if b.hooks != nil {
		b.hooks.close()
	}
	if b.dest != nil {
		b.dest.close()
	}
	if b.kafka != nil {
		b.kafka.Stop()
	}
}

func (b *bench) build(ctx context.Context) error {
	b.bin = filepath.Join(b.o.dir, "publisher")
	step("building the publisher")
	if out, err := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "./cmd/publisher").CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/publisher (run from the repository root): %v\n%s", err, out)
	}
	return nil
}

func (b *bench) generate(context.Context) error {
	step("generating establishments")
	b.file = filepath.Join(b.o.dir, "establishments.ndjson")
	gen, err := generate(b.o, b.file)
	if err != nil {
		return err
	}
	b.gen = gen
	o := b.o
	b.r.add("generated: %d establishments, %s, %d bytes on average (%d to %d), %d date-dependent, %d drafts, %d with the API disabled, zones %v",
		o.n, bytesText(gen.bytes), gen.bytes/int64(o.n), gen.minSize, gen.maxSize, gen.dependent, gen.drafts, gen.apiOff, gen.zones)
	return nil
}

func (b *bench) measureRaw(ctx context.Context) error {
	step("measuring raw JetStream")
	raw, err := measureRaw(ctx, filepath.Join(b.o.dir, "raw"), min(b.o.rawN, b.o.n), int(b.gen.bytes/int64(b.o.n)))
	if err != nil {
		return err
	}
	b.raw = raw
	b.r.add("raw JetStream, %d messages of %d bytes, file storage, in process:", raw.n, raw.size)
	b.r.add("  append, one subject each, expected last sequence, 16 at a time: %8.0f msg/s", raw.cas)
	b.r.add("  append, asynchronous:                                           %8.0f msg/s", raw.async)
	b.r.add("  replay, ordered consumer:                                       %8.0f msg/s", raw.replay)
	return nil
}

// startService starts the webhook receiver and the service, empty.
func (b *bench) startService(ctx context.Context) error {
	hooks, err := newReceiver(b.o.dir)
	if err != nil {
		return err
	}
	b.hooks = hooks
	svc := &service{bin: b.bin, dir: filepath.Join(b.o.dir, "data"), token: "scalebench-admin-token-0123456789", memLimit: memLimit(), caFile: hooks.caFile}
	b.r.add("service: GOMEMLIMIT=%s (60%% of the machine's memory)", svc.memLimit)
	if err := svc.ports(); err != nil {
		return err
	}
	b.svc = svc

	step("starting the service")
	start := time.Now()
	if err := svc.start(ctx, b.o.today, "first"); err != nil {
		return err
	}
	b.r.add("service: ready in %s (empty)", time.Since(start).Round(time.Millisecond))
	return nil
}

// importAll imports the establishments and measures the import, the projection that follows and
// what the service then holds.
func (b *bench) importAll(ctx context.Context) error {
	step("importing")
	o, svc, r := b.o, b.svc, &b.r
	cpu0 := readCPU(svc.cmd.Process.Pid)
	imp, err := svc.importFile(ctx, b.file)
	if err != nil {
		return err
	}
	rate := float64(o.n) / imp.took.Seconds()
	r.add("import: %d establishments in %s: %.0f/s (%.2f of raw appends); %s", o.n, imp.took.Round(time.Millisecond), rate, rate/b.raw.cas, imp.summary)

	caught, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	b.imported = caught
	lag := caught.Sub(imp.end)
	projRate := float64(o.n) / caught.Sub(imp.start).Seconds()
	r.add("projection: caught up %s after the last acknowledgement; %.0f establishments/s from the first import (%.3f of raw replay)",
		lag.Round(time.Millisecond), projRate, projRate/b.raw.replay)
	cpu := readCPU(svc.cmd.Process.Pid) - cpu0
	r.add("cpu: the service used %s over the import and its projection: %.2f ms per establishment (the importing client %.2f ms more)",
		cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1000/float64(o.n), float64(imp.cpu.Microseconds())/1000/float64(o.n))
	rss := svc.peakRSS()
	r.add("memory: service peak RSS %s after the import (%s per establishment)", bytesText(rss), bytesText(rss/int64(o.n)))
	r.add("data: %s on disk (%s per establishment)", bytesText(dirSize(svc.dir)), bytesText(dirSize(svc.dir)/int64(o.n)))
	h, err := svc.held(ctx)
	if err != nil {
		return err
	}
	b.held = h
	r.add("documents: the mirror holds %d establishments, whose bundles carry %s of documents (identity and gzip, %s each), held in %s (%.2f× them: equal documents of a bundle shared); the process's Go heap %s live, %s mapped by the Go runtime",
		h.establishments, bytesText(h.documentBytes), bytesText(h.documentBytes/max(h.establishments, 1)), bytesText(h.heldBytes),
		float64(h.heldBytes)/float64(h.documentBytes), bytesText(h.heapLive), bytesText(h.goTotal))
	return nil
}

// apiAlone runs the api role alone twice: with a memory limit from the documents, then with the
// one the README advises from what the mirror holds.
func (b *bench) apiAlone(ctx context.Context) error {
	step("api role alone")
	h, r := b.held, &b.r
	api, err := b.svc.apiOnly(ctx, h.documentBytes*6/5+200<<20)
	if err != nil {
		return err
	}
	target := h.documentBytes*13/10 + 100<<20
	r.add("api role alone, on the service's NATS, GOMEMLIMIT=%s (1.2× the documents + 200 MiB): ready in %s; RSS %s 10 s after ready (%.2f× the documents), peak %s (%.2f×), against 1.3× + 100 MiB = %s; Go heap live at its last collection %s",
		api.memLimit, api.ready.Round(time.Millisecond), bytesText(api.rss), float64(api.rss)/float64(h.documentBytes),
		bytesText(api.peak), float64(api.peak)/float64(h.documentBytes), bytesText(target), bytesText(api.heapLive))
	// Again with the limit the README advises from what the mirror holds.
	api, err = b.svc.apiOnly(ctx, h.heldBytes*7/5+200<<20)
	if err != nil {
		return err
	}
	r.add("api role alone, GOMEMLIMIT=%s (1.4× the mirror's held bytes + 200 MiB): ready in %s; RSS %s 10 s after ready (%.2f× the documents), peak %s (%.2f×); Go heap live at its last collection %s",
		api.memLimit, api.ready.Round(time.Millisecond), bytesText(api.rss), float64(api.rss)/float64(h.documentBytes),
		bytesText(api.peak), float64(api.peak)/float64(h.documentBytes), bytesText(api.heapLive))
	return nil
}

func (b *bench) adminAlone(ctx context.Context) error {
	step("admin role alone: concurrent reads")
	reads, err := b.svc.adminReads(ctx, b.gen.slugs, b.o.adminReads)
	if err != nil {
		return err
	}
	b.r.add("admin reads: %d concurrent GET /admin/v1/establishments/{slug} on an admin-only process, over 256 connections: %v in %s (p50 %s, p99 %s); its peak RSS %s",
		b.o.adminReads, reads.statuses, reads.took.Round(time.Millisecond), reads.p50, reads.p99, bytesText(reads.rss))
	return nil
}

func (b *bench) restartSameDay(ctx context.Context) error {
	step("restart, same day")
	b.svc.stop()
	start := time.Now()
	if err := b.svc.start(ctx, b.o.today, "restart"); err != nil {
		return err
	}
	ready := time.Since(start)
	if _, err := b.svc.waitProjected(ctx, 30*time.Minute); err != nil {
		return err
	}
	b.r.add("restart: ready (mirror caught up, every role running) in %s; projector caught up in %s", ready.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return nil
}

// registerHooks registers an endpoint on each of a tenth of the establishments, among those the
// day change moves.
func (b *bench) registerHooks(ctx context.Context) error {
	step("registering webhooks")
	b.next = b.o.today.AddDays(1)
	hooked, err := movedByTheDay(b.file, b.o.today, b.next, b.o.n/10)
	if err != nil {
		return err
	}
	b.hooked = hooked
	start := time.Now()
	if err := b.svc.registerHooks(ctx, b.hooks, hooked); err != nil {
		return err
	}
	b.r.add("webhooks: %d endpoints registered, one on each of %d establishments whose documents the day change moves, in %s", len(hooked), len(hooked), time.Since(start).Round(time.Millisecond))
	return nil
}

// dayChange restarts the service on the next day and measures the days started, the documents
// served and the webhooks sent.
func (b *bench) dayChange(ctx context.Context) error {
	step("restart across a day change")
	svc, hooks, hooked, next, r := b.svc, b.hooks, b.hooked, b.next, &b.r
	svc.stop()
	hooks.reset() // only the deliveries and pages the day change causes are counted
	b.platform.take()
	b.feed.take()
	b.failed.Store(0)
	start := time.Now()
	b.restarted = start
	if err := svc.start(ctx, next, "next-day"); err != nil {
		return err
	}
	day, err := svc.waitDay(ctx, start, 0, 0, 10*time.Minute)
	if err != nil {
		return err
	}
	projected, err := svc.waitProjected(ctx, 30*time.Minute)
	if err != nil {
		return err
	}
	served := projected.Sub(start)
	b.projected = projected
	due := projected.Add(window + 10*time.Second)
	hc := hooks.waitHooks(ctx, hooked, due, window+10*time.Second)
	webhooks, _ := svc.status(ctx)
	r.add("webhooks after the day change: %d endpoints received exactly one delivery, %d none, %d more than one (%d deliveries in all, %d unsigned); first %s after the restart, last %s after it, %s after the day change was projected; every endpoint once within the window (%s, opened when the dispatcher took the change in) + 10 s of the projection: %t; dispatcher %v",
		hc.once, hc.none, hc.more, hc.total, hc.unsigned, sinceText(hc.first, start), sinceText(hc.last, start),
		sinceText(hc.last, projected), window, hc.once == len(hooked) && !hc.last.After(due), webhooks["webhooks"])
	dependent := b.gen.dependentSlugs
	behind, err := svc.checkDay(ctx, dependent, next)
	if err != nil {
		return err
	}
	r.add("day change check: %d of %d date-dependent establishments read back through the admin API on %s (%d not)", len(dependent)-behind, len(dependent), next, behind)
	r.add("day change: restart on %s: every date-dependent establishment's day started %s after the restart (%d days started by the clock's passes for %d date-dependent establishments; last pass: %s); documents served %s after it; the process stayed up: %t",
		next, day.took.Round(time.Millisecond), day.started, b.gen.dependent, day.pass, served.Round(time.Millisecond), svc.alive())
	return nil
}

// verify runs publisher verify; its failure is kept for the end of the run, which goes on.
func (b *bench) verify(ctx context.Context) error {
	step("verify")
	n := float64(b.o.n)
	start := time.Now()
	ver, verr := b.svc.verify(ctx)
	took := time.Since(start)
	b.verr = verr
	b.r.add("verify: exit %s in %s (%.0f establishments/s, %.3f of raw replay); %s", ver.exit, took.Round(time.Millisecond),
		n/took.Seconds(), n/took.Seconds()/b.raw.replay, ver.summary)
	b.r.add("memory: service peak RSS %s over the whole run", bytesText(b.svc.peakRSS()))
	b.svc.stop()
	return nil
}

// replay measures a replay of the whole log by the projector alone against rendering alone.
func (b *bench) replay(ctx context.Context) error {
	step("replay of the whole log, projector alone")
	// On the next day, as the replay finds most of them: those the midnight phase moved are a day
	// later, which changes the rendering's cost little.
	renderRate, rendered, err := renderOnly(b.file, b.next)
	if err != nil {
		return err
	}
	// Twice: the first replay reads a store the service's gigabytes pushed out of the page cache
	// (as after a restart of a busy machine), the second the store as the first left it, so that
	// it is bound by the work the replay does, as rendering alone is.
	for _, when := range []string{"just after the service stopped", "again at once"} {
		rp, err := b.svc.replayAll(ctx)
		if err != nil {
			return err
		}
		b.replayRate = float64(b.o.n) / rp.took.Seconds()
		b.r.add("replay, %s: the projector alone replayed the whole log and reconciled it with the bucket in %s from its start (NATS having recovered its store): %.0f establishments/s, %.2f of render-and-compress alone (%.0f/s over %d establishments, one per CPU at once, by the wall clock); the process's peak RSS, embedded NATS included, %s",
			when, rp.took.Round(time.Millisecond), b.replayRate, b.replayRate/renderRate, renderRate, rendered, bytesText(rp.peak))
	}
	return nil
}

// rebuild runs publisher rebuild while the service serves, and counts the webhooks it sends.
func (b *bench) rebuild(ctx context.Context) error {
	step("rebuild while serving")
	svc := b.svc
	if err := svc.start(ctx, b.next, "rebuild"); err != nil {
		return err
	}
	// The projector alone rendered under another files URL: the service's projector renders
	// again first, and a rebuild starts from its checkpoint.
	if _, err := svc.waitProjected(ctx, 30*time.Minute); err != nil {
		return err
	}
	b.hooks.reset()
	b.platform.take()
	b.feed.take()
	rb, err := svc.rebuild(ctx)
	if err != nil {
		return err
	}
	quiet := b.hooks.waitHooks(ctx, b.hooked, time.Now().Add(window+10*time.Second), window+10*time.Second)
	rebuildRate := float64(rb.rendered) / max(rb.rendering.Seconds(), 1e-9)
	b.r.add("rebuild while serving: %d establishments rendered into the next generation in %s: %.0f/s, %.2f of the projector's second replay alone above; verified in %s; switched with projection paused %s; %d establishments announced and %d webhook deliveries (the documents unchanged: none expected); %s in all; peak RSS of the rebuild %s, of the service since its restart (holding both generations while the rebuild ran) %s",
		rb.rendered, rb.rendering.Round(time.Millisecond), rebuildRate, rebuildRate/b.replayRate, rb.verification.Round(time.Millisecond),
		rb.paused, rb.announced, quiet.total, rb.took.Round(time.Millisecond), bytesText(rb.peak), bytesText(readHWM(svc.cmd.Process.Pid)))
	b.rebuildFigures()
	svc.stop()
	b.r.add("log: longest line of the service %d bytes", svc.longestLogLine())
	return nil
}
