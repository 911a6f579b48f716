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
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencarte/publisher/cmd/internal/sample"
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

// generated describes the generated file.
type generated struct {
	bytes                     int64
	minSize, maxSize          int
	dependent, drafts, apiOff int
	zones                     map[string]int
	slugs, dependentSlugs     []string
}

func generate(o options, path string) (generated, error) {
	f, err := os.Create(path)
	if err != nil {
		return generated{}, err
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	g := generated{minSize: 1 << 30, zones: map[string]int{}}
	for i := range o.n {
		s := sample.Establishment(o.seed, i, o.today)
		b, err := json.Marshal(s)
		if err != nil {
			return g, err
		}
		g.bytes += int64(len(b))
		g.minSize, g.maxSize = min(g.minSize, len(b)), max(g.maxSize, len(b))
		if sample.DateDependent(s) {
			g.dependent++
		}
		if s.Status == "draft" {
			g.drafts++
		}
		if s.Settings != nil && s.Settings.PublicAPIEnabled != nil && !*s.Settings.PublicAPIEnabled {
			g.apiOff++
		}
		g.zones[s.TimeZone]++
		g.slugs = append(g.slugs, s.Slug)
		if sample.DateDependent(s) {
			g.dependentSlugs = append(g.dependentSlugs, s.Slug)
		}
		w.Write(b)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return g, err
	}
	return g, f.Close()
}

// service is the publisher under test: one process with every role on embedded NATS.
type service struct {
	bin, dir, token        string
	memLimit               string // GOMEMLIMIT of the service
	caFile                 string // the certificate authorities the service trusts (SSL_CERT_FILE)
	natsPort, http, admin  int
	cmd                    *exec.Cmd
	logFile                *os.File
	exited                 chan struct{}
	peak                   atomic.Int64
	stopSampling           chan struct{}
	samplingDone           sync.WaitGroup
	natsURL, adminURL, api string
}

// seed is the file of the embedded NATS server's user, which the other processes connect as.
func (s *service) seed() string { return filepath.Join(s.dir, "nats.nk") }

func (s *service) ports() error {
	for _, p := range []*int{&s.natsPort, &s.http, &s.admin} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		*p = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	s.natsURL = fmt.Sprintf("nats://127.0.0.1:%d", s.natsPort)
	s.adminURL = fmt.Sprintf("http://127.0.0.1:%d", s.admin)
	s.api = fmt.Sprintf("http://127.0.0.1:%d", s.http)
	return nil
}

// start runs the service with every role and waits until its read API is ready.
func (s *service) start(ctx context.Context, today domain.LocalDate, name string) error {
	logFile, err := os.Create(filepath.Join(filepath.Dir(s.dir), "service-"+name+".log"))
	if err != nil {
		return err
	}
	s.logFile = logFile
	s.cmd = exec.Command(s.bin, "serve",
		"--data-dir", s.dir, "--nats-listen", fmt.Sprintf("127.0.0.1:%d", s.natsPort),
		"--http", fmt.Sprintf("127.0.0.1:%d", s.http), "--admin", fmt.Sprintf("127.0.0.1:%d", s.admin),
		"--admin-token", s.token, "--today", today.String(), "--clock-interval", "1s",
		"--webhook-allow-private") // the webhook receiver is on loopback
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	// As a deployment should: a soft memory limit, so that the garbage collector works harder
	// near it instead of letting the heap double past it. The receiver's certificate is among the
	// authorities the service trusts.
	s.cmd.Env = append(os.Environ(), "GOMEMLIMIT="+s.memLimit, "SSL_CERT_FILE="+s.caFile)
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.exited = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.exited) }()
	s.sample()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if resp, err := http.Get(s.api + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("service exited while starting; see %s", logFile.Name())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return errors.New("service not ready within 10 minutes")
		}
	}
}

// sample records the process's peak resident memory.
func (s *service) sample() {
	s.stopSampling = make(chan struct{})
	pid := s.cmd.Process.Pid
	s.samplingDone.Add(1)
	go func() {
		defer s.samplingDone.Done()
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			if hwm := readHWM(pid); hwm > s.peak.Load() {
				s.peak.Store(hwm)
			}
			select {
			case <-s.stopSampling:
				return
			case <-t.C:
			}
		}
	}()
}

