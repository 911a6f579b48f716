// Package usage is the read API's use per key, as the settings page shows it: the report each
// read node publishes of it, and the Reader that sums the reports of every node over the key
// quota's window.
//
// # The report
//
// Every period (a second by default) each read node publishes on Subject what each API key did
// on it since its last report: the requests counted against the key's quota, the 304s and the
// 429s answered to a request with that key. A key is named as the per-key quota names it, by the
// first 16 bytes of the SHA-256 of the key, never by the key. A node publishes even when no key
// was used, so that a reader learns the quota and window the nodes count with.
//
// The report has its own subject rather than a new version of the quota reports the read nodes
// exchange (readapi.QuotaSubject): those are sent every 100 ms and read by every read node, and
// only while quotas are shared over an external NATS, where use is counted by every node, alone
// or not, for readers that are not read nodes. A read node of an older version neither sends nor
// reads this subject, so it cannot misread a report. The first byte is the format's version; a
// reader ignores a report of a version it does not know, as it ignores a malformed one.
//
// # The reader
//
// A Reader holds one subscription per process, whatever the number of establishments, and keeps
// for each key the counts of the last window (the key quota's, an hour by default) in a sliding
// window of 60 buckets (a minute each for an hour): a count leaves the sum once its bucket is a
// whole window old, so that the sum covers between 59/60 of the window and all of it, and never
// a count older than the window. The counts are what happened in that time, not the quota's
// state: the quota refills continuously, one request every window/quota, which is also the
// longest a 429's Retry-After asks to wait on a node alone, so a key may have been served up to
// twice its quota within one window (a burst at its start, then every refill) without a single
// 429. Requests reaching Quota within the window means only that a burst now could be refused.
//
// The table holds at most Config.MaxKeys keys (16384 by default, about 13 MB when full). A key
// whose counts all left the window is deleted as others are added. At the bound, a new key takes
// the place of a sampled key with nothing left in the window or else of the sampled key whose
// last count is the oldest: that key's counts are lost, so its page shows less than was used,
// and a warning is logged at most once a minute.
//
// It imports the standard library and nats.go only, so that any process with a NATS connection
// can read the use, a read node in it or not; the read API imports it to write the reports.
package usage
