package billing

import (
	"errors"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// MaxDuration is the longest length of time tollgate takes anywhere — a grant, a setting,
// a look back: 36500 days, a hundred years. Longer would be refused by none of the
// stores, but it is never meant, and a little longer would overflow.
const MaxDuration = 36500 * 24 * time.Hour

// goDuration is the form of Go's durations, whatever their size.
var goDuration = regexp.MustCompile(`^([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*$`)

// errTooLong is a duration over MaxDuration.
var errTooLong = errors.New("want a duration of at most 36500d (100 years)")

// ParseDuration reads a length of time as people write one for billing: Go's syntax
// ("90m", "12h30m") plus whole days ("30d", "1d12h"). It must be above zero and at most
// MaxDuration.
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days time.Duration
	if before, after, ok := strings.Cut(s, "d"); ok {
		n, err := strconv.ParseInt(before, 10, 64)
		switch {
		case err != nil && errors.Is(err, strconv.ErrRange), err == nil && n > int64(MaxDuration/(24*time.Hour)):
			return 0, errTooLong // before it is multiplied: more days overflow
		case err != nil || n < 0:
			return 0, errors.New("want a duration such as 30d, 12h or 90m")
		}
		days, s = time.Duration(n)*24*time.Hour, after
	}
	var rest time.Duration
	if s != "" {
		var err error
		rest, err = time.ParseDuration(s)
		switch {
		case err != nil && goDuration.MatchString(s), err == nil && rest > MaxDuration:
			return 0, errTooLong // well formed, but past what a time.Duration holds
		case err != nil || rest < 0:
			return 0, errors.New("want a duration such as 30d, 12h or 90m")
		}
	}
	switch {
	case days+rest > MaxDuration:
		return 0, errTooLong
	case days+rest <= 0:
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
