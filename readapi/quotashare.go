package readapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Quotas shared between read nodes. Each node counts requests in its own memory, as alone, so
// that no request waits for NATS; every period it publishes on QuotaSubject the requests it
// admitted per client since its last report, and charges the other nodes' reports to its own
// counts. Within a period, what the others admit is not known yet: each node admits at most its
// share of the room a client had when the period began (see limiter.take). The nodes learn of
// each other from these reports, which every node sends each period, empty or not; a node that
// hears from no other (NATS unreachable, or alone) counts alone, its quotas those of one node.

// QuotaSubject is the NATS subject of the read nodes' quota reports.
const QuotaSubject = "publisher.quota"

const (
	// DefaultQuotaPeriod is how often the nodes report to each other. A client can be
	// admitted that much ahead of the others' reports, within its share.
	DefaultQuotaPeriod = 100 * time.Millisecond
	// quotaPeerTimeout is how long a node that stopped reporting still counts as one.
	quotaPeerTimeout = 10 // periods

	quotaReportVersion = 1
	quotaRecordSize    = 1 + 16 + 4 // policy, client, count
	quotaHeaderSize    = 1 + 16 + 8 + 1
	quotaMaxRecords    = 32 << 10 // records per message: about 670 KB
	maxQuotaPeers      = 64       // read nodes one node shares with, at most
)

// membership is what a node knows of the others: how many nodes share the quotas, this one's
// rank among them (which takes the remainder of a split), and up to which period each reported.
type membership struct {
	n, rank int
	every   int64 // the period's length, ns
	offset  int64 // added to the limiters' clock to give Unix time in ns, the periods' origin
	// reported is, for each other live node, the last period whose report it finished.
	reported []int64
}

// period is the sharing period of the limiters' time now.
func (m *membership) period(now int64) int64 { return (now + m.offset) / m.every }

// periodEnd is the limiters' time at which period ends.
func (m *membership) periodEnd(period int64) int64 { return (period+1)*m.every - m.offset }

// late counts, over the other nodes, the periods before period whose reports have not arrived.
func (m *membership) late(period int64) int64 {
	var n int64
	for _, r := range m.reported {
		n += min(max(period-1-r, 0), quotaPeerTimeout)
	}
	return n
}

// quotaShare exchanges one server's quota counts with the other read nodes.
type quotaShare struct {
	s        *Server
	nc       *nats.Conn
	every    time.Duration
	id       [16]byte
	policies [3]*policy // by their index in a report

	mu     sync.Mutex
	peers  map[[16]byte]*peer
	closed bool // no membership is given to the limiters any more
}

type peer struct {
	seen     int64 // limiters' time of its last report
	reported int64 // last period whose report it finished
}

// ShareQuotas shares this server's quotas with the other read nodes connected to nc until ctx
// ends: with n nodes behind any balancer, a client gets its quota across all of them, not n
// times it. Requests never wait for NATS; when it is unreachable, the node counts alone. every
// is the reporting period; zero means DefaultQuotaPeriod.
func (s *Server) ShareQuotas(ctx context.Context, nc *nats.Conn, every time.Duration) error {
	if every <= 0 {
		every = DefaultQuotaPeriod
	}
	q := &quotaShare{s: s, nc: nc, every: every, peers: make(map[[16]byte]*peer),
		policies: [3]*policy{s.ipQuota, s.keyQuota, s.redirectQuota}}
	if _, err := rand.Read(q.id[:]); err != nil {
		return err
	}
	sub, err := nc.Subscribe(QuotaSubject, q.receive)
	if err != nil {
		return fmt.Errorf("share quotas: %w", err)
	}
	defer func() {
		_ = sub.Unsubscribe()
		q.mu.Lock()
		q.closed = true
		q.publishMembership(nil) // alone again
		q.mu.Unlock()
		for _, p := range q.policies {
			if p != nil {
				p.lim.stopSharing()
			}
		}
	}()
	for {
		// Reports go out just after each period ends, on every node at once: periods are counted
		// in Unix time, on the limiters' clock, and the nodes' clocks must agree to well within a
		// period (NTP keeps them within milliseconds).
		now := q.clock()
		period := now / int64(every)
		t := time.NewTimer(time.Duration((period+1)*int64(every) - now + int64(time.Millisecond)))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
		q.report(q.clock()/int64(every) - 1)
	}
}

