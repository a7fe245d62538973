// Command projects is an app built on tollgate: tollgate's forms, API and billing, plus its
// own endpoints. GET /api/v1/projects answers any signed-in user; POST /api/v1/exports only
// users whose plan includes "exports". It logs a line whenever a user's billing changes.
//
// Run it like tollgate itself, with the same environment: go run ./examples/projects
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/danielgtaylor/huma/v2"

	"github.com/tollgate/tollgate"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Getenv, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "projects:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, getenv func(string) string, logs io.Writer) error {
	app, err := tollgate.New(ctx, getenv, logs)
	if err != nil {
		return err
	}
	register(app, slog.New(slog.NewTextHandler(logs, nil)))
	return app.Run(ctx)
}

type project struct {
	Name string `json:"name"`
}

type projectsOutput struct {
	Body struct {
		Owner    string    `json:"owner"`
		Projects []project `json:"projects"`
	}
}

type exportOutput struct {
	Body struct {
		Status string `json:"status"`
	}
}

// register adds the app's own operations and its billing hook.
func register(app *tollgate.App, log *slog.Logger) {
	huma.Register(app.API(), huma.Operation{
		OperationID: "list-projects",
		Method:      http.MethodGet,
		Path:        "/api/v1/projects",
		Summary:     "The signed-in user's projects",
		Tags:        []string{"projects"},
	}, func(ctx context.Context, _ *struct{}) (*projectsOutput, error) {
		user, _ := tollgate.CurrentUser(ctx) // always there: the operation is for signed-in users
		out := &projectsOutput{}
		out.Body.Owner, out.Body.Projects = user.ID, []project{{Name: "demo"}}
		return out, nil
	})

	huma.Register(app.API(), huma.Operation{
		OperationID: "create-export",
		Method:      http.MethodPost,
		Path:        "/api/v1/exports",
		Summary:     "Start an export, for plans that include exports",
		Tags:        []string{"projects"},
		Errors:      []int{http.StatusForbidden},
	}, func(ctx context.Context, _ *struct{}) (*exportOutput, error) {
		user, _ := tollgate.CurrentUser(ctx)
		entitlements, err := app.Entitlements(ctx, user.ID)
		if err != nil {
			return nil, tollgate.Problem(err)
		}
		if !entitlements.Entitled("exports") {
			return nil, tollgate.Problem(tollgate.ErrNotEntitled)
		}
		out := &exportOutput{}
		out.Body.Status = "started"
		return out, nil
	})

	app.OnBillingChange(func(ctx context.Context, userID string) {
		log.InfoContext(ctx, "billing changed", "user_id", userID)
	})
}
