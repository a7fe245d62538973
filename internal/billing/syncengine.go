package billing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// In sync_engine mode (docs/providers.md) the web provider's own sync engine mirrors its objects
// into a Postgres schema, and tollgate reads web subscriptions from there at query time.
// There is no copy job, so an answer never lags the mirror. The rows go through the same
// mapping as webhook snapshots (webCanonical) and the same plan mapping (plan_prices).

// mirrorTables are the mirror's tables tollgate reads; prices is optional.
var mirrorTables = []string{"subscriptions", "subscription_items", "customers"}

// CheckMirror fails, naming what is missing, unless the mirror schema can be read.
func CheckMirror(ctx context.Context, d *db.DB, schema string) error {
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

// EnsureMirrorIndexes adds the indexes the mirror lacks (subscriptions by customer, items by
// subscription). It is idempotent, builds concurrently so the sync engine keeps writing,
// and holds an advisory lock so that instances starting together do not race.
func EnsureMirrorIndexes(ctx context.Context, d *db.DB, schema string) error {
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

// mirrorSubscriptions reads and maps the user's web subscriptions from the mirror.
func (s *Service) mirrorSubscriptions(ctx context.Context, q *dbq.Queries, userID string) ([]Subscription, error) {
	rows, err := s.db.QueryContext(ctx, mirrorQuery(s.mirrorSchema), userID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var subs []webSubscription
	var synced []time.Time
	for rows.Next() {
		var (
			sub                                               webSubscription
			status                                            string
			cancelAt, canceledAt, endedAt, periodEnd, itemEnd sql.NullInt64
			trialEnd                                          sql.NullString
			items, prices                                     sql.NullString
			itemRows                                          int64
			lastSynced                                        sql.NullTime
		)
		if err := rows.Scan(&sub.ID, &status, &sub.CancelAtPeriodEnd, &cancelAt, &canceledAt, &endedAt, &periodEnd, &trialEnd,
			&sub.Created, &items, &lastSynced, &itemEnd, &prices, &itemRows); err != nil {
			return nil, err
		}
		sub.Status, sub.StartDate = status, sub.Created
		sub.CancelAt, sub.CanceledAt, sub.EndedAt, sub.CurrentPeriodEnd = int64Ptr(cancelAt), int64Ptr(canceledAt), int64Ptr(endedAt), int64Ptr(periodEnd)
		if n, err := strconv.ParseInt(strings.Trim(trialEnd.String, `"`), 10, 64); err == nil {
			sub.TrialEnd = &n
		}
		if itemRows > 0 {
			// Item rows are authoritative: removed items are marked deleted there.
			for _, price := range strings.Split(prices.String, ",") {
				if price != "" {
					item := webItem{CurrentPeriodEnd: int64Ptr(itemEnd)}
					item.Price.ID = price
					sub.Items.Data = append(sub.Items.Data, item)
				}
			}
		} else if items.String != "" {
			// Newer API versions also carry the items, with their period ends, as JSON.
			json.Unmarshal([]byte(items.String), &sub.Items)
		}
		subs = append(subs, sub)
		synced = append(synced, lastSynced.Time)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Subscription
	for i, sub := range subs {
		at := synced[i]
		if at.IsZero() {
			at = s.now()
		}
		status, end, err := webCanonical(sub, at.UTC(), nil, nil)
		if err != nil {
			s.log.WarnContext(ctx, "mirrored subscription not understood", "subscription_id", sub.ID, "error", err)
			continue
		}
		plan, ok, err := s.planFor(ctx, q, ProviderWeb, sub.priceIDs())
		if err != nil {
			return nil, err
		}
		if !ok {
			continue // unmapped prices grant nothing
		}
		out = append(out, Subscription{Provider: ProviderWeb, Status: status, CurrentPeriodEnd: end, Plan: plan, updated: at})
	}
	return out, nil
}

func int64Ptr(n sql.NullInt64) *int64 {
	if !n.Valid {
		return nil
	}
	return &n.Int64
}
