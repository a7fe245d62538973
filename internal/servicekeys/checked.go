package servicekeys

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// checkedKeys keeps the keys this process has checked, so that a busy backend's requests
// do not each read the database. It keeps them only while the process listens for
// revocations (ListenForChanges): a revocation anywhere notifies tollgate_keys, and every
// listener forgets them all. An entry is also good only until its key's use is due to be
// recorded again (touchEvery): then the next request reads the key anew, which bounds what
// a missed notification can cost to that minute.
//
// It is keyed by the key itself, as the verified-token cache is by the token: only keys
// that exist are kept, and a hit costs no SHA-256.
type checkedKeys struct {
	mu        sync.Mutex
	listening bool
	// generation counts forgetting; a key read while it moved may have been revoked since
	// the read, and is not kept.
	generation uint64
	keys       map[string]checkedKey
}

type checkedKey struct {
	name    string
	touched time.Time // last_used_at as this process last read or wrote it
}

// maxCheckedKeys bounds the cache; keys are few, and when full it starts afresh.
const maxCheckedKeys = 1000

// get is key's entry, when one is kept and still good at now.
func (c *checkedKeys) get(key string, now time.Time) (checkedKey, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	found, ok := c.keys[key]
	if !ok || now.Sub(found.touched) >= touchEvery {
		return checkedKey{}, false
	}
	return found, true
}

// begin is the generation a read of the database starts at, for keep.
func (c *checkedKeys) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.generation
}

// keep remembers a key read at generation, while listening and unless anything was
// forgotten since.
func (c *checkedKeys) keep(generation uint64, key string, found checkedKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.listening || c.generation != generation {
		return
	}
	if c.keys == nil || len(c.keys) >= maxCheckedKeys {
		c.keys = map[string]checkedKey{}
	}
	c.keys[key] = found
}

// forget drops every kept key.
func (c *checkedKeys) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	clear(c.keys)
}

// listen drops every kept key; listening says whether keys may be kept from now on.
func (c *checkedKeys) listen(listening bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.generation++
	c.listening = listening
	clear(c.keys)
}

// ListenForChanges lets Check keep the keys it has checked in memory, forgetting them all
// whenever any process revokes a key (on Postgres when the revocation commits; on SQLite
// within db.PollInterval), until ctx ends. Without it every check reads the database.
// Run it beside the server.
func (k *Keys) ListenForChanges(ctx context.Context, log *slog.Logger) {
	defer k.checked.listen(false)
	// The listener calls with "" once it listens, and again after each reconnection, when
	// what was notified meanwhile is lost: either way, start afresh.
	k.db.Listen(ctx, "tollgate_keys", log, func(string) { k.checked.listen(true) })
}
