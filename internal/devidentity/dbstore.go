package devidentity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"database/sql"
	"encoding/pem"
	"errors"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// dbStore keeps the development service's users in tollgate's database, so that user ids
// (and the billing links made to them) survive a restart. Every user it holds is
// confirmed, signs in with e-mail, and has no phone or metadata: the development service
// confirms at once and offers neither phones nor OAuth.
type dbStore struct{ db *db.DB }

func userOf(r dbq.DevIdentityUser) User {
	return User{ID: r.ID, Email: r.Email, PasswordHash: r.PasswordHash, Provider: "email", Confirmed: true,
		Metadata: map[string]any{}, CreatedAt: r.CreatedAt}
}

func (s dbStore) UserByEmail(ctx context.Context, email string) (User, error) {
	r, err := dbq.New(s.db).DevIdentityUserByEmail(ctx, email)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrNoUser
	}
	return userOf(r), err
}

func (s dbStore) UserByPhone(context.Context, string) (User, error) { return User{}, ErrNoUser }

func (s dbStore) UserByID(ctx context.Context, id string) (User, error) {
	r, err := dbq.New(s.db).DevIdentityUserByID(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrNoUser
	}
	return userOf(r), err
}

func (s dbStore) AddUser(ctx context.Context, u User) error {
	n, err := dbq.New(s.db).AddDevIdentityUser(ctx, dbq.AddDevIdentityUserParams{ID: u.ID, Email: u.Email, PasswordHash: u.PasswordHash, Now: u.CreatedAt})
	if err == nil && n == 0 {
		return ErrEmailTaken
	}
	return err
}

func (s dbStore) SaveUser(ctx context.Context, u User) error {
	return dbq.New(s.db).SetDevIdentityPassword(ctx, dbq.SetDevIdentityPasswordParams{ID: u.ID, PasswordHash: u.PasswordHash})
}

// loadKey reads the signing key, making one if there is none. Two processes starting at
// once may both make one; both then use the oldest.
func loadKey(ctx context.Context, d *db.DB, now time.Time) (*ecdsa.PrivateKey, string, error) {
	q := dbq.New(d)
	row, err := q.DevIdentityKey(ctx)
	if errors.Is(err, sql.ErrNoRows) {
		if err := addKey(ctx, q, now); err != nil {
			return nil, "", err
		}
		row, err = q.DevIdentityKey(ctx)
	}
	if err != nil {
		return nil, "", err
	}
	block, _ := pem.Decode([]byte(row.PrivateKey))
	if block == nil {
		return nil, "", errors.New("the stored signing key is not PEM")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	key, ok := parsed.(*ecdsa.PrivateKey)
	if err != nil || !ok {
		return nil, "", errors.New("the stored signing key is not an ECDSA key")
	}
	return key, row.Kid, nil
}

func addKey(ctx context.Context, q *dbq.Queries, now time.Time) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	encoded := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return q.AddDevIdentityKey(ctx, dbq.AddDevIdentityKeyParams{Kid: "dev-" + randomHex(8), PrivateKey: string(encoded), Now: now.UTC()})
}
