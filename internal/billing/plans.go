package billing

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// PlanConfig is one plan of the plans file (DESIGN §4.7).
type PlanConfig struct {
	Key            string
	Name           string
	Default        bool
	Entitlements   []EntitlementConfig
	WebPrices      []string
	MobileProducts []string
}

// EntitlementConfig is an entitlement's name and value: a boolean or a whole number.
type EntitlementConfig struct {
	Name  string
	Value any // bool or int64
}

type planFile struct {
	Plans yaml.Node `yaml:"plans"`
}

type planBody struct {
	Name         string `yaml:"name"`
	Default      bool   `yaml:"default"`
	Entitlements []struct {
		Name  string    `yaml:"name"`
		Value yaml.Node `yaml:"value"`
	} `yaml:"entitlements"`
	WebPrices      []string `yaml:"web_prices"`
	MobileProducts []string `yaml:"mobile_products"`
}

// LoadPlans reads and validates a plans file. Plans keep the file's order: lowest tier first.
func LoadPlans(path string) ([]PlanConfig, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("plans file: %w", err)
	}
	plans, err := ParsePlans(raw)
	if err != nil {
		return nil, fmt.Errorf("plans file %s: %w", path, err)
	}
	return plans, nil
}

// ParsePlans parses and validates the YAML of a plans file.
func ParsePlans(raw []byte) ([]PlanConfig, error) {
	var file planFile
	if err := yaml.Unmarshal(raw, &file); err != nil {
		return nil, err
	}
	if file.Plans.Kind != yaml.MappingNode {
		return nil, errors.New(`want a "plans:" mapping of plan keys to plans`)
	}
	var plans []PlanConfig
	var errs []error
	seenPrice := map[string]string{} // "provider price" → plan key
	defaults := 0
	for i := 0; i+1 < len(file.Plans.Content); i += 2 {
		key := file.Plans.Content[i].Value
		var body planBody
		if err := file.Plans.Content[i+1].Decode(&body); err != nil {
			errs = append(errs, fmt.Errorf("plan %q: %w", key, err))
			continue
		}
		p := PlanConfig{Key: key, Name: body.Name, Default: body.Default, WebPrices: body.WebPrices, MobileProducts: body.MobileProducts}
		if strings.TrimSpace(key) == "" {
			errs = append(errs, errors.New("a plan has an empty key"))
		}
		if p.Name == "" {
			p.Name = key
		}
		if p.Default {
			defaults++
		}
		seenEntitlement := map[string]bool{}
		for _, e := range body.Entitlements {
			value, err := entitlementValue(e.Value)
			switch {
			case e.Name == "":
				errs = append(errs, fmt.Errorf("plan %q: an entitlement has no name", key))
			case seenEntitlement[e.Name]:
				errs = append(errs, fmt.Errorf("plan %q: entitlement %q is listed twice", key, e.Name))
			case err != nil:
				errs = append(errs, fmt.Errorf("plan %q: entitlement %q: %w", key, e.Name, err))
			}
			seenEntitlement[e.Name] = true
			p.Entitlements = append(p.Entitlements, EntitlementConfig{Name: e.Name, Value: value})
		}
		for provider, ids := range map[string][]string{ProviderWeb: p.WebPrices, ProviderMobile: p.MobileProducts} {
			for _, id := range ids {
				if other, ok := seenPrice[provider+" "+id]; ok {
					errs = append(errs, fmt.Errorf("%s price %q is listed under both plan %q and plan %q", provider, id, other, key))
				}
				seenPrice[provider+" "+id] = key
			}
		}
		plans = append(plans, p)
	}
	if defaults > 1 {
		errs = append(errs, errors.New("more than one plan is marked default"))
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Error() < errs[j].Error() })
	return plans, errors.Join(errs...)
}