// clock is the limiters' time in Unix nanoseconds: the periods' clock.
func (q *quotaShare) clock() int64 { return q.s.elapsed() + q.s.epoch.UnixNano() }

// report publishes what this node admitted since its last report, as the report of period, in
// messages of at most quotaMaxRecords records, the last marked final.
func (q *quotaShare) report(period int64) {
	var records []byte
	for i, p := range q.policies {
		if p != nil {
			records = p.lim.report(records, byte(i))
		}
	}
	for {
		n := min(len(records), quotaMaxRecords*quotaRecordSize)
		msg := make([]byte, 0, quotaHeaderSize+n)
		msg = append(msg, quotaReportVersion)
		msg = append(msg, q.id[:]...)
		msg = binary.BigEndian.AppendUint64(msg, uint64(period))
		final := n == len(records)
		if final {
			msg = append(msg, 1)
		} else {
			msg = append(msg, 0)
		}
		msg = append(msg, records[:n]...)
		if err := q.nc.Publish(QuotaSubject, msg); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
			q.s.logger.Debug("quota report not sent", "err", err)
		}
		records = records[n:]
		if final {
			break
		}
	}
	q.expire()
}

// receive charges another node's report to this node's limiters.
func (q *quotaShare) receive(msg *nats.Msg) {
	d := msg.Data
	if len(d) < quotaHeaderSize || d[0] != quotaReportVersion || (len(d)-quotaHeaderSize)%quotaRecordSize != 0 {
		return
	}
	var id [16]byte
	copy(id[:], d[1:17])
	if id == q.id {
		return
	}
	period := int64(binary.BigEndian.Uint64(d[17:25]))
	final := d[25] == 1
	now := q.s.elapsed()
	// A report of a period far from this node's is not one of a node sharing its clock (or it is
	// forged): it would make that node look never late.
	if current := q.clock() / int64(q.every); period < current-quotaPeerTimeout || period > current+2 {
		return
	}
	q.mu.Lock()
	p := q.peers[id]
	joined := p == nil
	if joined && len(q.peers) >= maxQuotaPeers {
		q.mu.Unlock()
		return // one node too many: its counts are not charged either
	}
	if joined {
		p = &peer{reported: period - 1}
		q.peers[id] = p
	}
	p.seen = now
	q.mu.Unlock()
	for r := d[quotaHeaderSize:]; len(r) >= quotaRecordSize; r = r[quotaRecordSize:] {
		i := int(r[0])
		if i >= len(q.policies) || q.policies[i] == nil {
			continue
		}
		var k clientKey
		copy(k[:], r[1:17])
		q.policies[i].lim.charge(k, int64(binary.BigEndian.Uint32(r[17:21])), now)
	}
	if final { // only once its counts are charged is the node no longer late
		q.mu.Lock()
		p.reported = max(p.reported, period)
		q.mu.Unlock()
	}
	q.update()
	if joined {
		q.s.logger.Info("quotas shared with another read node", "nodes", q.nodes())
	}
}

// expire forgets the nodes that stopped reporting.
func (q *quotaShare) expire() {
	now := q.s.elapsed()
	q.mu.Lock()
	left := 0
	for id, p := range q.peers {
		if now-p.seen > quotaPeerTimeout*int64(q.every) {
			delete(q.peers, id)
			left++
		}
	}
	q.mu.Unlock()
	if left > 0 {
		q.s.logger.Warn("read nodes stopped reporting their quota counts", "left", left, "nodes", q.nodes())
	}
	q.update()
}

func (q *quotaShare) nodes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return 1 + len(q.peers)
}

// update gives the limiters the current membership.
func (q *quotaShare) update() {
	q.mu.Lock()
	defer q.mu.Unlock() // held while storing: a later update is never overwritten by an earlier one
	if q.closed {
		return
	}
	ids := [][16]byte{q.id}
	var reported []int64
	for id, p := range q.peers {
		ids = append(ids, id)
		reported = append(reported, p.reported)
	}
	slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
	q.publishMembership(&membership{
		n: len(ids), rank: slices.Index(ids, q.id), every: int64(q.every),
		offset: q.s.epoch.UnixNano(), reported: reported,
	})
}

func (q *quotaShare) publishMembership(m *membership) {
	for _, p := range q.policies {
		if p != nil {
			p.lim.nodes.Store(m)
		}
	}
}
