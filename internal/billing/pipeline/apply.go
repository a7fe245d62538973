package pipeline

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// providerSubscription is a locked provider_subscriptions row being worked on.
type providerSubscription = dbq.LockProviderSubscriptionRow

// lock locks the reading's subscription row (creating it) and notes the plan catalogue's
// version, which comes with it. Every writer of a subscription's canonical row takes this
// lock first, so events for one subscription apply one at a time.
func (p *Pipeline) lock(ctx context.Context, w *work, subscription string) (providerSubscription, error) {
	row, err := w.LockProviderSubscription(ctx, dbq.LockProviderSubscriptionParams{
		Provider: w.adapter.Provider(), ProviderSubscriptionID: subscription, Now: p.now(),
	})
	w.plansVersion = row.PlansVersion
	return row, err
}

// storedOf is the row as adapters see it.
func storedOf(ps providerSubscription) billing.Stored {
	s := billing.Stored{
		State: ps.State, LastEventID: ps.LastEventID.String, LastEventType: ps.LastEventType.String,
		LastEventAt: ps.LastEventAt.Time, Customer: ps.ProviderCustomerID.String,
		PaidThrough: timePtr(ps.PaidThrough), PaidAt: timePtr(ps.PaidEventAt),
	}
	// A later read that found this state stands for it as of its own place among events.
	if ps.ReadAt.Valid && ps.ReadPosition.Valid && !ps.ReadPosition.Time.Before(s.LastEventAt) {
		s.LastReadAt, s.LastEventAt = ps.ReadAt.Time, ps.ReadPosition.Time
	}
	return s
}

// apply applies a reading of the event eventID (a snapshot's read names its own) to its
// subscription: a duplicate or stale reading changes no stored state, one that supersedes
// replaces it. Either way the canonical row is written from whatever state stands, which
// is idempotent and lets a replay carry a plan or customer link fixed since.
func (p *Pipeline) apply(ctx context.Context, w *work, r billing.Reading, eventID string) (string, error) {
	ps, err := p.lock(ctx, w, r.Subscription)
	if err != nil {
		return "", err
	}
	w.noteBefore(r.Subscription, ps)
	w.answerBefore = r.AnswerBefore
	if r.Payment != nil {
		return p.applyPayment(ctx, w, r, ps)
	}
	stored := storedOf(ps)
	order := billing.Supersedes
	switch {
	case !r.Snapshot && stored.LastEventID == eventID:
		return p.materialise(ctx, w, ps, stored, billing.OutcomeDuplicate)
	case stored.HasState():
		order = w.adapter.Order(r, stored)
	}
	outcome := billing.OutcomeApplied
	customerBefore := stored.Customer
	switch order {
	case billing.Stale:
		outcome, w.stale = billing.OutcomeStale, true
	case billing.Same:
		// Nothing of the row is written; the read's time is kept apart, so that what is
		// older than it stays older.
		err := w.RememberRead(ctx, dbq.RememberReadParams{ProviderSubscriptionID: ps.ID,
			ReadAt: sql.NullTime{Time: r.ReadTime().UTC(), Valid: true}, ReadPosition: sql.NullTime{Time: r.At.UTC(), Valid: true}})
		if err != nil {
			return "", err
		}
	case billing.Supersedes:
		if stored, err = p.supersede(ctx, w, r, eventID, ps); err != nil {
			return "", err
		}
	}
	outcome, err = p.materialise(ctx, w, ps, stored, outcome)
	if err == nil && order == billing.Supersedes && customerBefore != "" && stored.Customer != "" && stored.Customer != customerBefore {
		p.customerMoved(ctx, w, ps, customerBefore, stored.Customer)
	}
	if err != nil || r.Replaces == "" || r.Replaces == r.Subscription {
		return outcome, err
	}
	return outcome, p.replace(ctx, w, r.Replaces, eventID, r.At)
}

// customerMoved notes a web subscription applied under another customer than before. The
// web provider never moves a subscription between customers, so this is a mistake (a
// hand-edited or test event, most likely): it is applied as the provider says, logged at
// warn, and recorded with the user it moved from, whose timeline then shows it too.
func (p *Pipeline) customerMoved(ctx context.Context, w *work, ps providerSubscription, from, to string) {
	if w.adapter.Provider() != billing.ProviderWeb {
		return // a mobile profile or a store account may change hands as its provider says
	}
	userBefore := textOf(ps.UserBefore)
	p.log.WarnContext(ctx, "a web event moves its subscription to another customer, which the provider never does; applied as it says",
		"event_id", w.cause.ProviderEventID, "subscription_id", ps.ProviderSubscriptionID,
		"customer_before", from, "customer_after", to, "user_before", userBefore, "user_after", w.user)
	if userBefore != "" && !strings.EqualFold(userBefore, w.user) {
		w.record.movedFrom = userBefore
	}
}

