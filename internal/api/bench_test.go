package api

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/ratelimit"
)

// Pairs measured in the same run; docs/performance.md reports the ratios. Throttle limits
// are raised so that the benchmark measures their cost, not their refusals.
var benchLimits = harnessConfig{
	perIP:    ratelimit.Limit{Name: "api/ip", Requests: 1 << 30, Window: time.Minute},
	perToken: ratelimit.Limit{Name: "api/token", Requests: 1 << 30, Window: time.Minute},
}

const benchSenders = 16

// serveParallel sends GETs with the same Authorization to url from 16 concurrent senders.
func serveParallel(b *testing.B, url, authorization string) {
	sendParallel(b, http.MethodGet, url, authorization)
}

// sendParallel sends requests of method with the same Authorization to url from 16
// concurrent senders.
func sendParallel(b *testing.B, method, url, authorization string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * benchSenders}}
	b.SetParallelism(max(1, benchSenders/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req, _ := http.NewRequest(method, url, nil)
			req.Header.Set("Authorization", authorization)
			resp, err := client.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				b.Errorf("status %d", resp.StatusCode)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
}

// BenchmarkMiddleware (a): the whole /api/* stack (CORS, both throttles, verification of a
// repeated valid token) over a trivial handler, against the same handler bare, both over
// loopback HTTP.
//
//	go test -run '^$' -bench Middleware -benchtime 3s -count 5 ./internal/api
func BenchmarkMiddleware(b *testing.B) {
	cfg := benchLimits
	cfg.cors = CORS{Origins: []string{"https://app.example.com"}}
	h := newHarness(b, cfg)
	trivial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{"ok":true}`) })
	token := bearer(h.key.mint(b, validClaims()))
	a := New(Options{Verifier: h.verifier, Throttles: h.throttles, PerIP: cfg.perIP, PerToken: cfg.perToken, CORS: cfg.cors, Log: nil})
	for _, tc := range []struct {
		name    string
		handler http.Handler
	}{{"bare", trivial}, {"stack", a.guard(trivial)}} {
		b.Run(tc.name, func(b *testing.B) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			serveParallel(b, srv.URL+"/api/v1/ping", token)
		})
	}
}

// BenchmarkMe (b): GET /api/v1/me end to end on Postgres, against issuing the same
// database reads directly (entitlements and usage).
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench Me -benchtime 3s -count 5 ./internal/api
func BenchmarkMe(b *testing.B) {
	cfg := benchLimits
	cfg.db = dbtest.Postgres(b)
	h := newHarness(b, cfg)
	token := bearer(h.key.mint(b, validClaims()))
	ctx := context.Background()
	if _, err := h.billing.RecordUsage(ctx, testUser, "projects", 1); err != nil {
		b.Fatal(err)
	}
	b.Run("direct", func(b *testing.B) {
		b.SetParallelism(max(1, benchSenders/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				e, err := h.billing.Entitlements(ctx, testUser)
				if err == nil {
					_, err = h.billing.UsageThisPeriod(ctx, e)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "req/s")
	})
	b.Run("http", func(b *testing.B) {
		srv := httptest.NewServer(h.handler)
		defer srv.Close()
		serveParallel(b, srv.URL+"/api/v1/me", token)
	})
}

// BenchmarkEntitlementToken: POST /api/v1/entitlements/token against GET /api/v1/me in the
// same run, on Postgres with answers kept (as serve keeps them): the same user asking again
// is handed the same token while the answer and the key are unchanged. "sign" is the cost of
// a token signed anew (a user not seen before), without HTTP. Reports x-me, the token's
// rate over /me's.
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench EntitlementToken -benchtime 3s ./internal/api
func BenchmarkEntitlementToken(b *testing.B) {
	cfg := benchLimits
	cfg.db, cfg.answersMaxAge = dbtest.Postgres(b), 30*time.Second
	h := newHarness(b, cfg)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go h.signingKeys.ListenForChanges(ctx, slog.New(slog.DiscardHandler)) // as serve keeps the keys
	go h.billing.ListenForChanges(ctx)
	token := bearer(h.key.mint(b, validClaims()))
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	var meRate float64
	b.Run("me", func(b *testing.B) {
		serveParallel(b, srv.URL+"/api/v1/me", token)
		meRate = float64(b.N) / b.Elapsed().Seconds()
	})
	b.Run("token", func(b *testing.B) {
		sendParallel(b, http.MethodPost, srv.URL+"/api/v1/entitlements/token", token)
		if meRate > 0 {
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds()/meRate, "x-me")
		}
	})
	b.Run("sign", func(b *testing.B) {
		var n atomic.Int64
		b.SetParallelism(max(1, benchSenders/runtime.GOMAXPROCS(0)))
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := h.held.Token(ctx, fmt.Sprintf("bench-user-%d", n.Add(1))); err != nil {
					b.Error(err)
					return
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}

// BenchmarkES256 (c): one cold verification (parse, key lookup, signature, claims; no cache)
// against crypto/ecdsa verifying the same signature alone.
//
//	go test -run '^$' -bench ES256 -benchtime 3s -count 5 ./internal/api
func BenchmarkES256(b *testing.B) {
	h := newHarness(b, harnessConfig{})
	raw := h.key.mint(b, validClaims())
	ctx := context.Background()
	if _, _, err := h.verifier.verifyUncached(ctx, raw); err != nil {
		b.Fatal(err)
	}
	b.Run("verifier", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := h.verifier.verifyUncached(ctx, raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ecdsa", func(b *testing.B) {
		dot := strings.LastIndexByte(raw, '.')
		sig, _ := base64.RawURLEncoding.DecodeString(raw[dot+1:])
		r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
		pub := h.key.private.Public().(*ecdsa.PublicKey)
		for b.Loop() {
			digest := sha256.Sum256([]byte(raw[:dot]))
			if !ecdsa.Verify(pub, digest[:], r, s) {
				b.Fatal("signature does not verify")
			}
		}
	})
}

// BenchmarkSideBySide runs pairs over loopback HTTP from 50 connections, in alternating
// slices of time so that drift falls on both sides alike, and reports both rates and their
// ratio (docs/performance.md), the "Speed" issue's measures:
//
//   - me: GET /api/v1/me through the whole handler tree on Postgres, keeping answers in
//     memory as serve does, against a bare net/http handler writing the same bytes;
//   - middleware: the /api/* stack over a trivial handler, against that handler bare.
//
// Each b.N is one pair of slices:
//
//	TEST_DATABASE_URL=postgres://postgres@127.0.0.1:5432/test go test -run '^$' -bench SideBySide -benchtime 10x ./internal/api
func BenchmarkSideBySide(b *testing.B) {
	for _, pair := range sideBySidePairs(b) {
		b.Run(pair.name, func(b *testing.B) {
			var real, basis float64
			alternate(b.N, func() { real += getFor(b, pair.real, pair.path, pair.authorization) }, func() { basis += getFor(b, pair.basis, pair.path, pair.authorization) })
			b.ReportMetric(real/float64(b.N), "tollgate-req/s")
			b.ReportMetric(basis/float64(b.N), "bare-req/s")
			b.ReportMetric(real/basis, "ratio")
		})
	}
}

// sideBySidePair is a handler of tollgate's and the bare one it is measured against, the
// path both are asked for and the Authorization header sent.
type sideBySidePair struct {
	name                string
	real, basis         http.Handler
	path, authorization string
}

// sideBySidePairs are the pairs of BenchmarkSideBySide and BenchmarkUnderWrk: /api/v1/me,
// the service API's entitlements of a user, and the middleware alone.
func sideBySidePairs(b *testing.B) []sideBySidePair {
	cfg := benchLimits
	cfg.db = dbtest.Postgres(b)
	cfg.answersMaxAge = 30 * time.Second // as serve keeps answers
	h := newHarness(b, cfg)
	token := bearer(h.key.mint(b, validClaims()))
	if _, err := h.billing.RecordUsage(context.Background(), testUser, "projects", 1); err != nil {
		b.Fatal(err)
	}
	key, err := h.serviceKeys.Create(context.Background(), "bench")
	if err != nil {
		b.Fatal(err)
	}
	// Keys kept in memory, as serve keeps them.
	ctx, stop := context.WithCancel(context.Background())
	b.Cleanup(stop)
	go h.serviceKeys.ListenForChanges(ctx, slog.New(slog.DiscardHandler))
	entitlements := "/api/v1/users/" + testUser + "/entitlements"
	trivial := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true}`)
	})
	a := New(Options{Verifier: h.verifier, Throttles: h.throttles, PerIP: cfg.perIP, PerToken: cfg.perToken})
	return []sideBySidePair{
		{"me", h.handler, bareAnswer(b, h.handler, "/api/v1/me", token), "/api/v1/me", token},
		{"entitlements", h.handler, bareAnswer(b, h.handler, entitlements, bearer(key)), entitlements, bearer(key)},
		{"middleware", a.guard(trivial), trivial, "/api/v1/ping", token},
	}
}