func (s *service) peakRSS() int64 {
	if s.cmd != nil && s.alive() {
		if hwm := readHWM(s.cmd.Process.Pid); hwm > s.peak.Load() {
			s.peak.Store(hwm)
		}
	}
	return s.peak.Load()
}

func (s *service) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop ends the service with SIGTERM, as an operator would.
func (s *service) stop() {
	if s.cmd == nil || s.cmd.Process == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.exited:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
	}
	close(s.stopSampling)
	s.samplingDone.Wait()
	s.logFile.Close()
	s.cmd = nil
}

// status reads the admin status.
func (s *service) status(ctx context.Context) (map[string]any, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.adminURL+"/admin/v1/status", nil)
	req.Header.Set("Authorization", "Bearer "+s.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st map[string]any
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// waitProjected waits until the projector has stored every record of the log, and returns when.
func (s *service) waitProjected(ctx context.Context, within time.Duration) (time.Time, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		st, err := s.status(ctx)
		if err == nil {
			proj, _ := st["projected_sequence"].(float64)
			last, _ := st["log_sequence"].(float64)
			if proj >= last && last > 0 {
				return time.Now(), nil
			}
		}
		if !s.alive() {
			return time.Time{}, errors.New("service exited")
		}
		select {
		case <-ctx.Done():
			return time.Time{}, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return time.Time{}, fmt.Errorf("projection not caught up within %s", within)
}

type imported struct {
	start, end time.Time
	took       time.Duration
	summary    string
}

// importFile runs `publisher import` on the file and reports its own summary line.
func (s *service) importFile(ctx context.Context, file string) (imported, error) {
	cmd := exec.CommandContext(ctx, s.bin, "import", "--admin-url", s.adminURL, "--admin-token", s.token, "--progress", "plain", file)
	keys, err := os.Create(file + ".results")
	if err != nil {
		return imported{}, err
	}
	defer keys.Close()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return imported{}, err
	}
	cmd.Stdout = keys
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return imported{}, err
	}
	var last string
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		fmt.Fprintln(os.Stderr, "    "+sc.Text())
		last = sc.Text()
	}
	err = cmd.Wait()
	end := time.Now()
	if err != nil {
		return imported{}, fmt.Errorf("publisher import: %v (last line: %s)", err, last)
	}
	return imported{start: start, end: end, took: end.Sub(start), summary: strings.TrimSpace(last)}, nil
}

type readResult struct {
	statuses map[int]int
	took     time.Duration
	p50, p99 time.Duration
	rss      int64
}

// adminReads starts an admin-only process on the service's NATS and reads n random
// establishments from it at once, over as many connections as one client address may hold.
func (s *service) adminReads(ctx context.Context, slugs []string, n int) (readResult, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return readResult{}, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logFile, err := os.Create(filepath.Join(filepath.Dir(s.dir), "admin-only.log"))
	if err != nil {
		return readResult{}, err
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "serve", "--roles", "admin", "--nats-url", s.natsURL, "--nats-nkey", s.seed(), "--secret-key-file", filepath.Join(s.dir, "secret-key"),
		"--admin", fmt.Sprintf("127.0.0.1:%d", port), "--admin-token", s.token, "--data-dir", filepath.Join(filepath.Dir(s.dir), "admin-only"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return readResult{}, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(time.Minute); ; {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/admin/v1/status", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			return readResult{}, errors.New("admin-only process not up within a minute")
		}
		time.Sleep(20 * time.Millisecond)
	}
	// One client address holds at most a quarter of the admin listener's connections (256 with
	// the default share): n requests at once wait for one of them, client side, as a client
	// library's pool does.
	const conns = 256
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns}}
	var mu sync.Mutex
	res := readResult{statuses: map[int]int{}}
	lat := make([]time.Duration, 0, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	start := time.Now()
	for i := range n {
		slug := slugs[rand.IntN(len(slugs))]
		_ = i
		wg.Go(func() {
			<-gate
			t0 := time.Now()
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/admin/v1/establishments/"+slug, nil)
			req.Header.Set("Authorization", "Bearer "+s.token)
			status := 0
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
			mu.Lock()
			res.statuses[status]++
			lat = append(lat, time.Since(t0))
			mu.Unlock()
		})
	}
	start = time.Now()
	close(gate)
	wg.Wait()
	res.took = time.Since(start)
	slices.Sort(lat)
	res.p50, res.p99 = lat[len(lat)/2].Round(time.Millisecond), lat[len(lat)*99/100].Round(time.Millisecond)
	res.rss = readHWM(cmd.Process.Pid)
	return res, nil
}

