// Package settings is the establishment administrator's API settings page: a server-rendered
// HTML page, served on the admin listener under Path, that one establishment's administrator
// reaches through a one-time login link the platform creates (CreateLink), without any admin token.
//
// A login link is 256 random bits, shown once in its URL: the bucket SETTINGS_LINKS holds its
// SHA-256 hash with the establishment, the link's id (lnk_…), the name it was made for and who
// made it, and forgets it after LinkLifetime. Its URL answers a page whose button posts the
// secret back (a GET, which link previews send and another site can make a browser send, uses
// nothing); that POST deletes the record, expecting its revision, so that of two openings, on any
// processes, one wins and the other is answered 410. The winner gets a session, any session the
// browser had ends, and it is redirected to the page, the secret gone from the address. A
// session is another 256 random bits in a cookie (HttpOnly, SameSite=Strict, Secure and named
// with the __Host- prefix over HTTPS): the bucket SETTINGS_SESSIONS holds its hash with the
// establishment, the actor every command from the page is given with (the link's id and name)
// and the token its forms carry, and forgets it SessionLifetime after the link was opened. A
// session is one key-value get per request: no goroutine, timer or consumer per link or session.
//
// Every change is a POST form that works without JavaScript, refused with 403 when the browser
// says it comes from another origin (http.CrossOriginProtection) or when its token is not the
// session's (compared in constant time). A key or a webhook secret is shown only in the answer
// to the POST that made it; every answer is no-store, under a strict Content-Security-Policy,
// but the page's styles and script, embedded and served under their content's hash, which are
// kept a year.
// The page speaks French, or English when the visitor's switch or Accept-Language asks for it,
// from one message table per language.
//
// It imports app (the commands, their actor and their refusals' kinds) and domain; the webhook
// deliveries and the use of the API come through app.Deliveries and Config.Usage.
package settings
