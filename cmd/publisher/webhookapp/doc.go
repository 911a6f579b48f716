// Package webhookapp is the webhook dispatcher as the application layer sees it: the registry of
// endpoints behind the write side's webhook commands (Registry), and the endpoints' states and
// the delivery log behind the operator's views (Deliveries).
//
// The application layer does not import the dispatcher: it declares what it needs, with results
// of its own. This package gives it those, converted field for field so that the admin API
// answers them as the dispatcher's own would be, byte for byte, and gives every error the
// dispatcher returns its kind (invalid, not found, conflict, declined) from one table, so that
// the admin API maps it to a status without knowing the dispatcher's sentinels.
//
// It imports webhook, the application layer and domain; nothing of the process's other roles.
package webhookapp
