package pipeline_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/billing/billingtest"
	"github.com/tollgate/tollgate/internal/billing/pipeline"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbtest"
)

// withBatches makes batches form whenever events arrive together.
func withBatches(o *billingtest.Options) {
	o.Batching = pipeline.Batching{Size: 16, Wait: 5e6} // 5 ms
}

// delivery is one webhook delivery of a test stream.
type delivery struct {
	name string // for failures
	body []byte
}

// concurrentStream is 200 deliveries: the lifecycles of 30 subscriptions, a body that
// jsonb refuses as sent, every other delivery sent again (some a third time), and one poison event (see
// refusePoison); each subscription's events in the order they happened.
func concurrentStream(t *testing.T) (inOrder []delivery) {
	for i := range 30 {
		sub := fmt.Sprintf("sub_batch_%02d", i)
		events := billingtest.WebLifecycle(t, sub)
		for _, name := range []string{"created", "updated", "invoice", "deleted"} {
			inOrder = append(inOrder, delivery{sub + " " + name, events[name]})
		}
	}
	inOrder = append(inOrder, delivery{"escapes jsonb refuses", billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
		m["id"], m["note"] = "evt_escapes", "a\x00b"
		billingtest.Path(m, "data", "object")["id"] = "sub_escapes"
	})})
	inOrder = append(inOrder, delivery{"poison", billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
		m["id"] = poisonEventID
		billingtest.Path(m, "data", "object")["id"] = "sub_poison"
	})})
	for i := 0; len(inOrder) < 200; i += 2 {
		inOrder = append(inOrder, delivery{inOrder[i].name + " again", inOrder[i].body})
	}
	return inOrder
}

const poisonEventID = "evt_poison"

