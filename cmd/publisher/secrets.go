package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// secretsBucket holds webhook signing secrets, keyed by endpoint id, outside the event log.
const secretsBucket = "WEBHOOK_SECRETS"

type kvSecrets struct{ kv jetstream.KeyValue }

func openSecrets(ctx context.Context, js jetstream.JetStream, replicas int) (*kvSecrets, error) {
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: secretsBucket, History: 5, Storage: jetstream.FileStorage, Replicas: replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", secretsBucket, err)
	}
	return &kvSecrets{kv: kv}, nil
}

func (s *kvSecrets) Register(ctx context.Context, slug, id, url, secret string) error {
	b, err := json.Marshal(struct {
		Establishment string `json:"establishment"`
		URL           string `json:"url"`
		Secret        string `json:"secret"`
	}{slug, url, secret})
	if err != nil {
		return err
	}
	if _, err := s.kv.Put(ctx, id, b); err != nil {
		return fmt.Errorf("store secret of %s: %w", id, err)
	}
	return nil
}

func (s *kvSecrets) Remove(ctx context.Context, _, id string) error {
	if err := s.kv.Delete(ctx, id); err != nil {
		return fmt.Errorf("delete secret of %s: %w", id, err)
	}
	return nil
}
