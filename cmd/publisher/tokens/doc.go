// Package tokens keeps the admin API's scoped credentials: tokens the platform creates, each with
// a name, an expiry and a scope (Platform: everything; Read: the admin API's reads and the
// changes feed; Establishment: the API settings of a list of establishments). A token is 256 random bits
// after its id ("tok_<hex>.<secret>"), shown once when created: the bucket TOKENS holds its
// SHA-256 hash only, and a presented token is compared with it in constant time. Each key of the
// bucket expires a week after its token does, so that the bucket holds at most MaxTokens tokens
// without anyone sweeping it.
//
// Verify serves the admin API's every request: it reads a token's record once and keeps it in a
// bounded cache for at most a minute, and Watch, run once per process, drops a record from the
// cache as soon as any process revokes it. A revoked or expired token is refused at once on the
// process that revoked it, within a watch delivery (a millisecond) on the others.
//
// It imports app (for the actor that created a token and the kinds of its refusals) and domain.
package tokens
