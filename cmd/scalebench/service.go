package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opencarte/publisher/domain"
)

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
	// calendarFrom, when set, starts the service's calendar at that instant (--calendar-from)
	// instead of fixing its date.
	calendarFrom time.Time
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
		"--admin-token", s.token, "--clock-interval", "1s",
		"--quota-key", "-1", "--quota-ip", "-1", // every establishment is read back through the read API
		"--webhook-allow-private") // the webhook receiver is on loopback
	if s.calendarFrom.IsZero() {
		s.cmd.Args = append(s.cmd.Args, "--today", today.String())
	} else {
		s.cmd.Args = append(s.cmd.Args, "--calendar-from", s.calendarFrom.Format(time.RFC3339Nano))
	}
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

// adminStatus sends one request to an admin API (at url) with the admin token, reads and drops
// its answer, and returns its status: 0 when it failed.
func (s *service) adminStatus(ctx context.Context, client *http.Client, method, url string, body []byte) int {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(ctx, method, url, r)
	req.Header.Set("Authorization", "Bearer "+s.token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
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

// clockDays returns the days the clock started, and the next days it prepared, since the
// service started.
func (s *service) clockDays(ctx context.Context) (started, prepared int, err error) {
	st, err := s.status(ctx)
	if err != nil {
		return 0, 0, err
	}
	clock, _ := st["clock"].(map[string]any)
	a, _ := clock["appended"].(float64)
	p, _ := clock["prepared"].(float64)
	return int(a), int(p), nil
}
