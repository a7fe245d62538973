// Package servicekeys issues and checks the keys trusted backends use on the service API
// (Authorization: Bearer tgk_…). A key is shown once, when it is made; only its SHA-256
// is stored.
package servicekeys

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Prefix starts every key, so that a key is recognisable in a secret scanner or a config.
const Prefix = "tgk_"

// touchEvery spaces the writes of last_used_at: a busy key must not cost a write per request.
const touchEvery = time.Minute

var (
	// ErrUnknown is a key that was never made, or was revoked.
	ErrUnknown = errors.New("unknown or revoked service key")
	// ErrNameTaken is a name another key already has.
	ErrNameTaken = errors.New("a service key of that name exists")
)

// Key is a service key as listed: never the key itself.
type Key struct {
	Name       string
	Prefix     string
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

// Keys works on the service_keys table.
type Keys struct {
	db      *db.DB
	now     func() time.Time
	checked checkedKeys
}

// New returns Keys over d.
func New(d *db.DB) *Keys { return &Keys{db: d, now: func() time.Time { return time.Now().UTC() }} }

// Create makes a key named name and returns it: the only time it is ever shown.
func (k *Keys) Create(ctx context.Context, name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" || len(name) > 100 {
		return "", errors.New("a key needs a name of 1 to 100 characters")
	}
	var b [32]byte
	rand.Read(b[:])
	key := Prefix + base64.RawURLEncoding.EncodeToString(b[:]) // 43 characters after the prefix
	q := dbq.New(k.db)
	keys, err := q.ListServiceKeys(ctx)
	if err != nil {
		return "", err
	}
	for _, existing := range keys {
		if existing.Name == name {
			return "", fmt.Errorf("%w: %q", ErrNameTaken, name)
		}
	}
	err = q.CreateServiceKey(ctx, dbq.CreateServiceKeyParams{Name: name, Prefix: key[:len(Prefix)+6], KeyHash: hash(key), Now: k.now()})
	return key, err
}

// List is every key, by name.
func (k *Keys) List(ctx context.Context) ([]Key, error) {
	rows, err := dbq.New(k.db).ListServiceKeys(ctx)
	if err != nil {
		return nil, err
	}
	keys := make([]Key, 0, len(rows))
	for _, r := range rows {
		key := Key{Name: r.Name, Prefix: r.Prefix, CreatedAt: r.CreatedAt.UTC()}
		if r.LastUsedAt.Valid {
			t := r.LastUsedAt.Time.UTC()
			key.LastUsedAt = &t
		}
		keys = append(keys, key)
	}
	return keys, nil
}

// Revoke removes the key named name; it stops working at once.
func (k *Keys) Revoke(ctx context.Context, name string) error {
	n, err := dbq.New(k.db).DeleteServiceKey(ctx, name)
	k.checked.forget()
	if err == nil && n == 0 {
		return fmt.Errorf("%w: no key is named %q", ErrUnknown, name)
	}
	return err
}

// Check returns the name of the key, or ErrUnknown. It records the use (at most once a
// minute per key). Comparison is by SHA-256 lookup: the stored hash never leaves the
// database and the key is never stored. While ListenForChanges runs, a key found is kept
// in memory until its use is due to be recorded again (checkedKeys).
func (k *Keys) Check(ctx context.Context, key string) (string, error) {
	if !strings.HasPrefix(key, Prefix) {
		return "", ErrUnknown
	}
	if found, ok := k.checked.get(key, k.now()); ok {
		return found.name, nil
	}
	generation := k.checked.begin()
	ctx, cancel := k.db.Bound(ctx)
	defer cancel()
	q := dbq.New(k.db)
	found, err := q.FindServiceKey(ctx, hash(key))
	if errors.Is(err, sql.ErrNoRows) {
		k.db.Answered()
		return "", ErrUnknown
	}
	if err != nil {
		return "", k.db.Report(ctx, err)
	}
	now := k.now()
	touched := found.LastUsedAt.Time
	if !found.LastUsedAt.Valid || now.Sub(touched) >= touchEvery {
		if err := q.TouchServiceKey(ctx, dbq.TouchServiceKeyParams{ID: found.ID, Now: sql.NullTime{Time: now, Valid: true}}); err != nil {
			return "", k.db.Report(ctx, err)
		}
		touched = now
	}
	k.db.Answered()
	k.checked.keep(generation, key, checkedKey{name: found.Name, touched: touched})
	return found.Name, nil
}

func hash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}
