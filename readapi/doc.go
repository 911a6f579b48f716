// Package readapi serves the public read API (the four /api/v1 endpoints of the specification
// and the establishment's schema.org JSON-LD, /api/v1/establishments/:slug/jsonld) and the two file
// redirects (/r/master_menu, /r/menus) from documents it did not make. The invariants it keeps
// with the other packages, the auth order and the quota order, are listed under "Architecture and
// invariants" in the repository's README, and detailed below.
//
// # What it owns
//
// A Mirror keeps an in-memory copy of the dockey.Bucket KV bucket with a watcher: the initial
// values, published at once when the watcher reports it has caught up (Ready), then every live
// update. Each value is one dockey.Bundle, the whole public state of one establishment, decoded
// and validated once when it arrives into an immutable entry with its response headers pre-built.
//
// A Server routes requests (httprouter, one routes function), enforces the request quotas,
// checks the API key, maps failures to the specification's status codes and constant JSON error
// bodies, and writes the stored documents. It also answers the probes /healthz and /readyz and,
// when asked, logs one line per request. NewHTTPServer gives the http.Server settings every
// listener uses.
//
// # Imports
//
// The standard library, nats.go and its jetstream package, httprouter, projections/dockey, the
// key layout and record shared with the projector, and its own subpackages: openapi (the
// description), apidocs (the reference page), coding (gzip negotiation) and usage (the report
// of each key's use). Never domain,
// events or rendering code. The quota limiter is our own (limiter.go), not
// golang.org/x/time/rate: it needs one timestamp per client, a bounded table and no allocation.
//
// # Invariants
//
//   - Served bytes are the stored bytes: a success body is the Body of a dockey.Document, written
//     as it is with the ETag rendered beside it. No JSON is encoded while answering, and no NATS
//     round trip or domain logic happens on a request.
//   - Reads are consistent per establishment: its entry is replaced in one atomic store, so a
//     request never mixes documents or access fields of two revisions.
//   - content_revision never goes backwards: a bundle with a lower revision than the one held is
//     logged and ignored, also after the establishment was deleted from the bucket. An equal
//     revision is applied (an access change, such as a regenerated key, keeps the revision).
//   - A value that cannot be decoded, names another slug, or would make a wrong answer (missing
//     document of a served establishment, malformed ETag, key hash or redirect URL) is logged and
//     skipped; the establishment's previous bundle stays in service.
//   - The success path, 304 included, allocates nothing with the quotas on: header values are
//     shared pre-built slices (the RateLimit and Retry-After values of a policy are built on
//     first use and kept), the query is scanned in place, the key is hashed on the stack, a
//     known client's quota state is one map entry updated in place (a new client may grow its
//     shard's map, up to the table's bound). Two exceptions: a quota whose
//     refill interval exceeds 36 hours formats its RateLimit value for each answer, and the
//     access log, when on, costs what slog costs.
//
// # Decisions on what the specification leaves open
//
//   - Compression: a document whose bundle carries a gzip coding smaller than its body is sent
//     gzip-encoded to a client whose Accept-Encoding accepts gzip (q above zero, or "*"). The
//     coding was made when the bundle was written, never per request. Each coding has its own
//     strong ETag (the identity tag with "-gzip" inside the quotes), If-None-Match matches either
//     (the content is the same) and a 304 names the coding that would be sent. Such documents
//     carry Vary: Accept-Encoding.
//   - The OpenAPI description is served at /openapi.json and /openapi.yaml, with no key, no quota
//     and Cache-Control public; the reference page that renders it at /docs, its files under
//     /docs/, with no key and no quota either.
//   - Auth order: a missing or empty X-Api-Key is 401; then an invalid slug (decided
//     before any lookup), an unknown slug, a status other than active, or a disabled API is 404;
//     then a key whose SHA-256 is not the establishment's key hash is 401 (constant-time compare).
//     A key opens only its own establishment. An invalid or unknown menu type is then 404.
//   - locale: for the menu list and detail, absent selects the all-assets variant, "en" the
//     English one, and "fr" or any other value, empty included, the French one; never an error.
//     The establishment and hours endpoints ignore it; the JSON-LD is English for "en" and French
//     otherwise, absent included. Its value is read as url.Values.Get would.
//   - The JSON-LD answers application/ld+json, under the same key, quotas, entity tags, gzip and
//     Content-Revision as the other documents. A bundle stored before it was rendered has none:
//     the resource is then 404, counted against the key, until the projector stores it again.
//   - Redirects need no key. Both answer 404 with the JSON error body for an invalid, unknown or
//     non-active establishment or a missing establishment parameter. /r/master_menu serves an
//     active establishment whatever its API and redirect settings and is 404 without a unified
//     file. /r/menus is 404 when menu redirects are off, the menu type is unknown, or no file
//     covers the locale; a locale other than "en", or none, means fr. A 302 has no body.
//   - /files/<name> serves the uploaded file named "sha256-<hex>" (a FileSource holds them) with
//     its Content-Type, its name as a strong ETag, Cache-Control public for a year and immutable,
//     X-Content-Type-Options nosniff, ranges and 304, as http.ServeContent does. No key: files are
//     public in image tags. An unknown or malformed name is a 404 counted, like the redirects,
//     against the per-address redirect quota; a stored file counts against nothing. Files up to
//     an eighth of the cache's bound are kept in memory, least recently served out first; the
//     others stream from the source as they are sent.
//   - Every route answers GET and HEAD (HEAD as GET without the body). Another method on a known
//     path is 405 with Allow: GET, HEAD and {"error":"Method not allowed"}; an unknown path is 404
//     {"error":"Not found"}. Paths are matched exactly: no redirect for a trailing slash or case.
//   - If-None-Match (RFC 9110): "*" or a matching entity tag in the list gives a 304 with the ETag
//     and no body. The comparison is the weak one the RFC prescribes for If-None-Match; the tags
//     served are strong.
//   - Caching: a document and its 304 carry Cache-Control "private, no-cache" (the request
//     carried a key, so no shared cache may store the answer; a private one must revalidate each
//     use) and Content-Revision, the content_revision of the establishment, so that a client can
//     read it without parsing. Every error answer, and the probes, carry Cache-Control no-store:
//     a 404 turns into a 200 when an establishment is activated, and a 429 lasts seconds.
//   - A panic in a handler is logged and answered 500 {"error":"Internal server error"}.
//   - Probes: GET /healthz is 200 {"status":"ok"} while the process serves HTTP; GET /readyz is
//     200 {"status":"ok"} once the mirror is Ready (it holds every bundle the bucket held when it
//     started watching) and 503 {"error":"Not ready"} before. Neither needs a key nor counts
//     against a quota.
//   - Access log (Config.AccessLog, off by default): one line per request when its answer is
//     written, message "request", with method, path, query, status, body bytes, duration,
//     client address (as the quotas see it) and the establishment slug named by the path or the
//     establishment parameter (empty when none is valid). Request headers are never logged, so
//     neither is the API key. Probes are logged at Debug, everything else at Info.
//
// # Quotas
//
// The specification sets 120 requests per hour per key and 500 per hour per client address on
// the API, 429 {"error":"Rate limit exceeded"} beyond, and leaves the window open. Quotas, window
// and table bounds are Config fields; the defaults are the specification's.
//
//   - Window: each quota is a generic cell rate algorithm (GCRA), the exact form of a token
//     bucket, with one timestamp per client. A client may spend its whole quota at once and gets
//     one request back every window/quota (30 s per key, 7.2 s per address), continuously, up to
//     the whole quota, which is back at most one window after its last admitted request: after
//     120 requests at once a key gets its 121st 30 s later, and 120 again an hour later. Precisely,
//     the requests admitted in any period of length d number at most quota + d/(window/quota):
//     the long-run rate never exceeds quota per window, and one hour-long window can hold at most
//     twice the quota minus one (a full burst at its start, then every refill). A refused request
//     costs nothing. Intervals are whole nanoseconds, window/quota rounded down.
//   - What counts, in this order: every API request counts against the address's
//     quota first, whatever its outcome, 401, 404, 405 and a path under /api/ that matches no
//     route included, so a key cannot be guessed faster than 500 tries an hour per address; a
//     refused one goes no further. Then, once the key is known valid, the request counts against
//     the key's quota, except when it is answered 304: revalidating costs only the address's
//     quota. A request with a valid key for a menu type that does not exist counts like any
//     other. A refused request answers 429 without looking at the document.
//   - Redirects count against a third quota per address (Config.RedirectQuota, 500 per hour by
//     default), apart from the API's: they need no key and are cheap, but a flood of them is
//     still refused, and a website's visitors do not spend the quota of its backend.
//   - Clients: a key is counted by its SHA-256 (its first 128 bits), so a regenerated key starts
//     with a full quota. An address is an IPv4 address or an IPv6 /64 prefix, the block one host
//     or household gets, so rotating through one prefix gives no extra quota. The address is the
//     connection's peer, unless the peer is in Config.TrustedProxies: then X-Forwarded-For is
//     read from its right end and the first hop that is not a trusted proxy is the client (every
//     field line is one list; entries left of the client are its own claims and never read;
//     an element that is not an address, with or without a port, ends the walk at the last
//     trusted hop). With no trusted proxies, X-Forwarded-For is ignored. Requests whose peer
//     address cannot be read (a listener that is not TCP) share one quota.
//   - State: each quota keeps its clients in memory on this node, in 64 mutex-guarded shards
//     chosen by a seeded hash; each request is one map lookup and update. Quotas are per node:
//     behind a load balancer over n replicas a client may get up to n times its quota.
//   - Memory: a client whose quota is full again is the same as an absent one; each new client
//     deletes such expired entries among a few it samples, so a table holds two to three times
//     the clients whose quota is not full (a client with one request is one interval in that
//     state, one that spent it all a window). A table never holds more than Config.MaxClients
//     clients, rounded up to a multiple of 64 (262144 by default, about 13 MB per quota when
//     full). At that cap, a new client reuses an expired entry among a sample of 8, or else
//     evicts the sampled client closest to a full quota, which starts afresh when it comes back:
//     a flood of distinct addresses can make the service forget some clients early (it fails
//     open for them, never closed for a newcomer), and a warning is logged at most once a minute
//     while that happens.
//   - Header fields (draft-ietf-httpapi-ratelimit-headers): every API answer, 200, 304, 401,
//     404, 405 and 429, carries RateLimit-Policy, the quotas that apply, such as
//     `"ip";q=500;w=3600, "key";q=120;w=3600`, and RateLimit, the state of the more restrictive
//     of the two after this request, such as `"key";r=119;t=30`: r requests may be made at once,
//     and t seconds (rounded up) until one more is available, which on a 429 is the wait. Before
//     the key is known valid only the address's state applies. A 429 also carries Retry-After,
//     the seconds to wait. A redirect carries these fields only on its 429, with
//     RateLimit-Policy `"redirect";q=500;w=3600`: a RateLimit field on a 302 could make a client
//     wait before following it. A quota set negative is off and absent from the fields; with
//     both API quotas off, API answers carry none. The values are kept in a table of at most
//     131072 per quota, so r is capped at what fits (131071 when the refill interval is a second
//     or less, 65535 for two seconds): far above the specification's quotas, and the draft lets
//     a server announce less than it would admit.
//   - The limiters read Config.Now (time.Now by default, monotonic), so tests run them on a
//     fake clock.
//
// # Use per key
//
// While Server.ReportUsage runs (the read role runs it whenever it has NATS, embedded or not,
// shared quotas or not), the per-key quota tallies what each valid key's requests came to: the
// requests counted against its quota, the 304s and the 429s of its quota. The tally is one more
// map update under the shard lock the request already holds, and allocates nothing once the
// key is in the shard's table. Every second the tallies are published on usage.Subject and
// start again from zero; a reader (package usage) sums the nodes' reports over the window for
// the settings page. A 429 of the per-address quota is answered before the key is looked at,
// and counts for no key; a 412 counts for none either. With the per-key quota off, nothing is
// tallied or reported.
package readapi
