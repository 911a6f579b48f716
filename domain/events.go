package domain

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event is a fact about one establishment. Its wire type string never changes when the Go
// name does.
type Event interface {
	EventType() string
}

// Wire type strings of the events.
const (
	TypeEstablishmentCreated = "establishment.created"
	TypeIdentityChanged      = "establishment.identity_changed"
	TypeTimeZoneChanged      = "establishment.timezone_changed"
	TypeHoursChanged         = "establishment.hours_changed"
	TypeSpecialHoursChanged  = "establishment.special_hours_changed"
	TypeMasterMenuChanged    = "establishment.master_menu_changed"
	TypeActivated            = "establishment.activated"
	TypePublicAPIEnabled     = "public_api.enabled"
	TypePublicAPIDisabled    = "public_api.disabled"
	TypeAPIKeyRegenerated    = "api_key.regenerated"
	TypeMenuRedirectChanged  = "menu_redirect.changed"
	TypeMenuTypeDefined      = "menu_type.defined"
	TypeMenuTypeRemoved      = "menu_type.removed"
	TypeMenuVersionPublished = "menu_version.published"
	TypeMenuVersionWithdrawn = "menu_version.withdrawn"
	TypeWebhookRegistered    = "webhook_endpoint.registered"
	TypeWebhookRemoved       = "webhook_endpoint.removed"
	TypeDayStarted           = "day.started"
	TypeDayAhead             = "day.ahead"
)

// SchemaVersion is the payload schema version of every event type written by this code.
const SchemaVersion = 1

// EstablishmentCreated starts an establishment's history, in draft status with the API disabled.
type EstablishmentCreated struct {
	Slug     Slug   `json:"slug"`
	TimeZone string `json:"timezone"`
}

// IdentityChanged replaces the whole identity.
type IdentityChanged struct {
	Identity Identity `json:"identity"`
}

// TimeZoneChanged sets the IANA time zone that decides the establishment's local date.
type TimeZoneChanged struct {
	TimeZone string `json:"timezone"`
}

// HoursChanged replaces the regular schedule and its summary.
type HoursChanged struct {
	Hours Hours `json:"hours"`
}

// SpecialHoursChanged replaces the list of exceptional hours.
type SpecialHoursChanged struct {
	SpecialHours []SpecialHours `json:"special_hours"`
}

// MasterMenuChanged sets or clears the unified card file.
type MasterMenuChanged struct {
	URL *string `json:"url"`
}

// Activated moves the establishment from draft to active.
type Activated struct{}

// PublicAPIEnabled turns the API on with a new key, of which only the hash is kept.
type PublicAPIEnabled struct {
	KeyHash string `json:"key_hash"`
}

// PublicAPIDisabled turns the API off; the key is forgotten.
type PublicAPIDisabled struct{}

// APIKeyRegenerated replaces the key; the previous one stops working.
type APIKeyRegenerated struct {
	KeyHash string `json:"key_hash"`
}

// MenuRedirectChanged sets menu_redirect_enabled.
type MenuRedirectChanged struct {
	Enabled bool `json:"enabled"`
}

// MenuTypeDefined creates a menu type or replaces its attributes; its versions are kept.
type MenuTypeDefined struct {
	MenuType MenuTypeAttrs `json:"menu_type"`
}

// MenuTypeRemoved deletes a menu type and its versions.
type MenuTypeRemoved struct {
	MenuType Slug `json:"menu_type"`
}

// MenuVersionPublished adds a version to a menu type, or replaces the version with the same id
// in place.
type MenuVersionPublished struct {
	MenuType Slug        `json:"menu_type"`
	Version  MenuVersion `json:"version"`
}

// MenuVersionWithdrawn removes a version from a menu type.
type MenuVersionWithdrawn struct {
	MenuType Slug `json:"menu_type"`
	Version  Slug `json:"version"`
}

// WebhookRegistered added a change-signal receiver, when the log listed them; nothing records it
// now, and it changes nothing of the establishment.
type WebhookRegistered struct {
	Endpoint WebhookEndpoint `json:"endpoint"`
}

// WebhookRemoved removed a change-signal receiver, when the log listed them; nothing records it
// now, and it changes nothing of the establishment.
type WebhookRemoved struct {
	ID string `json:"id"`
}

// DayStarted records that the establishment's local date became Date. It is how the calendar
// enters the log, so that rendering stays a pure function of the events.
type DayStarted struct {
	Date LocalDate `json:"date"`
}

// DayAhead records that the establishment's next local date, Date, starts at the instant Starts
// (its local midnight), so that its documents for that day are rendered before it and served
// from that instant. The day itself is still recorded by the DayStarted event that follows.
type DayAhead struct {
	Date   LocalDate `json:"date"`
	Starts time.Time `json:"starts"`
}

