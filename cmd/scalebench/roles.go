package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencarte/publisher/domain"
	"github.com/opencarte/publisher/projections"
)

// held is what the service's status says its mirror and its Go runtime hold.
type held struct {
	establishments, documentBytes, heldBytes, heapLive, goTotal int64
}

func (s *service) held(ctx context.Context) (held, error) {
	st, err := s.status(ctx)
	if err != nil {
		return held{}, err
	}
	mirror, _ := st["mirror"].(map[string]any)
	memory, _ := st["memory"].(map[string]any)
	num := func(m map[string]any, k string) int64 { f, _ := m[k].(float64); return int64(f) }
	h := held{
		establishments: num(mirror, "establishments"), documentBytes: num(mirror, "document_bytes"),
		heldBytes: num(mirror, "held_bytes"), heapLive: num(memory, "heap_live_bytes"), goTotal: num(memory, "go_total_bytes"),
	}
	if h.documentBytes == 0 {
		return h, errors.New("the status reports no mirror")
	}
	return h, nil
}

// apiResult is what a process running the api role alone measured.
type apiResult struct {
	ready     time.Duration
	rss, peak int64 // resident set once caught up and settled, and its peak
	heapLive  int64 // Go heap live after the last collection, from the runtime's trace
	memLimit  string
}

// gcLine matches the live heap after a collection in a GODEBUG=gctrace=1 line ("A->B->C MB").
var gcLine = regexp.MustCompile(`->(\d+) MB, \d+ MB goal`)

// apiOnly runs the api role alone against the service's NATS server, with the soft memory limit
// memLimit (bytes), as a deployment sizes it from what it serves, and measures its memory once it
// serves every document.
func (s *service) apiOnly(ctx context.Context, memLimit int64) (apiResult, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return apiResult{}, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	logName := filepath.Join(filepath.Dir(s.dir), "api-only.log")
	logFile, err := os.Create(logName)
	if err != nil {
		return apiResult{}, err
	}
	defer logFile.Close()
	res := apiResult{memLimit: strconv.FormatInt(memLimit>>20, 10) + "MiB"}
	cmd := exec.Command(s.bin, "serve", "--roles", "api", "--nats-url", s.natsURL, "--nats-nkey", s.seed(),
		"--http", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", filepath.Join(filepath.Dir(s.dir), "api-only"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+res.memLimit, "GODEBUG="+strings.TrimPrefix(os.Getenv("GODEBUG")+",gctrace=1", ","))
	start := time.Now()
	c, err := startChild(cmd)
	if err != nil {
		return apiResult{}, err
	}
	defer c.stop()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	for deadline := time.Now().Add(5 * time.Minute); ; {
		if resp, err := probe.Get(base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			return apiResult{}, fmt.Errorf("api-only process not ready within 5 minutes; see %s", logName)
		}
		if err := c.wait(ctx, 20*time.Millisecond, logName); err != nil {
			return apiResult{}, err
		}
	}
	res.ready = time.Since(start)
	if err := c.wait(ctx, 10*time.Second, logName); err != nil {
		return apiResult{}, err
	}
	res.rss, res.peak = readStatus(cmd.Process.Pid, "VmRSS:"), readHWM(cmd.Process.Pid)
	if b, err := os.ReadFile(logName); err == nil {
		if m := gcLine.FindAllStringSubmatch(string(b), -1); len(m) > 0 {
			mb, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
			res.heapLive = mb << 20
		}
	}
	return res, nil
}

// child is a process the benchmark started, and the channel closed when it exits.
type child struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startChild(cmd *exec.Cmd) (*child, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(c.exited) }()
	return c, nil
}

// stop ends the child with SIGTERM, then SIGKILL if it has not exited within a minute.
func (c *child) stop() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.exited:
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.exited
	}
}

