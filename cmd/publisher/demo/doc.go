// Package demo loads the sample establishment of `publisher serve --demo` and prints the requests
// that show it: the keyed API, the redirects, the uploaded files and the admin API.
//
// Load goes through the application layer as the admin API would, and only into an empty store:
// it dates the daily menu today and tomorrow, whatever the date, uploads a generated PDF as the
// unified card and generated images as the pages of one menu (so that the redirects land on files
// the service serves), imports the establishment, keeps the key the import issued in a file only
// its owner reads, and waits until the change is served before printing anything. A store that
// holds establishments already is the user's, edits of the sample included: Load leaves it as it
// is and prints the requests again with the key it kept, when that key still opens the sample's
// API (the log holds only its hash), and otherwise how to get a new one.
//
// PDF and PNG make the small documents it uploads; the end-to-end tests upload them too.
//
// It imports the application layer, domain and secretfile, nothing of NATS or of the process's
// roles.
package demo
