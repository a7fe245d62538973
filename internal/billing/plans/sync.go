package plans

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
	"github.com/tollgate/tollgate/internal/db"
	"github.com/tollgate/tollgate/internal/db/dbq"
)

// Sync reconciles the plans into the database in one transaction and describes each
// change. Plans missing from the file are archived, never deleted, so subscriptions keep
// their plan; their prices stop mapping.
func Sync(ctx context.Context, d *db.DB, plans []PlanConfig, now time.Time) ([]string, error) {
	var changes []string
	err := d.InTx(ctx, func(tx *sql.Tx) error {
		s := &syncing{q: dbq.New(tx), now: now, planIDs: map[string]int64{}}
		if err := s.plans(ctx, plans); err != nil {
			return err
		}
		if err := s.prices(ctx, plans); err != nil {
			return err
		}
		changes = s.changes
		if len(changes) == 0 {
			return nil
		}
		// Every instance reads the catalogue anew with its next event.
		return s.q.BumpPlansVersion(ctx)
	})
	return changes, err
}

// syncing is one sync's transaction, the ids of the file's plans, and what it changed.
type syncing struct {
	q       *dbq.Queries
	now     time.Time
	planIDs map[string]int64
	changes []string
}

func (s *syncing) changed(format string, args ...any) {
	s.changes = append(s.changes, fmt.Sprintf(format, args...))
}

// plans writes each plan, at its place in the file (its tier), and its entitlements, and
// archives the plans the file no longer has.
func (s *syncing) plans(ctx context.Context, plans []PlanConfig) error {
	existing, err := s.q.ListPlans(ctx)
	if err != nil {
		return err
	}
	byKey := map[string]dbq.ListPlansRow{}
	for _, p := range existing {
		byKey[p.Key] = p
	}
	current, err := s.q.ListAllPlanEntitlements(ctx)
	if err != nil {
		return err
	}
	entitlementsByPlan := map[int64]map[string]string{}
	for _, e := range current {
		if entitlementsByPlan[e.PlanID] == nil {
			entitlementsByPlan[e.PlanID] = map[string]string{}
		}
		entitlementsByPlan[e.PlanID][e.Name] = e.Value
	}
	for tier, p := range plans {
		old, ok := byKey[p.Key]
		switch {
		case !ok:
			id, err := s.q.InsertPlan(ctx, dbq.InsertPlanParams{Key: p.Key, Name: p.Name, Tier: int32(tier), IsDefault: p.Default, Now: s.now})
			if err != nil {
				return err
			}
			s.planIDs[p.Key] = id
			s.changed("plan %s: created", p.Key)
		case old.Name != p.Name || int(old.Tier) != tier || old.IsDefault != p.Default || old.ArchivedAt.Valid:
			if err := s.q.UpdatePlan(ctx, dbq.UpdatePlanParams{ID: old.ID, Name: p.Name, Tier: int32(tier), IsDefault: p.Default, Now: s.now}); err != nil {
				return err
			}
			s.changed("plan %s: updated", p.Key)
			fallthrough
		default:
			s.planIDs[p.Key] = old.ID
		}
		want := map[string]string{}
		for _, e := range p.Entitlements {
			v, _ := json.Marshal(e.Value)
			want[e.Name] = string(v)
		}
		if !mapsEqual(want, entitlementsByPlan[s.planIDs[p.Key]]) {
			if err := writeEntitlements(ctx, s.q, s.planIDs[p.Key], p.Entitlements, s.now); err != nil {
				return err
			}
			s.changed("plan %s: entitlements set", p.Key)
		}
	}
	for _, old := range existing {
		if _, ok := s.planIDs[old.Key]; !ok && !old.ArchivedAt.Valid {
			if err := s.q.ArchivePlan(ctx, dbq.ArchivePlanParams{ID: old.ID, Now: sql.NullTime{Time: s.now, Valid: true}}); err != nil {
				return err
			}
			s.changed("plan %s: archived", old.Key)
		}
	}
	return nil
}

// mapping is a price's plan, its place in that plan's list (checkout takes the first),
// and for a mobile product how long a one-time purchase of it lasts (0: the file says not).
type mapping struct {
	planID   int64
	position int32
	lasts    time.Duration
}

