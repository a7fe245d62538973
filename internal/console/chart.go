package console

import (
	"fmt"
	"html/template"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// chart is one of the overview's daily charts over the last days: stacked bars for what
// happens in a day (new, churned, webhooks), lines for what stands at its end (subscribers,
// MRR). It is drawn as SVG on the server, so the page needs no script and works offline,
// and comes with its numbers as a table.
type chart struct {
	ID, Title, Note string
	Lines           bool // levels, drawn as lines; else counts, stacked
	// Bars draws levels stacked too, where lines of equal values would hide one another.
	Bars bool
	// Off, when set, says the feature the chart is about is off, in place of the chart.
	Off    string
	Days   []string
	Series []series
}

type series struct {
	Name string
	// Colour is the series' place in the stylesheet's palette (.s0 … .s7, the first the
	// brand's accent): classes, since the pages' policy allows no inline styles.
	Colour int
	Values []float64 // one per day
}

// paletteSize is how many colours the stylesheet has.
const paletteSize = 8

// lastDays are the dates (YYYY-MM-DD, UTC) of the n days up to and including today.
func lastDays(now time.Time, n int) []string {
	days := make([]string, n)
	for i := range days {
		days[i] = now.AddDate(0, 0, i-n+1).Format(time.DateOnly)
	}
	return days
}

// chartOf lays counts out over days, a series per key in order (keys not in order follow,
// sorted) that has anything to show, scaled by scale (1 for counts). For levels, a day
// with no count is unknown (NaN: no snapshot was kept), not zero.
func chartOf(id, title string, lines bool, days []string, counts dayCounts, order []string, scale func(key string, v int64) float64) chart {
	seen := map[string]bool{}
	for _, byKey := range counts {
		for k := range byKey {
			seen[k] = true
		}
	}
	keys := append([]string(nil), order...)
	var rest []string
	for k := range seen {
		if !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	ch := chart{ID: id, Title: title, Lines: lines, Days: days}
	for i, k := range append(keys, rest...) {
		if !seen[k] {
			continue
		}
		s := series{Name: k, Colour: i % paletteSize, Values: make([]float64, len(days))}
		for d, day := range days {
			v, ok := counts[day][k]
			s.Values[d] = scale(k, v)
			if lines && !ok {
				s.Values[d] = math.NaN()
			}
		}
		ch.Series = append(ch.Series, s)
	}
	return ch
}

func count(_ string, v int64) float64 { return float64(v) }

// Total is the sum over every series and day (for counts) or the last day (for levels).
func (c chart) Total() float64 {
	var t float64
	for _, s := range c.Series {
		if c.Lines {
			if n := len(s.Values); n > 0 && !math.IsNaN(s.Values[n-1]) {
				t += s.Values[n-1]
			}
			continue
		}
		for _, v := range s.Values {
			t += v
		}
	}
	return t
}

// Rows are the days with anything to show, newest first, for the chart's table.
func (c chart) Rows() []chartRow {
	var rows []chartRow
	for d := len(c.Days) - 1; d >= 0; d-- {
		row := chartRow{Day: c.Days[d]}
		any := false
		for _, s := range c.Series {
			row.Values = append(row.Values, s.Values[d])
			any = any || (s.Values[d] != 0 && !math.IsNaN(s.Values[d]))
		}
		if any {
			rows = append(rows, row)
		}
	}
	return rows
}

type chartRow struct {
	Day    string
	Values []float64
}

const (
	chartW, chartH = 600.0, 220.0
	padL, padT     = 52.0, 12.0
	padB           = 28.0
)

// SVG draws the chart.
func (c chart) SVG() template.HTML {
	top := c.top()
	n := float64(max(len(c.Days), 1))
	slot := (chartW - padL) / n
	y := func(v float64) float64 { return padT + (chartH-padB-padT)*(1-v/top) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg viewBox="0 0 %.0f %.0f" role="img" aria-labelledby="%s-title">`, chartW, chartH, c.ID)
	fmt.Fprintf(&b, `<title id="%s-title">%s</title>`, c.ID, template.HTMLEscapeString(c.Title))
	for _, frac := range []float64{0, 0.5, 1} {
		v := top * frac
		fmt.Fprintf(&b, `<line class="grid" x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f"/>`, padL, chartW, y(v), y(v))
		fmt.Fprintf(&b, `<text class="axis" x="%.0f" y="%.1f" text-anchor="end">%s</text>`, padL-8, y(v)+5, short(v))
	}
	if c.Lines && !c.Bars {
		for _, s := range c.Series {
			c.drawLine(&b, s, slot, y)
		}
	} else {
		for d := range c.Days {
			base := 0.0
			for _, s := range c.Series {
				v := s.Values[d]
				if v <= 0 || math.IsNaN(v) {
					continue
				}
				fmt.Fprintf(&b, `<rect class="s%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f"/>`,
					s.Colour, padL+slot*float64(d)+slot*0.15, y(base+v), slot*0.7, y(base)-y(base+v))
				base += v
			}
		}
	}
	if len(c.Days) > 0 { // the first, middle and last days under the axis
		for d, anchor := range map[int]string{0: "start", len(c.Days) / 2: "middle", len(c.Days) - 1: "end"} {
			fmt.Fprintf(&b, `<text class="axis" x="%.1f" y="%.0f" text-anchor="%s">%s</text>`, padL+slot*(float64(d)+0.5), chartH-6, anchor, c.Days[d][5:])
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // built from numbers, dates and escaped text only
}

// drawLine draws a level's known days: a line through each run of days with a snapshot,
// a dot for a day alone.
func (c chart) drawLine(b *strings.Builder, s series, slot float64, y func(float64) float64) {
	var run []string
	flush := func() {
		switch len(run) {
		case 0:
		case 1:
			xy := strings.Split(run[0], ",")
			fmt.Fprintf(b, `<circle class="s%d" cx="%s" cy="%s" r="3"/>`, s.Colour, xy[0], xy[1])
		default:
			fmt.Fprintf(b, `<polyline class="l%d" points="%s"/>`, s.Colour, strings.Join(run, " "))
		}
		run = run[:0]
	}
	for d, v := range s.Values {
		if math.IsNaN(v) {
			flush()
			continue
		}
		run = append(run, fmt.Sprintf("%.1f,%.1f", padL+slot*(float64(d)+0.5), y(v)))
	}
	flush()
}

// top is the value the y axis ends at: the largest bar or point, rounded up.
func (c chart) top() float64 {
	var m float64
	for d := range c.Days {
		stack := 0.0
		for _, s := range c.Series {
			switch v := s.Values[d]; {
			case math.IsNaN(v):
			case c.Lines && !c.Bars:
				m = math.Max(m, v)
			default:
				stack += v
			}
		}
		m = math.Max(m, stack)
	}
	if m <= 0 {
		return 1
	}
	step := math.Pow(10, math.Floor(math.Log10(m)))
	return math.Ceil(m/step) * step
}

// short writes an axis value compactly: 1.5k, 2M.
func short(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
}
