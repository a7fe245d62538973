package reconcile

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// A store (the App Store, Google Play) lists no subscriptions: a pass reads, one by one,
// those tollgate knows, from its own rows.

// StoreReader reads one subscription from its store's API, given its id and its stored
// state: the JSON its adapter's ReadSnapshot reads, or nil to leave it out (a purchase that
// API does not answer for, as a one-time product).
type StoreReader func(ctx context.Context, id string, state []byte) (json.RawMessage, error)

// storePage is how many known subscriptions one page reads.
const storePage = 20

// StoreEnded is how long after a subscription ended a pass still reads it: a refund, or a
// late renewal, can still come to light that long after.
const StoreEnded = 60 * 24 * time.Hour

// KnownSubscriptions reads the subscriptions of provider that tollgate knows and that did
// not end more than StoreEnded ago, in pages by id (the cursor), each through read. A
// read that fails is the page's Failed and the pass goes on to the next subscription;
// only a refusal of the API itself (billing.ErrAPIRefused) ends the page, and the pass.
func KnownSubscriptions(d *db.DB, provider string, clock func() time.Time, read StoreReader) pipeline.PageReader {
	return func(ctx context.Context, after string) (pipeline.Page, error) {
		rows, err := dbq.New(d).ListStoreSubscriptions(ctx, dbq.ListStoreSubscriptionsParams{
			Provider: provider, After: after, Since: sql.NullTime{Time: clock().Add(-StoreEnded).UTC(), Valid: true}, Max: storePage,
		})
		if err != nil {
			return pipeline.Page{}, err
		}
		page := pipeline.Page{HasMore: len(rows) == storePage}
		for _, row := range rows {
			raw, err := read(ctx, row.ProviderSubscriptionID, []byte(row.State))
			if err != nil && (errors.Is(err, billing.ErrAPIRefused) || ctx.Err() != nil) {
				return pipeline.Page{}, err
			}
			if err != nil {
				page.Failed = append(page.Failed, pipeline.FailedRead{SubscriptionID: row.ProviderSubscriptionID, Reason: err.Error()})
			}
			if raw != nil {
				page.Subscriptions = append(page.Subscriptions, raw)
			}
			page.LastID = row.ProviderSubscriptionID
		}
		return page, nil
	}
}

// Environment is one environment of a store's API (the App Store keeps Production and
// Sandbox apart): its name, its reader, and what says a subscription is not in it.
type Environment struct {
	Name    string
	Read    StoreReader
	NotHere func(error) bool
}

// Environments reads a subscription from the first of envs that knows it; one that none
// knows is unknown(id). An environment that refuses tollgate itself (billing.ErrAPIRefused:
// Production refuses every key until an app's first release) is noted once for the pass,
// and skipped for the rest of it while another serves; when every one refuses, the
// refusal is the read's error, and the pass fails.
func Environments(envs []Environment, unknown func(id string) (json.RawMessage, error)) StoreReader {
	return func(ctx context.Context, id string, state []byte) (json.RawMessage, error) {
		var refused error
		for _, env := range envs {
			key := "refused " + env.Name
			if noted(ctx, key) {
				continue
			}
			raw, err := env.Read(ctx, id, state)
			switch {
			case errors.Is(err, billing.ErrAPIRefused) && len(envs) > 1:
				note(ctx, key, err.Error())
				refused = err
			case err != nil && env.NotHere(err):
			default:
				return raw, err
			}
		}
		if refused != nil && allNoted(ctx, envs) {
			return nil, refused
		}
		return unknown(id)
	}
}

// allNoted: every environment refused in this pass.
func allNoted(ctx context.Context, envs []Environment) bool {
	for _, env := range envs {
		if !noted(ctx, "refused "+env.Name) {
			return false
		}
	}
	return true
}
