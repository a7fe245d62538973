package billing

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate/tollgate/internal/db/dbq"
)

// PlanConfig is one plan of the plans file (docs/plans.md).
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

// planKeys and entitlementKeys are the only keys a plans file may use: a misspelt key
// ("entitlement:", "web_price:") would otherwise drop what it held without a word.
var (
	planKeys        = []string{"name", "default", "entitlements", "web_prices", "mobile_products"}
	entitlementKeys = []string{"name", "value"}
)

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

// ParsePlans parses and validates the YAML of a plans file. Errors name the line.
func ParsePlans(raw []byte) ([]PlanConfig, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return nil, syntaxError(raw, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New(`want a "plans:" mapping of plan keys to plans`)
	}
	var errs []error
	fail := func(n *yaml.Node, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", n.Line, fmt.Sprintf(format, args...)))
	}
	var planList *yaml.Node
	forEachKey(doc.Content[0], func(key, value *yaml.Node) {
		if key.Value != "plans" {
			fail(key, "unknown key %q (the file holds only plans:)", key.Value)
			return
		}
		planList = value
	})
	if planList == nil || planList.Kind != yaml.MappingNode {
		return nil, errors.Join(append(errs, errors.New(`want a "plans:" mapping of plan keys to plans`))...)
	}
	var plans []PlanConfig
	seenPrice := map[string]string{} // "provider price" → plan key
	var defaults []string
	forEachKey(planList, func(keyNode, body *yaml.Node) {
		key := keyNode.Value
		p := PlanConfig{Key: key, Name: key}
		if strings.TrimSpace(key) == "" {
			fail(keyNode, "a plan has an empty key")
		}
		if body.Kind != yaml.MappingNode {
			fail(body, "plan %q: want a mapping of %s", key, strings.Join(planKeys, ", "))
			return
		}
		decode := func(n *yaml.Node, into any, want string) {
			if err := n.Decode(into); err != nil {
				fail(n, "plan %q: want %s", key, want)
			}
		}
		forEachKey(body, func(field, value *yaml.Node) {
			switch field.Value {
			case "name":
				decode(value, &p.Name, "a name")
			case "default":
				decode(value, &p.Default, "default: true or false")
			case "web_prices":
				decode(value, &p.WebPrices, "web_prices: a list of price ids")
			case "mobile_products":
				decode(value, &p.MobileProducts, "mobile_products: a list of product ids")
			case "entitlements":
				p.Entitlements = parseEntitlements(key, value, fail)
			default:
				fail(field, "plan %q: unknown key %q (want one of %s)", key, field.Value, strings.Join(planKeys, ", "))
			}
		})
		if p.Default {
			defaults = append(defaults, key)
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
	})
	if len(defaults) > 1 {
		errs = append(errs, fmt.Errorf("more than one plan is marked default: %s", strings.Join(defaults, ", ")))
	}
	return plans, errors.Join(errs...)
}

// parseEntitlements reads a plan's list of {name, value}.
func parseEntitlements(plan string, list *yaml.Node, fail func(*yaml.Node, string, ...any)) []EntitlementConfig {
	if list.Kind != yaml.SequenceNode {
		fail(list, "plan %q: want entitlements: a list of {name, value}", plan)
		return nil
	}
	var out []EntitlementConfig
	seen := map[string]bool{}
	for _, item := range list.Content {
		if item.Kind != yaml.MappingNode {
			fail(item, "plan %q: want an entitlement as {name, value}", plan)
			continue
		}
		var e EntitlementConfig
		var valueNode *yaml.Node
		forEachKey(item, func(field, value *yaml.Node) {
			switch field.Value {
			case "name":
				e.Name = value.Value
			case "value":
				valueNode = value
			default:
				fail(field, "plan %q: unknown entitlement key %q (want one of %s)", plan, field.Value, strings.Join(entitlementKeys, ", "))
			}
		})
		var err error
		if valueNode == nil {
			err = errors.New("no value")
		} else {
			e.Value, err = entitlementValue(*valueNode)
		}
		switch {
		case e.Name == "":
			fail(item, "plan %q: an entitlement has no name", plan)
		case seen[e.Name]:
			fail(item, "plan %q: entitlement %q is listed twice", plan, e.Name)
		case err != nil:
			fail(item, "plan %q: entitlement %q: %v", plan, e.Name, err)
		}
		seen[e.Name] = true
		out = append(out, e)
	}
	return out
}

// forEachKey calls fn for each key and value of a mapping node, in the file's order.
func forEachKey(mapping *yaml.Node, fn func(key, value *yaml.Node)) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		fn(mapping.Content[i], mapping.Content[i+1])
	}
}