// prices maps each provider's prices (and products) to the plans that list them.
func (s *syncing) prices(ctx context.Context, plans []PlanConfig) error {
	prices, err := s.q.ListPlanPrices(ctx)
	if err != nil {
		return err
	}
	current := map[[2]string]mapping{}
	for _, pp := range prices {
		current[[2]string{pp.Provider, pp.PriceID}] = mapping{pp.PlanID, pp.Position, time.Duration(pp.LastsSeconds.Int64) * time.Second}
	}
	want := map[[2]string]mapping{}
	for _, p := range plans {
		for i, id := range p.WebPrices {
			want[[2]string{billing.ProviderWeb, id}] = mapping{s.planIDs[p.Key], int32(i), 0}
		}
		for i, id := range p.MobileProducts {
			want[[2]string{billing.ProviderMobile, id}] = mapping{s.planIDs[p.Key], int32(i), p.Lasts[id].Truncate(time.Second)}
		}
	}
	for _, key := range sortedKeys(want) {
		w := want[key]
		old, ok := current[key]
		if ok && old == w {
			continue
		}
		lasts := sql.NullInt64{Int64: int64(w.lasts / time.Second), Valid: w.lasts > 0}
		if err := s.q.UpsertPlanPrice(ctx, dbq.UpsertPlanPriceParams{Provider: key[0], PriceID: key[1], PlanID: w.planID, Position: w.position, LastsSeconds: lasts, Now: s.now}); err != nil {
			return err
		}
		switch {
		case !ok || old.planID != w.planID:
			s.changed("%s price %s: mapped to plan %s", key[0], key[1], keyOf(s.planIDs, w.planID))
		case old.position != w.position:
			s.changed("%s price %s: moved to place %d of plan %s", key[0], key[1], w.position+1, keyOf(s.planIDs, w.planID))
		}
		if (ok && old.lasts != w.lasts) || (!ok && w.lasts > 0) {
			s.changed("%s price %s: lasts %s", key[0], key[1], lastsText(w.lasts))
		}
	}
	for _, key := range sortedKeys(current) {
		if _, ok := want[key]; !ok {
			if err := s.q.DeletePlanPrice(ctx, dbq.DeletePlanPriceParams{Provider: key[0], PriceID: key[1]}); err != nil {
				return err
			}
			s.changed("%s price %s: unmapped", key[0], key[1])
		}
	}
	return nil
}

func writeEntitlements(ctx context.Context, q *dbq.Queries, planID int64, entitlements []EntitlementConfig, now time.Time) error {
	if err := q.DeletePlanEntitlements(ctx, planID); err != nil {
		return err
	}
	if err := q.DeleteUsageLimits(ctx, planID); err != nil {
		return err
	}
	for _, e := range entitlements {
		id, err := q.UpsertEntitlement(ctx, dbq.UpsertEntitlementParams{Name: e.Name, Now: now})
		if err != nil {
			return err
		}
		v, _ := json.Marshal(e.Value)
		if err := q.InsertPlanEntitlement(ctx, dbq.InsertPlanEntitlementParams{PlanID: planID, EntitlementID: id, Value: string(v)}); err != nil {
			return err
		}
		if n, ok := e.Value.(int64); ok {
			if err := q.InsertUsageLimit(ctx, dbq.InsertUsageLimitParams{PlanID: planID, EntitlementID: id, LimitValue: n}); err != nil {
				return err
			}
		}
	}
	return nil
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func sortedKeys[V any](m map[[2]string]V) [][2]string {
	keys := make([][2]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b [2]string) int { return strings.Compare(a[0]+" "+a[1], b[0]+" "+b[1]) })
	return keys
}

func keyOf(ids map[string]int64, id int64) string {
	for k, v := range ids {
		if v == id {
			return k
		}
	}
	return strconv.FormatInt(id, 10)
}

// lastsText writes a product's lasts as the plans file does, or says it has none.
func lastsText(d time.Duration) string {
	if d <= 0 {
		return "none (a one-time purchase is for good)"
	}
	return billing.FormatDuration(d)
}
