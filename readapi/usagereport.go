package readapi

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/opencarte/publisher/readapi/usage"
)

// Use of the read API per key, reported to whoever shows it (package usage). While ReportUsage
// runs, the per-key quota tallies in its shards, under the lock a request takes anyway, what each
// key's requests came to: admitted (counted against the quota), refused with a 429, answered 304.
// Every period the tallies are published on usage.Subject and start again from zero, so a shard
// holds only the keys used within one period, at most its share of MaxClients: past that, an
// answer is not tallied, and a warning says so at most once a minute. A 429 of the per-address
// quota comes before the key is looked at and is not a key's.

// DefaultUsagePeriod is how often a read node reports the use of each key.
const DefaultUsagePeriod = time.Second

// What a request with a valid key came to, the indexes of useCounts.
const (
	useRequests    = iota // counted against the key's quota
	useNotModified        // answered 304
	useLimited            // refused by the key's quota
)

// useRow is one client's tally since the last usage report.
type useRow struct {
	k clientKey
	c [3]uint32 // by useRequests, useNotModified, useLimited
}

// tally counts one answer of kind what to client k in sh, whose lock is held, while the limiter
// is tallying.
func (l *limiter) tally(sh *limiterShard, k clientKey, what int) {
	if !l.tallying.Load() {
		return
	}
	i, ok := sh.use[k]
	if !ok {
		if len(sh.useRows) >= l.shardCap {
			l.untallied.Add(1)
			return
		}
		if sh.use == nil {
			sh.use = make(map[clientKey]int32)
		}
		i = int32(len(sh.useRows))
		sh.use[k] = i
		sh.useRows = append(sh.useRows, useRow{k: k})
	}
	if c := &sh.useRows[i].c[what]; *c < math.MaxUint32 {
		*c++
	}
}

// appendUse appends to b the usage record of every client tallied since the last call, and
// forgets them. The shards keep their tables' room for the next period.
func (l *limiter) appendUse(b []byte) []byte {
	for i := range l.shards {
		sh := &l.shards[i]
		sh.mu.Lock()
		for _, r := range sh.useRows {
			b = usage.AppendRecord(b, usage.Key(r.k), r.c[useRequests], r.c[useNotModified], r.c[useLimited])
		}
		clear(sh.use)
		sh.useRows = sh.useRows[:0]
		sh.mu.Unlock()
	}
	return b
}

// ReportUsage publishes on nc, every period until ctx ends, what each API key did on this node
// since the last report; every is the period, zero meaning DefaultUsagePeriod. A report is sent
// each period, with no key or many, so that readers learn the quota. Without a per-key quota no
// use is counted, and none is reported.
func (s *Server) ReportUsage(ctx context.Context, nc *nats.Conn, every time.Duration) error {
	p := s.keyQuota
	if p == nil {
		<-ctx.Done()
		return nil
	}
	if every <= 0 {
		every = DefaultUsagePeriod
	}
	u := &usageReporter{s: s, nc: nc, p: p}
	p.lim.tallying.Store(true)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.lim.tallying.Store(false)
			u.publish() // what was tallied since the last report, if the connection still takes it
			return nil
		case <-t.C:
			u.publish()
		}
	}
}

// usageReporter publishes the usage reports of one server; its buffers are reused.
type usageReporter struct {
	s       *Server
	nc      *nats.Conn
	p       *policy
	records []byte
	msg     []byte
	warned  time.Time // when the last warning about answers not tallied was logged
}

// publish sends what was tallied since the last call, in reports of at most usage.MaxRecords
// records.
func (u *usageReporter) publish() {
	now := u.s.now()
	u.records = u.p.lim.appendUse(u.records[:0])
	h := usage.Header{At: now, Quota: int(u.p.lim.quota), Window: time.Duration(u.p.lim.window)}
	records := u.records
	for first := true; first || len(records) > 0; first = false {
		n := min(len(records), usage.MaxRecords*usage.RecordSize)
		u.msg = append(usage.AppendHeader(u.msg[:0], h), records[:n]...)
		records = records[n:]
		if err := u.nc.Publish(usage.Subject, u.msg); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			u.s.logger.Debug("usage report not sent", "err", err)
		}
	}
	if n := u.p.lim.untallied.Load(); n > 0 && now.Sub(u.warned) >= evictionReportEvery {
		u.s.logger.Warn("usage table full, answers to keys not counted in their use",
			"untallied", u.p.lim.untallied.Swap(0), "capacity", u.p.lim.capacity())
		u.warned = now
	}
}