func entitlementValue(n yaml.Node) (any, error) {
	if n.Kind != yaml.ScalarNode {
		return nil, errors.New("want true, false or a whole number")
	}
	switch n.Tag {
	case "!!bool":
		var b bool
		err := n.Decode(&b)
		return b, err
	case "!!int":
		var i int64
		if err := n.Decode(&i); err != nil || i < 0 {
			return nil, errors.New("want a whole number of zero or more")
		}
		return i, nil
	}
	return nil, errors.New("want true, false or a whole number")
}

// SyncPlans reconciles the plans into the database in one transaction and describes each
// change. Plans missing from the file are archived, never deleted, so subscriptions keep
// their plan; their prices stop mapping.
func (s *Service) SyncPlans(ctx context.Context, plans []PlanConfig) ([]string, error) {
	var changes []string
	err := s.db.InTx(ctx, func(tx *sql.Tx) error {
		changes = nil
		q := dbq.New(tx)
		now := s.now()
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
				if err := s.writeEntitlements(ctx, q, planIDs[p.Key], p.Entitlements); err != nil {
					return err
				}
				changes = append(changes, fmt.Sprintf("plan %s: entitlements set", p.Key))
			}
		}
		for _, old := range existing {
			if _, ok := planIDs[old.Key]; !ok && !old.ArchivedAt.Valid {
				if err := q.ArchivePlan(ctx, dbq.ArchivePlanParams{ID: old.ID, Now: nullTime(&now)}); err != nil {
					return err
				}
				changes = append(changes, fmt.Sprintf("plan %s: archived", old.Key))
			}
		}

		prices, err := q.ListPlanPrices(ctx)
		if err != nil {
			return err
		}
		currentPrices := map[[2]string]int64{}
		for _, pp := range prices {
			currentPrices[[2]string{pp.Provider, pp.PriceID}] = pp.PlanID
		}
		wantPrices := map[[2]string]int64{}
		for _, p := range plans {
			for _, id := range p.WebPrices {
				wantPrices[[2]string{ProviderWeb, id}] = planIDs[p.Key]
			}
			for _, id := range p.MobileProducts {
				wantPrices[[2]string{ProviderMobile, id}] = planIDs[p.Key]
			}
		}
		for _, key := range sortedKeys(wantPrices) {
			planID := wantPrices[key]
			if old, ok := currentPrices[key]; ok && old == planID {
				continue
			}
			if err := q.UpsertPlanPrice(ctx, dbq.UpsertPlanPriceParams{Provider: key[0], PriceID: key[1], PlanID: planID, Now: now}); err != nil {
				return err
			}
			changes = append(changes, fmt.Sprintf("%s price %s: mapped to plan %s", key[0], key[1], keyOf(planIDs, planID)))
		}
		for _, key := range sortedKeys(currentPrices) {
			if _, ok := wantPrices[key]; !ok {
				if err := q.DeletePlanPrice(ctx, dbq.DeletePlanPriceParams{Provider: key[0], PriceID: key[1]}); err != nil {
					return err
				}
				changes = append(changes, fmt.Sprintf("%s price %s: unmapped", key[0], key[1]))
			}
		}
		return nil
	})
	return changes, err
}

func (s *Service) writeEntitlements(ctx context.Context, q *dbq.Queries, planID int64, entitlements []EntitlementConfig) error {
	if err := q.DeletePlanEntitlements(ctx, planID); err != nil {
		return err
	}
	if err := q.DeleteUsageLimits(ctx, planID); err != nil {
		return err
	}
	for _, e := range entitlements {
		id, err := q.UpsertEntitlement(ctx, dbq.UpsertEntitlementParams{Name: e.Name, Now: s.now()})
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

// decodeEntitlementValue reads a stored value back: a bool or an int64.
func decodeEntitlementValue(raw string) any {
	switch raw {
	case "true":
		return true
	case "false":
		return false
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil {
		if f, ferr := strconv.ParseFloat(raw, 64); ferr == nil && f <= math.MaxInt64 {
			return int64(f)
		}
		return false
	}
	return n
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

func sortedKeys(m map[[2]string]int64) [][2]string {
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
