package devidentity

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

var (
	errNoUser     = errors.New("no such user")
	errEmailTaken = errors.New("a user has that address")
)

type user struct {
	ID, Email, passwordHash string
	CreatedAt               time.Time
}

func userOf(r dbq.DevIdentityUser) user {
	return user{ID: r.ID, Email: r.Email, passwordHash: r.PasswordHash, CreatedAt: r.CreatedAt}
}

func (s *Service) userByEmail(ctx context.Context, email string) (user, error) {
	r, err := dbq.New(s.db).DevIdentityUserByEmail(ctx, email)
	if errors.Is(err, sql.ErrNoRows) {
		return user{}, errNoUser
	}
	return userOf(r), err
}

func (s *Service) userByID(ctx context.Context, id string) (user, error) {
	r, err := dbq.New(s.db).DevIdentityUserByID(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return user{}, errNoUser
	}
	return userOf(r), err
}

// addUser creates a confirmed user; an empty password makes one that cannot sign in with
// a password until it sets one. errEmailTaken when the address has a user.
func (s *Service) addUser(ctx context.Context, email, password string) (user, error) {
	hash := ""
	if password != "" {
		hash = hashPassword(password)
	}
	u := user{ID: newUUID(), Email: email, passwordHash: hash, CreatedAt: s.now().UTC()}
	n, err := dbq.New(s.db).AddDevIdentityUser(ctx, dbq.AddDevIdentityUserParams{ID: u.ID, Email: email, PasswordHash: hash, Now: u.CreatedAt})
	if err != nil {
		return user{}, err
	}
	if n == 0 {
		return user{}, errEmailTaken
	}
	s.log.Info("development identity service: user created", "email", email, "user_id", u.ID)
	return u, nil
}

func (s *Service) setPassword(ctx context.Context, u user, password string) error {
	return dbq.New(s.db).SetDevIdentityPassword(ctx, dbq.SetDevIdentityPasswordParams{ID: u.ID, PasswordHash: hashPassword(password)})
}

// normaliseEmail is the address in lower case, or an error a person can act on.
func normaliseEmail(raw string) (string, error) {
	email := strings.ToLower(strings.TrimSpace(raw))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		return "", fmt.Errorf("%q is not an e-mail address", raw)
	}
	return email, nil
}

// Passwords are stored as PBKDF2-SHA256, "pbkdf2-sha256$iterations$salt$key" (base64): a
// development database may still be copied around, so no password is kept readable.
const passwordIterations = 100_000

func hashPassword(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	key, _ := pbkdf2.Key(sha256.New, password, salt, passwordIterations, 32)
	enc := base64.RawStdEncoding.EncodeToString
	return fmt.Sprintf("pbkdf2-sha256$%d$%s$%s", passwordIterations, enc(salt), enc(key))
}

func (u user) passwordIs(password string) bool {
	parts := strings.Split(u.passwordHash, "$")
	if len(parts) != 4 || parts[0] != "pbkdf2-sha256" {
		return false
	}
	iterations, err := strconv.Atoi(parts[1])
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[2])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[3])
	if err != nil || err1 != nil || err2 != nil || iterations < 1 {
		return false
	}
	got, err := pbkdf2.Key(sha256.New, password, salt, iterations, len(want))
	return err == nil && subtle.ConstantTimeCompare(got, want) == 1
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

func newUUID() string {
	b := make([]byte, 16)
	rand.Read(b)
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
