package reconcile

import (
	"context"
	"strings"
	"sync"
)

// What a store's reads say of a pass as a whole — an environment that refused tollgate's
// key while another served, say — is noted once, kept with the pass's record and shown
// by "reconcile status". A pass puts its notes in the context its reads get.

type notesKey struct{}

type notes struct {
	mu    sync.Mutex
	keys  []string
	lines map[string]string
}

// note notes text under key for the pass whose reads get ctx, once: a later note of the
// same key is dropped. Outside a pass it does nothing.
func note(ctx context.Context, key, text string) {
	n, ok := ctx.Value(notesKey{}).(*notes)
	if !ok {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, had := n.lines[key]; had {
		return
	}
	if n.lines == nil {
		n.lines = map[string]string{}
	}
	n.keys = append(n.keys, key)
	n.lines[key] = text
}

// noted says whether the pass whose reads get ctx has a note of key.
func noted(ctx context.Context, key string) bool {
	n, ok := ctx.Value(notesKey{}).(*notes)
	if !ok {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	_, had := n.lines[key]
	return had
}

// String is the notes, one line each, in the order noted.
func (n *notes) String() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	lines := make([]string, 0, len(n.keys))
	for _, k := range n.keys {
		lines = append(lines, n.lines[k])
	}
	return strings.Join(lines, "\n")
}
