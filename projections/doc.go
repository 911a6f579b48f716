// Package projections renders the documents the read API serves: one dockey.Bundle per
// establishment, holding every rendered response body with its entity tag and the small access
// record (status, API key hash, redirect targets) that decides 401, 404 and 302.
// The invariants it keeps with the other packages are listed under "Architecture and invariants"
// in the repository's README.
//
// It is the pure part of projection. Render is a function from an establishment aggregate and a
// revision to a bundle: no clock, no randomness, no I/O, the same bytes for the same input.
// RenderWith renders once for every revision (a Rendering, stamped with Rendering.Bundle), and
// Next (NextOver) and NextSummaryOver decide, from the BundleSummary of the stored bundle alone (revision,
// access fields, a digest and the entity tag of each document), whether a new rendering is
// stored and at which revision, and which resources it changed. Compress adds the gzip coding of
// each document. The runner in projections/runner applies the log's records to the aggregates,
// calls these and stores what they decide.
//
// It imports the standard library, domain, projections/dockey, xxhash, goccy/go-json (encoding
// the documents) and klauspost/compress; not events, nor anything of NATS, nor its runner.
// Rendering never reads the time of day: the calendar enters as domain.DayStarted events, and
// the next day to render ahead as domain.DayAhead events.
//
// # Invariants
//
//   - Documents are a pure function of the aggregate and the revision, so of the log: rebuilding
//     into an empty bucket reproduces the same bytes.
//   - content_revision never goes back and is the same in every document of a bundle. It rises
//     exactly when the bytes of at least one document change, compared with both stamped at the
//     same revision. The new revision is max(stream sequence of the record, stored revision + 1),
//     and above the revision of a stored day ahead (below); a recorded day whose documents are
//     its day ahead's takes that one's revision. A change of access fields only (status, API
//     enabled, key, redirect setting) rewrites the bundle with its revision unchanged; an event
//     that changes nothing public writes nothing. At start-up, content equal to what the bucket
//     holds keeps the stored revision, and different content (a changed renderer, a bucket ahead
//     of the log) takes max(replayed revision, stored revision + 1), and above a stored day
//     ahead's revision unless its documents are that day's, so that a restart or an upgrade
//     never goes back nor names two contents with one revision. A rebuild into an empty bucket
//     gives every establishment the sequence of its last visible change.
//   - A bundle is one KV value, so a reader switches all documents of an establishment at once.
//     It is stored with dockey.EncodeBundle, which keeps every body byte for byte: the read API
//     serves the stored bytes and the entity tag computed here.
//
// # Decisions on what the specification leaves open
//
//   - The documents of the specification's resources are compact JSON in the field order of its
//     tables, UTF-8 and the characters <, > and & written as they are, no trailing newline. Every
//     "T | null" key is present; arrays are never null. category repeats public_category.
//     language is always "fr".
//   - Menu resources have three variants: no locale (French text, every file), fr (French text,
//     files fr and fr_en) and en (English text falling back to French field by field, files en
//     and fr_en). A menu type exists only with web delivery and a current version on the
//     establishment's recorded date; otherwise it is absent from the list, the details and the
//     redirects. Menu types follow their position, sections their position, items their order;
//     an uploaded menu has no sections.
//   - business_hours are ordered by weekday, lundi first, then opening time. The establishment's
//     own summary is used when it has one that is not blank; otherwise Summary generates one in
//     French (its documentation gives the format), and there is none without ranges.
//     special_hours_coming keeps an exception until its last day has passed, by start date.
//   - An entity tag is strong: the 64-bit xxhash of the body as 16 lower-case hex digits, in
//     double quotes. Each variant has its own.
//   - The /r/menus target per locale is the first page of the first file whose scope is exactly
//     that locale, else of the first fr_en file, else none (404). Redirect and master menu
//     targets are percent-encoded outside printable ASCII so that they fit a Location header.
//   - A bundle larger than the runner's limit (runner.Config.MaxValueSize) is not stored: the
//     error is logged and the previous bundle stays. Other write failures are retried with
//     backoff until the context ends.
//   - Update.Resources (and so runner.Change.Resources) lists "establishment", "hours", "menus",
//     then "menus/<slug>" by slug for every menu detail that changed, appeared or disappeared, then
//     "jsonld".
//   - The JSON-LD resource is a schema.org document in French and in English (jsonld.go holds
//     the mapping). Unlike the others it carries no content_revision, not a schema.org term: its
//     bytes change only with the content, and the bundle's revision with them. It is written with
//     <, > and & escaped, so that it can be pasted into an HTML script element as it is. Nothing
//     in it is null; a blank text is left out. Prices are taken as euros: nothing gives
//     them a currency. A wine shop is a LiquorStore, a caterer a FoodEstablishment, a retail
//     store a Store; those that are no FoodEstablishment, which alone have menus in schema.org,
//     list theirs under subjectOf. A rotating menu covers the period of its reference date
//     (temporalCoverage), and its url is the file /r/menus redirects to in the document's
//     language.
//   - An establishment whose next local day is prepared (domain.DayAhead) has the bundle of that
//     day stored beside its current one, under dockey.AheadKey, with a revision above the
//     current one (NextAhead): the read API serves it from the instant the day starts, as long
//     as the current bundle is the one it was rendered beside. The day-started event that
//     follows gives the current bundle those documents at that revision (NextOver), announced
//     then like any change of content. No day ahead is stored for an establishment that is not
//     served, or whose documents on the next day are its current ones.
//   - An establishment is served (Served) when it is active with its API enabled: otherwise the
//     read API answers 404 for it. A bundle that stops or starts being served without a rise of a
//     public bundle's revision (its API disabled or enabled, a move back to draft) announces a
//     transition (Update.Transition), listing every resource it had or has, so that a platform
//     following every establishment learns it; a change of content that also starts or stops
//     serving it lists them all too. A new key or redirect setting announces nothing.
package projections
