package entitlementtoken_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/tollgate/tollgate/entitlementtoken"
	"github.com/tollgate/tollgate/tollgatetest"
)

// A backend checks the plan in the token the app sends (from POST
// /api/v1/entitlements/token) with tollgate's public keys: one read of the key set, then
// no call to tollgate at all. In production the options name tollgate's PUBLIC_URL:
//
//	entitlementtoken.Options{
//		JWKSURL: "https://billing.example.com/.well-known/jwks.json",
//		Issuer:  "https://billing.example.com",
//	}
//
// Here tollgatetest's issuer stands in for tollgate.
func Example() {
	issuer, err := tollgatetest.NewEntitlementIssuer()
	if err != nil {
		log.Fatal(err)
	}
	defer issuer.Close()
	status, provider := "active", "appstore"
	token, err := issuer.Mint("8d1f5c2a-1111-4222-8333-444455556666", entitlementtoken.Billing{
		Subscribed: true, Status: &status, Provider: &provider,
		Plan:         &entitlementtoken.Plan{Key: "pro", Name: "Pro"},
		Entitlements: map[string]any{"export": true, "projects": 10},
	}, 15*time.Minute)
	if err != nil {
		log.Fatal(err)
	}

	verifier, err := entitlementtoken.NewVerifier(issuer.Options()) // make one, keep it
	if err != nil {
		log.Fatal(err)
	}
	e, err := verifier.Verify(context.Background(), token)
	if err != nil {
		log.Fatal(err) // in a handler: answer 401
	}
	projects, _ := e.Billing.Limit("projects")
	fmt.Println(e.UserID, e.Billing.PlanKey(), e.Billing.Entitled("export"), projects)

	_, err = verifier.Verify(context.Background(), token[:len(token)-4]+"AAAA")
	fmt.Println(err != nil)
	// Output:
	// 8d1f5c2a-1111-4222-8333-444455556666 pro true 10
	// true
}
