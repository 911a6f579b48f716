package webhook

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/nats-io/nats.go/jetstream"
)

// Signing secrets are encrypted at rest twice over. Each secret has a data key of its own, under
// which the endpoint record holds it; the data key is kept, encrypted with a master key that never
// enters NATS, in SecretKeysStream, in one message written once. Removing an endpoint (or
// dropping a rotated-out secret) erases that message in place, so that no copy of the record,
// however long the store keeps it, can be read again, even with the master key.

// secretKeyLen is the length of master and data keys: AES-256.
const secretKeyLen = 32

// dataKeyCacheSize bounds the data keys a process keeps decrypted in memory.
const dataKeyCacheSize = 4096

// MasterKeys are the keys that encrypt signing secrets' data keys: the first encrypts, every one
// decrypts, so that a new key can be put first while records written under the previous one are
// re-encrypted (see Registry.Reencrypt).
type MasterKeys struct {
	keys []masterKey
}

type masterKey struct {
	id   string // the first bytes of the key's SHA-256, in hex: names it without revealing it
	aead cipher.AEAD
}

// ParseMasterKeys reads master keys, one per line, each 32 bytes in standard base64; blank lines
// and lines starting with # are skipped. The first key is the one that encrypts.
func ParseMasterKeys(text []byte) (*MasterKeys, error) {
	var mk MasterKeys
	for n, line := range strings.Split(string(text), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(line)
		if err != nil || len(raw) != secretKeyLen {
			return nil, fmt.Errorf("master key on line %d: want %d bytes in standard base64", n+1, secretKeyLen)
		}
		aead, err := newAEAD(raw)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(raw)
		mk.keys = append(mk.keys, masterKey{id: hex.EncodeToString(sum[:6]), aead: aead})
	}
	if len(mk.keys) == 0 {
		return nil, errors.New("no master key")
	}
	return &mk, nil
}

// NewMasterKey returns a new random master key in the form ParseMasterKeys reads.
func NewMasterKey() string {
	return base64.StdEncoding.EncodeToString(randomBytes(secretKeyLen))
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return b
}

// seal encrypts plain with aead, bound to aad: nonce and ciphertext, in base64.
func seal(aead cipher.AEAD, plain, aad []byte) string {
	nonce := randomBytes(aead.NonceSize())
	return base64.RawStdEncoding.EncodeToString(aead.Seal(nonce, nonce, plain, aad))
}

func unseal(aead cipher.AEAD, sealed string, aad []byte) ([]byte, error) {
	raw, err := base64.RawStdEncoding.DecodeString(sealed)
	if err != nil || len(raw) < aead.NonceSize() {
		return nil, errors.New("malformed")
	}
	return aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], aad)
}

// wrap encrypts a data key with the current master key: "<key id>.<sealed>".
func (mk *MasterKeys) wrap(dataKey []byte, name string) []byte {
	k := mk.keys[0]
	return []byte(k.id + "." + seal(k.aead, dataKey, []byte(name)))
}

// unwrap decrypts a wrapped data key, and says whether a newer master key than the one it was
// wrapped with exists.
func (mk *MasterKeys) unwrap(wrapped []byte, name string) (dataKey []byte, stale bool, err error) {
	id, sealed, ok := bytes.Cut(wrapped, []byte("."))
	if !ok {
		return nil, false, errors.New("malformed data key")
	}
	for i, k := range mk.keys {
		if k.id == string(id) {
			dk, err := unseal(k.aead, string(sealed), []byte(name))
			if err != nil {
				return nil, false, fmt.Errorf("data key %s: does not decrypt with master key %s", name, k.id)
			}
			return dk, i > 0, nil
		}
	}
	return nil, false, fmt.Errorf("data key %s: encrypted with master key %s, which is not configured", name, id)
}

// vault seals signing secrets under data keys it keeps in the stream SecretKeysStream.
type vault struct {
	master *MasterKeys
	js     jetstream.JetStream
	stream jetstream.Stream
	cache  *lru.Cache[string, []byte]
}

// SecretKeysStream holds the data keys of signing secrets, each encrypted with a master key, one
// subject per data key. Unlike a KV bucket's, its messages can be erased.
const SecretKeysStream = "WEBHOOK_KEYS"

const subjDataKey = "webhook_keys."

func openVault(ctx context.Context, js jetstream.JetStream, master *MasterKeys, replicas int) (*vault, error) {
	stream, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        SecretKeysStream,
		Description: "Data keys of webhook signing secrets, each encrypted with a master key kept outside NATS.",
		Subjects:    []string{subjDataKey + ">"},
		Retention:   jetstream.LimitsPolicy,
		// Two: a data key re-encrypted under a new master key keeps its previous message until it
		// is erased.
		MaxMsgsPerSubject: 2,
		Storage:           jetstream.FileStorage,
		Replicas:          replicas,
		// No direct gets: a replica behind its leader could answer that a key just stored is
		// not there.
	})
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", SecretKeysStream, err)
	}
	cache, err := lru.New[string, []byte](dataKeyCacheSize)
	if err != nil {
		return nil, err
	}
	return &vault{master: master, js: js, stream: stream, cache: cache}, nil
}

