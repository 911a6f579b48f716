package destination

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
)

// registration is the body of a destination's registration: every type's fields, flat, as
// scripts write them. "url" is AMQP's secret URL or NATS's plain one; "password" is Kafka's SASL
// password (beside "sasl") or NATS's user's.
type registration struct {
	Type           string   `json:"type"`
	Establishments []string `json:"establishments"`
	Start          string   `json:"start"`
	ContentMode    string   `json:"content_mode"`

	Brokers []string          `json:"brokers"`
	Topic   string            `json:"topic"`
	SASL    *registrationSASL `json:"sasl"`

	URL          string `json:"url"`
	Exchange     string `json:"exchange"`
	ExchangeType string `json:"exchange_type"`
	RoutingKey   string `json:"routing_key"`

	SubjectPrefix string `json:"subject_prefix"`
	JetStream     bool   `json:"jetstream"`
	User          string `json:"user"`
	Password      string `json:"password"`
	Token         string `json:"token"`
	Creds         string `json:"creds"`
	NKeySeed      string `json:"nkey_seed"`

	DSN   string `json:"dsn"`
	Table string `json:"table"`

	TLS *registrationTLS `json:"tls"`
}

// registrationSASL and registrationTLS are the objects of a registration, read as strictly as
// the registration, a refused member named under its object ("tls.ca"), not bare.
type (
	registrationSASL struct {
		Mechanism string `json:"mechanism"`
		Username  string `json:"username"`
		Password  string `json:"password"`
	}
	registrationTLS struct {
		CA         string `json:"ca_pem"`
		ServerName string `json:"server_name"`
		Cert       string `json:"cert_pem"`
		Key        string `json:"key_pem"`
	}
)

func (s *registrationSASL) UnmarshalJSON(b []byte) error {
	type fields registrationSASL
	return strictObject(b, (*fields)(s), "sasl")
}

func (t *registrationTLS) UnmarshalJSON(b []byte) error {
	type fields registrationTLS
	return strictObject(b, (*fields)(t), "tls")
}

// strictObject decodes the object b into v, refusing unknown members, and names a refused member
// under name.
func strictObject(b []byte, v any, name string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		fe, _ := errors.AsType[*FieldError](bodyError(err))
		if fe.Field == "body" {
			return refuse(name, "want a JSON object")
		}
		return refuse(name+"."+fe.Field, "%s", fe.Reason)
	}
	return nil
}

// ParseRegistration reads a registration body strictly (an unknown field is refused) and
// validates it: the destination's Spec and its Secrets, or a *FieldError naming the field.
func ParseRegistration(body []byte) (Spec, Secrets, error) {
	var in registration
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return Spec{}, Secrets{}, bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return Spec{}, Secrets{}, refuse("body", "one JSON object, nothing after it")
	}
	spec := Spec{
		Type: in.Type, Establishments: in.Establishments, Start: in.Start, ContentMode: in.ContentMode,
		Brokers: in.Brokers, Topic: in.Topic,
		Exchange: in.Exchange, ExchangeType: in.ExchangeType, RoutingKey: in.RoutingKey,
		SubjectPrefix: in.SubjectPrefix, JetStream: in.JetStream, User: in.User, Table: in.Table,
	}
	sec := Secrets{DSN: in.DSN, Token: in.Token, Creds: in.Creds, NKeySeed: in.NKeySeed, Password: in.Password}
	switch in.Type {
	case TypeAMQP:
		sec.URL = in.URL
	case TypeNATS:
		spec.URL = in.URL
	}
	if in.URL != "" && in.Type != TypeAMQP && in.Type != TypeNATS {
		return Spec{}, Secrets{}, refuse("url", "not a field of type %q", in.Type)
	}
	if in.SASL != nil {
		if in.Password != "" {
			return Spec{}, Secrets{}, refuse("password", "Kafka's password goes in sasl.password")
		}
		spec.SASL = &SASL{Mechanism: in.SASL.Mechanism, Username: in.SASL.Username}
		sec.Password = in.SASL.Password
	}
	if in.TLS != nil {
		spec.TLS = &TLS{CA: in.TLS.CA, ServerName: in.TLS.ServerName, Cert: in.TLS.Cert}
		sec.TLSKey = in.TLS.Key
	}
	if err := checkOtherTypes(in); err != nil {
		return Spec{}, Secrets{}, err
	}
	if err := spec.Validate(sec); err != nil {
		return Spec{}, Secrets{}, err
	}
	return spec, sec, nil
}

// checkOtherTypes refuses the fields of another broker's type than in's.
func checkOtherTypes(in registration) error {
	fields := map[string][]struct {
		name string
		set  bool
	}{
		TypeKafka:    {{"brokers", len(in.Brokers) > 0}, {"topic", in.Topic != ""}, {"sasl", in.SASL != nil}},
		TypeAMQP:     {{"exchange", in.Exchange != ""}, {"exchange_type", in.ExchangeType != ""}, {"routing_key", in.RoutingKey != ""}},
		TypeNATS:     {{"subject_prefix", in.SubjectPrefix != ""}, {"jetstream", in.JetStream}, {"user", in.User != ""}, {"token", in.Token != ""}, {"creds", in.Creds != ""}, {"nkey_seed", in.NKeySeed != ""}},
		TypePostgres: {{"dsn", in.DSN != ""}, {"table", in.Table != ""}},
	}
	if _, known := fields[in.Type]; !known {
		return refuse("type", "must be one of %s", strings.Join(Types, ", "))
	}
	for typ, fs := range fields {
		if typ == in.Type {
			continue
		}
		for _, f := range fs {
			if f.set {
				return refuse(f.name, "not a field of type %q", in.Type)
			}
		}
	}
	if in.Password != "" && in.Type != TypeNATS {
		return refuse("password", "not a field of type %q", in.Type)
	}
	return nil
}

// bodyError names what is wrong with a body that does not decode.
func bodyError(err error) error {
	if fe, ok := errors.AsType[*FieldError](err); ok {
		return fe // an object's own refusal, already named
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return refuse("body", "want a JSON object")
		}
		return refuse(te.Field, "want %s", te.Type)
	}
	if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if name := strings.Trim(field, `"`); name != "" {
			return refuse(name, "unknown field")
		}
		return refuse(field, "unknown field")
	}
	return refuse("body", "not a JSON object: %v", err)
}