// supersede replaces the subscription's stored state with the reading's, and its price
// with the one the new state names, and gives the stored state as it now stands.
func (p *Pipeline) supersede(ctx context.Context, w *work, r billing.Reading, eventID string, ps providerSubscription) (billing.Stored, error) {
	stored := storedOf(ps)
	state, decoded, err := w.adapter.Apply(r, stored)
	if err != nil {
		return stored, err
	}
	at := r.At
	ps.State, ps.ProviderCustomerID = string(state), nullString(r.Customer)
	ps.LastEventID, ps.LastEventType, ps.LastEventAt = nullString(eventID), nullString(r.Type), nullTime(&at)
	stored.State, stored.Decoded, stored.Customer = ps.State, decoded, r.Customer
	stored.LastEventID, stored.LastEventType, stored.LastEventAt = eventID, r.Type, at
	var price billing.Facts
	if f, err := w.adapter.Facts(stored); err == nil && f.Currency != "" {
		price = f // a state whose facts fail is refused by materialise, which reads them again
	}
	return stored, p.save(ctx, w, ps, price)
}

// replace ends the subscription old, which the one just applied replaces (an upgrade), as
// its adapter says it ends, so that the user keeps one live subscription, not two. One
// tollgate has not heard of, or that ended so already, is left alone, and so is one that
// is not the same user's: a purchase naming another user's subscription as the one it
// replaces must not end it.
func (p *Pipeline) replace(ctx context.Context, w *work, old, eventID string, at time.Time) error {
	ps, err := p.lock(ctx, w, old)
	if err != nil {
		return err
	}
	stored := storedOf(ps)
	if !stored.HasState() || stored.LastEventType == billing.ReplacedEventType {
		return nil
	}
	if owner := textOf(ps.UserBefore); w.user == "" || !strings.EqualFold(owner, w.user) {
		p.log.WarnContext(ctx, "a purchase names another user's subscription as the one it replaces; that one is left as it is",
			"provider", w.cause.Provider, "event_id", w.cause.ProviderEventID, "subscription_id", w.record.subscription,
			"replaced_subscription_id", old, "user_id", w.user, "replaced_user_id", owner)
		return nil
	}
	state, decoded, err := w.adapter.Apply(billing.Reading{Subscription: old, Type: billing.ReplacedEventType, At: at}, stored)
	if err != nil {
		return err
	}
	ps.State = string(state)
	ps.LastEventID, ps.LastEventType, ps.LastEventAt = nullString(eventID), nullString(billing.ReplacedEventType), nullTime(&at)
	if err := p.save(ctx, w, ps, billing.Facts{}); err != nil {
		return err
	}
	stored.State, stored.Decoded = ps.State, decoded
	stored.LastEventID, stored.LastEventType, stored.LastEventAt = eventID, billing.ReplacedEventType, at
	_, err = p.materialise(ctx, w, ps, stored, billing.OutcomeApplied)
	return err
}

// applyPayment keeps a payment as running maxima of the paid period and the payment's
// time, so payments combine the same way in any order.
func (p *Pipeline) applyPayment(ctx context.Context, w *work, r billing.Reading, ps providerSubscription) (string, error) {
	if !ps.LastEventID.Valid && !ps.PaidThrough.Valid && r.First != nil {
		// The first word of this subscription: the payment must resolve on its own, since
		// no stored state vouches for it yet.
		if _, err := p.resolveCustomer(ctx, w, *r.First, 0, sql.NullTime{}); err != nil {
			return "", err
		}
		if _, err := p.resolvePlan(ctx, w, *r.First); err != nil {
			return "", err
		}
	}
	outcome := billing.OutcomeDuplicate
	paid := r.Payment
	if !ps.PaidThrough.Valid || paid.Through.After(ps.PaidThrough.Time) {
		ps.PaidThrough, outcome = nullTime(&paid.Through), billing.OutcomeApplied
	}
	if !ps.PaidEventAt.Valid || paid.At.After(ps.PaidEventAt.Time) {
		ps.PaidEventAt, outcome = nullTime(&paid.At), billing.OutcomeApplied
	}
	if outcome == billing.OutcomeApplied {
		if err := p.save(ctx, w, ps, billing.Facts{}); err != nil {
			return "", err
		}
	}
	if !ps.LastEventID.Valid {
		return outcome, nil // no state yet: the first event that brings one picks the payment up
	}
	return p.materialise(ctx, w, ps, storedOf(ps), outcome)
}

