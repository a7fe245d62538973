package app

import (
	"net"
	"os"
	"sync"
	"testing"
)

// held are the listeners holdAddr opened, by address, until a server takes one: a port
// picked by listening, closing and hoping is still free is a race with every other test
// process on the machine.
var held = struct {
	sync.Mutex
	listeners map[string]net.Listener
}{listeners: map[string]net.Listener{}}

// holdAddr opens a listener on a free loopback port and keeps it for the server a test
// starts on that address (startServe, startProcess); it is closed when the test ends.
func holdAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	held.Lock()
	held.listeners[addr] = ln
	held.Unlock()
	t.Cleanup(func() {
		if ln := takeListener(addr); ln != nil {
			ln.Close()
		}
	})
	return addr
}

// takeListener hands over the listener held for addr, or nil when none is.
func takeListener(addr string) net.Listener {
	held.Lock()
	defer held.Unlock()
	ln := held.listeners[addr]
	delete(held.listeners, addr)
	return ln
}

// listenerFile is the held listener for addr as a file to pass to a child process (its
// file descriptor 3, with LISTEN_FDS=1), or nil when none is held. The caller closes it
// once the child has started.
func listenerFile(t *testing.T, addr string) *os.File {
	t.Helper()
	ln := takeListener(addr)
	if ln == nil {
		return nil
	}
	defer ln.Close()
	f, err := ln.(*net.TCPListener).File()
	if err != nil {
		t.Fatal(err)
	}
	return f
}
