package billing

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a length of time as people write one for billing: Go's syntax
// ("90m", "12h30m") plus whole days ("30d", "1d12h"). It must be above zero.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if before, after, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.ParseInt(before, 10, 32)
		if err != nil || n < 0 {
			return 0, errors.New("want a duration such as 30d, 12h or 90m")
		}
		days, s = time.Duration(n)*24*time.Hour, after
	}
	var rest time.Duration
	if s != "" {
		var err error
		if rest, err = time.ParseDuration(s); err != nil || rest < 0 {
			return 0, errors.New("want a duration such as 30d, 12h or 90m")
		}
	}
	if days+rest <= 0 {
		return 0, errors.New("want a duration above zero, such as 30d")
	}
	return days + rest, nil
}

// FormatDuration writes d as ParseDuration reads it, in whole days when it is some.
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	return d.String()
}
