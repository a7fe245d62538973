package billing

import (
	"math"
	"slices"
	"strings"
)

// Facts carry prices in the currency's minor unit (999 for 9.99 USD), whatever unit the
// provider sends. Most currencies have two decimals; these have none or three (ISO 4217).
var (
	noDecimals    = []string{"BIF", "CLP", "DJF", "GNF", "ISK", "JPY", "KMF", "KRW", "PYG", "RWF", "UGX", "VND", "VUV", "XAF", "XOF", "XPF"}
	threeDecimals = []string{"BHD", "IQD", "JOD", "KWD", "LYD", "OMR", "TND"}
)

// Decimals is how many decimals currency's minor unit has: 2 unless ISO 4217 says 0 or 3.
func Decimals(currency string) int {
	code := strings.ToUpper(strings.TrimSpace(currency))
	switch {
	case slices.Contains(noDecimals, code):
		return 0
	case slices.Contains(threeDecimals, code):
		return 3
	}
	return 2
}

// MinorUnits converts a price in currency's major unit (9.99) to its minor unit (999).
func MinorUnits(price *float64, currency string) (int64, bool) {
	if price == nil || len(strings.TrimSpace(currency)) != 3 || *price < 0 || math.IsInf(*price, 0) || math.IsNaN(*price) || *price > 1e12 {
		return 0, false
	}
	return int64(math.Round(*price * math.Pow10(Decimals(currency)))), true
}
