package tollgatetest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/danielgtaylor/huma/v2"

	"github.com/tollgate/tollgate"
	"github.com/tollgate/tollgate/tollgatetest"
)

// An app tests its own operation: tollgate over the fake identity service, served by
// httptest, called with a token the fake minted. Without a plan that includes exports,
// the user is refused with tollgate's own problem.
func Example() {
	idp, err := tollgatetest.NewIdentity()
	if err != nil {
		log.Fatal(err)
	}
	defer idp.Close()
	app, err := tollgate.New(context.Background(), tollgatetest.NewEnv(idp, nil).Get, io.Discard)
	if err != nil {
		log.Fatal(err)
	}
	defer app.Close()
	huma.Register(app.API(), huma.Operation{Method: http.MethodPost, Path: "/api/v1/exports"},
		func(ctx context.Context, _ *struct{}) (*struct{ Body string }, error) {
			user, _ := tollgate.CurrentUser(ctx)
			e, err := app.Entitlements(ctx, user.ID)
			if err != nil {
				return nil, tollgate.Problem(err)
			}
			if !e.Entitled("exports") {
				return nil, tollgate.Problem(tollgate.ErrNotEntitled)
			}
			return &struct{ Body string }{"export started"}, nil
		})
	srv := httptest.NewServer(app.Handler())
	defer srv.Close()

	_, token := idp.Token("ada@example.com")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/exports", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	var problem struct{ Type string }
	json.NewDecoder(resp.Body).Decode(&problem)
	fmt.Println(resp.StatusCode, problem.Type)
	// Output: 403 https://tollgate.dev/problems/not-entitled
}
