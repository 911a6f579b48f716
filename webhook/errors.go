package webhook

import "errors"

var (
	// ErrInvalidEndpoint reports a registration the registry refuses: a malformed establishment,
	// endpoint id or URL, or a URL that is not https. The message names the field.
	ErrInvalidEndpoint = errors.New("webhook: invalid endpoint")

	// ErrRefusedAddress reports a receiver that is, or resolves to, a loopback, private,
	// link-local, metadata or otherwise non-public address that the configuration does not allow.
	// Registration refuses it, and so does every connection attempt.
	ErrRefusedAddress = errors.New("webhook: refused address")

	// ErrInvalidSecret reports a signing secret that is not "whsec_" followed by the standard
	// base64 encoding of 24 to 64 bytes, or a rotation grace period out of bounds.
	ErrInvalidSecret = errors.New("webhook: invalid secret")

	// ErrResolverUnavailable reports a receiver host whose addresses could not be looked up for
	// a reason other than the name not existing (a DNS timeout or server failure): registration
	// may succeed later.
	ErrResolverUnavailable = errors.New("webhook: resolver unavailable")

	// ErrEndpointNotFound reports an endpoint id that is not registered for the establishment.
	ErrEndpointNotFound = errors.New("webhook: endpoint not found")

	// ErrEndpointDisabled reports an operation that needs an enabled endpoint.
	ErrEndpointDisabled = errors.New("webhook: endpoint disabled")

	// ErrDeliveryNotFound reports a delivery id absent from the delivery log.
	ErrDeliveryNotFound = errors.New("webhook: delivery not found")

	// ErrDeliveryInProgress reports a redelivery asked for a delivery that is still pending or
	// retrying.
	ErrDeliveryInProgress = errors.New("webhook: delivery in progress")
)
