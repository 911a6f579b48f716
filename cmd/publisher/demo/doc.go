// Package demo loads the sample establishment of `publisher serve --demo` and prints the requests
// that show it: the keyed API, the redirects, the uploaded files and the admin API.
//
// Load goes through the application layer as the admin API would: it dates the daily menu today
// and tomorrow, whatever the date, uploads a generated PDF as the unified card and generated
// images as the pages of one menu (so that the redirects land on files the service serves), imports
// the establishment, regenerates its key when an earlier run imported it already (keys are shown
// once), and waits until the change is served before printing anything.
//
// PDF and PNG make the small documents it uploads; the end-to-end tests upload them too.
//
// It imports the application layer and domain, nothing of NATS or of the process's roles.
package demo