// save writes the provider subscription's row and, when price names a currency, its price.
func (p *Pipeline) save(ctx context.Context, w *work, ps providerSubscription, price billing.Facts) error {
	arg := dbq.SaveProviderSubscriptionParams{
		ID: ps.ID, ProviderCustomerID: ps.ProviderCustomerID, State: ps.State,
		LastEventID: ps.LastEventID, LastEventType: ps.LastEventType, LastEventAt: ps.LastEventAt,
		PaidThrough: ps.PaidThrough, PaidEventAt: ps.PaidEventAt, Now: p.now(),
	}
	if price.Currency != "" {
		arg.Amount = sql.NullInt64{Int64: price.Amount, Valid: true}
		arg.Currency, arg.BillingPeriod = nullString(price.Currency), nullString(price.Period)
	}
	return w.SaveProviderSubscription(ctx, arg)
}

// materialise writes the canonical subscription of the locked provider subscription ps
// from the facts of its stored state.
func (p *Pipeline) materialise(ctx context.Context, w *work, ps providerSubscription, stored billing.Stored, outcome string) (string, error) {
	if !stored.HasState() {
		return outcome, nil
	}
	f, err := w.adapter.Facts(stored)
	if err != nil {
		return "", err
	}
	if f, err = p.keepUser(ctx, w, ps, f); err != nil {
		return "", err
	}
	// A purchase that lasts no time the plans file gives is unresolved, but only once its
	// customer has resolved, so that the event still names its user.
	noDuration, err := p.applyLasts(ctx, w, &f)
	if err != nil {
		return "", err
	}
	providerSubscriptionID := ps.ID
	periodEnd := nullTime(f.PeriodEnd)
	customer, err := p.resolveCustomer(ctx, w, f, providerSubscriptionID, periodEnd)
	if err != nil {
		return "", err
	}
	if noDuration != nil {
		return "", noDuration
	}
	plan, err := p.resolvePlan(ctx, w, f)
	if err != nil {
		return "", err
	}
	arg := dbq.UpsertSubscriptionParams{
		ProviderSubscriptionID: providerSubscriptionID, BillingCustomerID: customer.id, PlanID: plan,
		Provider: w.adapter.Provider(), Status: f.Status, CurrentPeriodEnd: periodEnd, Now: p.now(),
	}
	w.noteAfter(providerSubscriptionID, arg)
	return outcome, p.upsertSubscription(ctx, w, customer.userID, arg)
}

// keepUser applies the rule of a subscription that keeps its user (Facts.KeepsUser): the
// user its canonical row names stands in for a state that names none, and a state that
// names another is unresolved, logged at warn with both users.
func (p *Pipeline) keepUser(ctx context.Context, w *work, ps providerSubscription, f billing.Facts) (billing.Facts, error) {
	linked := textOf(ps.UserBefore)
	switch {
	case !f.KeepsUser || linked == "" || strings.EqualFold(f.UserID, linked):
	case f.UserID == "":
		f.UserID = linked
	default:
		p.log.WarnContext(ctx, "a store event names another user than the one its subscription is linked to; stored unresolved",
			"provider", w.cause.Provider, "event_id", w.cause.ProviderEventID, "subscription_id", ps.ProviderSubscriptionID,
			"linked_user_id", linked, "event_user_id", f.UserID)
		return f, billing.NewUnresolved("the event names another user than its subscription's",
			"subscription_id", ps.ProviderSubscriptionID, "linked_user_id", linked, "event_user_id", f.UserID)
	}
	return f, nil
}