// syntaxError reports a YAML syntax error at the line where the text stops being YAML.
// The library names the line where the enclosing block began (a missing "]" on line 9
// of a plan that starts on line 3 is reported on line 3), so the line is found again as the
// shortest prefix of the file that does not parse.
func syntaxError(raw []byte, err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	if _, rest, ok := strings.Cut(msg, ": "); ok && strings.HasPrefix(msg, "line ") {
		msg = rest
	}
	lines := bytes.SplitAfter(raw, []byte("\n"))
	for n := 1; n <= len(lines); n++ {
		var probe yaml.Node
		if yaml.Unmarshal(bytes.Join(lines[:n], nil), &probe) != nil {
			return fmt.Errorf("line %d: %s", n, msg)
		}
	}
	return errors.New(msg)
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

// planFor is the highest-tier plan selling any of the ids: the plan mapping of webhook
// processing and of sync_engine mode, where it runs on every entitlement question (so it
// does not log).
func (s *Service) planFor(ctx context.Context, q *dbq.Queries, provider string, ids []string) (Plan, bool, error) {
	var best *Plan
	for _, id := range ids {
		p, err := q.PlanForPrice(ctx, dbq.PlanForPriceParams{Provider: provider, PriceID: id})
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return Plan{}, false, err
		}
		if best == nil || p.Tier > best.tier {
			best = &Plan{Key: p.Key, Name: p.Name, id: p.ID, tier: p.Tier}
		}
	}
	if best == nil {
		return Plan{}, false, nil
	}
	return *best, true, nil
}

// resolvePlan finds the highest-tier plan that sells any of the price (or product) ids, by
// the mapping of the plan catalogue q's transaction sees.
func (s *Service) resolvePlan(ctx context.Context, q *txn, provider string, priceIDs []string) (int64, error) {
	c, err := s.catalogueAt(ctx, q.Queries, q.plansVersion)
	if err != nil {
		return 0, err
	}
	var best *Plan
	for _, id := range priceIDs {
		plan, ok := c.catalogue.plans[c.prices[priceKey{provider, id}]]
		if ok && (best == nil || plan.tier > best.tier) {
			best = &plan
		}
	}
	if best == nil {
		return 0, unresolved("unmapped price or product", "price_ids", priceIDs)
	}
	return best.id, nil
}

// planCatalogue is the plan catalogue at the version q's transaction read.
func (s *Service) planCatalogue(ctx context.Context, q *txn) (planCatalogue, error) {
	c, err := s.catalogueAt(ctx, q.Queries, q.plansVersion)
	if err != nil {
		return planCatalogue{}, err
	}
	return c.catalogue, nil
}

// catalogueAt is the plan catalogue and price mapping at version, which q's caller read
// with its other rows (0: unknown): from memory while that version stands, else read
// again (and kept). Every event's transaction learns the version with its row lock, and an
// answer's read with its rows, so a plans sync reaches the next of either on every
// instance without a read of the catalogue each time.
func (s *Service) catalogueAt(ctx context.Context, q *dbq.Queries, version int64) (*versionedCatalogue, error) {
	if c := s.plans.Load(); c != nil && version != 0 && c.version == version {
		return c, nil
	}
	catalogue, err := loadPlanCatalogue(ctx, q)
	if err != nil {
		return nil, err
	}
	prices, err := q.ListPlanPrices(ctx)
	if err != nil {
		return nil, err
	}
	c := &versionedCatalogue{version: version, catalogue: catalogue, prices: make(map[priceKey]int64, len(prices))}
	for _, p := range prices {
		c.prices[priceKey{p.Provider, p.PriceID}] = p.PlanID
	}
	if version != 0 {
		s.plans.Store(c)
	}
	return c, nil
}

// versionedCatalogue is the plan catalogue and the price mapping at one plans_version.
type versionedCatalogue struct {
	version   int64
	catalogue planCatalogue
	prices    map[priceKey]int64 // the plan id that sells each price or product
}

// priceKey is a provider's price (web) or product (mobile) id.
type priceKey struct{ provider, id string }

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
				wantPrices[[2]string{ProviderWeb, id}] = mapping{planIDs[p.Key], int32(i)}
			}
			for i, id := range p.MobileProducts {
				wantPrices[[2]string{ProviderMobile, id}] = mapping{planIDs[p.Key], int32(i)}
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
	if err == nil && len(changes) > 0 {
		s.answers.forget("*")
	}
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