type dayResult struct {
	took    time.Duration
	started int
	pass    string
}

// waitDay waits until the clock has started the new day of every date-dependent establishment:
// a pass over the index ran since the restart, and no establishment is left to try again.
func (s *service) waitDay(ctx context.Context, since time.Time, within time.Duration) (dayResult, error) {
	deadline := time.Now().Add(within)
	var clock struct {
		Passes   int             `json:"passes"`
		Appended int             `json:"appended"`
		Pending  int             `json:"pending"`
		LastPass json.RawMessage `json:"last_pass"`
	}
	for time.Now().Before(deadline) {
		if !s.alive() {
			return dayResult{}, errors.New("service exited during the day change")
		}
		if st, err := s.status(ctx); err == nil {
			b, _ := json.Marshal(st["clock"])
			if json.Unmarshal(b, &clock) == nil && clock.Passes > 0 && clock.Pending == 0 && !strings.Contains(string(clock.LastPass), `"sweep"`) {
				return dayResult{took: time.Since(since), started: clock.Appended, pass: string(clock.LastPass)}, nil
			}
		}
		select {
		case <-ctx.Done():
			return dayResult{}, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return dayResult{}, fmt.Errorf("day change not done within %s: %d days started, %d to try again; last pass %s", within, clock.Appended, clock.Pending, clock.LastPass)
}

// checkDay reads every establishment of slugs through the admin API and counts those whose
// recorded local date is not day.
func (s *service) checkDay(ctx context.Context, slugs []string, day domain.LocalDate) (int, error) {
	var behind, failed atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan string)
	for range 32 {
		wg.Go(func() {
			for slug := range jobs {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.adminURL+"/admin/v1/establishments/"+slug, nil)
				req.Header.Set("Authorization", "Bearer "+s.token)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				var st struct {
					Today string `json:"today"`
				}
				err = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if err != nil || resp.StatusCode != 200 {
					failed.Add(1)
				} else if st.Today != day.String() {
					behind.Add(1)
				}
			}
		})
	}
	for _, slug := range slugs {
		jobs <- slug
	}
	close(jobs)
	wg.Wait()
	if n := failed.Load(); n > 0 {
		return 0, fmt.Errorf("day change check: %d establishments could not be read", n)
	}
	return int(behind.Load()), nil
}

type verified struct {
	exit    string
	summary string
}

func (s *service) verify(ctx context.Context) (verified, error) {
	cmd := exec.CommandContext(ctx, s.bin, "verify", "--nats-url", s.natsURL, "--nats-nkey", s.seed(), "--progress", "none")
	out, err := cmd.Output()
	v := verified{exit: "0"}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		v.exit = strconv.Itoa(ee.ExitCode())
	} else if err != nil {
		return v, err
	}
	var rep struct {
		Position  uint64 `json:"position"`
		Checked   int    `json:"checked"`
		Different int    `json:"different"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		v.summary = "unreadable report: " + jerr.Error()
	} else {
		v.summary = fmt.Sprintf("%d establishments checked up to sequence %d, %d differences", rep.Checked, rep.Position, rep.Different)
	}
	if v.exit != "0" {
		return v, fmt.Errorf("verify exited %s: %s", v.exit, v.summary)
	}
	return v, nil
}

func (s *service) longestLogLine() int {
	longest := 0
	files, _ := filepath.Glob(filepath.Join(filepath.Dir(s.dir), "*.log"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			continue
		}
		r := bufio.NewReader(f)
		for {
			line, err := r.ReadString('\n')
			longest = max(longest, len(strings.TrimSuffix(line, "\n")))
			if err != nil {
				break
			}
		}
		f.Close()
	}
	return longest
}

// readHWM returns the peak resident set of a process, in bytes, from /proc.
func readHWM(pid int) int64 { return readStatus(pid, "VmHWM:") }

func dirSize(dir string) int64 {
	var n int64
	_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func cpus() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}

// memLimit is 60 % of the machine's memory, in the form GOMEMLIMIT takes.
func memLimit() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return strconv.FormatInt(kb*1024*6/10/(1<<20), 10) + "MiB"
		}
	}
	return "off"
}

func memTotal() string {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return bytesText(kb<<10) + " of memory"
		}
	}
	return "unknown memory"
}