// refusePoison makes the database refuse to store the poison event: a failure inside its
// batch's transaction after its writes, which its savepoint must undo alone.
func refusePoison(t *testing.T, d *db.DB) {
	ddl := map[db.Engine][]string{
		db.Postgres: {
			`create function refuse_poison() returns trigger language plpgsql as $$ begin raise exception 'poison event'; end $$`,
			`create trigger poison before insert on provider_events for each row when (new.provider_event_id = '` + poisonEventID + `') execute function refuse_poison()`,
		},
		db.SQLite: {
			`create trigger poison before insert on provider_events when new.provider_event_id = '` + poisonEventID + `' begin select raise(abort, 'poison event'); end`,
		},
	}[d.Engine]
	for _, stmt := range ddl {
		if _, err := d.Exec(stmt); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConcurrentDeliveriesEndAsInOrder: 200 deliveries at once, shuffled (each
// subscription's events out of order, duplicates racing each other), grouped into shared
// transactions, end in the state the same events give one at a time in order; the poison
// event alone is answered 503 and leaves no trace, and is stored once it can be.
func TestConcurrentDeliveriesEndAsInOrder(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		stream := concurrentStream(t)
		reference := billingtest.New(t, map[db.Engine]func(testing.TB) *db.DB{db.Postgres: dbtest.Postgres, db.SQLite: dbtest.SQLite}[d.Engine](t))
		refusePoison(t, reference.DB)
		for _, del := range stream {
			want := http.StatusOK
			if del.name == "poison" {
				want = http.StatusServiceUnavailable
			}
			if code := reference.SendWeb(del.body).Code; code != want {
				t.Fatalf("in order, %s: %d", del.name, code)
			}
		}

		h := billingtest.New(t, d, withBatches)
		refusePoison(t, d)
		shuffled := slices.Clone(stream)
		rand.New(rand.NewPCG(31, 200)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		codes := make([]int, len(shuffled))
		var start, wg sync.WaitGroup
		start.Add(1)
		for i, del := range shuffled {
			wg.Go(func() {
				start.Wait()
				codes[i] = h.SendWeb(del.body).Code
			})
		}
		start.Done()
		wg.Wait()
		for i, del := range shuffled {
			want := http.StatusOK
			if del.name == "poison" {
				want = http.StatusServiceUnavailable
			}
			if codes[i] != want {
				t.Errorf("%s answered %d, want %d", del.name, codes[i], want)
			}
		}
		if transactions, events := h.Batches(); events < 2*transactions {
			t.Errorf("%v events in %v transactions: the deliveries did not share transactions", events, transactions)
		}
		if got, want := h.CanonicalState(), reference.CanonicalState(); got != want {
			t.Fatalf("concurrent:\n%s\nin order:\n%s", got, want)
		}
		if got, want := h.CountEvents(), reference.CountEvents(); got != want || got != 30*4+1 {
			t.Errorf("%d events stored, %d in order, want %d", got, want, 30*4+1)
		}
		if h.Canonical(billing.ProviderWeb, "sub_poison") != nil || h.CountRows("provider_subscriptions where provider_subscription_id = 'sub_poison'") != 0 {
			t.Fatal("the poison event's writes survived its failure")
		}
		if got, want := h.Answer(t, billingtest.FixtureUser), reference.Answer(t, billingtest.FixtureUser); got != want {
			t.Errorf("answer %s, in order %s", got, want)
		}

		// Once the database takes it, the provider's next delivery is stored and applied.
		if _, err := d.Exec("drop trigger poison" + map[db.Engine]string{db.Postgres: " on provider_events"}[d.Engine]); err != nil {
			t.Fatal(err)
		}
		h.MustSend(billing.ProviderWeb, stream[slices.IndexFunc(stream, func(del delivery) bool { return del.name == "poison" })].body)
		if got := h.Canonical(billing.ProviderWeb, "sub_poison"); got == nil || got.Status != billing.StatusActive {
			t.Fatalf("the poison event redelivered: %+v", got)
		}
	})
}

// TestABatchThatDeadlocksIsAppliedAgain: a batch that deadlocks with another transaction
// (another instance's batch, holding one customer's row and then asking for another's)
// is given up by Postgres and applied again whole once the other is done: every event of
// it is answered 200 and applied.
func TestABatchThatDeadlocksIsAppliedAgain(t *testing.T) {
	d := dbtest.Postgres(t)
	h := billingtest.New(t, d, func(o *billingtest.Options) { o.Batching = pipeline.Batching{Size: 2, Wait: time.Second} })
	userA, userB := "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
	event := func(sub, customer, user string) []byte {
		return billingtest.Edit(t, billingtest.Fixture(t, "web/customer.subscription.updated.json"), func(m map[string]any) {
			m["id"] = "evt_" + sub
			obj := billingtest.Path(m, "data", "object")
			obj["id"], obj["customer"] = sub, customer
			billingtest.Path(obj, "metadata")["user_id"] = user
		})
	}
	h.MustSend(billing.ProviderWeb, event("sub_first_a", "cus_a", userA))
	h.MustSend(billing.ProviderWeb, event("sub_first_b", "cus_b", userB))

	other, err := d.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer other.Rollback()
	lock := func(user string) error {
		_, err := other.Exec("select id from billing_customers where user_id = $1 for update", user)
		return err
	}
	if err := lock(userA); err != nil {
		t.Fatal(err)
	}
	// One batch: sub_1 (B's) takes B's customer row, then sub_2 (A's) waits for A's.
	codes := make(chan int, 2)
	for _, body := range [][]byte{event("sub_1", "cus_b", userB), event("sub_2", "cus_a", userA)} {
		go func() { codes <- h.SendWeb(body).Code }()
	}
	var otherPID int
	if err := other.QueryRow("select pg_backend_pid()").Scan(&otherPID); err != nil {
		t.Fatal(err)
	}
	billingtest.WaitFor(t, func() bool { // the batch waits for the other transaction
		var waiting int
		d.QueryRow("select count(*) from pg_stat_activity where $1 = any(pg_blocking_pids(pid))", otherPID).Scan(&waiting)
		return waiting == 1
	})
	// Asking for B's row closes the cycle; the batch, waiting longer, is the one given up.
	if err := lock(userB); err != nil {
		t.Fatalf("the other transaction was given up, not the batch: %v", err)
	}
	other.Rollback()
	for range 2 {
		if code := <-codes; code != http.StatusOK {
			t.Fatalf("a delivery of the deadlocked batch answered %d", code)
		}
	}
	if !strings.Contains(h.Logs.String(), "conflicted with another transaction; applying it again") {
		t.Fatalf("no deadlock was met:\n%s", h.Logs.String())
	}
	for sub, user := range map[string]string{"sub_1": userB, "sub_2": userA} {
		if got := h.Canonical(billing.ProviderWeb, sub); got == nil || got.UserID != user || got.Status != billing.StatusActive {
			t.Errorf("%s: %+v", sub, got)
		}
	}
}

// panicky is the acme store with a bug: its Apply panics on the product "bug".
type panicky struct{ billingtest.Acme }

func (p panicky) Apply(r billing.Reading, stored billing.Stored) ([]byte, any, error) {
	if r.Decoded.(*billingtest.AcmeEvent).Product == "bug" {
		panic("an adapter's bug")
	}
	return p.Acme.Apply(r, stored)
}

// TestAPanicFailsItsEventAlone: an adapter that panics on one event of a batch fails that
// event (503, nothing of it stored), not its neighbour, nor the process.
func TestAPanicFailsItsEventAlone(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		h := billingtest.New(t, d, func(o *billingtest.Options) {
			o.Extra = append(o.Extra, panicky{billingtest.Acme{Secret: billingtest.AcmeSecret}})
			o.Batching = pipeline.Batching{Size: 2, Wait: time.Second}
		})
		at := billingtest.Now.Add(-time.Hour)
		sound := billingtest.AcmeEvent{Event: "acme_sound", Kind: "started", At: at, Subscription: "acme_sound", User: billingtest.FixtureUser,
			Product: "com.example.app.pro.monthly", Until: at.Add(30 * 24 * time.Hour)}
		buggy := sound
		buggy.Event, buggy.Subscription, buggy.Product = "acme_buggy", "acme_buggy", "bug"
		codes := map[string]chan int{sound.Event: make(chan int, 1), buggy.Event: make(chan int, 1)}
		for _, ev := range []billingtest.AcmeEvent{sound, buggy} {
			go func() {
				code, _ := h.SendAcme(ev, billingtest.AcmeSecret)
				codes[ev.Event] <- code
			}()
		}
		if code := <-codes[buggy.Event]; code != http.StatusServiceUnavailable {
			t.Errorf("the event that panicked answered %d", code)
		}
		if code := <-codes[sound.Event]; code != http.StatusOK {
			t.Errorf("its neighbour answered %d", code)
		}
		if transactions, events := h.Batches(); transactions != 1 || events != 1 {
			t.Errorf("%v transactions of %v events, want the two in one, the sound one committed", transactions, events)
		}
		if h.CountEvents() != 1 || h.CountRows("provider_subscriptions where provider_subscription_id = 'acme_buggy'") != 0 {
			t.Errorf("stored: %s", h.DumpTables("provider_events", "provider_subscriptions"))
		}
		if !strings.Contains(h.Logs.String(), "panic processing a webhook event") {
			t.Error("the panic was not logged")
		}
	})
}

