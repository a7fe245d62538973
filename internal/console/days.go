package console

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/tollgate/tollgate/internal/db"
)

//go:embed days.sql
var daysSQL string

// dailyQueries are days.sql's queries for one engine, by name.
type dailyQueries map[string]string

var dayMacro = regexp.MustCompile(`\{\{day ([a-z_]+)\}\}`)

// parseDaily splits days.sql at its "-- name:" lines and writes the engine's date expression.
func parseDaily(engine db.Engine) dailyQueries {
	day := "to_char($1 at time zone 'UTC', 'YYYY-MM-DD')"
	if engine == db.SQLite {
		day = "substr($1, 1, 10)" // timestamps are stored as UTC text, date first
	}
	queries := dailyQueries{}
	for _, block := range strings.Split(daysSQL, "-- name: ")[1:] {
		name, body, _ := strings.Cut(block, "\n")
		queries[strings.TrimSpace(name)] = dayMacro.ReplaceAllString(body, strings.ReplaceAll(day, "$1", "${1}"))
	}
	return queries
}

// dayCounts is a daily count split by one column: day (YYYY-MM-DD) → key → count.
type dayCounts map[string]map[string]int64

// countByDay runs the named query from since.
func (c *Console) countByDay(ctx context.Context, name string, since time.Time) (dayCounts, error) {
	rows, err := c.opts.DB.QueryContext(ctx, c.daily[name], since.UTC())
	if err != nil {
		return nil, fmt.Errorf("%s per day: %w", name, err)
	}
	defer rows.Close()
	counts := dayCounts{}
	for rows.Next() {
		var day, key string
		var n int64
		if err := rows.Scan(&day, &key, &n); err != nil {
			return nil, err
		}
		if counts[day] == nil {
			counts[day] = map[string]int64{}
		}
		counts[day][key] += n
	}
	return counts, rows.Err()
}
