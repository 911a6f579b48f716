package readapi

import (
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// Quotas of the specification (its Limits) and the bounds of their tables.
const (
	defaultKeyQuota   = 120
	defaultIPQuota    = 500
	defaultWindow     = time.Hour
	defaultMaxClients = 1 << 18

	// maxFieldTable bounds the number of RateLimit values one policy keeps (a pointer each,
	// the values being built on first use). The specification's quotas need about four
	// thousand each.
	maxFieldTable = 1 << 17

	// evictionReportEvery spaces the warnings about a full limiter table.
	evictionReportEvery = time.Minute
)

// Canonical forms of the quota header fields (draft-ietf-httpapi-ratelimit-headers), so that
// they can index http.Header directly.
const (
	rateLimitPolicyHeader = "Ratelimit-Policy"
	rateLimitHeader       = "Ratelimit"
	retryAfterHeader      = "Retry-After"
)

// policy is one quota as clients see it: its limiter and the header values that describe its
// state. Those values are structured-field strings such as "key";r=119;t=30; every one a policy
// can produce is built on first use and kept, so that answering copies a slice header.
type policy struct {
	name string // the policy's identifier in RateLimit-Policy and RateLimit
	lim  *limiter
	item string // its RateLimit-Policy list member, such as "key";q=120;w=3600
	// field is item alone as a RateLimit-Policy value, for answers that name only this policy.
	field []string

	maxReset     int64                      // longest reset in whole seconds: the interval, rounded up
	maxRemaining int64                      // the most requests left RateLimit reports
	rateLimit    []atomic.Pointer[[]string] // by remaining*maxReset + reset-1; nil without a table
	retryAfter   []atomic.Pointer[[]string] // by seconds-1; nil without a table

	reported atomic.Int64 // clock of the last warning about forgotten clients
}

// newPolicy returns the policy name of quota requests per window, or nil when quota is negative
// (the quota is off). quota must be in [1, window nanoseconds] otherwise.
func newPolicy(name string, quota int, window time.Duration, maxClients int) *policy {
	if quota < 0 {
		return nil
	}
	q, w := int64(quota), int64(window)
	p := &policy{
		name: name,
		lim:  newLimiter(q, w, maxClients),
		item: strconv.Quote(name) + ";q=" + strconv.FormatInt(q, 10) + ";w=" + strconv.FormatInt(w/int64(time.Second), 10),
	}
	p.field = []string{p.item}
	p.maxReset, p.maxRemaining = seconds(p.lim.interval), q
	if p.maxReset <= maxFieldTable {
		// A quota too large for the table reports at most what fits (131071 for an interval of
		// a second or less, 65535 for two): the draft lets a server announce less than it
		// would admit.
		p.maxRemaining = min(q, maxFieldTable/p.maxReset-1)
		p.retryAfter = make([]atomic.Pointer[[]string], p.maxReset)
		p.rateLimit = make([]atomic.Pointer[[]string], (p.maxRemaining+1)*p.maxReset)
	}
	p.reported.Store(math.MinInt64 / 2)
	return p
}

// seconds rounds a positive duration in nanoseconds up to whole seconds, so that a client that
// waits that long is never early.
func seconds(ns int64) int64 {
	return (ns + int64(time.Second) - 1) / int64(time.Second)
}

// rateLimitField returns the RateLimit field value describing d: the requests left, at most
// maxRemaining, and the seconds until one more is available. It allocates only the first time
// a value is needed, or every time for a policy without a table (an interval longer than 36
// hours) or a reset longer than the interval (the clock was set back).
func (p *policy) rateLimitField(d decision) []string {
	r, t := min(d.remaining, p.maxRemaining), seconds(d.reset)
	if p.rateLimit == nil || r < 0 || t < 1 || t > p.maxReset {
		return []string{p.formatRateLimit(r, t)}
	}
	slot := &p.rateLimit[r*p.maxReset+t-1]
	if v := slot.Load(); v != nil {
		return *v
	}
	v := []string{p.formatRateLimit(r, t)}
	slot.Store(&v)
	return v
}

func (p *policy) formatRateLimit(r, t int64) string {
	var buf [96]byte
	b := strconv.AppendQuote(buf[:0], p.name)
	b = append(b, ";r="...)
	b = strconv.AppendInt(b, r, 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, t, 10)
	return string(b)
}

// retryAfterField returns the Retry-After value of a refused request: the seconds to wait.
func (p *policy) retryAfterField(d decision) []string {
	t := seconds(d.reset)
	if t < 1 || t > int64(len(p.retryAfter)) {
		return []string{strconv.FormatInt(max(t, 1), 10)}
	}
	slot := &p.retryAfter[t-1]
	if v := slot.Load(); v != nil {
		return *v
	}
	v := []string{strconv.FormatInt(t, 10)}
	slot.Store(&v)
	return v
}

// moreRestrictive reports whether a leaves the client less room than b: fewer requests left,
// or as few for longer.
func moreRestrictive(a, b decision) bool {
	return a.remaining < b.remaining || a.remaining == b.remaining && a.reset > b.reset
}

// admission is the per-IP outcome of an API request, carried to the per-key step.
type admission struct {
	now   int64    // the request's time on the limiters' clock
	ip    decision // the per-IP decision, when that quota is on
	hasIP bool
}

// admitClient applies the per-IP quota to an API request, whatever its path, key or outcome,
// and sets the quota fields every API answer carries. It answers a refused request with a 429
// itself and returns false.
func (s *Server) admitClient(w http.ResponseWriter, r *http.Request) (admission, bool) {
	if s.apiPolicies == nil {
		return admission{}, true
	}
	h := w.Header()
	h[rateLimitPolicyHeader] = s.apiPolicies
	a := admission{now: s.elapsed()}
	p := s.ipQuota
	if p == nil {
		return a, true
	}
	a.ip, a.hasIP = p.lim.take(ipKey(s.clientIP(r)), a.now), true
	s.reportForgotten(p, a.now)
	h[rateLimitHeader] = p.rateLimitField(a.ip)
	if !a.ip.allowed {
		h[retryAfterHeader] = p.retryAfterField(a.ip)
		s.refusedBy(p)
		writeError(w, r, rateLimited)
		return a, false
	}
	return a, true
}

// keyCharge is what an answer to a request with a valid key costs the key.
type keyCharge uint8

const (
	chargeRequest     keyCharge = iota // counted against the quota: every answer but these two
	chargeNotModified                  // a 304: not counted, only tallied in the key's use
	chargeNothing                      // a 412: neither
)

// chargeKey applies the per-key quota to a request made with the valid key of e. It counts the
// request, or, for a 304 or a 412, only looks at the key's state. The RateLimit field then
// reports the more restrictive of the per-IP and per-key states. A refused request is answered
// with a 429 here, and chargeKey returns false; a look never refuses.
func (s *Server) chargeKey(w http.ResponseWriter, r *http.Request, e *served, a admission, c keyCharge) bool {
	p := s.keyQuota
	if p == nil {
		return true
	}
	k := clientKey(e.keyHash[:len(clientKey{})])
	var d decision
	switch c {
	case chargeRequest:
		d = p.lim.take(k, a.now)
		s.reportForgotten(p, a.now)
	case chargeNotModified:
		d = p.lim.revalidated(k, a.now)
	default:
		d = p.lim.peek(k, a.now)
	}
	h := w.Header()
	if !d.allowed {
		h[rateLimitHeader] = p.rateLimitField(d)
		h[retryAfterHeader] = p.retryAfterField(d)
		s.refusedBy(p)
		writeError(w, r, rateLimited)
		return false
	}
	if !a.hasIP || moreRestrictive(d, a.ip) {
		h[rateLimitHeader] = p.rateLimitField(d)
	}
	return true
}

// admitRedirect applies the per-IP quota of the file redirects. Only a refused request carries
// quota fields: a RateLimit field on a 302 could make a client wait before following it.
func (s *Server) admitRedirect(w http.ResponseWriter, r *http.Request) bool {
	p := s.redirectQuota
	if p == nil {
		return true
	}
	now := s.elapsed()
	d := p.lim.take(ipKey(s.clientIP(r)), now)
	s.reportForgotten(p, now)
	if d.allowed {
		return true
	}
	h := w.Header()
	h[rateLimitPolicyHeader] = p.field
	h[rateLimitHeader] = p.rateLimitField(d)
	h[retryAfterHeader] = p.retryAfterField(d)
	s.refusedBy(p)
	writeError(w, r, rateLimited)
	return false
}

// reportForgotten warns, at most once per evictionReportEvery, that the table of p was full and
// clients were forgotten before their quota refilled: more distinct clients than MaxClients were
// active within one window.
func (s *Server) reportForgotten(p *policy, now int64) {
	if p.lim.evicted.Load() == 0 {
		return
	}
	last := p.reported.Load()
	if now-last < int64(evictionReportEvery) || !p.reported.CompareAndSwap(last, now) {
		return
	}
	s.logger.Warn("quota table full, clients forgotten before their quota refilled",
		"quota", p.name, "forgotten", p.lim.evicted.Swap(0), "capacity", p.lim.capacity())
}