// bareAnswer is a bare handler writing what handler answers to a GET of path.
func bareAnswer(b *testing.B, handler http.Handler, path, authorization string) http.Handler {
	rec, req := httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, path, nil)
	req.Header.Set("Authorization", authorization)
	handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		b.Fatalf("%s: %d %s", path, rec.Code, rec.Body)
	}
	body := rec.Body.Bytes()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	})
}

// alternate runs pairs rounds of a and b in turns (a then b, then b then a, …) so that
// drift in the machine falls on both sides alike.
func alternate(pairs int, a, b func()) {
	for i := range pairs {
		if i%2 == 0 {
			a()
			b()
		} else {
			b()
			a()
		}
	}
}

// getFor sends GETs with the token to handler over loopback HTTP from 50 connections for
// half a second, and gives the rate answered 200.
func getFor(b *testing.B, handler http.Handler, path, authorization string) float64 {
	const connections, slice = 50, 500 * time.Millisecond
	srv := httptest.NewServer(handler)
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: connections}}
	defer client.CloseIdleConnections()
	var answered atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for range connections {
		wg.Go(func() {
			for time.Since(start) < slice {
				req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
				req.Header.Set("Authorization", authorization)
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("%s: status %d", path, resp.StatusCode)
					return
				}
				answered.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(answered.Load()) / time.Since(start).Seconds()
}
