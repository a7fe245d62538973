package console

import (
	"html/template"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/billing"
)

// funcs are the templates' formatting helpers.
var funcs = template.FuncMap{
	"when": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"whenp": func(t *time.Time) string {
		if t == nil {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04")
	},
	"num": func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) },
	"amount": func(m money) string {
		return strconv.FormatFloat(m.Amount, 'f', billing.Decimals(m.Currency), 64) + " " + strings.ToUpper(m.Currency)
	},
	"isnan": math.IsNaN,
	"upper": strings.ToUpper,
	"add":   func(a, b int) int { return a + b },
}