// wait sleeps for d, and reports an error when the child exits or ctx ends first.
func (c *child) wait(ctx context.Context, d time.Duration, log string) error {
	select {
	case <-c.exited:
		return fmt.Errorf("process exited; see %s", log)
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// probe is the client of readiness checks: a check never waits long.
var probe = &http.Client{Timeout: 5 * time.Second}

// readStatus returns a memory line of a process's /proc status, in bytes.
func readStatus(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// replayResult is what a projector replaying the whole log measured.
type replayResult struct {
	took time.Duration // from its start to the end of its reconciliation, as it logs it
	peak int64
}

// tookField reads the duration the projector logs when it has caught up.
var tookField = regexp.MustCompile(`msg="projections caught up".* took=(\S+)`)

// replayAll runs the projector role alone on the service's stopped data directory, told to
// replay the whole log, and measures it until it has caught up.
func (s *service) replayAll(ctx context.Context) (replayResult, error) {
	logName := filepath.Join(filepath.Dir(s.dir), "replay.log")
	logFile, err := os.Create(logName)
	if err != nil {
		return replayResult{}, err
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "serve", "--roles", "projector", "--projector-replay",
		"--data-dir", s.dir, "--nats-listen", fmt.Sprintf("127.0.0.1:%d", s.natsPort))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+s.memLimit)
	c, err := startChild(cmd)
	if err != nil {
		return replayResult{}, err
	}
	defer c.stop()
	var res replayResult
	for deadline := time.Now().Add(30 * time.Minute); ; {
		if hwm := readHWM(cmd.Process.Pid); hwm > res.peak {
			res.peak = hwm
		}
		b, _ := os.ReadFile(logName)
		if m := tookField.FindSubmatch(b); m != nil {
			d, err := time.ParseDuration(string(m[1]))
			if err != nil {
				return res, fmt.Errorf("replay: %q: %w", m[1], err)
			}
			res.took = d
			return res, nil
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("replay not done within 30 minutes; see %s", logName)
		}
		if err := c.wait(ctx, 200*time.Millisecond, logName); err != nil {
			return res, err
		}
	}
}

// renderOnly renders and compresses every establishment of the file, as it stands on day, one per
// CPU at once, and returns the rate of that work alone, by the wall clock: the establishments are
// read and imported beforehand, a chunk at a time, outside the time measured.
func renderOnly(file string, day domain.LocalDate) (rate float64, n int, err error) {
	f, err := os.Open(file)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	const chunk = 5000
	var (
		spent time.Duration
		lines [][]byte
		built = make([]*domain.Establishment, chunk)
	)
	flush := func() error {
		err := parallel(len(lines), func(i int) error {
			snap, err := domain.ParseInput(bytes.NewReader(lines[i]))
			if err != nil {
				return err
			}
			e := domain.New(domain.Slug(snap.Slug))
			res, err := e.Import(snap, domain.NewAPIKey([32]byte{}))
			if err != nil {
				return err
			}
			for _, ev := range append(res.Events, domain.DayStarted{Date: day}) {
				e.Apply(ev)
			}
			built[i] = e
			return nil
		})
		if err != nil {
			return fmt.Errorf("render only: %w", err)
		}
		start := time.Now()
		err = parallel(len(lines), func(i int) error {
			_, err := projections.Value(built[i], 1)
			return err
		})
		spent += time.Since(start)
		n += len(lines)
		lines = lines[:0]
		return err
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines = append(lines, append([]byte(nil), sc.Bytes()...))
		if len(lines) == chunk {
			if err := flush(); err != nil {
				return 0, 0, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if err := flush(); err != nil {
		return 0, 0, err
	}
	if spent == 0 {
		return math.Inf(1), n, nil
	}
	return float64(n) / spent.Seconds(), n, nil
}

// parallel calls fn for 0 to n-1, one per CPU at once, and returns the first error.
func parallel(n int, fn func(i int) error) error { return parallelN(runtime.GOMAXPROCS(0), n, fn) }

// parallelN calls fn for 0 to n-1, workers at once, and returns the first error.
func parallelN(workers, n int, fn func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		once    sync.Once
		failure error
	)
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := fn(i); err != nil {
					once.Do(func() { failure = err })
				}
			}
		})
	}
	wg.Wait()
	return failure
}

// rebuilt is what a run of publisher rebuild measured.
type rebuilt struct {
	took                    time.Duration // the whole command
	rendered                int
	rendering, verification time.Duration
	paused                  string // how long projection paused at the switch, as it says
	announced               int
	peak                    int64 // the command's peak RSS
}

var (
	renderedLine  = regexp.MustCompile(`rendered (\d+) establishments in (\S+) \(`)
	verifiedLine  = regexp.MustCompile(`verified generation \d+: \d+ establishments equal to the log's rendering, in (\S+)`)
	switchedLine  = regexp.MustCompile(`projection paused (\S+),`)
	announcedLine = regexp.MustCompile(`announced (\d+) establishments`)
)

// rebuild runs publisher rebuild against the running service and measures it.
func (s *service) rebuild(ctx context.Context) (rebuilt, error) {
	logName := filepath.Join(filepath.Dir(s.dir), "rebuild.log")
	logFile, err := os.Create(logName)
	if err != nil {
		return rebuilt{}, err
	}
	defer logFile.Close()
	cmd := exec.Command(s.bin, "rebuild", "--nats-url", s.natsURL, "--nats-nkey", s.seed(),
		"--progress", "plain", "--progress-every", "30s")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "GOMEMLIMIT="+s.memLimit)
	start := time.Now()
	c, err := startChild(cmd)
	if err != nil {
		return rebuilt{}, err
	}
	var res rebuilt
	for deadline := start.Add(60 * time.Minute); ; {
		if hwm := readHWM(cmd.Process.Pid); hwm > res.peak {
			res.peak = hwm
		}
		select {
		case <-c.exited:
		case <-ctx.Done():
			c.stop()
			return res, ctx.Err()
		case <-time.After(200 * time.Millisecond):
			if time.Now().After(deadline) {
				c.stop()
				return res, fmt.Errorf("rebuild not done within an hour; see %s", logName)
			}
			continue
		}
		break
	}
	res.took = time.Since(start)
	if code := cmd.ProcessState.ExitCode(); code != 0 {
		return res, fmt.Errorf("rebuild exited %d; see %s", code, logName)
	}
	b, err := os.ReadFile(logName)
	if err != nil {
		return res, err
	}
	if m := renderedLine.FindSubmatch(b); m != nil {
		res.rendered, _ = strconv.Atoi(string(m[1]))
		res.rendering, _ = time.ParseDuration(string(m[2]))
	}
	if m := verifiedLine.FindSubmatch(b); m != nil {
		res.verification, _ = time.ParseDuration(string(m[1]))
	}
	if m := switchedLine.FindSubmatch(b); m != nil {
		res.paused = string(m[1])
	}
	if m := announcedLine.FindSubmatch(b); m != nil {
		res.announced, _ = strconv.Atoi(string(m[1]))
	}
	return res, nil
}
