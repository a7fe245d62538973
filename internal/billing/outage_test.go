package billing

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"tollgate/internal/db/dbtest"
	"tollgate/internal/tcpproxy"
)

func TestDatabaseOutageAnswers503ThenRecovers(t *testing.T) {
	direct := dbtest.PostgresURL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := tcpproxy.New(t, u.Host)
	u.Host = proxy.Addr
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	d := dbtest.Open(t, u.String())
	h := newHarness(t, d)

	h.mustSend(ProviderWeb, webLifecycle(t, "sub_outage")["created"])
	updated := webLifecycle(t, "sub_outage")["updated"]

	proxy.Cut()
	for i := range 3 {
		rec := h.sendWeb(updated)
		if rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("delivery %d during the outage: %d %s, want 503", i, rec.Code, rec.Body)
		}
		if rec.Header().Get("Retry-After") == "" {
			t.Fatal("503 without Retry-After")
		}
	}

	proxy.Start()
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
