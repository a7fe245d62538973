package entitlementtoken_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"slices"
	"testing"
	"time"
)

// BenchmarkVerify: a token's first check and a token seen again, against the floor — one
// bare ES256 signature check (crypto/ecdsa) — measured in the same run. No network call
// after the first read of the key set. Reports x-floor (the ratio) and, for a token seen
// again, its p99. (The floor runs first: the ratios need it.)
//
//	go test -run '^$' -bench Verify -benchtime 2s ./entitlementtoken
func BenchmarkVerify(b *testing.B) {
	var floorNs float64
	b.Run("floor", func(b *testing.B) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		digest := sha256.Sum256([]byte("header.payload"))
		r, s, _ := ecdsa.Sign(rand.Reader, key, digest[:])
		for b.Loop() {
			if !ecdsa.Verify(&key.PublicKey, digest[:], r, s) {
				b.Fatal("the floor's signature does not verify")
			}
		}
		floorNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	i := issuer(b)
	v := verifier(b, i.Options())
	ctx := context.Background()
	if _, err := v.Verify(ctx, mint(b, i, time.Hour)); err != nil { // the key set, read once
		b.Fatal(err)
	}

	b.Run("first", func(b *testing.B) {
		tokens := make([]string, b.N)
		for n := range tokens {
			tokens[n] = mint(b, i, time.Hour)
		}
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			if _, err := v.Verify(ctx, tokens[n]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floorNs, "x-floor")
	})

	b.Run("again", func(b *testing.B) {
		token := mint(b, i, time.Hour)
		if _, err := v.Verify(ctx, token); err != nil {
			b.Fatal(err)
		}
		took := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		for n := 0; n < b.N; n++ {
			start := time.Now()
			if _, err := v.Verify(ctx, token); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(start))
		}
		b.StopTimer()
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/floorNs, "x-floor")
	})
}
