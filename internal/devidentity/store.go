package devidentity

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Store keeps the emulator's users: in memory for tests (MemoryStore), in tollgate's
// database for the development service (dbStore). Everything else the emulator knows,
// sessions, refresh tokens, e-mailed secrets and PKCE flows, lives in the memory of the
// process that issued it.
type Store interface {
	// UserByEmail and UserByPhone give a copy of the user, or ErrNoUser.
	UserByEmail(ctx context.Context, email string) (User, error)
	UserByPhone(ctx context.Context, phone string) (User, error)
	UserByID(ctx context.Context, id string) (User, error)
	// AddUser stores a new user; ErrEmailTaken when the address (or phone) has one.
	AddUser(ctx context.Context, u User) error
	// SaveUser stores a user's password, confirmation and metadata.
	SaveUser(ctx context.Context, u User) error
}

// User is one account of the emulator.
type User struct {
	ID, Email, Phone string
	PasswordHash     string // see hashPassword; "" signs in only by code or link
	Provider         string // email, or the OAuth provider that made it
	Confirmed        bool
	Metadata         map[string]any
	CreatedAt        time.Time
}

var (
	// ErrNoUser: no user has that address, phone or id.
	ErrNoUser = errors.New("no such user")
	// ErrEmailTaken: a user has that address or phone.
	ErrEmailTaken = errors.New("a user has that address")
)

// MemoryStore keeps users in memory, for tests.
type MemoryStore struct {
	mu   sync.Mutex
	byID map[string]User
}

// NewMemoryStore is an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{byID: map[string]User{}} }

func (m *MemoryStore) find(match func(User) bool) (User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.byID {
		if match(u) {
			return u, nil
		}
	}
	return User{}, ErrNoUser
}

// UserByEmail finds the user with that address.
func (m *MemoryStore) UserByEmail(_ context.Context, email string) (User, error) {
	return m.find(func(u User) bool { return email != "" && u.Email == email })
}

// UserByPhone finds the user with that phone number.
func (m *MemoryStore) UserByPhone(_ context.Context, phone string) (User, error) {
	return m.find(func(u User) bool { return phone != "" && u.Phone == phone })
}

// UserByID finds the user with that id.
func (m *MemoryStore) UserByID(_ context.Context, id string) (User, error) {
	return m.find(func(u User) bool { return u.ID == id })
}

// AddUser stores u unless its address or phone is taken.
func (m *MemoryStore) AddUser(_ context.Context, u User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, other := range m.byID {
		if u.Email != "" && other.Email == u.Email || u.Phone != "" && other.Phone == u.Phone {
			return ErrEmailTaken
		}
	}
	m.byID[u.ID] = u
	return nil
}

// SaveUser replaces the stored user of u's id.
func (m *MemoryStore) SaveUser(_ context.Context, u User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.byID[u.ID]; !ok {
		return ErrNoUser
	}
	m.byID[u.ID] = u
	return nil
}
