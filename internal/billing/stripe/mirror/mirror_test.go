package mirror_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/plans"
	"github.com/tollgate/tollgate/internal/billing/stripe/mirror"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// loadMirror creates the sync engine's mirror tables (testdata/sync_engine_schema.sql, as
// the engine creates them) in a schema of the test's own, and returns its name.
func loadMirror(t *testing.T, d *db.DB) string {
	t.Helper()
	ddl, err := os.ReadFile("../../testdata/sync_engine_schema.sql")
	if err != nil {
		t.Fatal(err)
	}
	var b [5]byte
	rand.Read(b[:])
	schema := "mirror_" + hex.EncodeToString(b[:])
	script := regexp.MustCompile(`\bstripe\b`).ReplaceAllString(string(ddl), schema)
	if _, err := d.Exec(script); err != nil {
		t.Fatalf("loading the mirror DDL: %v", err)
	}
	t.Cleanup(func() { d.Exec("drop schema " + schema + " cascade") })
	return schema
}

func TestSyncEngineReadsTheMirrorLive(t *testing.T) {
	d := dbtest.Postgres(t)
	schema := loadMirror(t, d)
	ctx := context.Background()
	if err := mirror.Check(ctx, d, schema); err != nil {
		t.Fatal(err)
	}
	for range 2 { // idempotent, as every start runs it
		if err := mirror.EnsureIndexes(ctx, d, schema); err != nil {
			t.Fatal(err)
		}
	}
	var indexes int
	d.QueryRow(`select count(*) from pg_indexes where schemaname = $1 and indexname like 'tollgate_%'`, schema).Scan(&indexes)
	if indexes != 2 {
		t.Fatalf("%d tollgate indexes on the mirror, want 2", indexes)
	}

	h := billingtest.New(t, d, func(o *billingtest.Options) { o.MountWeb, o.SyncEngineSchema = false, schema })
	plans, err := plans.ParsePlans([]byte(billingtest.PlansYAML + `
  storage:
    name: Storage
    entitlements:
      - {name: storage_gb, value: 50}
    mobile_products: [com.example.storage]
`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.Svc.SyncPlans(ctx, plans); err != nil {
		t.Fatal(err)
	}
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := d.Exec(strings.ReplaceAll(sql, "M.", schema+"."), args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	created := billingtest.Now.Add(-10 * 24 * time.Hour).Unix()
	periodEnd := billingtest.Now.Add(20 * 24 * time.Hour).Truncate(time.Second).UTC()
	// A newer-API subscription: no period end on the subscription, only on its item.
	exec(`insert into M.customers (id, email, metadata) values ('cus_m1', 'm@example.test', $1)`, `{"user_id":"`+billingtest.FixtureUser+`"}`)
	exec(`insert into M.subscriptions (id, customer, status, items, metadata, cancel_at_period_end, created, last_synced_at)
		values ('sub_m1', 'cus_m1', 'active', '{"object":"list","data":[]}', '{}', false, $1, $2)`, created, billingtest.Now)
	exec(`insert into M.subscription_items (id, subscription, price, deleted, current_period_end) values ('si_m1', 'sub_m1', 'price_1TESTmonthlyPro000001', false, $1)`, periodEnd.Unix())

	answer := func() billing.Entitlements {
		t.Helper()
		e, err := h.Svc.Entitlements(ctx, billingtest.FixtureUser)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	e := answer()
	if !e.Subscribed() || e.Plan().Key != "pro" || e.Governing().CurrentPeriodEnd == nil || !e.Governing().CurrentPeriodEnd.Equal(periodEnd) {
		t.Fatalf("mirrored subscription: subscribed=%v plan=%+v governing=%+v", e.Subscribed(), e.Plan(), e.Governing())
	}

	changes := []struct {
		name, change, undo string
	}{
		{"canceled", `update M.subscriptions set status = 'canceled', ended_at = $1 where id = 'sub_m1'`, `update M.subscriptions set status = 'active', ended_at = null where id = 'sub_m1'`},
		{"item removed", `update M.subscription_items set deleted = true where id = 'si_m1' and $1::bigint is not null`, `update M.subscription_items set deleted = false where id = 'si_m1'`},
		{"period end in the past", `update M.subscription_items set current_period_end = $1 where id = 'si_m1'`, ``},
	}
	past := billingtest.Now.Add(-time.Hour).Unix()
	for _, c := range changes {
		exec(c.change, past)
		if e := answer(); e.Subscribed() || e.Plan().Key != "free" {
			t.Fatalf("%s: still subscribed (%+v)", c.name, e.Governing())
		}
		if c.undo != "" {
			exec(c.undo)
			if !answer().Subscribed() {
				t.Fatalf("after undoing %s: not subscribed", c.name)
			}
		}
	}
	exec(`update M.subscription_items set current_period_end = $1 where id = 'si_m1'`, periodEnd.Unix())

	// Older API versions: the period end on the subscription, found through metadata.user_id.
	const other = "77777777-8888-4999-aaaa-bbbbbbbbbbbb"
	exec(`insert into M.subscriptions (id, customer, status, items, metadata, created, current_period_end)
		values ('sub_m2', 'cus_not_mirrored', 'trialing', $1, $2, $3, $4)`,
		`{"object":"list","data":[{"id":"si_x","price":{"id":"price_1TESTmonthlyPro000001"}}]}`, `{"user_id":"`+other+`"}`, created, periodEnd.Unix())
	if e, err := h.Svc.Entitlements(ctx, other); err != nil || !e.Subscribed() || e.Governing().Status != billing.StatusTrialing {
		t.Fatalf("old-shape mirrored subscription: %+v %v", e.Governing(), err)
	}

	// An unknown customer is simply not entitled.
	if e, err := h.Svc.Entitlements(ctx, "99999999-0000-4000-8000-000000000000"); err != nil || e.Subscribed() {
		t.Fatalf("unknown customer: %v %v", e.Subscribed(), err)
	}

	// Mobile still works, and entitlements combine both stores.
	h.MustSend(billing.ProviderMobile, billingtest.Edit(t, billingtest.Fixture(t, "mobile/subscription_started.json"), func(m map[string]any) {
		billingtest.Path(m, "event_properties")["vendor_product_id"] = "com.example.storage"
	}))
	e = answer()
	if limit, _ := e.Limit("storage_gb"); !e.Entitled("exports") || limit != 50 || e.Plan().Key != "storage" {
		t.Fatalf("union of web mirror and mobile: plan %s, exports %v, storage_gb %d", e.Plan().Key, e.Entitled("exports"), limit)
	}
	if rec := h.SendWeb(billingtest.Fixture(t, "web/customer.subscription.created.json")); rec.Code != 404 {
		t.Fatalf("web webhook in sync_engine mode: %d", rec.Code)
	}
}

func TestCheckMirrorNamesWhatIsMissing(t *testing.T) {
	d := dbtest.Postgres(t)
	err := mirror.Check(context.Background(), d, "no_such_mirror")
	if err == nil || !strings.Contains(err.Error(), `"no_such_mirror"`) || !strings.Contains(err.Error(), "no_such_mirror.subscriptions") {
		t.Fatalf("error %v", err)
	}
}

// TestCheckMirrorRefusesSQLite runs without Postgres: the mode is Postgres only.
func TestCheckMirrorRefusesSQLite(t *testing.T) {
	if err := mirror.Check(context.Background(), dbtest.SQLite(t), "stripe"); err == nil || !strings.Contains(err.Error(), "Postgres") {
		t.Fatalf("SQLite: %v", err)
	}
}
