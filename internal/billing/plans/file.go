// Package plans reads the plans file and keeps the plan catalogue: it syncs the file into
// the database, and holds the catalogue and its price mapping in memory at the version the
// database last announced, for the pipeline and the reader alike.
package plans

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tollgate/tollgate/internal/billing"
)

// PlanConfig is one plan of the plans file (docs/plans.md).
type PlanConfig struct {
	Key            string
	Name           string
	Default        bool
	Entitlements   []EntitlementConfig
	WebPrices      []string
	MobileProducts []string
	// Lasts is how long a one-time purchase of a mobile product entitles for, for the
	// products whose entry says (`{id: …, lasts: 30d}`).
	Lasts map[string]time.Duration
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
				p.MobileProducts, p.Lasts = parseProducts(key, value, fail)
			case "entitlements":
				p.Entitlements = parseEntitlements(key, value, fail)
			default:
				fail(field, "plan %q: unknown key %q (want one of %s)", key, field.Value, strings.Join(planKeys, ", "))
			}
		})
		if p.Default {
			defaults = append(defaults, key)
		}
		for provider, ids := range map[string][]string{billing.ProviderWeb: p.WebPrices, billing.ProviderMobile: p.MobileProducts} {
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

// productKeys are the keys of a mobile product written as a mapping.
var productKeys = []string{"id", "lasts"}

// parseProducts reads a plan's mobile_products: each a product id, or {id, lasts} for a
// one-time purchase that entitles for lasts from when it was bought.
func parseProducts(plan string, list *yaml.Node, fail func(*yaml.Node, string, ...any)) ([]string, map[string]time.Duration) {
	const want = "mobile_products: a list of product ids, or {id: …, lasts: 30d}"
	if list.Kind != yaml.SequenceNode {
		fail(list, "plan %q: want %s", plan, want)
		return nil, nil
	}
	var ids []string
	var lasts map[string]time.Duration
	for _, item := range list.Content {
		switch item.Kind {
		case yaml.ScalarNode:
			ids = append(ids, item.Value)
			continue
		case yaml.MappingNode:
		default:
			fail(item, "plan %q: want %s", plan, want)
			continue
		}
		var id string
		var d time.Duration
		forEachKey(item, func(field, value *yaml.Node) {
			var err error
			switch field.Value {
			case "id":
				id = value.Value
			case "lasts":
				if d, err = billing.ParseDuration(value.Value); err != nil {
					fail(value, "plan %q: lasts %q: %v", plan, value.Value, err)
				}
			default:
				fail(field, "plan %q: unknown product key %q (want one of %s)", plan, field.Value, strings.Join(productKeys, ", "))
			}
		})
		if strings.TrimSpace(id) == "" {
			fail(item, "plan %q: a mobile product has no id", plan)
			continue
		}
		ids = append(ids, id)
		if d > 0 {
			if lasts == nil {
				lasts = map[string]time.Duration{}
			}
			lasts[id] = d
		}
	}
	return ids, lasts
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
