package plans

import (
	"strings"
	"testing"
	"time"
)

func TestParsePlansRejectsBadFiles(t *testing.T) {
	tests := []struct{ name, yaml, want string }{
		{"price under two plans", `
plans:
  a: {web_prices: [price_x]}
  b: {web_prices: [price_x]}`, `web price "price_x" is listed under both plan "a" and plan "b"`},
		{"product under two plans", `
plans:
  a: {mobile_products: [p1]}
  b: {mobile_products: [p1]}`, `mobile price "p1" is listed under both plan "a" and plan "b"`},
		{"two defaults", `
plans:
  a: {default: true}
  b: {default: true}`, "more than one plan is marked default: a, b"},
		{"unknown plan key", `
plans:
  free:
    name: Free
    entitlement:
      - {name: x, value: 1}`, `line 5: plan "free": unknown key "entitlement"`},
		{"unknown entitlement key", `
plans:
  free:
    entitlements:
      - name: x
        value: 1
        limit: 3`, `line 7: plan "free": unknown entitlement key "limit"`},
		{"unknown top-level key", `
plan:
  free: {}`, `line 2: unknown key "plan"`},
		{"entitlement without a value", `
plans:
  a: {entitlements: [{name: seats}]}`, `entitlement "seats": no value`},
		{"bad indentation", `
plans:
  free:
    name: Free
   default: true`, "line 5: did not find expected key"},
		{"tab indentation", "\nplans:\n  free:\n    name: Free\n\tdefault: true", "line 5: found a tab character"},
		{"unclosed list", `
plans:
  free:
    name: Free
    web_prices: [a, b
  pro:
    name: Pro`, "line 5: did not find expected ',' or ']'"},
		{"string value", `
plans:
  a: {entitlements: [{name: seats, value: lots}]}`, `entitlement "seats": want true, false or a whole number`},
		{"negative value", `
plans:
  a: {entitlements: [{name: seats, value: -1}]}`, "zero or more"},
		{"no plans mapping", `plans: [a, b]`, "want a \"plans:\" mapping"},
		{"duplicate entitlement", `
plans:
  a: {entitlements: [{name: x, value: 1}, {name: x, value: 2}]}`, `entitlement "x" is listed twice`},
		{"a product's lasts unreadable", `
plans:
  a: {mobile_products: [{id: pass, lasts: a month}]}`, `line 3: plan "a": lasts "a month": want a duration`},
		{"a product without an id", `
plans:
  a: {mobile_products: [{lasts: 30d}]}`, `plan "a": a mobile product has no id`},
		{"an unknown product key", `
plans:
  a: {mobile_products: [{id: pass, last: 30d}]}`, `unknown product key "last"`},
		{"a product listed as a list", `
plans:
  a: {mobile_products: [[pass]]}`, `want mobile_products: a list of product ids, or {id: …, lasts: 30d}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePlans([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// A mobile product is an id, or {id, lasts} for a one-time purchase that entitles for a
// while from when it was bought.
func TestParsePlansProductLasts(t *testing.T) {
	list, err := ParsePlans([]byte(`
plans:
  pro:
    mobile_products:
      - com.example.pro.monthly
      - {id: com.example.pro.pass, lasts: 30d}
      - {id: com.example.pro.lifetime}
`))
	if err != nil {
		t.Fatal(err)
	}
	p := list[0]
	if strings.Join(p.MobileProducts, ",") != "com.example.pro.monthly,com.example.pro.pass,com.example.pro.lifetime" ||
		len(p.Lasts) != 1 || p.Lasts["com.example.pro.pass"] != 30*24*time.Hour {
		t.Fatalf("products %v, lasts %v", p.MobileProducts, p.Lasts)
	}
}
