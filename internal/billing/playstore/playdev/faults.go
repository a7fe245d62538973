package playdev

// Faults of Google's, for tests of how tollgate rides them out.

// SetDown makes the API answer 503 (true) or serve again.
func (g *Google) SetDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.down = down
}

// HoldKeys makes the push keys' endpoint hang (true), as an outage that answers nothing
// does, until released (false) or the request gives up.
func (g *Google) HoldKeys(hold bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case hold && g.keysHeld == nil:
		g.keysHeld = make(chan struct{})
	case !hold && g.keysHeld != nil:
		close(g.keysHeld)
		g.keysHeld = nil
	}
}

// SetKeysDown makes the push keys' endpoint answer 503 (true) or serve again.
func (g *Google) SetKeysDown(down bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keysDown = down
}

// KeyRequests is how many times the push keys were asked for.
func (g *Google) KeyRequests() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.keyRequests
}
