package tollgate_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"slices"

	"github.com/danielgtaylor/huma/v2"

	"github.com/tollgate/tollgate"
)

// An app adds its own operation under /api/v1: it runs behind tollgate's guard, reads the
// signed-in user, and appears in the API description beside tollgate's own.
func ExampleApp_API() {
	settings := map[string]string{
		"APP_ENV": "test", "DATABASE_URL": "sqlite::memory:",
		"WEB_WEBHOOK_SECRET": "whsec_example", "MOBILE_WEBHOOK_SECRET": "mobile-example",
	}
	app, err := tollgate.New(context.Background(), func(k string) string { return settings[k] }, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	huma.Register(app.API(), huma.Operation{
		OperationID: "hello",
		Method:      http.MethodGet,
		Path:        "/api/v1/hello",
		Errors:      []int{http.StatusForbidden},
	}, func(ctx context.Context, _ *struct{}) (*struct{ Body string }, error) {
		user, _ := tollgate.CurrentUser(ctx)
		entitlements, err := app.Entitlements(ctx, user.ID)
		if err != nil {
			return nil, tollgate.Problem(err)
		}
		if !entitlements.Entitled("hello") {
			return nil, tollgate.Problem(tollgate.ErrNotEntitled) // 403, as tollgate's own
		}
		return &struct{ Body string }{Body: "hello, " + user.Email}, nil
	})

	var paths []string
	for path := range app.API().OpenAPI().Paths {
		paths = append(paths, path)
	}
	slices.Sort(paths)
	for _, path := range paths {
		fmt.Println(path)
	}
	// Output:
	// /api/v1/billing/checkout
	// /api/v1/billing/portal
	// /api/v1/billing/purchases
	// /api/v1/billing/sync
	// /api/v1/entitlements/token
	// /api/v1/hello
	// /api/v1/me
	// /api/v1/usage/{name}
	// /api/v1/users/{user_id}/entitlements
	// /api/v1/users/{user_id}/entitlements/token
	// /api/v1/users/{user_id}/grants
	// /api/v1/users/{user_id}/grants/{grant_id}
	// /api/v1/users/{user_id}/usage/{name}
}

// The billing hook runs after a webhook changed a user's billing, once it is committed.
func ExampleApp_OnBillingChange() {
	app, err := tollgate.New(context.Background(), nil, nil) // the process environment
	if err != nil {
		log.Fatal(err)
	}
	app.OnBillingChange(func(ctx context.Context, userID string) {
		log.Printf("billing changed for %s: refresh their cached features", userID)
	})
	if err := app.Run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

// A program that is the tollgate command, as cmd/tollgate is.
func ExampleMain() {
	os.Exit(tollgate.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