// get returns the latest message of the data key name.
func (v *vault) get(ctx context.Context, name string) (*jetstream.RawStreamMsg, error) {
	msg, err := v.stream.GetLastMsgForSubject(ctx, subjDataKey+name)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, fmt.Errorf("data key %s: erased", name)
	}
	if err != nil {
		return nil, fmt.Errorf("data key %s: %w", name, err)
	}
	return msg, nil
}

// seal stores a new data key for one secret of the endpoint under endpointKey and returns the
// secret sealed with it.
func (v *vault) seal(ctx context.Context, endpointKey, secret string) (signingSecret, error) {
	name := endpointKey + "." + hex.EncodeToString(randomBytes(8))
	dk := randomBytes(secretKeyLen)
	if _, err := v.js.Publish(ctx, subjDataKey+name, v.master.wrap(dk, name), jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
		return signingSecret{}, fmt.Errorf("store data key: %w", err)
	}
	aead, err := newAEAD(dk)
	if err != nil {
		return signingSecret{}, err
	}
	v.cache.Add(name, dk)
	return signingSecret{DataKey: name, Sealed: seal(aead, []byte(secret), []byte(endpointKey))}, nil
}

// open returns the signing key of s, a secret of the endpoint under endpointKey.
func (v *vault) open(ctx context.Context, endpointKey string, s signingSecret) ([]byte, error) {
	if s.DataKey == "" {
		return parseSecret(s.Value) // written before secrets were encrypted
	}
	dk, ok := v.cache.Get(s.DataKey)
	if !ok {
		msg, err := v.get(ctx, s.DataKey)
		if err != nil {
			return nil, err
		}
		if dk, _, err = v.master.unwrap(msg.Data, s.DataKey); err != nil {
			return nil, err
		}
		v.cache.Add(s.DataKey, dk)
	}
	aead, err := newAEAD(dk)
	if err != nil {
		return nil, err
	}
	secret, err := unseal(aead, s.Sealed, []byte(endpointKey))
	if err != nil {
		return nil, fmt.Errorf("secret under data key %s: does not decrypt", s.DataKey)
	}
	return parseSecret(string(secret))
}

// erase overwrites the messages of the named data keys in the store: the secrets sealed with
// them cannot be read again. A key already erased is no error.
func (v *vault) erase(ctx context.Context, names ...string) error {
	var errs []error
	for _, name := range names {
		if name == "" {
			continue
		}
		v.cache.Remove(name)
		for range 3 { // the data key's message and, after a re-encryption, the one before
			msg, err := v.stream.GetLastMsgForSubject(ctx, subjDataKey+name)
			if errors.Is(err, jetstream.ErrMsgNotFound) {
				break
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("erase data key %s: %w", name, err))
				break
			}
			if err := v.stream.SecureDeleteMsg(ctx, msg.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
				errs = append(errs, fmt.Errorf("erase data key %s: %w", name, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// rewrap re-encrypts the data key name under the current master key when an older one encrypts
// it, and erases its previous message. It says whether it did.
func (v *vault) rewrap(ctx context.Context, name string) (bool, error) {
	msg, err := v.get(ctx, name)
	if err != nil {
		return false, err
	}
	dk, stale, err := v.master.unwrap(msg.Data, name)
	if err != nil || !stale {
		return false, err
	}
	if _, err := v.js.Publish(ctx, subjDataKey+name, v.master.wrap(dk, name), jetstream.WithExpectLastSequencePerSubject(msg.Sequence)); err != nil {
		return false, err
	}
	if err := v.stream.SecureDeleteMsg(ctx, msg.Sequence); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false, err
	}
	return true, nil
}

// eraseOrphans erases the data keys that no name in used refers to and that were stored before
// cutoff, and returns how many it erased.
func (v *vault) eraseOrphans(ctx context.Context, used map[string]bool, cutoff time.Time) (int, error) {
	info, err := v.stream.Info(ctx, jetstream.WithSubjectFilter(subjDataKey+">"))
	if err != nil {
		return 0, err
	}
	erased := 0
	for subject := range info.State.Subjects {
		name := strings.TrimPrefix(subject, subjDataKey)
		if used[name] {
			continue
		}
		msg, err := v.stream.GetLastMsgForSubject(ctx, subject)
		if err != nil || msg.Time.After(cutoff) {
			continue
		}
		if err := v.erase(ctx, name); err != nil {
			return erased, err
		}
		erased++
	}
	return erased, nil
}

// Seal encrypts plain with the current master key, bound to label, for a store that keeps a
// secret in a record of its own (a broker destination's credentials): "<key id>.<sealed>".
// Open reverses it.
func (mk *MasterKeys) Seal(plain []byte, label string) []byte { return mk.wrap(plain, label) }

// Open decrypts what Seal returned for label, and says whether a newer master key than the one
// it was sealed with exists: the caller seals it again under the newest.
func (mk *MasterKeys) Open(sealed []byte, label string) (plain []byte, stale bool, err error) {
	return mk.unwrap(sealed, label)
}
