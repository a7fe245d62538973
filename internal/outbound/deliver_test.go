package outbound

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
	"github.com/tollgate/tollgate/internal/db/dbtest"
	"github.com/tollgate/tollgate/internal/logcapture"
	"github.com/tollgate/tollgate/internal/outbound/outboundtest"
)

// testEvent is the body the tests record: which user, and the how-manyth of theirs.
type testEvent struct {
	UserID string `json:"user_id"`
	Seq    int    `json:"seq"`
}

// record commits one event per (user, seq), users taking turns, as changes would.
func record(t *testing.T, d *db.DB, users, perUser int, now time.Time) {
	t.Helper()
	for seq := 1; seq <= perUser; seq++ {
		for u := range users {
			user := fmt.Sprintf("00000000-0000-4000-8000-%012d", u)
			body, _ := json.Marshal(testEvent{UserID: user, Seq: seq})
			err := d.InTx(context.Background(), func(tx *sql.Tx) error {
				return Record(context.Background(), dbq.New(tx), user, "test.event", body, now)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
}

// start runs a deliverer to the receiver until the test ends.
func start(t *testing.T, d *db.DB, r *outboundtest.Receiver, opts Options) *Deliverer {
	t.Helper()
	del, _ := run(t, d, r, opts)
	return del
}

// startStoppable is start, with a stop that returns once Run has.
func startStoppable(t *testing.T, d *db.DB, r *outboundtest.Receiver, opts Options) (stop func()) {
	t.Helper()
	_, stop = run(t, d, r, opts)
	return stop
}

func run(t *testing.T, d *db.DB, r *outboundtest.Receiver, opts Options) (*Deliverer, func()) {
	opts.URL, opts.Key = r.URL, outboundtest.Key()
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return 20 * time.Millisecond }
	}
	opts.Poll = 20 * time.Millisecond
	del := New(d, opts)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { del.Run(ctx) })
	stop := func() { cancel(); wg.Wait() }
	t.Cleanup(stop)
	return del, stop
}

// deliverDue claims what is due and attempts it, once.
func deliverDue(del *Deliverer) (int, error) {
	rows, err := del.settleAndClaim(context.Background(), nil, batch)
	var finished []settled
	for _, r := range rows {
		finished = append(finished, del.attempt(context.Background(), r))
	}
	if _, err := del.settleAndClaim(context.Background(), finished, 0); err != nil {
		return 0, err
	}
	return len(rows), err
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 20 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// checkOrderAndOnce fails unless the receiver accepted each of users×perUser events
// exactly once, each user's in the order they were recorded.
func checkOrderAndOnce(t *testing.T, accepted []outboundtest.Delivery, users, perUser int) {
	t.Helper()
	if len(accepted) != users*perUser {
		t.Errorf("accepted %d deliveries, want %d", len(accepted), users*perUser)
	}
	ids := map[string]bool{}
	last := map[string]int{}
	for _, d := range accepted {
		if ids[d.MessageID] {
			t.Errorf("webhook-id %s delivered twice", d.MessageID)
		}
		ids[d.MessageID] = true
		var ev testEvent
		if err := json.Unmarshal(d.Body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Seq != last[ev.UserID]+1 {
			t.Errorf("user %s: event %d arrived after event %d", ev.UserID, ev.Seq, last[ev.UserID])
		}
		last[ev.UserID] = ev.Seq
	}
}

func countStatus(t *testing.T, d *db.DB, status string) int {
	t.Helper()
	var n int
	if err := d.QueryRow("select count(*) from outbound_deliveries where status = $1", status).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDeliversEveryEventInOrderOnceTheReceiverIsBack(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		r := outboundtest.NewReceiver(t)
		r.Answer(http.StatusServiceUnavailable)
		reg := prometheus.NewRegistry()
		del := start(t, d, r, Options{Registerer: reg})
		record(t, d, 3, 4, time.Now())
		del.Wake()

		eventually(t, "several refused attempts", func() bool { return r.Attempts() >= 9 })
		if n := len(r.Accepted()); n != 0 {
			t.Fatalf("%d accepted while the receiver refuses", n)
		}
		list, err := List(context.Background(), d, Filter{Status: Pending})
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != 12 {
			t.Fatalf("%d pending, want 12", len(list))
		}
		tried := 0
		for _, p := range list {
			if p.Attempts > 0 {
				tried++
				if p.LastError != "answered 503" {
					t.Errorf("last error %q, want %q", p.LastError, "answered 503")
				}
			}
		}
		if tried != 3 {
			t.Errorf("%d deliveries were attempted, want 3: only each user's first may go while it is pending", tried)
		}

		r.Answer(0)
		eventually(t, "all 12 delivered", func() bool { return countStatus(t, d, Delivered) == 12 })
		checkOrderAndOnce(t, r.Accepted(), 3, 4)
		delivered, err := List(context.Background(), d, Filter{Status: Delivered})
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range delivered {
			if x.DeliveredAt == nil || x.DeliveredAt.Before(x.CreatedAt) || x.LastError != "" {
				t.Errorf("delivery %d: delivered_at %v (created %v), last_error %q", x.ID, x.DeliveredAt, x.CreatedAt, x.LastError)
			}
		}
		if got := testutil.ToFloat64(del.metrics.outcomes.WithLabelValues("delivered")); got != 12 {
			t.Errorf("delivered counter %v, want 12", got)
		}
		if got := testutil.ToFloat64(del.metrics.outcomes.WithLabelValues("retried")); got < 3 {
			t.Errorf("retried counter %v, want at least 3", got)
		}
		if n, err := testutil.GatherAndCount(reg, "tollgate_outbound_deliveries_pending", "tollgate_outbound_delivery_latency_seconds"); err != nil || n != 2 {
			t.Errorf("pending gauge and latency histogram: %d series, %v", n, err)
		}
	})
}

func TestTwoInstancesDeliverEachEventOnce(t *testing.T) {
	url := dbtest.PostgresURL(t)
	one := dbtest.Open(t, url)
	two := dbtest.Open(t, url)
	r := outboundtest.NewReceiver(t)
	const users, perUser = 40, 5
	record(t, one, users, perUser, time.Now())
	stopOne := startStoppable(t, one, r, Options{})
	stopTwo := startStoppable(t, two, r, Options{})
	eventually(t, "all delivered", func() bool { return countStatus(t, one, Delivered) == users*perUser })
	stopOne() // Run returns once its attempts in flight have finished: a duplicate has arrived by now
	stopTwo()
	checkOrderAndOnce(t, r.Accepted(), users, perUser)
	if r.Attempts() != users*perUser {
		t.Errorf("%d attempts for %d events", r.Attempts(), users*perUser)
	}
}

// TestTwoInstancesMovingAtOnceLeaseOneEventOfAUser: an instance moves a user's first event
// in, leased, and has not committed when the user's second event is recorded and another
// instance moves it. The second must wait for the first's move to commit, and then see the
// first pending: otherwise it leases the second event too, and both go out at once.
func TestTwoInstancesMovingAtOnceLeaseOneEventOfAUser(t *testing.T) {
	url := dbtest.PostgresURL(t)
	one, two := dbtest.Open(t, url), dbtest.Open(t, url)
	ctx := context.Background()
	record(t, one, 1, 1, time.Now())
	tx, err := one.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var firstPID int
	if err := tx.QueryRow("select pg_backend_pid()").Scan(&firstPID); err != nil {
		t.Fatal(err)
	}
	leased, err := moveRecorded(ctx, one, dbq.New(tx), batch, time.Now().Add(time.Minute))
	if err != nil || len(leased) != 1 {
		t.Fatalf("first instance leased %d, %v", len(leased), err)
	}
	body, _ := json.Marshal(testEvent{UserID: leased[0].UserID, Seq: 2})
	if err := two.InTx(ctx, func(tx *sql.Tx) error {
		return Record(ctx, dbq.New(tx), leased[0].UserID, "test.event", body, time.Now())
	}); err != nil {
		t.Fatal(err)
	}
	second := New(two, Options{URL: "http://127.0.0.1:1", Key: outboundtest.Key()})
	done := make(chan []dbq.ClaimDeliveriesRow, 1)
	go func() {
		got, err := second.settleAndClaim(ctx, nil, batch)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	// Commit only once Postgres says the second instance waits on the first's lock; had it
	// not waited, it would have answered already, and the check below says what it leased.
	eventually(t, "the second instance waiting for the first's move, or done", func() bool {
		var blocked int
		if err := one.QueryRow("select count(*) from pg_stat_activity where $1 = any(pg_blocking_pids(pid))", firstPID).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		return blocked > 0 || len(done) > 0
	})
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := <-done; len(got) != 0 {
		t.Errorf("the second instance leased %+v while the user's first event was leased", got)
	}
}

func TestADeliveryWhoseInstanceDiedIsAttemptedOnceItsLeaseRunsOut(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		r := outboundtest.NewReceiver(t)
		claimedAt := time.Now().UTC().Truncate(time.Millisecond)
		record(t, d, 1, 2, claimedAt)
		clock := claimedAt
		at := func() time.Time { return clock }
		// An instance claims the first event and dies before it answers.
		dead := New(d, Options{URL: r.URL, Key: outboundtest.Key(), Lease: 30 * time.Second, Clock: at})
		claimed, err := dead.settleAndClaim(context.Background(), nil, batch)
		if err != nil || len(claimed) != 1 {
			t.Fatalf("claimed %d, %v", len(claimed), err)
		}
		live := New(d, Options{URL: r.URL, Key: outboundtest.Key(), Clock: at, Backoff: func(int) time.Duration { return 0 }})
		clock = claimedAt.Add(30*time.Second - time.Millisecond)
		if n, err := deliverDue(live); err != nil || n != 0 || r.Attempts() != 0 {
			t.Fatalf("while the lease holds: %d claimed, %d attempts, %v", n, r.Attempts(), err)
		}
		clock = claimedAt.Add(30*time.Second + time.Millisecond)
		for range 2 { // the first event, then the second, now that the first is delivered
			if n, err := deliverDue(live); err != nil || n != 1 {
				t.Fatalf("once the lease ran out: %d claimed, %v", n, err)
			}
		}
		if countStatus(t, d, Delivered) != 2 {
			t.Fatalf("%d delivered, want 2", countStatus(t, d, Delivered))
		}
		checkOrderAndOnce(t, r.Accepted(), 1, 2)
	})
}

func TestGivesUpAfterTheRetryWindowAndRetriesOnRequest(t *testing.T) {
	dbtest.Engines(t, func(t *testing.T, d *db.DB) {
		r := outboundtest.NewReceiver(t)
		r.Answer(http.StatusInternalServerError)
		var mu sync.Mutex
		clock := time.Now().UTC()
		now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
		record(t, d, 1, 1, clock)
		del := start(t, d, r, Options{Clock: now, Backoff: func(int) time.Duration { return 24 * time.Hour }})
		eventually(t, "a first attempt", func() bool { return r.Attempts() == 1 })
		// Attempts at 0, 24 h and 48 h; the next would fall past the 72 h window. The clock
		// moves only once an attempt is recorded: moved between the receiver's answer and
		// the recording, it would put the next attempt a day later.
		for day := 1; day <= 2; day++ {
			eventually(t, fmt.Sprintf("attempt %d recorded", day), func() bool {
				list, _ := List(context.Background(), d, Filter{})
				return len(list) == 1 && list[0].Attempts == day && list[0].LastError != "" &&
					list[0].NextAttemptAt != nil && list[0].NextAttemptAt.After(now())
			})
			mu.Lock()
			clock = clock.Add(24*time.Hour + time.Second)
			mu.Unlock()
			eventually(t, fmt.Sprintf("attempt %d", day+1), func() bool { return r.Attempts() == day+1 })
		}
		eventually(t, "given up", func() bool { return countStatus(t, d, Failed) == 1 })
		if got := testutil.ToFloat64(del.metrics.outcomes.WithLabelValues("failed")); got != 1 {
			t.Errorf("failed counter %v, want 1", got)
		}
		failed, err := List(context.Background(), d, Filter{Status: Failed})
		if err != nil || len(failed) != 1 || failed[0].Attempts != 3 || failed[0].LastError != "answered 500" {
			t.Fatalf("failed deliveries: %+v, %v", failed, err)
		}

		r.Answer(0)
		n, err := RetryFailed(context.Background(), d, now())
		if err != nil || n != 1 {
			t.Fatalf("RetryFailed: %d, %v", n, err)
		}
		eventually(t, "delivered after the retry", func() bool { return countStatus(t, d, Delivered) == 1 })
		if ok, err := Retry(context.Background(), d, failed[0].ID, now()); ok || err != nil {
			t.Errorf("Retry of a delivered delivery: %t, %v", ok, err)
		}
	})
}

func TestAFailedAttemptRecordsNeitherTheURLNorTheAnswer(t *testing.T) {
	d := dbtest.SQLite(t)
	r := outboundtest.NewReceiver(t)
	r.Close() // nothing listens there any more
	record(t, d, 1, 1, time.Now())
	del := New(d, Options{URL: r.URL + "/hooks?token=sekret-token", Key: outboundtest.Key()})
	if n, err := deliverDue(del); n != 1 || err != nil {
		t.Fatalf("deliverDue: %d, %v", n, err)
	}
	list, err := List(context.Background(), d, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if got := list[0].LastError; !strings.Contains(got, "connection refused") || strings.Contains(got, "sekret") || strings.Contains(got, "hooks") {
		t.Errorf("last error %q: want the failure, not the URL", got)
	}

	redirecting := outboundtest.NewReceiver(t)
	del = New(d, Options{URL: redirecting.URL, Key: outboundtest.Key()})
	redirecting.Answer(http.StatusFound)
	if _, err := Retry(context.Background(), d, list[0].ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	deliverDue(del)
	if list, _ := List(context.Background(), d, Filter{}); list[0].Status != Pending || list[0].LastError != "answered 302" {
		t.Errorf("after a redirect: %+v, want pending with \"answered 302\"", list[0])
	}
}

func TestBackoffGrowsToAnHourWithJitter(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 5 * time.Second, 2: 10 * time.Second, 5: 80 * time.Second, 12: time.Hour, 60: time.Hour} {
		lo, hi := want*3/4, want*5/4
		spread := map[time.Duration]bool{}
		for range 50 {
			got := Backoff(attempt)
			if got < lo || got >= hi {
				t.Fatalf("attempt %d waits %s, want within [%s, %s)", attempt, got, lo, hi)
			}
			spread[got] = true
		}
		if len(spread) < 10 {
			t.Errorf("attempt %d: only %d distinct waits in 50", attempt, len(spread))
		}
	}
}

// The claim runs at every Pace while deliveries are pending, on SQLite holding its one
// connection: it must find them through their partial index, not by reading the table in
// id order, every delivered row of its history included (SQLite chose that to spare a sort,
// and the claim slowed as the history grew).
func TestClaimingOnSQLiteReadsOnlyPendingDeliveries(t *testing.T) {
	claim := generatedQuery(t, "../db/dbq/outbound.sql.go", "claimDeliveries")
	// With the deliverer's limit: SQLite plans for the values bound.
	now := time.Now()
	rows, err := dbtest.SQLite(t).Query("explain query plan "+claim, now.Add(time.Minute), now, batch)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	reads := func(how string) bool {
		return slices.ContainsFunc(plan, func(step string) bool { return strings.HasPrefix(step, how) })
	}
	if reads("SCAN d") || !reads("SEARCH d USING INDEX outbound_deliveries_due") {
		t.Errorf("the claim does not read pending deliveries through their index:\n%s", strings.Join(plan, "\n"))
	}
}

// generatedQuery is the text of the query constant name in the sqlc-generated file at
// path: the statement as it is sent, placeholders and all, which the plan depends on.
func generatedQuery(t *testing.T, path, name string) string {
	t.Helper()
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	query := regexp.MustCompile("(?s)\nconst " + name + " = `(.*?)`").FindSubmatch(file)
	if query == nil {
		t.Fatalf("no query %s in %s", name, path)
	}
	return string(query[1])
}

// gatedReceiver accepts every delivery once open is closed, counting each webhook-id, and
// says how many attempts are waiting at the gate.
type gatedReceiver struct {
	*httptest.Server
	open    chan struct{}
	mu      sync.Mutex
	waiting int
	got     map[string]int
}

func newGatedReceiver(t *testing.T) *gatedReceiver {
	g := &gatedReceiver{open: make(chan struct{}), got: map[string]int{}}
	g.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.mu.Lock()
		g.waiting++
		g.mu.Unlock()
		<-g.open
		g.mu.Lock()
		g.got[r.Header.Get("webhook-id")]++
		g.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(g.Close)
	return g
}

func (g *gatedReceiver) count() (waiting int, got map[string]int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting, maps.Clone(g.got)
}

// TestADatabaseCutWhileAttemptsAreInFlightSendsNothingTwice: attempts that succeed while
// the database is away are recorded once it is back, before their leases run out; none is
// sent again.
func TestADatabaseCutWhileAttemptsAreInFlightSendsNothingTwice(t *testing.T) {
	proxied, direct, proxy := dbtest.PostgresBehindProxy(t)
	d := dbtest.Open(t, proxied)
	const users = 20
	record(t, d, users, 1, time.Now())
	g := newGatedReceiver(t)
	logs := &logcapture.Buffer{}
	del := New(d, Options{URL: g.URL, Key: outboundtest.Key(), Lease: 3 * time.Second, Poll: 20 * time.Millisecond,
		DBTimeout: time.Second, Log: slog.New(slog.NewTextHandler(logs, nil))})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); del.Run(ctx) }()
	defer func() { cancel(); <-done }()

	eventually(t, "every user's delivery in flight", func() bool { n, _ := g.count(); return n == users })
	proxy.Cut()
	close(g.open)
	eventually(t, "a failed attempt to record them", func() bool { return strings.Contains(logs.String(), "could not be recorded") })
	proxy.Start()
	direct2 := dbtest.Open(t, direct)
	eventually(t, "all recorded as delivered", func() bool { return countStatus(t, direct2, Delivered) == users })
	cancel()
	<-done
	_, got := g.count()
	for id, n := range got {
		if n != 1 {
			t.Errorf("webhook-id %s sent %d times", id, n)
		}
	}
	if len(got) != users {
		t.Errorf("%d deliveries received, want %d", len(got), users)
	}
}

