// Package mirror reads web subscriptions from the web provider's own sync engine, which
// mirrors its objects into a Postgres schema (WEB_INGESTION=sync_engine).
package mirror

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/stripe"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// In sync_engine mode (docs/providers.md) the web provider's own sync engine mirrors its objects
// into a Postgres schema, and tollgate reads web subscriptions from there at query time.
// There is no copy job, so an answer never lags the mirror. The rows go through the same
// mapping as webhook snapshots and the same plan mapping (plan_prices).

// mirrorTables are the mirror's tables tollgate reads; prices is optional.
var mirrorTables = []string{"subscriptions", "subscription_items", "customers"}

// Check fails, naming what is missing, unless the mirror schema can be read.
func Check(ctx context.Context, d *db.DB, schema string) error {
	if d.Engine != db.Postgres {
		return errors.New("WEB_INGESTION=sync_engine needs a Postgres DATABASE_URL: the mirror schema lives in Postgres")
	}
	rows, err := d.QueryContext(ctx, `select table_name from information_schema.tables where table_schema = $1`, schema)
	if err != nil {
		return fmt.Errorf("sync_engine: cannot inspect schema %q: %w", schema, err)
	}
	defer rows.Close()
	present := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return err
		}
		present[name] = true
	}
	if err := rows.Err(); err != nil {
		return err
	}
	var missing []string
	for _, t := range mirrorTables {
		if !present[t] {
			missing = append(missing, schema+"."+t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("WEB_INGESTION=sync_engine: the mirror schema %q (SYNC_ENGINE_SCHEMA) lacks %s; install and run the web provider's sync engine first",
			schema, strings.Join(missing, ", "))
	}
	return nil
}

// EnsureIndexes adds the indexes the mirror lacks (subscriptions by customer, items by
// subscription). It is idempotent, builds concurrently so the sync engine keeps writing,
// and holds an advisory lock so that instances starting together do not race.
func EnsureIndexes(ctx context.Context, d *db.DB, schema string) error {
	conn, err := d.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	const lockKey = 0x746f6c6c // "toll"
	if _, err := conn.ExecContext(ctx, `select pg_advisory_lock($1)`, lockKey); err != nil {
		return err
	}
	defer conn.ExecContext(context.WithoutCancel(ctx), `select pg_advisory_unlock($1)`, lockKey)
	for _, stmt := range []string{
		`create index concurrently if not exists tollgate_subscriptions_customer on ` + schema + `.subscriptions (customer)`,
		`create index concurrently if not exists tollgate_subscription_items_subscription on ` + schema + `.subscription_items (subscription)`,
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("sync_engine: adding a mirror index: %w", err)
		}
	}
	return nil
}

// mirrorQuery finds a user's mirrored subscriptions: through the linked web customer id,
// the subscription's metadata.user_id, or the customer's. The schema name is validated as a
// plain identifier by config.
func mirrorQuery(schema string) string {
	return strings.ReplaceAll(`
select s.id, s.status::text, coalesce(s.cancel_at_period_end, false), s.cancel_at, s.canceled_at, s.ended_at,
       s.current_period_end, s.trial_end::text, coalesce(s.created, 0), coalesce(s.items::text, ''),
       coalesce(s.last_synced_at, s.updated_at),
       (select max(si.current_period_end) from MIRROR.subscription_items si where si.subscription = s.id and si.deleted is not true),
       (select string_agg(si.price, ',' order by si.price) from MIRROR.subscription_items si where si.subscription = s.id and si.deleted is not true),
       (select count(*) from MIRROR.subscription_items si where si.subscription = s.id)
from MIRROR.subscriptions s
left join MIRROR.customers c on c.id = s.customer
where s.customer in (select web_customer_id from billing_customers where user_id = $1 and web_customer_id is not null)
   or s.metadata->>'user_id' = $1
   or (c.metadata->>'user_id' = $1 and c.deleted is not true)`, "MIRROR", schema)
}

// Mirror reads one schema's mirror.
type Mirror struct {
	db     *db.DB
	schema string
	log    *slog.Logger
}

// New reads the mirror in schema (validated as a plain identifier by config).
func New(d *db.DB, schema string, log *slog.Logger) *Mirror {
	return &Mirror{db: d, schema: schema, log: log}
}

// Subscriptions reads and maps the user's web subscriptions from the mirror, as synced at
// their last sync (now when the mirror does not say).
func (m *Mirror) Subscriptions(ctx context.Context, q *dbq.Queries, userID string, now time.Time) ([]billing.Subscription, error) {
	rows, err := m.db.QueryContext(ctx, mirrorQuery(m.schema), userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var subs []stripe.Mirrored
	var synced []time.Time
	for rows.Next() {
		var (
			sub                                               stripe.Mirrored
			cancelAt, canceledAt, endedAt, periodEnd, itemEnd sql.NullInt64
			trialEnd                                          sql.NullString
			items, prices                                     sql.NullString
			itemRows                                          int64
			lastSynced                                        sql.NullTime
		)
		if err := rows.Scan(&sub.ID, &sub.Status, &sub.CancelAtPeriodEnd, &cancelAt, &canceledAt, &endedAt, &periodEnd, &trialEnd,
			&sub.Created, &items, &lastSynced, &itemEnd, &prices, &itemRows); err != nil {
			return nil, err
		}
		sub.CancelAt, sub.CanceledAt, sub.EndedAt, sub.CurrentPeriodEnd = int64Ptr(cancelAt), int64Ptr(canceledAt), int64Ptr(endedAt), int64Ptr(periodEnd)
		if n, err := strconv.ParseInt(strings.Trim(trialEnd.String, `"`), 10, 64); err == nil {
			sub.TrialEnd = &n
		}
		sub.HasItemRows, sub.ItemPeriodEnd, sub.ItemsJSON = itemRows > 0, int64Ptr(itemEnd), items.String
		if sub.HasItemRows {
			sub.Prices = strings.Split(prices.String, ",")
		}
		subs = append(subs, sub)
		synced = append(synced, lastSynced.Time)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []billing.Subscription
	for i, sub := range subs {
		at := synced[i]
		if at.IsZero() {
			at = now
		}
		status, end, prices, err := stripe.MirrorFacts(sub, at.UTC())
		if err != nil {
			m.log.WarnContext(ctx, "mirrored subscription not understood", "subscription_id", sub.ID, "error", err)
			continue
		}
		plan, ok, err := planFor(ctx, q, prices)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // unmapped prices grant nothing
		}
		out = append(out, billing.Subscription{Provider: billing.ProviderWeb, Status: status, CurrentPeriodEnd: end, Plan: plan, Updated: at})
	}
	return out, nil
}

// planFor is the highest-tier plan selling any of the web price ids. It runs on every
// entitlement question, so it does not log.
func planFor(ctx context.Context, q *dbq.Queries, ids []string) (billing.Plan, bool, error) {
	var best *billing.Plan
	for _, id := range ids {
		p, err := q.PlanForPrice(ctx, dbq.PlanForPriceParams{Provider: billing.ProviderWeb, PriceID: id})
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return billing.Plan{}, false, err
		}
		if best == nil || p.Tier > best.Tier {
			best = &billing.Plan{Key: p.Key, Name: p.Name, ID: p.ID, Tier: p.Tier}
		}
	}
	if best == nil {
		return billing.Plan{}, false, nil
	}
	return *best, true, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}
