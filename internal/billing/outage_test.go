package billing

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"tollgate/internal/db/dbtest"
)

// tcpProxy forwards a local port to a target and can drop every connection and stop
// listening, then come back on the same port: a database outage without touching Postgres.
type tcpProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.start()
	p.addr = p.ln.Addr().String()
	t.Cleanup(p.cut)
	return p
}

func (p *tcpProxy) start() {
	ln, err := net.Listen("tcp", p.addr)
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

// cut closes the listener and every proxied connection.
func (p *tcpProxy) cut() {
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

func TestDatabaseOutageAnswers503ThenRecovers(t *testing.T) {
	direct := dbtest.PostgresURL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, u.Host)
	u.Host = proxy.addr
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	d := dbtest.Open(t, u.String())
	h := newHarness(t, d)

	h.mustSend(ProviderWeb, webLifecycle(t, "sub_outage")["created"])
	updated := webLifecycle(t, "sub_outage")["updated"]

	proxy.cut()
	for i := range 3 {
		rec := h.sendWeb(updated)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("delivery %d during the outage: %d %s, want 503", i, rec.Code, rec.Body)
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	}

	proxy.start()
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec := h.sendWeb(updated)
		if rec.Code == http.StatusOK {
			break
		}
		if rec.Code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("after the outage: %d %s", rec.Code, rec.Body)
		}
		time.Sleep(100 * time.Millisecond)
	}

	check := dbtest.Open(t, direct)
	var n int
	if err := check.QueryRow("select count(*) from provider_events where provider_event_id = $1", "evt_1TESTsubUpdated000000001_sub_outage").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("the retried event is stored %d times, want once", n)
	}
	if got := h.canonical(ProviderWeb, "sub_outage"); got == nil || got.Status != StatusActive {
		t.Fatalf("canonical after recovery: %+v", got)
	}
}
