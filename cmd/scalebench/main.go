package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/opencarte/publisher/domain"
)

type options struct {
	n          int
	seed       uint64
	today      domain.LocalDate
	dir        string
	keep       bool
	adminReads int
	puts       int
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
	flag.IntVar(&o.puts, "puts", 10_000, "establishments updated through concurrent PUTs after the import")
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

// run runs every phase of the benchmark in turn, each printing its figures; it stops at the
// first phase that fails, and returns verify's error, if any, after the summary.
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
	b := &bench{o: o}
	defer b.close()
	b.r.add("scalebench: %d establishments, seed %d, first day %s, in %s", o.n, o.seed, o.today, o.dir)
	b.r.add("machine: %d CPUs, %s", cpus(), memTotal())
	for _, phase := range []func(context.Context) error{
		b.build, b.generate, b.measureRaw, b.startService, b.startPlatform, b.startKafka, b.importAll, b.followImport, b.syncDestination, b.putAll,
		b.apiAlone, b.adminAlone, b.restartSameDay, b.registerHooks, b.dayChange, b.followDay, b.midnight, b.verify, b.replay, b.rebuild,
	} {
		if err := phase(ctx); err != nil {
			return err
		}
	}
	fmt.Println()
	fmt.Println("summary")
	for _, l := range b.r.lines {
		fmt.Println("  " + l)
	}
	return b.verr
}

func step(s string) { fmt.Fprintf(os.Stderr, "--- %s (%s)\n", s, time.Now().Format(time.TimeOnly)) }
