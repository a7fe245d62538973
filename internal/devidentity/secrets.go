package devidentity

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"math/big"
	"net/mail"
	"strconv"
	"strings"
)

// Passwords are stored as PBKDF2-SHA256, "pbkdf2-sha256$iterations$salt$key" (base64): a
// development database may still be copied around, so no password is kept readable. Tests
// lower the cost (Settings.PasswordIterations); the stored hash names its own.
func (e *Emulator) hashPassword(password string) string {
	if password == "" {
		return ""
	}
	salt := make([]byte, 16)
	rand.Read(salt)
	key, _ := pbkdf2.Key(sha256.New, password, salt, e.PasswordIterations, 32)
	enc := base64.RawStdEncoding.EncodeToString
	return fmt.Sprintf("pbkdf2-sha256$%d$%s$%s", e.PasswordIterations, enc(salt), enc(key))
}

func (u User) passwordIs(password string) bool {
	parts := strings.Split(u.PasswordHash, "$")
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

// normaliseEmail is the address in lower case, or an error a person can act on.
func normaliseEmail(raw string) (string, error) {
	email := strings.ToLower(strings.TrimSpace(raw))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email {
		return "", fmt.Errorf("%q is not an e-mail address", raw)
	}
	return email, nil
}

// tokenHash is what an e-mailed link carries for a code: sha224(email+code)
// (crypto.GenerateTokenHash).
func tokenHash(email, code string) string {
	sum := sha256.Sum224([]byte(email + code))
	return hex.EncodeToString(sum[:])
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func sixDigits() string {
	n, _ := rand.Int(rand.Reader, big.NewInt(1_000_000))
	return fmt.Sprintf("%06d", n.Int64())
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