func (EstablishmentCreated) EventType() string { return TypeEstablishmentCreated }
func (IdentityChanged) EventType() string      { return TypeIdentityChanged }
func (TimeZoneChanged) EventType() string      { return TypeTimeZoneChanged }
func (HoursChanged) EventType() string         { return TypeHoursChanged }
func (SpecialHoursChanged) EventType() string  { return TypeSpecialHoursChanged }
func (MasterMenuChanged) EventType() string    { return TypeMasterMenuChanged }
func (Activated) EventType() string            { return TypeActivated }
func (PublicAPIEnabled) EventType() string     { return TypePublicAPIEnabled }
func (PublicAPIDisabled) EventType() string    { return TypePublicAPIDisabled }
func (APIKeyRegenerated) EventType() string    { return TypeAPIKeyRegenerated }
func (MenuRedirectChanged) EventType() string  { return TypeMenuRedirectChanged }
func (MenuTypeDefined) EventType() string      { return TypeMenuTypeDefined }
func (MenuTypeRemoved) EventType() string      { return TypeMenuTypeRemoved }
func (MenuVersionPublished) EventType() string { return TypeMenuVersionPublished }
func (MenuVersionWithdrawn) EventType() string { return TypeMenuVersionWithdrawn }
func (WebhookRegistered) EventType() string    { return TypeWebhookRegistered }
func (WebhookRemoved) EventType() string       { return TypeWebhookRemoved }
func (DayStarted) EventType() string           { return TypeDayStarted }
func (DayAhead) EventType() string             { return TypeDayAhead }

// EncodeEvent returns the wire payload of e.
func EncodeEvent(e Event) ([]byte, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", e.EventType(), err)
	}
	return b, nil
}

// DecodeEvent reads a payload of the given wire type and schema version, and refuses an event
// whose values fail CheckEvent.
func DecodeEvent(typ string, schema int, payload []byte) (Event, error) {
	return DecodeEventWith(typ, schema, payload, json.Unmarshal)
}

// DecodeEventWith is DecodeEvent with unmarshal in place of encoding/json.Unmarshal: a faster
// implementation of its semantics, for a reader of the whole log.
func DecodeEventWith(typ string, schema int, payload []byte, unmarshal func([]byte, any) error) (Event, error) {
	if schema != SchemaVersion {
		return nil, fmt.Errorf("decode %s: unknown schema version %d", typ, schema)
	}
	var e Event
	switch typ {
	case TypeEstablishmentCreated:
		e = decodeInto[EstablishmentCreated](payload, unmarshal)
	case TypeIdentityChanged:
		e = decodeInto[IdentityChanged](payload, unmarshal)
	case TypeTimeZoneChanged:
		e = decodeInto[TimeZoneChanged](payload, unmarshal)
	case TypeHoursChanged:
		e = decodeInto[HoursChanged](payload, unmarshal)
	case TypeSpecialHoursChanged:
		e = decodeInto[SpecialHoursChanged](payload, unmarshal)
	case TypeMasterMenuChanged:
		e = decodeInto[MasterMenuChanged](payload, unmarshal)
	case TypeActivated:
		e = decodeInto[Activated](payload, unmarshal)
	case TypePublicAPIEnabled:
		e = decodeInto[PublicAPIEnabled](payload, unmarshal)
	case TypePublicAPIDisabled:
		e = decodeInto[PublicAPIDisabled](payload, unmarshal)
	case TypeAPIKeyRegenerated:
		e = decodeInto[APIKeyRegenerated](payload, unmarshal)
	case TypeMenuRedirectChanged:
		e = decodeInto[MenuRedirectChanged](payload, unmarshal)
	case TypeMenuTypeDefined:
		e = decodeInto[MenuTypeDefined](payload, unmarshal)
	case TypeMenuTypeRemoved:
		e = decodeInto[MenuTypeRemoved](payload, unmarshal)
	case TypeMenuVersionPublished:
		e = decodeInto[MenuVersionPublished](payload, unmarshal)
	case TypeMenuVersionWithdrawn:
		e = decodeInto[MenuVersionWithdrawn](payload, unmarshal)
	case TypeWebhookRegistered:
		e = decodeInto[WebhookRegistered](payload, unmarshal)
	case TypeWebhookRemoved:
		e = decodeInto[WebhookRemoved](payload, unmarshal)
	case TypeDayStarted:
		e = decodeInto[DayStarted](payload, unmarshal)
	case TypeDayAhead:
		e = decodeInto[DayAhead](payload, unmarshal)
	default:
		return nil, fmt.Errorf("decode: unknown event type %q", typ)
	}
	if d, ok := e.(decodeFailure); ok {
		return nil, fmt.Errorf("decode %s: %w", typ, d.err)
	}
	if err := CheckEvent(e); err != nil {
		return nil, fmt.Errorf("decode %s: invalid: %w", typ, err)
	}
	return e, nil
}

// decodeFailure carries a payload error through decodeInto's Event result.
type decodeFailure struct{ err error }

func (decodeFailure) EventType() string { return "" }

func decodeInto[T Event](payload []byte, unmarshal func([]byte, any) error) Event {
	var v T
	if err := unmarshal(payload, &v); err != nil {
		return decodeFailure{err}
	}
	return v
}
