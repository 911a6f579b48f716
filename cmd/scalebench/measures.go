package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencarte/publisher/domain"
)

type imported struct {
	start, end time.Time
	took       time.Duration
	summary    string
	cpu        time.Duration // the importing client's own CPU time
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
	cpu := cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return imported{start: start, end: end, took: end.Sub(start), summary: strings.TrimSpace(last), cpu: cpu}, nil
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
			status := s.adminStatus(ctx, client, http.MethodGet, base+"/admin/v1/establishments/"+slug, nil)
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
// a pass over the index started after since (a restart, a midnight) and found at least due
// establishments due, or the clock started at least due days more than base, however many
// passes that took, and no establishment is left to try again.
func (s *service) waitDay(ctx context.Context, since time.Time, base, due int, within time.Duration) (dayResult, error) {
	deadline := time.Now().Add(within)
	var clock struct {
		Passes   int             `json:"passes"`
		Appended int             `json:"appended"`
		Pending  int             `json:"pending"`
		LastPass json.RawMessage `json:"last_pass"`
	}
	found := due == 0
	for time.Now().Before(deadline) {
		if !s.alive() {
			return dayResult{}, errors.New("service exited during the day change")
		}
		var last struct {
			Kind    string    `json:"kind"`
			Started time.Time `json:"started"`
			Due     int       `json:"due"`
		}
		if st, err := s.status(ctx); err == nil {
			b, _ := json.Marshal(st["clock"])
			if json.Unmarshal(b, &clock) == nil && json.Unmarshal(clock.LastPass, &last) == nil {
				// Passes that try failures again find fewer due: one that found them all is enough.
				after := last.Started.After(since)
				found = found || after && last.Due >= due
				passed := found && after && clock.Passes > 0 && last.Kind != "sweep"
				if clock.Pending == 0 && (passed || due > 0 && clock.Appended-base >= due) {
					return dayResult{took: time.Since(since), started: clock.Appended, pass: string(clock.LastPass)}, nil
				}
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
