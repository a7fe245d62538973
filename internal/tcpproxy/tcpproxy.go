// Package tcpproxy forwards a local port to a target and can cut every connection and come
// back on the same port, or stall (hold every byte, accept but not connect): an outage, or a
// database that stops answering, of Postgres or Redis for tests, without touching the server.
package tcpproxy

import (
	"net"
	"sync"
	"testing"
)

// Proxy forwards Addr to a target while up.
type Proxy struct {
	Addr    string
	t       testing.TB
	target  string
	mu      sync.Mutex
	ln      net.Listener
	conns   []net.Conn
	stalled chan struct{} // closed on Resume; nil while bytes flow
}

// New starts a proxy to target on a free loopback port; it is cut when the test ends.
func New(t testing.TB, target string) *Proxy {
	p := &Proxy{t: t, target: target, Addr: "127.0.0.1:0"}
	p.Start()
	p.Addr = p.ln.Addr().String()
	t.Cleanup(p.Cut)
	return p
}

// Start (re)opens the listener on Addr.
func (p *Proxy) Start() {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			go p.forward(client)
		}
	}()
}

func (p *Proxy) forward(client net.Conn) {
	p.track(client)
	p.wait() // a stalled proxy accepts, but does not connect
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	p.track(server)
	go p.copy(server, client)
	go p.copy(client, server)
}

func (p *Proxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

// copy moves bytes from src to dst, holding each chunk while the proxy is stalled.
func (p *Proxy) copy(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *Proxy) wait() {
	p.mu.Lock()
	stalled := p.stalled
	p.mu.Unlock()
	if stalled != nil {
		<-stalled
	}
}

// Stall holds every byte in both directions and every new connection until Resume: the
// target looks alive (connections open) but never answers.
func (p *Proxy) Stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == nil {
		p.stalled = make(chan struct{})
	}
}

// Resume lets held bytes and connections through.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != nil {
		close(p.stalled)
		p.stalled = nil
	}
}

// Cut closes the listener and every proxied connection (and ends a stall).
func (p *Proxy) Cut() {
	p.mu.Lock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.Resume()
}