// applyLasts sets the horizon of a one-time purchase that lasts a while (Facts.Lasts)
// from its product's `lasts`, as the plan catalogue the work's transaction sees has it. A
// purchase that must last a while and whose product has no lasts is returned as the
// *billing.Unresolved it is (no duration); any other error is the catalogue's.
func (p *Pipeline) applyLasts(ctx context.Context, w *work, f *billing.Facts) (unresolved error, err error) {
	if f.Lasts == billing.NoLasts || f.PeriodEnd != nil {
		return nil, nil // a subscription, or a purchase that has ended (a refund, say)
	}
	c, err := p.catalogues.At(ctx, w.Queries, w.plansVersion)
	if err != nil {
		return nil, err
	}
	list := cmp.Or(f.PriceList, w.adapter.Provider())
	for _, id := range f.Products {
		if d, ok := c.Lasts[billing.PriceKey{Provider: list, ID: id}]; ok {
			end := f.Purchased.Add(d)
			f.PeriodEnd = &end
			return nil, nil
		}
	}
	if f.Lasts == billing.LastsRequired {
		return billing.NewUnresolved("no duration: the plans file gives the product no lasts", "product_ids", f.Products), nil
	}
	return nil, nil // for good
}

// billingCustomer is a billing_customers row: its id and its identity user.
type billingCustomer struct {
	id     int64
	userID string
}

// resolveCustomer finds the billing customer the facts name: the user linked to their
// provider customer id, else the user id they carry, which is then linked.
// providerSubscriptionID and periodEnd are the canonical write that follows, if one does
// (else 0), for upsertCustomer.
func (p *Pipeline) resolveCustomer(ctx context.Context, w *work, f billing.Facts, providerSubscriptionID int64, periodEnd sql.NullTime) (billingCustomer, error) {
	if f.Link != "" {
		c, err := linkedCustomer(ctx, w, f.Link)
		if err == nil {
			w.named = c.userID
			return c, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return billingCustomer{}, err
		}
	}
	if !billing.IsUUID(f.UserID) {
		if f.Unresolved == nil {
			return billingCustomer{}, billing.NewUnresolved("unresolved customer", "provider", w.adapter.Provider())
		}
		return billingCustomer{}, f.Unresolved
	}
	c, err := p.upsertCustomer(ctx, w, f.UserID, providerSubscriptionID, periodEnd)
	if err != nil {
		return billingCustomer{}, err
	}
	if f.Link != "" && !c.WebCustomerID.Valid && w.adapter.Provider() == billing.ProviderWeb {
		if err := w.LinkWebCustomer(ctx, dbq.LinkWebCustomerParams{ID: c.ID, WebCustomerID: nullString(f.Link), Now: p.now()}); err != nil {
			return billingCustomer{}, err
		}
	}
	w.named = f.UserID
	return billingCustomer{c.ID, f.UserID}, nil
}

// linkedCustomer is the billing customer a provider's customer id is linked to: the web
// provider's through billing_customers, any other store's through the subscriptions of
// that customer already written. sql.ErrNoRows: none yet.
func linkedCustomer(ctx context.Context, w *work, link string) (billingCustomer, error) {
	if w.adapter.Provider() == billing.ProviderWeb {
		c, err := w.GetCustomerByWebID(ctx, nullString(link))
		return billingCustomer{c.ID, c.UserID}, err
	}
	c, err := w.GetCustomerByProviderCustomer(ctx, dbq.GetCustomerByProviderCustomerParams{Provider: w.adapter.Provider(), CustomerID: nullString(link)})
	return billingCustomer{c.ID, c.UserID}, err
}

// resolvePlan finds the plan the facts name by its key, else the highest-tier plan that
// sells any of their price (or product) ids in their price list (the adapter's own when
// empty), by the mapping of the plan catalogue the work's transaction sees.
func (p *Pipeline) resolvePlan(ctx context.Context, w *work, f billing.Facts) (int64, error) {
	c, err := p.catalogues.At(ctx, w.Queries, w.plansVersion)
	if err != nil {
		return 0, err
	}
	if f.PlanKey != "" {
		plan, ok := c.PlanByKey(f.PlanKey)
		if !ok {
			return 0, billing.NewUnresolved("no such plan", "plan", f.PlanKey)
		}
		return plan.ID, nil
	}
	plan, ok := c.PlanFor(cmp.Or(f.PriceList, w.adapter.Provider()), f.Products)
	if !ok {
		return 0, billing.NewUnresolved("unmapped price or product", "price_ids", f.Products)
	}
	return plan.ID, nil
}

func timePtr(t sql.NullTime) *time.Time {
	if !t.Valid {
		return nil
	}
	u := t.Time.UTC()
	return &u
}

func nullTime(t *time.Time) sql.NullTime {
	if t == nil {
		return sql.NullTime{}
	}
	return sql.NullTime{Time: t.UTC(), Valid: true}
}

func nullString(s string) sql.NullString {
	return sql.NullString{String: s, Valid: s != ""}
}
