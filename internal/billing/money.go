package billing

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
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

// Monthly is what amount per period comes to per month (MRR): yearly / 12, weekly × 52 /
// 12, daily × 365 / 12, in the same unit as amount. An unknown period is not money: false.
func Monthly(amount int64, period string) (float64, bool) {
	n, unit, ok := parsePeriod(period)
	if !ok {
		return 0, false
	}
	perMonth := map[byte]float64{'D': 365.0 / 12, 'W': 52.0 / 12, 'M': 1, 'Y': 1.0 / 12}[unit]
	return float64(amount) * perMonth / float64(n), true
}

// parsePeriod reads a one-unit ISO 8601 duration: P<n>D, W, M or Y.
func parsePeriod(period string) (int, byte, bool) {
	if len(period) < 3 || period[0] != 'P' {
		return 0, 0, false
	}
	unit := period[len(period)-1]
	n, err := strconv.Atoi(period[1 : len(period)-1])
	if err != nil || n < 1 || !strings.ContainsRune("DWMY", rune(unit)) {
		return 0, 0, false
	}
	return n, unit, true
}

// PeriodBetween names the billing period a purchase from start to end covers, for stores
// whose purchases carry dates but no period: a week, one, three or six months, or a year,
// within a few days' slack (months differ in length, renewals land late); else "".
func PeriodBetween(start, end time.Time) string {
	days := end.Sub(start).Hours() / 24
	for _, p := range []struct {
		period   string
		min, max float64
	}{{"P1W", 6.5, 7.5}, {"P1M", 27.5, 31.5}, {"P3M", 88, 93}, {"P6M", 179, 185}, {"P1Y", 363, 367}} {
		if days >= p.min && days <= p.max {
			return p.period
		}
	}
	return ""
}
