package api

import (
	"context"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/ratelimit"
)

// perUserPurchases bounds how often a user may report purchases: each report of a Google
// Play purchase reads it from Google's API, which limits tollgate's key as a whole.
var perUserPurchases = ratelimit.Limit{Name: "api/billing-purchases", Requests: 10, Window: time.Minute}

const purchasesPath = "/api/v1/billing/purchases"

type purchaseInput struct {
	Body struct {
		Store             string `json:"store" doc:"The store that sold the purchase."` // its enum: Options.PurchaseStores
		SignedTransaction string `json:"signed_transaction,omitempty" maxLength:"65536" doc:"App Store: the transaction's JWS as the device holds it (StoreKit's jwsRepresentation)."`
		PurchaseToken     string `json:"purchase_token,omitempty" maxLength:"4096" doc:"Google Play: the purchase token."`
		ProductID         string `json:"product_id,omitempty" maxLength:"255" doc:"Google Play: the purchased product's id."`
	}
}

// purchase applies a purchase the app reports for the token's user, verified with its
// store, and answers as /api/v1/me does.
func (a *API) purchase(ctx context.Context, in *purchaseInput) (*encodedOutput, error) {
	user, _ := CurrentUser(ctx)
	proof := billing.Proof{SignedTransaction: in.Body.SignedTransaction, PurchaseToken: in.Body.PurchaseToken, ProductID: in.Body.ProductID}
	if err := a.opts.Purchases.Claim(ctx, in.Body.Store, proof, user.ID); err != nil {
		return nil, a.fail(ctx, err)
	}
	return a.me(ctx, nil)
}

// enumerate makes field of the JSON body POSTed to path one of values, in the OpenAPI
// document and in validation: values the list of stores gives, which no struct tag knows.
func enumerate(api huma.API, path, field string, values []string) {
	op := api.OpenAPI().Paths[path].Post
	body := op.RequestBody.Content["application/json"].Schema
	if body.Ref != "" {
		body = api.OpenAPI().Components.Schemas.SchemaFromRef(body.Ref)
	}
	prop := body.Properties[field]
	prop.Enum = nil
	for _, v := range values {
		prop.Enum = append(prop.Enum, v)
	}
	prop.PrecomputeMessages()
}