// TestTheLastRecordAtShutdownIsBoundedByDBTimeout: with the database stuck, a deliverer
// told to stop gives its last transaction DBTimeout, not more.
func TestTheLastRecordAtShutdownIsBoundedByDBTimeout(t *testing.T) {
	proxied, _, proxy := dbtest.PostgresBehindProxy(t)
	d := dbtest.Open(t, proxied)
	record(t, d, 1, 1, time.Now())
	r := outboundtest.NewReceiver(t)
	const dbTimeout = 500 * time.Millisecond
	del := New(d, Options{URL: r.URL, Key: outboundtest.Key(), Poll: 20 * time.Millisecond, DBTimeout: dbTimeout})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); del.Run(ctx) }()
	eventually(t, "the delivery attempted", func() bool { return r.Attempts() == 1 })
	proxy.Stall()
	defer proxy.Resume()
	stopped := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(dbTimeout + 5*time.Second):
		t.Fatalf("Run still waits %v after it was stopped, with DBTimeout %v", time.Since(stopped), dbTimeout)
	}
	t.Logf("stopped %v after cancel", time.Since(stopped))
}

// TestAReceiverThatTricklesItsAnswerDoesNotHoldTheAttempt: a 2xx status delivers; a body
// trickled after it is read for a second at most, not for the attempt's whole Timeout.
func TestAReceiverThatTricklesItsAnswerDoesNotHoldTheAttempt(t *testing.T) {
	d := dbtest.SQLite(t)
	record(t, d, 1, 1, time.Now())
	gone := make(chan int, 1) // bytes trickled before the sender went away
	trickler := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		for n := 0; ; n++ {
			if _, err := w.Write([]byte("x")); err != nil {
				gone <- n
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				gone <- n
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}))
	defer trickler.Close()
	del := New(d, Options{URL: trickler.URL, Key: outboundtest.Key()})
	started := time.Now()
	if n, err := deliverDue(del); err != nil || n != 1 {
		t.Fatalf("attempted %d, %v", n, err)
	}
	took := time.Since(started)
	if countStatus(t, d, Delivered) != 1 {
		t.Fatal("a 200 with a trickled body was not recorded as delivered")
	}
	if took >= DefaultTimeout/2 {
		t.Fatalf("the attempt took %v: it waited for the trickled body", took)
	}
	if n := <-gone; n > 2*int(answerBodyWait/(50*time.Millisecond)) {
		t.Fatalf("%d bytes were read after the status", n)
	}
}