// TestEventRecordsAreAlikeOnBothEngines: the same events sent in the same order leave the
// same records on both engines (outcome, reason, user, subscription, the canonical row
// before and after).
func TestEventRecordsAreAlikeOnBothEngines(t *testing.T) {
	events := billingtest.WebLifecycle(t, "sub_records")
	unmapped := billingtest.Edit(t, events["updated"], func(m map[string]any) {
		m["id"] = "evt_unmapped"
		obj := billingtest.Path(m, "data", "object")
		obj["id"] = "sub_unmapped"
		billingtest.Path(obj["items"].(map[string]any)["data"].([]any)[0].(map[string]any), "price")["id"] = "price_unmapped"
	})
	ignored := billingtest.Edit(t, events["invoice"], func(m map[string]any) { m["id"], m["type"] = "evt_ignored", "customer.created" })
	stale := billingtest.Edit(t, events["updated"], func(m map[string]any) { m["id"] = "evt_stale" })
	stream := [][]byte{events["created"], events["updated"], events["invoice"], events["deleted"], stale, events["updated"], events["deleted"], unmapped, ignored}
	records := map[db.Engine]string{}
	for engine, open := range map[db.Engine]func(testing.TB) *db.DB{db.Postgres: dbtest.Postgres, db.SQLite: dbtest.SQLite} {
		h := billingtest.New(t, open(t))
		for _, body := range stream {
			h.MustSend(billing.ProviderWeb, body)
		}
		rows, err := h.DB.Query(`select provider_event_id, event_type, coalesce(processing_error, ''), outcome, coalesce(user_id, ''),
			coalesce(subscription_id, ''), coalesce(plan_before, ''), coalesce(status_before, ''), period_end_before,
			coalesce(plan_after, ''), coalesce(status_after, ''), period_end_after
			from provider_events order by provider_event_id`)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for rows.Next() {
			var cols [10]string
			var before, after sql.NullTime
			if err := rows.Scan(&cols[0], &cols[1], &cols[2], &cols[3], &cols[4], &cols[5], &cols[6], &cols[7], &before, &cols[8], &cols[9], &after); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%v %v %v\n", cols, before.Time.UTC(), after.Time.UTC())
		}
		rows.Close()
		records[engine] = b.String()
	}
	if records[db.Postgres] != records[db.SQLite] {
		t.Fatalf("Postgres:\n%s\nSQLite:\n%s", records[db.Postgres], records[db.SQLite])
	}
	for _, want := range []string{"applied", "stale", "unresolved", "ignored", "unmapped price", "pro expired"} {
		if !strings.Contains(records[db.Postgres], want) {
			t.Errorf("no %s record:\n%s", want, records[db.Postgres])
		}
	}
}
