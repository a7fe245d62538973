package adapty

import (
	"math"
	"slices"
	"strings"
)

// The mobile provider sends prices in the currency's major unit (9.99); facts carry minor
// units (999), as the web provider's do. Most currencies have two decimals; these have
// none or three (ISO 4217).
var (
	noDecimals    = []string{"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"}
	threeDecimals = []string{"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"}
)

// minorUnits converts a price in currency's major unit to its minor unit.
func minorUnits(price *float64, currency string) (int64, bool) {
	code := strings.ToUpper(strings.TrimSpace(currency))
	if price == nil || len(code) != 3 || *price < 0 || math.IsInf(*price, 0) || math.IsNaN(*price) || *price > 1e12 {
		return 0, false
	}
	scale := 100.0
	switch {
	case slices.Contains(noDecimals, code):
		scale = 1
	case slices.Contains(threeDecimals, code):
		scale = 1000
	}
	return int64(math.Round(*price * scale)), true
}
