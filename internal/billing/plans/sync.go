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
		changes = nil
		q := dbq.New(tx)
		existing, err := q.ListPlans(ctx)
		if err != nil {
			return err
		}
		byKey := map[string]dbq.Plan{}
		for _, p := range existing {
			byKey[p.Key] = dbq.Plan{ID: p.ID, Key: p.Key, Name: p.Name, Tier: p.Tier, IsDefault: p.IsDefault, ArchivedAt: p.ArchivedAt}
		}
		currentEntitlements, err := q.ListAllPlanEntitlements(ctx)
		if err != nil {
			return err
		}
		entitlementsByPlan := map[int64]map[string]string{}
		for _, e := range currentEntitlements {
			if entitlementsByPlan[e.PlanID] == nil {
				entitlementsByPlan[e.PlanID] = map[string]string{}
			}
			entitlementsByPlan[e.PlanID][e.Name] = e.Value
		}

		planIDs := map[string]int64{}
		for tier, p := range plans {
			old, ok := byKey[p.Key]
			if !ok {
				id, err := q.InsertPlan(ctx, dbq.InsertPlanParams{Key: p.Key, Name: p.Name, Tier: int32(tier), IsDefault: p.Default, Now: now})
				if err != nil {
					return err
				}
				planIDs[p.Key] = id
				changes = append(changes, fmt.Sprintf("plan %s: created", p.Key))
			} else {
				planIDs[p.Key] = old.ID
				if old.Name != p.Name || int(old.Tier) != tier || old.IsDefault != p.Default || old.ArchivedAt.Valid {
					if err := q.UpdatePlan(ctx, dbq.UpdatePlanParams{ID: old.ID, Name: p.Name, Tier: int32(tier), IsDefault: p.Default, Now: now}); err != nil {
						return err
					}
					changes = append(changes, fmt.Sprintf("plan %s: updated", p.Key))
				}
			}
			want := map[string]string{}
			for _, e := range p.Entitlements {
				v, _ := json.Marshal(e.Value)
				want[e.Name] = string(v)
			}
			if !mapsEqual(want, entitlementsByPlan[planIDs[p.Key]]) {
				if err := writeEntitlements(ctx, q, planIDs[p.Key], p.Entitlements, now); err != nil {
					return err
				}
				changes = append(changes, fmt.Sprintf("plan %s: entitlements set", p.Key))
			}
		}
		for _, old := range existing {
			if _, ok := planIDs[old.Key]; !ok && !old.ArchivedAt.Valid {
				if err := q.ArchivePlan(ctx, dbq.ArchivePlanParams{ID: old.ID, Now: sql.NullTime{Time: now, Valid: true}}); err != nil {
					return err
				}
				changes = append(changes, fmt.Sprintf("plan %s: archived", old.Key))
			}
		}

		prices, err := q.ListPlanPrices(ctx)
		if err != nil {
			return err
		}
		// A price's plan, and its place in that plan's list (checkout takes the first).
		type mapping struct {
			planID   int64
			position int32
		}
		currentPrices := map[[2]string]mapping{}
		for _, pp := range prices {
			currentPrices[[2]string{pp.Provider, pp.PriceID}] = mapping{pp.PlanID, pp.Position}
		}
		wantPrices := map[[2]string]mapping{}
		for _, p := range plans {
			for i, id := range p.WebPrices {
				wantPrices[[2]string{billing.ProviderWeb, id}] = mapping{planIDs[p.Key], int32(i)}
			}
			for i, id := range p.MobileProducts {
				wantPrices[[2]string{billing.ProviderMobile, id}] = mapping{planIDs[p.Key], int32(i)}
			}
		}
		for _, key := range sortedKeys(wantPrices) {
			want := wantPrices[key]
			old, ok := currentPrices[key]
			if ok && old == want {
				continue
			}
			if err := q.UpsertPlanPrice(ctx, dbq.UpsertPlanPriceParams{Provider: key[0], PriceID: key[1], PlanID: want.planID, Position: want.position, Now: now}); err != nil {
				return err
			}
			if ok && old.planID == want.planID {
				changes = append(changes, fmt.Sprintf("%s price %s: moved to place %d of plan %s", key[0], key[1], want.position+1, keyOf(planIDs, want.planID)))
			} else {
				changes = append(changes, fmt.Sprintf("%s price %s: mapped to plan %s", key[0], key[1], keyOf(planIDs, want.planID)))
			}
		}
		for _, key := range sortedKeys(currentPrices) {
			if _, ok := wantPrices[key]; !ok {
				if err := q.DeletePlanPrice(ctx, dbq.DeletePlanPriceParams{Provider: key[0], PriceID: key[1]}); err != nil {
					return err
				}
				changes = append(changes, fmt.Sprintf("%s price %s: unmapped", key[0], key[1]))
			}
		}
		if len(changes) == 0 {
			return nil
		}
		// Every instance reads the catalogue anew with its next event.
		return q.BumpPlansVersion(ctx)
	})
	return changes, err
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
