// Package tcpproxy forwards a local port to a target and can cut every connection and come
// back on the same port: an outage of Postgres or Redis for tests, without touching the server.
package tcpproxy

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Proxy forwards Addr to a target while up.
type Proxy struct {
	Addr   string
	t      testing.TB
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
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
			server, err := net.Dial("tcp", p.target)
			if err != nil {
				client.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, client, server)
			p.mu.Unlock()
			go func() { io.Copy(server, client); server.Close() }()
			go func() { io.Copy(client, server); client.Close() }()
		}
	}()
}

// Cut closes the listener and every proxied connection.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
